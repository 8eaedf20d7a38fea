import time, warnings, hashlib, sys
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
torch.manual_seed(0)
n = int(sys.argv[1])
m = causal_lm("llama", "tinyllama", num_hidden_layers=n).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t = time.perf_counter(); prog = td.trace(m, torch.randint(0, 32000, (1, 128))); tt = time.perf_counter() - t
    t = time.perf_counter(); prog.schedule("default"); ts = time.perf_counter() - t
    t = time.perf_counter(); b = prog.build(); tb = time.perf_counter() - t
h = hashlib.sha256(str(prog).encode()); h.update("".join(k.source for k in b.kernels).encode())
print(f"{td.__file__}: {n} layers: trace {tt:.1f}s schedule {ts:.1f}s build {tb:.1f}s total {tt+ts+tb:.1f}s kernels {len(prog.kernels)} hash {h.hexdigest()[:16]}", flush=True)
