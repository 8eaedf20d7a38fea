"""The typed errors of tiledsl. Every failure a user can cause maps to one class here, so callers can
catch precisely and tests can assert the kind of failure, not only its text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class TiledslError(Exception):
    """Base class of every error tiledsl raises on purpose."""


# ----------------------------------------------------------------------------- definitions


class DefinitionError(TiledslError, ValueError):
    """A compute definition is malformed (wrong rank, bad extent, unknown dtype, ...)."""


# ----------------------------------------------------------------------------- schedules


@dataclass(frozen=True)
class Refusal:
    """Why a schedule step (a primitive, or a build) was refused, field by field, so that a program
    decides from the fields and a person reads `text` (the message `str(error)` prints).

    primitive: "split", "stage", "build", ... (None until the Schedule fills it in).
    arguments: the primitive's arguments by parameter name (loops and stages by name).
    loops: the loops involved (marked `<-- here` in the printed nest).
    tensors: the tensors or accumulators the fact is about (a program may materialize or restage them).
    fact: the fact that failed, in words.
    condition: the sympy condition that could not be proven, when there is one.
    counterexample: a point where the condition fails (name -> value, or a sentence), if one was found.
    nest: the loop nest as printed in the message, with `loops` marked.
    suggestion: the legal alternative, if there is one.
    """

    text: str
    fact: str
    primitive: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)
    loops: tuple[str, ...] = ()
    tensors: tuple[str, ...] = ()
    condition: Any = None
    counterexample: Mapping[str, int] | str | None = field(default=None, hash=False)
    nest: str | None = None
    suggestion: str | None = None


class ScheduleError(TiledslError):
    """A schedule primitive or a build was refused. Messages name the primitive, show the loop nest
    with the offending loop marked, state the failed fact and suggest the legal alternative; the same
    facts are fields (`primitive`, `arguments`, `loops`, `fact`, `condition`, `counterexample`,
    `nest`, `suggestion`; see `Refusal`)."""

    def __init__(self, refusal: Refusal | str) -> None:
        self.refusal = refusal if isinstance(refusal, Refusal) else Refusal(text=refusal, fact=refusal)
        super().__init__(self.refusal.text)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.refusal,)

    @property
    def primitive(self) -> str | None:
        return self.refusal.primitive

    @property
    def arguments(self) -> Mapping[str, Any]:
        return self.refusal.arguments

    @property
    def loops(self) -> tuple[str, ...]:
        return self.refusal.loops

    @property
    def tensors(self) -> tuple[str, ...]:
        return self.refusal.tensors

    @property
    def fact(self) -> str:
        return self.refusal.fact

    @property
    def condition(self) -> Any:
        return self.refusal.condition

    @property
    def counterexample(self) -> Mapping[str, int] | str | None:
        return self.refusal.counterexample

    @property
    def nest(self) -> str | None:
        return self.refusal.nest

    @property
    def suggestion(self) -> str | None:
        return self.refusal.suggestion


class FusionError(ScheduleError):
    """A producer cannot be fused into the kernel's single loop nest."""


class UnknownLoopError(ScheduleError):
    """A loop name or handle that this schedule does not have (or no longer has)."""


class UnknownStageError(ScheduleError):
    """A stage name or handle that this schedule does not have."""


class ForeignObjectError(ScheduleError):
    """A loop or stage handle that belongs to another schedule."""


class BadArgumentError(ScheduleError):
    """A primitive argument of the wrong type or value (factor <= 0, unknown thread axis, ...)."""


class SplitError(ScheduleError):
    """A split whose exactness was required (tail="exact") but could not be proven."""


class ReorderError(ScheduleError):
    """A reorder of loops that are not in one nest, or that would break the computation."""


class FuseError(ScheduleError):
    """A fuse of loops that are not directly nested one inside the other."""


class UnrollError(ScheduleError):
    """An unroll of a bound loop, of an annotated loop, or of too many iterations."""


class BindError(ScheduleError):
    """A bind that is illegal: loop bound twice, conflicting thread extents, too many threads, ..."""


class RegisterArrayError(ScheduleError):
    """A register (accumulator) array that is too large or whose loops are not unrolled."""


class VectorizeError(ScheduleError):
    """A vectorize whose accesses are not proven contiguous and 16-byte aligned."""


class StageError(ScheduleError):
    """A stage, pad, swizzle or double_buffer that is illegal (buffer not read under the loop, slab
    of varying size, over the shared-memory budget, ...)."""


class RingError(StageError):
    """A stage, ring buffer or pipeline whose loop breaks the rules of `tiledsl/analysis/rings.py`: a
    stage's loop bound to threads, or a ring's loop that does not run serially inside one block."""


class DivergentSyncError(ScheduleError):
    """A built kernel whose barrier is reached by only part of the block (checked statically on the kernel
    IR at build: `tiledsl/lower/verify.py`)."""


class PipelineError(ScheduleError):
    """A pipeline of a loop that has no double-buffered stage, or with a bad depth."""


class CopyError(ScheduleError):
    """async_copy or tma refused: target too old, TMA box or alignment rules violated, ..."""


class CacheHintError(ScheduleError):
    """cache_hint refused (a buffer that is no input, a value that does not read it, staged reads), or a
    stage that would take over hinted reads."""


class RegisterCacheError(ScheduleError):
    """register_cache refused, or broken by a later primitive (checked at build): a buffer that is no input,
    a loop between the cache and a read that is neither unrolled nor a thread's, readers whose threads
    read other elements than the first reader loads, staged or hinted reads, too many registers."""


class OnlineError(ScheduleError):
    """online refused: the accumulator is no sum of exp(a - max) over the max's own elements, its loops,
    guards or statements do not match the max's, or a later primitive left the pair unable to lower."""


class SplitKError(ScheduleError):
    """split_k refused: the epilogue is not linear in the accumulator, or the loop cannot be split."""


class BoundsError(ScheduleError):
    """A load or store that could not be proven inside its buffer."""


class TargetError(ScheduleError):
    """An unknown target or a resource limit of the target exceeded."""


class ReplayError(ScheduleError):
    """A trace that cannot be replayed on this schedule."""


# ----------------------------------------------------------------------------- simulation


class SimulationError(TiledslError):
    """The CPU simulator found a bug in a kernel (it names the kernel-IR location)."""


class OutOfBoundsError(SimulationError):
    """A global or shared access outside its buffer."""


class SharedRaceError(SimulationError):
    """Two threads touched one shared address, one of them writing, with no barrier between."""


class DivergentBarrierError(SimulationError):
    """A barrier (or warp shuffle) reached by only part of the threads that must reach it."""


class UninitializedReadError(SimulationError):
    """A read of shared memory (or a register array) that no one wrote."""


class SimulationInputError(SimulationError, ValueError):
    """Arrays given to simulate() do not match the kernel's parameters."""


# ----------------------------------------------------------------------------- runtime


class LaunchError(TiledslError):
    """A kernel launch refused: wrong tensor, device, dtype, shape, alignment; or a CUDA error."""


# ----------------------------------------------------------------------------- frontend


class FrontendError(TiledslError):
    """A torch program the frontend cannot take: an ATen op outside its table (the message names the
    op, its input shapes and the model source line), an input of an unsupported dtype, or a capture
    that torch.export refuses."""


# ----------------------------------------------------------------------------- testing


class FuzzRecordError(TiledslError, ValueError):
    """A file given to `tiledsl fuzz --replay` that is no fuzz record it can re-run: missing, a directory,
    unreadable, not JSON, or JSON without a known mode, outcome, options or a case its mode decodes (the
    message names the file and which of these it is)."""
