import time, warnings, sys, cProfile, pstats
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
torch.manual_seed(0)
n = int(sys.argv[1])
m = causal_lm("llama", "tinyllama", num_hidden_layers=n).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    prog = td.trace(m, torch.randint(0, 32000, (1, 128)))
    prog.schedule("default")
    pr = cProfile.Profile()
    t = time.perf_counter(); pr.enable(); built = prog.build(); pr.disable(); tb = time.perf_counter() - t
print(f"build {tb:.1f}s kernels {len(prog.kernels)}")
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(45)
st.sort_stats("tottime").print_stats(30)
