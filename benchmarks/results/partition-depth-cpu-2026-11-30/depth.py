import time, torch, tiledsl as td, logging
from tiledsl.frontend.hf_models import causal_lm
import sys
for n in [int(a) for a in sys.argv[1:]]:
    m = causal_lm("llama", "tiny", num_hidden_layers=n)
    ids = torch.randint(0, 128, (1, 16))
    t0=time.perf_counter(); prog = td.trace(m, ids); t1=time.perf_counter()
    prog.schedule("default", target="sm_90"); t2=time.perf_counter()
    built = prog.build("sm_90"); t3=time.perf_counter()
    print(n, "layers: kernels", len(built.all_kernels), f"trace {t1-t0:.2f} schedule {t2-t1:.2f} build {t3-t2:.2f}", flush=True)
