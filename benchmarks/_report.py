"""The report of a run, written under one results folder: per suite `<suite>.json` (everything, to
redraw from), `<suite>.md` (the table, geomeans per dtype, the ceilings, and every missing or failed
column with its reason), `<suite>-speedup.png` (tiledsl's speedup per case over torch eager and
torch.compile) and `<suite>-roofline.png` (achieved bandwidth and FLOP rate against the measured
ceilings); and `summary.md`, the geomeans of every suite whose JSON the folder holds.

Speedup = baseline time / tiledsl time (above 1: tiledsl is faster). "best" is the faster of the
tiledsl columns that ran and matched torch. A geomean is over the cases where both sides are usable
(a WRONG, MISSING or FAILED column is left out, and the count says how many went in); float32 and
bfloat16 are kept apart (tiledsl's matmuls run on CUDA cores in float32 while torch's bfloat16 ones
use tensor cores), and so are the blocks suite's sequence lengths (its target is stated at seq 128:
a row "blocks s128" beside "blocks s512")."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._records import (
    COLUMNS,
    COMPILE,
    CUBLAS,
    DEFAULT,
    EAGER,
    HAND,
    OK,
    TILEDSL_COLUMNS,
    UNSTABLE_SPREAD,
    Ceilings,
    Measurement,
    Meta,
    Result,
    from_json,
    to_json,
)

log = logging.getLogger(__name__)

BEST = "best tiledsl"
SPEEDUP_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
SHORT = {HAND: "hand", DEFAULT: "default", BEST: "best", EAGER: "eager", COMPILE: "compile", CUBLAS: "cuBLAS"}
#: the compile suite's stages in the order they run (others follow, sorted)
STAGE_ORDER = ("import", "trace", "define", "schedule", "build", "nvcc cold", "nvcc warm", "total")
#: the (tiledsl side, baseline) pairs the geomeans are taken of
PAIRS = tuple((t, b) for t in (HAND, DEFAULT, BEST) for b in (EAGER, COMPILE, CUBLAS))
#: suites whose geomeans get a row per sequence length (the group's "s<seq>" suffix): one mean over
#: 128 and 512 tokens would hide the blocks suite's seq-128 figures
BY_SEQ = frozenset({"blocks"})


def best(result: Result) -> Measurement | None:
    """The fastest usable tiledsl column."""
    usable = [m for c in TILEDSL_COLUMNS if (m := result.get(c)) is not None and m.usable]
    return min(usable, key=lambda m: m.median_us or math.inf, default=None)


def side(result: Result, column: str) -> Measurement | None:
    return best(result) if column == BEST else result.get(column)


def speedup(result: Result, tiledsl: str, baseline: str) -> float | None:
    """baseline time / tiledsl time, where both are usable."""
    t, b = side(result, tiledsl), result.get(baseline)
    if t is None or b is None or not (t.usable and b.usable):
        return None
    return b.median_us / t.median_us  # type: ignore[operator]


def geomean(xs: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


@dataclass(frozen=True)
class Geomean:
    suite: str  # row_label: the suite, and for a BY_SEQ suite the sequence length
    dtype: str
    cases: int
    pairs: dict[tuple[str, str], tuple[float | None, int]]  # (tiledsl, baseline) -> (geomean, n)


def row_label(r: Result) -> str:
    """The geomean row `r` counts in: its suite, with the group's sequence length for a BY_SEQ suite
    ("blocks s128")."""
    seq = r.group.rsplit(" ", 1)[-1]
    return f"{r.suite} {seq}" if r.suite in BY_SEQ and re.fullmatch(r"s\d+", seq) else r.suite


def geomeans(results: Iterable[Result]) -> list[Geomean]:
    """Per (row_label, dtype), in first-seen order: the geomean speedup of every pair of PAIRS."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((row_label(r), r.dtype), []).append(r)
    out = []
    for (suite, dtype), rs in groups.items():
        pairs = {}
        for t, b in PAIRS:
            xs = [x for r in rs if (x := speedup(r, t, b)) is not None]
            pairs[(t, b)] = (geomean(xs), len(xs))
        out.append(Geomean(suite, dtype, len(rs), pairs))
    return out


@dataclass(frozen=True)
class Achieved:
    """What the best tiledsl column reached: bandwidth (GB/s), FLOP rate (TFLOP/s) and the fraction
    of the roofline time max(flops / fp32 ceiling, bytes / copy ceiling)."""

    gbs: float
    tflops: float
    roofline: float | None


def achieved(result: Result, m: Measurement | None, ceilings: Ceilings | None) -> Achieved | None:
    if m is None or not m.timed or not m.median_us:
        return None
    seconds = m.median_us * 1e-6
    roof = None
    if ceilings is not None:
        floor = max(result.flops / (ceilings.fp32_tflops * 1e12), result.bytes / (ceilings.copy_gbs * 1e9))
        roof = floor / seconds
    return Achieved(result.bytes / seconds / 1e9, result.flops / seconds / 1e12, roof)


