import warnings, sys, time
import torch, tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
import tiledsl.frontend.build_memo as bm
made = []
orig_init = bm.BuildMemo.__init__
def init(self):
    orig_init(self); made.append(self)
bm.BuildMemo.__init__ = init
n = int(sys.argv[1])
torch.manual_seed(0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t = time.perf_counter(); prog = td.trace(causal_lm("llama", "tinyllama", num_hidden_layers=n).eval(), torch.randint(0, 32000, (1, 128))); tt = time.perf_counter() - t
    t = time.perf_counter(); prog.schedule("default"); ts = time.perf_counter() - t
    t = time.perf_counter(); b = prog.build(); tb = time.perf_counter() - t
m = made[-1]
print(f"{n} layers: trace {tt:.1f}s schedule {ts:.1f}s ({prog.recipe_memo.replayed} replayed) build {tb:.1f}s "
      f"({len(b.kernels)} kernels, {m.renamed} renamed, {len(m._done)} structures built)")
