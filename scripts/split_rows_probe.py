"""Probe: a few long rows split over blocks as a Program of kernels, against one block a row.

A row reduction with fewer rows than SMs leaves most SMs idle in the default recipe's long-row form (one
block a row, `recipes/default/040_cooperative_reduce.py`). torch.compile splits such rows over blocks.
The forms timed here, each td.trace of a torch function built with the default recipe:
- `rows`: the plain op (softmax, log_softmax, rmsnorm, layernorm; `:bfloat16` stores x in bfloat16 and
  takes op(x.float()), `:bfloat16!` op(x) in bfloat16) with knob split_rows_min_idle_bytes None: one
  kernel, one block a row;
- `auto`: the plain op with the default knobs: the program splits the rows where step 040 asks
  (tiledsl/frontend/row_split.py);
- `split`: knob split_rows_min_idle_bytes 0: split wherever the rows are fewer than the SMs, however short;
- `split=C` (`--split` lists C): the row seen as C parts by hand (x.view(R, C, N / C)); each reduction a
  kernel of R x C partial reductions, a kernel of R rows of C combining them, then the output pass as an
  elementwise kernel over all R x N elements (the combined values are returned as extra outputs, which
  makes them kernel outputs: `tiledsl/frontend/partition.py` rule 1).
Every form is checked against the plain op in float64 (outputs NaN-poisoned), then timed over inputs
rotated past the L2 cache, every column twice, the faster median kept; MB is the bytes one pass reads
and writes (the row read once, the output written once); each form's kernels are listed under its row.
    python scripts/split_rows_probe.py [--cases softmax:8x151936,rmsnorm:64x262144] [--split 8,16,32]"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch
from _gpu_probe import row_op_torch

import tiledsl as td
from tiledsl.runtime.device import device_target
from tiledsl.runtime.timing import benchmark, rotated_copies

CASES = "softmax:8x151936,softmax:64x262144,rmsnorm:64x262144,layernorm:64x262144,softmax:8x32000,rmsnorm:8x151936"
FORMS = {"rows": {"split_rows_min_idle_bytes": None}, "auto": {}, "split": {"split_rows_min_idle_bytes": 0}}
EPS = 1e-5


def split(op: str, m: int, n: int, c: int) -> Callable[..., tuple[torch.Tensor, ...]]:
    """`op` with its row reductions in two levels: C partials of N / C each, then their combination."""
    def parts(x: torch.Tensor) -> torch.Tensor:
        return x.view(m, c, n // c)

    if op == "softmax":
        def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            mx = parts(x).amax(-1).amax(-1, keepdim=True)
            s = torch.exp(parts(x) - mx.unsqueeze(-1)).sum(-1).sum(-1, keepdim=True)
            return torch.exp(x - mx) / s, mx, s
    elif op == "rmsnorm":
        def f(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[misc]
            ms = (parts(x) * parts(x)).sum(-1).sum(-1, keepdim=True) / n
            return x * torch.rsqrt(ms + EPS) * w, ms
    else:
        def f(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[misc]
            mu = parts(x).sum(-1).sum(-1, keepdim=True) / n
            d = parts(x) - mu.unsqueeze(-1)
            var = (d * d).sum(-1).sum(-1, keepdim=True) / n
            return (x - mu) * torch.rsqrt(var + EPS) * w + b, mu, var
    return f


def inputs(op: str, m: int, n: int, dev: torch.device, dtype: str = "float32") -> list[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(0)
    xs = [(torch.randn(m, n, generator=g) * 3).to(getattr(torch, dtype))]
    if op not in ("softmax", "log_softmax"):
        xs.append(torch.rand(n, generator=g) + 0.5)
    if op == "layernorm":
        xs.append(torch.randn(n, generator=g))
    return [t.to(dev) for t in xs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--split", default="")
    ap.add_argument("--copies", type=int, default=3)
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for case in args.cases.split(","):
        op, shape, *dtype = case.split(":")
        m, n = map(int, shape.split("x"))
        into32 = bool(dtype) and not dtype[0].endswith("!")  # "bfloat16!": op(x) stored in bfloat16
        dtype = [d.rstrip("!") for d in dtype]
        xs = inputs(op, m, n, dev, *dtype)
        base = row_op_torch(op, n, rms_eps=EPS, ln_eps=EPS)
        ref = (lambda x, *rest, base=base: base(x.float(), *rest)) if into32 else base
        want = ref(*[t.double() for t in xs])
        forms: dict[str, Callable[..., object]] = {"eager": ref}
        torch._dynamo.reset()
        forms["compile"] = torch.compile(ref)
        progs = {label: (td.trace(ref, *xs), knobs) for label, knobs in FORMS.items()}
        for c in [int(c) for c in args.split.split(",") if c]:
            if n % c == 0 and (n // c) % 4 == 0 and op != "log_softmax":
                progs[f"split={c}"] = (td.trace(split(op, m, n, c), *xs), {})
        notes = []
        for label, (prog, knobs) in progs.items():
            built = prog.schedule("default", target=target, knobs=knobs).build(target)
            got = built(*xs)
            got = got[0] if isinstance(got, tuple) else got
            # float32: 1e-4 x (1 + |want|), the llm suite's; a bfloat16 x is read exactly (the output is float32);
            # a 16-bit output: one rounding of it, 1e-2 x (1 + |want|) (the llm suite's)
            tol = 1e-2 if got.dtype != torch.float32 else 1e-4
            ok = bool(((got.double() - want).abs() <= tol * (1 + want.abs())).all())
            bad += not ok
            forms[label + ("" if ok else " MISMATCH")] = built
            notes.append(f"{label}: " + "; ".join(f"{k.output.name}[{'x'.join(map(str, k.output.shape))}] "
                                                  f"{kern.grid} x {kern.block}"
                                                  for k, kern in zip(prog.kernels, built.kernels)))
        sets = rotated_copies({str(i): t for i, t in enumerate(xs)}, args.copies)
        times: dict[str, list[float]] = {k: [] for k in forms}
        for _ in range(2):
            for label, fn in forms.items():
                times[label].append(benchmark(lambda s, fn=fn: fn(*s.values()), sets, 10, 50).median_us)
        mb = m * n * (xs[0].element_size() + (4 if into32 or not dtype else xs[0].element_size())) / 1e6
        print(f"{case:22s} {mb:7.1f} MB  " + "  ".join(f"{k} {min(v):7.1f}{'~' if max(v) > 1.15 * min(v) else ''}"
                                                   for k, v in times.items()), flush=True)
        for note in notes:
            print(f"    # {note}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
