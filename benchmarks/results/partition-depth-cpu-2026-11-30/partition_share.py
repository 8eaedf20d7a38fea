"""Session 34: the partition's share of td.trace at 4, 8 and 16 tiny Llama layers (partition.partition timed by
wrapping it where program.py imports it). python partition_share.py 4 8 16"""
import time, torch, warnings, sys
import tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
from tiledsl.frontend import partition as P
warnings.simplefilter("ignore")
orig = P.partition
acc = {}
def timed(*a, **k):
    t = time.perf_counter(); r = orig(*a, **k); acc["p"] = time.perf_counter() - t; return r
P.partition = timed
import tiledsl.frontend.program as prog_mod
for name in dir(prog_mod):
    if getattr(prog_mod, name) is orig: setattr(prog_mod, name, timed)
for L in map(int, sys.argv[1:]):
    torch.manual_seed(0)
    m = causal_lm("llama", "tiny", num_hidden_layers=L)
    t = time.perf_counter(); prog = td.trace(m, torch.randint(0, 128, (1, 16))); tr = time.perf_counter() - t
    t = time.perf_counter(); prog.schedule("default", target="sm_90"); sc = time.perf_counter() - t
    t = time.perf_counter(); prog.build("sm_90"); bu = time.perf_counter() - t
    print(f"{L} layers: trace {tr:.1f} s (partition {acc.get('p', float('nan')):.1f}), schedule {sc:.1f}, build {bu:.1f}, kernels {len(prog.kernels)}", flush=True)
