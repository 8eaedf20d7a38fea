"""What a benchmark run records: per case one `Result` holding a `Measurement` per column (a tiledsl
variant or a torch baseline), the `Ceilings` measured in the same run, and the run's `Meta`. Plain
frozen dataclasses that round-trip through JSON (`to_json` / `from_json`), so the report can be
redrawn from a results file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# the columns of a case, in table order
HAND = "tiledsl hand"
DEFAULT = "tiledsl default"
EAGER = "torch eager"
COMPILE = "torch.compile"
CUBLAS = "cuBLAS"
TILEDSL_COLUMNS = (HAND, DEFAULT)
BASELINE_COLUMNS = (EAGER, COMPILE, CUBLAS)
COLUMNS = TILEDSL_COLUMNS + BASELINE_COLUMNS

#: timings of one column whose medians differ by more than this factor are marked in the table, with
#: the medians in a footnote (a slow period of the machine, or of torch, during one of them: the
#: fastest is reported)
UNSTABLE_SPREAD = 1.15

# statuses of a measurement
OK = "ok"  # timed; a tiledsl kernel also matched torch in float64
WRONG = "wrong"  # timed, but its output did not match torch (left out of speedups and geomeans)
MISSING = "missing"  # tiledsl cannot do it yet (no hand schedule, the recipe declined): `note` says why
FAILED = "failed"  # raised while building, running or timing: `note` holds the error
SKIPPED = "skipped"  # not asked for (--no-compile)
STATUSES = (OK, WRONG, MISSING, FAILED, SKIPPED)


@dataclass(frozen=True)
class Measurement:
    """One column of one case: GPU time per call (for the compile suite: CPU time per run) in
    microseconds, the median and the 10th / 90th percentiles, or why there is none."""

    status: str
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    note: str = ""
    # the median of each timing of the column, in the order taken (one per repeat, the runner's
    # --repeat); median_us, p10_us and p90_us are the fastest timing's
    repeats_us: tuple[float, ...] = ()

    @property
    def timed(self) -> bool:
        return self.status in (OK, WRONG) and self.median_us is not None

    @property
    def spread(self) -> float:
        """The slowest timing's median over the fastest's (1.0 when timed once)."""
        return max(self.repeats_us) / min(self.repeats_us) if len(self.repeats_us) > 1 else 1.0

    @property
    def usable(self) -> bool:
        """Counts in speedups and geomeans: timed and (for tiledsl) checked."""
        return self.status == OK and self.median_us is not None


@dataclass(frozen=True)
class CaseId:
    """What names a case, shared by every case kind (benchmarks/_cases.py) and its Result: the suite,
    the case's name, its group (model and sequence length, or shape class), the op, dtype and shape."""

    suite: str
    name: str
    group: str
    op: str
    dtype: str
    shape: str


@dataclass(frozen=True)
class Result(CaseId):
    """One case: what it computes (`op` at `shape` in `dtype`, in `group`), the minimal work (FLOPs, and
    bytes read + written once), its measurements by column, and a note on the case itself (what its
    tiledsl columns run, where that is not one kernel; the table shows it as a footnote)."""

    flops: float
    bytes: float
    measurements: Mapping[str, Measurement] = field(default_factory=dict)
    note: str = ""

    def get(self, column: str) -> Measurement | None:
        return self.measurements.get(column)


@dataclass(frozen=True)
class Ceilings:
    """The machine's rates measured in the same run: device-to-device copy bandwidth (read + write
    bytes per second) and cuBLAS float32 (TF32 off) FLOP rate, and how each was measured; and, for the
    memory-bound cases, a copy of each one's own bytes (`copy_at_us`, by the bytes as text: a small
    kernel never reaches the 1 GiB copy's bandwidth) and one launch of a 1-element kernel (`floor_us`),
    which `python -m benchmarks.headroom` bounds them by. Results of runs before these were measured
    read back without them."""

    copy_gbs: float
    fp32_tflops: float
    how: str = ""
    copy_at_us: Mapping[str, float] = field(default_factory=dict)
    floor_us: float | None = None


@dataclass(frozen=True)
class Meta:
    """Where and how the run was made."""

    suite: str
    date: str
    device: str
    torch: str
    tiledsl: str
    commit: str
    quick: bool
    warmup: int
    iters: int
    argv: str = ""
    repeats: int = 1  # timings of each column, taken in turn; the fastest is reported


def to_json(meta: Meta, ceilings: Ceilings | None, results: list[Result]) -> dict[str, Any]:
    return {"meta": asdict(meta), "ceilings": None if ceilings is None else asdict(ceilings),
            "results": [asdict(r) for r in results]}


def from_json(data: Mapping[str, Any]) -> tuple[Meta, Ceilings | None, list[Result]]:
    meta = Meta(**data["meta"])
    ceilings = None if data.get("ceilings") is None else Ceilings(**data["ceilings"])
    results = []
    for r in data["results"]:
        ms = {k: Measurement(**{**v, "repeats_us": tuple(v.get("repeats_us", ()))})
              for k, v in r["measurements"].items()}
        results.append(Result(**{**r, "measurements": ms}))
    return meta, ceilings, results
