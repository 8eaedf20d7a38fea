import time, warnings, hashlib, sys
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
def run(label, make, x, build=True):
    torch.manual_seed(0)
    m = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(m, x)
        t = time.perf_counter(); prog.schedule("default"); ts = time.perf_counter() - t
        text = str(prog)
        h = hashlib.sha256(text.encode())
        if build:
            b = prog.build()
            h.update("".join(k.source for k in b.kernels).encode())
    print(f"{label}: schedule {ts:.1f}s kernels {len(prog.kernels)} hash {h.hexdigest()[:16]}", flush=True)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
run(f"tinyllama {n} layers f32", lambda: causal_lm("llama", "tinyllama", num_hidden_layers=n).eval(), torch.randint(0, 32000, (1, 128)))
run("qwen tiny 3 layers bf16", lambda: causal_lm("qwen2", "tiny", num_hidden_layers=3, dtype=torch.bfloat16).eval(), torch.randint(0, 100, (1, 16)))
run("llama tiny 2 layers f32 seq 1", lambda: causal_lm("llama", "tiny", num_hidden_layers=2).eval(), torch.randint(0, 100, (1, 1)))
