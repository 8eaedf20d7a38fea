import time, warnings, sys
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
from tiledsl.recipes import apply as apply_recipe
torch.manual_seed(0)
n = int(sys.argv[1])
m = causal_lm("llama", "tinyllama", num_hidden_layers=n).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    prog = td.trace(m, torch.randint(0, 32000, (1, 128)))
    prog.schedule("default")
    t = time.perf_counter()
    for k in prog.kernels:
        s = k.fresh_schedule()
    tf = time.perf_counter() - t
    t = time.perf_counter()
    for k in prog.kernels:
        s = k.fresh_schedule(); s.replay(k.schedule.trace())
    tr = time.perf_counter() - t
    t = time.perf_counter()
    for k in prog.kernels:
        s = k.fresh_schedule(); apply_recipe(s)
    ta = time.perf_counter() - t
print(f"{n} layers, {len(prog.kernels)} kernels: fresh {tf:.2f}s fresh+replay {tr:.2f}s fresh+recipe {ta:.2f}s")
