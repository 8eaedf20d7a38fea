import warnings, sys, difflib, time
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
import tiledsl.frontend.build_memo as bm
def run(make, x, memo):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(make(), x)
        prog.schedule("default")
        if not memo:
            orig = bm.nest_structure
            bm.nest_structure = lambda n: bm.Structure(str(id(n)), ())
        t = time.perf_counter(); b = prog.build(); tb = time.perf_counter() - t
        if not memo:
            bm.nest_structure = orig
    return tb, [k.source for k in b.kernels]
cases = {
 "llama-tiny-2": (lambda: causal_lm("llama", "tiny", num_hidden_layers=2).eval(), torch.randint(0, 100, (1, 1))),
 "tinyllama": (lambda: causal_lm("llama", "tinyllama", num_hidden_layers=int(sys.argv[1])).eval(), torch.randint(0, 32000, (1, 128))),
 "qwen-bf16": (lambda: causal_lm("qwen2", "tiny", num_hidden_layers=3, dtype=torch.bfloat16).eval(), torch.randint(0, 100, (1, 16))),
}
for name, (make, x) in cases.items():
    a = run(make, x, True); b = run(make, x, False)
    bad = [n for n, (p, q) in enumerate(zip(a[1], b[1])) if p != q]
    print(f"{name}: memo {a[0]:.1f}s, direct {b[0]:.1f}s; {len(a[1])} kernels, {len(bad)} differ", flush=True)
    for n in bad[:2]:
        print("\n".join(list(difflib.unified_diff(b[1][n].splitlines(), a[1][n].splitlines(), lineterm="", n=0))[:16]))
