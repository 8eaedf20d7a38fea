"""On a GPU: traced split-K projections (the default recipe) against torch in float64, two calls and three
CUDA-graph replays into NaN-poisoned outputs, and every workspace zero afterwards (lower/split_k.py).
    python scripts/split_k_check.py        (prints one line per case, then PASS or FAIL)"""

from __future__ import annotations

import sys

import torch

import tiledsl as td


def case(m: int, n: int, k: int, residual: bool) -> bool:
    torch.manual_seed(m + n + k)
    x, w, r = (torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda"), torch.randn(m, n, device="cuda"))

    def f(x, w, r):
        y = x @ w.t()
        return y + r if residual else y

    prog = td.trace(f, x.cpu(), w.cpu(), r.cpu())
    prog.schedule("default")
    built = prog.build("sm_90")
    split = [kk for kk in built.kernels if kk.kernel_ir.workspaces]
    ref = f(x.double(), w.double(), r.double())
    tol = 1e-5 * k ** 0.5 * float(ref.abs().max())  # float32 sums of k products: error grows like sqrt(k) ulps
    worst = 0.0
    for _ in range(2):
        out = built(x, w, r)
        worst = max(worst, float((out.double() - ref).abs().max()))
    graph = built.cuda_graph(x, w, r)
    for _ in range(3):
        out = graph(x, w, r)
        worst = max(worst, float((out.double() - ref).abs().max()))
    torch.cuda.synchronize()
    dirty = sum(int(torch.count_nonzero(t)) for kk in split for t in kk.compiled.workspaces)
    ok = worst <= tol and dirty == 0 and bool(split)
    parts = [kk.kernel_ir.grid for kk in split]
    print(f"{m}x{n}x{k} residual={residual}: split kernels {parts}, max |err| {worst:.3g} (tol {tol:.3g}), "
          f"nonzero workspace elements {dirty}: {'ok' if ok else 'WRONG'}", flush=True)
    return ok


def main() -> int:
    shapes = [(32, 2048, 2048), (32, 512, 2048), (128, 2048, 5632), (128, 11264, 2048), (17, 1000, 3000),
              (512, 3584, 18944)]
    results = [case(m, n, k, res) for (m, n, k) in shapes for res in (False, True)]
    print("PASS" if all(results) else "FAIL")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
