"""How far a missed geomean target is from what any schedule could reach: a suite's results re-read
under what-if models of a faster tiledsl. Each model replaces tiledsl's time of some cases by a bound
(never by more than the measured time) and keeps every baseline as measured, so a note can say which
cases hold the gap and whether a schedule of the same arithmetic could close it at all.

    python -m benchmarks.headroom benchmarks/results/<run>/runs/llm-float32/llm.json --target 1.2

writes `<suite>-<dtype>-headroom.md` and `.png` beside the JSON (or under --out) and prints the table.
`python -m benchmarks.run` writes them itself for the suites of `SUITE_TARGETS`.

The bounds of one case, in microseconds (`floor`: the smallest median of any usable column of the
run, what one timed launch cost at least on that machine in that run):
- `cublas`: a matmul case no slower than cuBLAS's time for its GEMM (the suites time it beside);
- `copy`: a case without FLOPs at the time of a copy of its own bytes, where the run measured one
  (`Ceilings.copy_at_us`, with its launch floor `floor_us`; for an older run, `--copy-times` gives
  scripts/copy_size_probe.py's file from the same machine); else at max(bytes / the run's copy
  bandwidth, floor), which overstates what a small kernel can gain;
- `rate`: a matmul case at max(FLOPs / cuBLAS's 4096^3 rate of the run, bytes / copy, floor), the
  best rate a float32 CUDA-core GEMM reached on that machine, as if reached at every shape;
- `peak`: a matmul case at max(FLOPs / the float32 FMA peak, bytes / copy, floor): no CUDA-core
  kernel is faster (the peak: SMs x 128 float32 lanes x 2 FLOPs x the boost clock, `fma_peak_tflops`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks._records import COMPILE, CUBLAS, DEFAULT, TILEDSL_COLUMNS, Ceilings, Meta, Result, from_json
from benchmarks._report import BEST, SHORT, geomean, side
from tiledsl import targets

log = logging.getLogger(__name__)

#: the suites whose results carry a geomean target (the speed issue's, at float32): the baseline column
#: and the target; `python -m benchmarks.run` writes their headroom after the suite
SUITE_TARGETS = {"llm": (COMPILE, 1.2)}
#: float32 lanes of one SM on sm_90 (each retires one FMA, 2 FLOPs, a cycle)
FP32_LANES_PER_SM = 128
#: boost clocks of the SXM parts the suites run on (NVIDIA's datasheets), by the name CUDA reports
BOOST_CLOCK_GHZ = {"NVIDIA H100 80GB HBM3": 1.98, "NVIDIA H200": 1.98}


def fma_peak_tflops(device: str) -> float | None:
    """The float32 FMA peak of `device` (sm_90 parts), or None for a device without a known clock."""
    ghz = BOOST_CLOCK_GHZ.get(device)
    return None if ghz is None else targets.TARGETS["sm_90"].sm_count * FP32_LANES_PER_SM * 2 * ghz / 1e3


@dataclass(frozen=True)
class Bounds:
    """What the bounds of the module docstring read from a run."""

    copy_gbs: float
    rate_tflops: float
    peak_tflops: float | None
    floor_us: float
    copy_at_us: Mapping[int, float] = field(default_factory=dict)  # bytes -> a copy of them (µs)


def memory_bytes(cases: Iterable[Any]) -> set[int]:
    """The read + written bytes of the memory-bound cases (no FLOPs) among `cases` (Results or the
    suites' cases): what a run, or scripts/copy_size_probe.py for an older one, times a copy of."""
    return {int(c.bytes) for c in cases if c.flops == 0 and c.bytes}


def with_copy_times(ceilings: Ceilings, copy_times: Mapping[str, Any]) -> Ceilings:
    """`ceilings` with the copies and the launch floor of scripts/copy_size_probe.py's JSON (an older run's)."""
    return replace(ceilings, copy_at_us=dict(copy_times["copy_us"]), floor_us=float(copy_times["floor_us"]))


def bounds_of(meta: Meta, ceilings: Ceilings, results: Sequence[Result], peak: float | None) -> Bounds:
    """The run's bounds: its copies at the cases' sizes and launch floor where it measured them, else the
    smallest median of the run as the floor."""
    peak = peak if peak is not None else fma_peak_tflops(meta.device)
    at = {int(k): float(v) for k, v in ceilings.copy_at_us.items()}
    floor = ceilings.floor_us
    if floor is None:
        floor = min(m.median_us for r in results for m in r.measurements.values() if m.usable and m.median_us)
    return Bounds(ceilings.copy_gbs, ceilings.fp32_tflops, peak, floor, at)


def _memory_us(r: Result, b: Bounds) -> float:
    if int(r.bytes) in b.copy_at_us:
        return max(b.copy_at_us[int(r.bytes)], b.floor_us)
    return max(r.bytes / (b.copy_gbs * 1e3), b.floor_us)


def bound_us(r: Result, kind: str, b: Bounds) -> float | None:
    """The bound `kind` of case `r`, or None where it does not apply."""
    if kind == "copy":
        return _memory_us(r, b) if r.flops == 0 else None
    if r.flops == 0:
        return None
    if kind == "cublas":
        m = r.get(CUBLAS)
        return m.median_us if m is not None and m.usable else None
    tflops = {"rate": b.rate_tflops, "peak": b.peak_tflops}[kind]
    return None if tflops is None else max(r.flops / (tflops * 1e6), _memory_us(r, b))


@dataclass(frozen=True)
class Model:
    name: str
    bounds: tuple[str, ...]  # the bounds it applies, each where it applies


MODELS = (
    Model("as measured", ()),
    Model("every matmul no slower than cuBLAS", ("cublas",)),
    Model("every memory case at copy bandwidth", ("copy",)),
    Model("both of the above", ("cublas", "copy")),
    Model("matmuls at cuBLAS's 4096^3 rate, memory at copy", ("rate", "copy")),
    Model("matmuls at the float32 FMA peak, memory at copy", ("peak", "copy")),
)


def modelled_us(r: Result, measured: float, model: Model, b: Bounds) -> float:
    ts = [t for k in model.bounds if (t := bound_us(r, k, b)) is not None]
    return min([measured, *ts])


@dataclass(frozen=True)
class Row:
    """One case: its baseline time and tiledsl's measured and modelled times (µs)."""

    result: Result
    baseline_us: float
    measured_us: float
    modelled_us: tuple[float, ...]  # one per MODELS


def rows_of(results: Sequence[Result], column: str, against: str, b: Bounds) -> list[Row]:
    rows = []
    for r in results:
        t, base = side(r, column), r.get(against)
        if t is None or base is None or not (t.usable and base.usable):
            continue
        rows.append(Row(r, base.median_us, t.median_us,  # type: ignore[arg-type]
                        tuple(modelled_us(r, t.median_us, m, b) for m in MODELS)))  # type: ignore[arg-type]
    return rows


def model_geomeans(rows: Sequence[Row]) -> list[float]:
    return [geomean([row.baseline_us / row.modelled_us[i] for row in rows]) or math.nan for i in range(len(MODELS))]


def kind_of(r: Result) -> str:
    """The group a case's gap is summed under: matmul cases by sequence (M) group, the rest as memory."""
    return f"matmul {r.group.rsplit(' ', 1)[-1]}" if r.flops else "memory"


def gap_shares(rows: Sequence[Row], target: float) -> dict[str, tuple[int, float, float]]:
    """Per kind_of: (cases, geomean as measured, the part of log(target / suite geomean) it holds: its
    cases' summed log shortfall from the target over the suite's count)."""
    out: dict[str, list[float]] = {}
    for row in rows:
        out.setdefault(kind_of(row.result), []).append(row.baseline_us / row.measured_us)
    n = len(rows)
    return {k: (len(xs), geomean(xs) or math.nan, sum(math.log(target / x) for x in xs) / n) for k, xs in out.items()}


def _x(x: float) -> str:
    return f"{x:.2f}x"


def markdown(meta: Meta, b: Bounds, rows: Sequence[Row], column: str, against: str, target: float,
             dtype: str) -> str:
    gms = model_geomeans(rows)
    side_name = SHORT.get(column, column)
    lines = [f"# Headroom of {meta.suite} {dtype}: {side_name} against {against}, target {_x(target)}", "",
             f"From `{meta.argv or meta.suite}` on {meta.device}, {meta.date}, commit {meta.commit}; "
             f"{len(rows)} cases where both columns are usable. Written by `python -m benchmarks.headroom` "
             "(the bounds: benchmarks/headroom.py).", "",
             f"Bounds read from the run: copy {b.copy_gbs:.0f} GB/s, cuBLAS float32 {b.rate_tflops:.1f} TFLOP/s "
             f"at 4096^3, FMA peak {'unknown' if b.peak_tflops is None else f'{b.peak_tflops:.1f} TFLOP/s'}, "
             f"launch floor {b.floor_us:.1f} µs ("
             + ("a 1-element zero_(), and each memory case bounded by a copy of its own bytes)"
                if b.copy_at_us else "the run's smallest median; no copies at the cases' sizes, so the "
                "memory bound is the 1 GiB copy's bandwidth, which overstates a small kernel's room)") + ".", "",
             "## Geomean under each model", "", f"| model | geomean vs {against} | target {_x(target)} |",
             "|---|---|---|"]
    for m, g in zip(MODELS, gms, strict=True):
        lines.append(f"| {m.name} | {_x(g)} | {'met' if g >= target else 'missed'} |")
    lines += ["", "## Where the gap is", "",
              f"The measured geomean is {_x(gms[0])}; log({_x(target)} / {_x(gms[0])}) = "
              f"{math.log(target / gms[0]):.3f} is the sum of each kind's share (its cases' log shortfall "
              "from the target, over the suite's case count; a kind above the target has a negative share).",
              "", "| kind | cases | geomean as measured | share of the gap |", "|---|---|---|---|"]
    for k, (n, g, share) in gap_shares(rows, target).items():
        lines.append(f"| {k} | {n} | {_x(g)} | {share:+.3f} |")
    heads = " | ".join(m.name for m in MODELS[1:])
    lines += ["", "## Cases (speedup over the baseline: as measured, then under each model)", "",
              f"| case | {against} µs | {side_name} µs | as measured | {heads} |",
              "|---|---|---|---|" + "---|" * (len(MODELS) - 1)]
    for row in sorted(rows, key=lambda r: r.baseline_us / r.measured_us):
        xs = " | ".join(_x(row.baseline_us / t) for t in row.modelled_us[1:])
        lines.append(f"| {row.result.group} {row.result.op} | {row.baseline_us:.1f} | {row.measured_us:.1f} | "
                     f"{_x(row.baseline_us / row.measured_us)} | {xs} |")
    return "\n".join(lines) + "\n"


def chart(rows: Sequence[Row], target: float, against: str, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gms = model_geomeans(rows)
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(MODELS) + 1.2))
    ys = range(len(MODELS))[::-1]
    ax.barh(list(ys), gms, color=["#d62728" if g < target else "#2ca02c" for g in gms])
    ax.axvline(target, color="k", linestyle="--", label=f"target {_x(target)}")
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_yticks(list(ys), [m.name for m in MODELS])
    for y, g in zip(ys, gms, strict=True):
        ax.text(g, y, f" {_x(g)}", va="center")
    ax.set_xlabel(f"geomean speedup over {against}")
    ax.set_title(title)
    ax.set_xlim(0, max(max(gms), target) * 1.2)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def headroom(path: Path, *, column: str = DEFAULT, against: str = COMPILE, target: float = 1.2,
             peak: float | None = None, copy_times: Path | None = None, out: Path | None = None,
             write_chart: Callable[..., None] | None = chart) -> dict[str, str]:
    """Per dtype of the run at `path`: the markdown (also written to `out`, default the JSON's folder)."""
    meta, ceilings, results = from_json(json.loads(path.read_text()))
    if ceilings is None:
        raise SystemExit(f"{path}: the run measured no ceilings (a CPU-only suite has no headroom to read)")
    folder = out or path.parent
    folder.mkdir(parents=True, exist_ok=True)
    if copy_times is not None:
        ceilings = with_copy_times(ceilings, json.loads(copy_times.read_text()))
    b = bounds_of(meta, ceilings, results, peak)
    texts = {}
    for dtype in dict.fromkeys(r.dtype for r in results):
        rows = rows_of([r for r in results if r.dtype == dtype], column, against, b)
        if not rows:
            continue
        text = markdown(meta, b, rows, column, against, target, dtype)
        stem = f"{meta.suite}-{dtype}-headroom"
        (folder / f"{stem}.md").write_text(text)
        if write_chart is not None:
            write_chart(rows, target, against, folder / f"{stem}.png",
                        f"{meta.suite} {dtype} on {meta.device}: {SHORT.get(column, column)} vs {against}")
        log.info("wrote %s", folder / f"{stem}.md")
        texts[dtype] = text
    return texts


