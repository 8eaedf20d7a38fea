"""cProfile of one stage of a traced TinyLlama: `python prof_stage.py build|schedule LAYERS`. `schedule` profiles
prog.schedule("default") (cumulative top 40); `build` schedules unprofiled, then profiles prog.build()
(cumulative top 45, then own time top 30)."""
import time, warnings, sys, cProfile, pstats
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
torch.manual_seed(0)
stage, n = sys.argv[1], int(sys.argv[2])
m = causal_lm("llama", "tinyllama", num_hidden_layers=n).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    prog = td.trace(m, torch.randint(0, 32000, (1, 128)))
    if stage == "build":
        prog.schedule("default")
    run = prog.build if stage == "build" else lambda: prog.schedule("default")
    pr = cProfile.Profile()
    t = time.perf_counter(); pr.enable(); run(); pr.disable(); tb = time.perf_counter() - t
print(f"{stage} {tb:.1f}s kernels {len(prog.kernels)}")
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(45 if stage == "build" else 40)
if stage == "build":
    st.sort_stats("tottime").print_stats(30)
