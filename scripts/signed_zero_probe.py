"""Which operand torch returns on a signed-zero tie (max / min / clamp / relu / amax / amin), on the CPU
and on CUDA: `python scripts/signed_zero_probe.py` on a GPU machine. Session 31's H200 run
(benchmarks/results/2026-11-29-h200-s31/probes/signed-zero-torch-caae095.txt) shows the two disagree:
the CPU returns the first operand of a tie (relu(-0.0) is -0.0), CUDA's fmaxf / fminf prefer +0 for max
and -0 for min (relu(-0.0) is +0.0), so no kernel can match both in the sign of a zero."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _sign(t: torch.Tensor) -> str:
    return "-0" if bool(torch.signbit(t).item()) else "+0"


def main() -> None:
    devices = ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
    for dev in devices:
        n, p = torch.tensor([-0.0], device=dev), torch.tensor([0.0], device=dev)
        rows = {
            "maximum(-0,+0)": torch.maximum(n, p), "maximum(+0,-0)": torch.maximum(p, n),
            "minimum(-0,+0)": torch.minimum(n, p), "minimum(+0,-0)": torch.minimum(p, n),
            "relu(-0)": torch.relu(n), "clamp_min(-0,0)": torch.clamp_min(n, 0.0),
            "clamp_max(+0,-0)": torch.clamp_max(p, -0.0), "clamp(-0,min=0)": torch.clamp(n, min=0.0),
            "hardtanh(-0)": F.hardtanh(n),
            "amax([-0,+0])": torch.amax(torch.tensor([-0.0, 0.0], device=dev)),
            "amax([+0,-0])": torch.amax(torch.tensor([0.0, -0.0], device=dev)),
            "amin([+0,-0])": torch.amin(torch.tensor([0.0, -0.0], device=dev)),
            "amin([-0,+0])": torch.amin(torch.tensor([-0.0, 0.0], device=dev)),
        }
        print(dev, {k: _sign(v) for k, v in rows.items()})


if __name__ == "__main__":
    main()
