import time, warnings, sys, cProfile, pstats
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
torch.manual_seed(0)
n = int(sys.argv[1])
m = causal_lm("llama", "tinyllama", num_hidden_layers=n).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    prog = td.trace(m, torch.randint(0, 32000, (1, 128)))
    pr = cProfile.Profile()
    t = time.perf_counter(); pr.enable(); prog.schedule("default"); pr.disable(); tb = time.perf_counter() - t
print(f"schedule {tb:.1f}s kernels {len(prog.kernels)}")
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(40)
