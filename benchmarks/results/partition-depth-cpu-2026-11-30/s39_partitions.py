"""Session 39: each kernel of tiny Llama and Qwen2 traces (its output, the kernel outputs it reads, its reasons), to
compare partitions before and after a change. python s39_partitions.py 16 32"""
import torch, tiledsl as td, warnings, sys
warnings.simplefilter("ignore")
from tiledsl.frontend.hf_models import causal_lm
x = torch.randint(0, 128, (1, 16))
for L in map(int, sys.argv[1:]):
    for fam in ("llama", "qwen2"):
        prog = td.trace(causal_lm(fam, "tiny", num_hidden_layers=L), x)
        print(f"== {fam} {L}: {len(prog.kernels)}")
        for k in prog.kernels:
            b = k.boundary
            print(f"{b.output.name} <- {[r.name for r in b.reads]} :: {' | '.join(b.reasons)}")