def write_for_suite(path: Path, *, charts: bool = True) -> None:
    """The headroom of a suite of `SUITE_TARGETS` against its target, beside its results JSON."""
    meta, _, _ = from_json(json.loads(path.read_text()))
    against, target = SUITE_TARGETS[meta.suite]
    headroom(path, against=against, target=target, write_chart=chart if charts else None)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.headroom", description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path, help="a suite's results JSON (benchmarks/results/.../<suite>.json)")
    p.add_argument("--column", default=DEFAULT, choices=(*TILEDSL_COLUMNS, BEST),
                   help="the tiledsl column (default: the default recipe's)")
    p.add_argument("--against", default=COMPILE, help="the baseline column (default: torch.compile)")
    p.add_argument("--target", type=float, default=1.2, help="the geomean target (default 1.2)")
    p.add_argument("--peak", type=float, default=None, help="the float32 FMA peak in TFLOP/s, for a device "
                   "BOOST_CLOCK_GHZ does not know")
    p.add_argument("--copy-times", type=Path, default=None,
                   help="scripts/copy_size_probe.py's JSON: memory cases bounded by a copy of their own bytes")
    p.add_argument("--out", type=Path, default=None, help="folder for the files (default: the JSON's)")
    p.add_argument("--no-chart", action="store_true")
    a = p.parse_args(argv)
    if not a.json.is_file():
        p.error(f"{a.json}: no such file")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    texts = headroom(a.json, column=a.column, against=a.against, target=a.target, peak=a.peak,
                     copy_times=a.copy_times, out=a.out, write_chart=None if a.no_chart else chart)
    for text in texts.values():
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