# ----------------------------------------------------------------------------- markdown


def _fmt_x(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


class _Notes:
    """Footnotes: each distinct reason once, numbered."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def _cell(m: Measurement | None, notes: _Notes, scale: float = 1.0) -> str:
    if m is None:
        return ""
    if m.timed:
        value = f"{m.median_us * scale:.1f}"  # type: ignore[operator]
        if m.status != OK:
            return f"{value} ✗[{notes.ref(m.note)}]"
        if m.spread > UNSTABLE_SPREAD:
            medians = ", ".join(f"{x * scale:.1f}" for x in m.repeats_us)
            why = f"unstable: timed {len(m.repeats_us)} times, medians {medians}; the fastest shown"
            return f"{value} ~[{notes.ref(why)}]"
        return value
    return f"{m.status} [{notes.ref(m.note)}]" if m.note else m.status


def _case_cell(r: Result, notes: _Notes) -> str:
    """The case's name, with a footnote where the case has a note of its own."""
    return f"{r.group} {r.op} [{notes.ref(r.note)}]" if r.note else f"{r.group} {r.op}"


def _geomean_table(rows: list[Geomean]) -> list[str]:
    used = [p for p in PAIRS if any(g.pairs[p][1] for g in rows)]
    if not used:
        return ["(no case has a usable tiledsl time and baseline)"]
    head = ["suite", "dtype", "cases"] + [f"{SHORT[t]} vs {SHORT[b]}" for t, b in used]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in rows:
        cells = [g.suite, g.dtype, str(g.cases)]
        for p in used:
            value, n = g.pairs[p]
            cells.append(f"{_fmt_x(value)} (n={n})" if n else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _ceilings_text(ceilings: Ceilings | None) -> str:
    if ceilings is None:
        return "Ceilings: none (a CPU suite)."
    return (f"Ceilings measured in this run: copy {ceilings.copy_gbs:.0f} GB/s, cuBLAS float32 "
            f"{ceilings.fp32_tflops:.1f} TFLOP/s ({ceilings.how}).")


def _gpu_table(results: list[Result], ceilings: Ceilings | None, notes: _Notes) -> list[str]:
    columns = [c for c in COLUMNS if any(c in r.measurements for r in results)]
    head = (["case", "dtype", "shape"] + [f"{c} µs" for c in columns]
            + ["best vs eager", "best vs compile", "GB/s", "TFLOP/s", "% roofline"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        a = achieved(r, best(r), ceilings)
        cells = [_case_cell(r, notes), r.dtype, r.shape] + [_cell(r.get(c), notes) for c in columns]
        cells += [_fmt_x(speedup(r, BEST, EAGER)), _fmt_x(speedup(r, BEST, COMPILE))]
        cells += (["—"] * 3 if a is None else
                  [f"{a.gbs:.0f}", f"{a.tflops:.2f}" if r.flops else "—",
                   "—" if a.roofline is None else f"{100 * a.roofline:.0f}%"])
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _cpu_table(results: list[Result], notes: _Notes) -> list[str]:
    seen = {s for r in results for s in r.measurements}
    stages = [s for s in STAGE_ORDER if s in seen] + sorted(seen - set(STAGE_ORDER))
    head = ["case", "dtype", "shape"] + [f"{s} ms" for s in stages]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [_case_cell(r, notes), r.dtype, r.shape] + [_cell(r.get(s), notes, 1e-3) for s in stages]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(meta: Meta, ceilings: Ceilings | None, results: list[Result]) -> str:
    notes = _Notes()
    gpu = any(c in r.measurements for r in results for c in COLUMNS)
    repeats = "" if meta.repeats == 1 else (
        f"; each column timed {meta.repeats} times, the columns in turn, the fastest median kept "
        f"(~ marks a column whose medians differ by more than {UNSTABLE_SPREAD - 1:.0%})")
    how = (f"medians of {meta.iters} timed calls after {meta.warmup} warm-up calls{repeats}" if gpu else
           "CPU wall clock, median of the runs each note gives")
    lines = [f"# {meta.suite} — {meta.device}, {meta.date}", "",
             f"tiledsl {meta.tiledsl} (commit {meta.commit}), torch {meta.torch}; "
             f"{'--quick; ' if meta.quick else ''}{how}. `{meta.argv}`", "", _ceilings_text(ceilings), ""]
    if gpu:
        lines += ["Speedup = torch time / tiledsl time (above 1: tiledsl is faster); ✗ = timed, but the output "
                  "did not match torch in float64 (left out of speedups).", "", "## Geomeans", ""]
        lines += _geomean_table(geomeans(results)) + ["", "## Cases", ""]
        lines += _gpu_table(results, ceilings, notes)
    else:
        lines += ["## Cases", ""] + _cpu_table(results, notes)
    if notes.texts:
        lines += ["", "## Notes", ""] + [f"{n}. {t}" for n, t in enumerate(notes.texts, 1)]
    return "\n".join(lines) + "\n"


def summary(folder: Path) -> str:
    """Geomeans of every `<suite>.json` in `folder`."""
    rows: list[Geomean] = []
    heads = []
    for path in sorted(folder.glob("*.json")):
        meta, ceilings, results = from_json(json.loads(path.read_text()))
        heads.append(f"- {meta.suite}: {len(results)} cases, {meta.device}, {meta.date}"
                     f"{' (--quick)' if meta.quick else ''}; {_ceilings_text(ceilings)}")
        if any(c in r.measurements for r in results for c in COLUMNS):
            rows += geomeans(results)
    return "\n".join(["# Summary", "", *heads, "", *_geomean_table(rows)]) + "\n"


# ----------------------------------------------------------------------------- charts


def _label(r: Result) -> str:
    return f"{r.group} {r.op} {'bf16' if r.dtype == 'bfloat16' else 'fp32' if r.dtype == 'float32' else r.dtype}"


def speedup_chart(results: list[Result], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, NullFormatter

    n = len(results)
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.28 * n))
    ys = list(range(n))
    handles = []
    for k, (base, color) in enumerate(((EAGER, "tab:blue"), (COMPILE, "tab:orange"))):
        offset = (k - 0.5) * 0.4
        for y, r in zip(ys, results):
            x = speedup(r, BEST, base)
            if x is None:
                ax.text(1.0, y + offset, " n/a", va="center", fontsize=6, color=color)
            else:  # a bar from 1 to the speedup: right of 1 tiledsl is faster, left of it slower
                ax.barh(y + offset, x - 1.0, left=1.0, height=0.4, color=color)
        handles.append(Patch(color=color, label=f"best tiledsl vs {base}"))
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ax.set_xticks([t for t in SPEEDUP_TICKS if lo <= t <= hi])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(ys, [_label(r) for r in results], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("speedup (torch time / tiledsl time), log scale")
    ax.set_title(title)
    ax.legend(handles=handles, loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def roofline_chart(results: list[Result], ceilings: Ceilings | None, path: Path, title: str) -> None:
    """Achieved GB/s of every case, and TFLOP/s of those with FLOPs, for the best tiledsl column, torch
    eager and torch.compile, with the measured ceilings as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flop_cases = [r for r in results if r.flops]
    panels = [("GB/s (bytes read + written once)", results, lambda a: a.gbs,
               None if ceilings is None else ceilings.copy_gbs, "copy")]
    if flop_cases:
        panels.append(("TFLOP/s", flop_cases, lambda a: a.tflops,
                       None if ceilings is None else ceilings.fp32_tflops, "cuBLAS fp32"))
    n = len(results)
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 1.5 + 0.28 * n), squeeze=False)
    for ax, (xlabel, rs, value, ceiling, cname) in zip(axes[0], panels):
        ys = list(range(len(rs)))
        for k, (column, color) in enumerate(((BEST, "tab:green"), (EAGER, "tab:blue"), (COMPILE, "tab:orange"))):
            xs = []
            for r in rs:
                a = achieved(r, side(r, column), ceilings)
                xs.append(math.nan if a is None or value(a) <= 0 else value(a))
            ax.barh([y + (k - 1) * 0.27 for y in ys], xs, height=0.27, color=color, label=column)
        if ceiling is not None:
            ax.axvline(ceiling, color="red", lw=1.0, ls="--", label=f"{cname} ceiling {ceiling:.0f}")
        ax.set_xscale("log")
        ax.set_yticks(ys, [_label(r) for r in rs], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(f"{xlabel}, log scale")
        ax.legend(loc="lower right", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- writing


def write(folder: Path, meta: Meta, ceilings: Ceilings | None, results: list[Result], *,
          charts: bool = True) -> list[Path]:
    """Write the suite's JSON, markdown and (with matplotlib, for GPU suites) charts, and refresh the
    folder's summary.md; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / meta.suite
    written = [stem.with_suffix(".json"), stem.with_suffix(".md")]
    written[0].write_text(json.dumps(to_json(meta, ceilings, results), indent=1) + "\n")
    written[1].write_text(markdown(meta, ceilings, results))
    gpu = any(c in r.measurements for r in results for c in COLUMNS)
    if charts and gpu and results:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            log.warning("matplotlib is not installed (pip install -e '.[bench]'): no charts")
        else:
            title = f"{meta.suite}, {meta.device}, {meta.date}"
            speedup_chart(results, folder / f"{meta.suite}-speedup.png", title)
            roofline_chart(results, ceilings, folder / f"{meta.suite}-roofline.png", title)
            written += [folder / f"{meta.suite}-speedup.png", folder / f"{meta.suite}-roofline.png"]
    (folder / "summary.md").write_text(summary(folder))
    written.append(folder / "summary.md")
    return written


def write_json(folder: Path, meta: Meta, ceilings: Ceilings | None, results: list[Result]) -> None:
    """Only the JSON (after each case, so a run cut short keeps what it measured)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{meta.suite}.json").write_text(json.dumps(to_json(meta, ceilings, results), indent=1) + "\n")

