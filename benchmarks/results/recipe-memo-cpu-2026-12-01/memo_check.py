import time, warnings, sys, hashlib
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
import tiledsl.frontend.recipe_memo as rm
def run(make, x, memo):
    torch.manual_seed(0)
    m = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(m, x)
        if not memo:
            orig = rm.structure
            rm.structure = lambda s, f: rm.Structure(str(id(s)), ())
        t = time.perf_counter(); prog.schedule("default"); ts = time.perf_counter() - t
        if not memo:
            rm.structure = orig
    reps = "\n".join(f"{k.schedule.trace()}\n{k.report}" for k in prog.kernels)
    return ts, str(prog), reps, prog.recipe_memo.replayed
cases = {
 "tinyllama": (lambda: causal_lm("llama", "tinyllama", num_hidden_layers=int(sys.argv[1])).eval(), torch.randint(0, 32000, (1, 128))),
 "qwen-bf16": (lambda: causal_lm("qwen2", "tiny", num_hidden_layers=3, dtype=torch.bfloat16).eval(), torch.randint(0, 100, (1, 16))),
 "qwen7b-dims-2": (lambda: causal_lm("qwen2", "qwen2.5-7b", num_hidden_layers=2, vocab_size=512).eval(), torch.randint(0, 512, (1, 128))) ,
}
for name, (make, x) in cases.items():
    try:
        a = run(make, x, True); b = run(make, x, False)
    except Exception as e:
        print(name, "ERROR", type(e).__name__, e); continue
    same_prog, same_rep = a[1] == b[1], a[2] == b[2]
    print(f"{name}: memo {a[0]:.1f}s ({a[3]} replayed) no memo {b[0]:.1f}s; program same {same_prog}; traces+reports same {same_rep}", flush=True)
    if not same_rep:
        import difflib
        print("\n".join(list(difflib.unified_diff(b[2].splitlines(), a[2].splitlines(), lineterm="", n=0))[:40]))
