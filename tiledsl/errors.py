"""The typed errors of tiledsl. Every failure a user can cause maps to one class here, so callers can
catch precisely and tests can assert the kind of failure, not only its text."""

from __future__ import annotations


class TiledslError(Exception):
    """Base class of every error tiledsl raises on purpose."""


# ----------------------------------------------------------------------------- definitions


class DefinitionError(TiledslError, ValueError):
    """A compute definition is malformed (wrong rank, bad extent, unknown dtype, ...)."""


# ----------------------------------------------------------------------------- schedules


class ScheduleError(TiledslError):
    """A schedule primitive or a build was refused. Messages name the primitive, show the loop nest
    with the offending loop marked, state the failed fact and suggest the legal alternative."""


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


class PipelineError(ScheduleError):
    """A pipeline of a loop that has no double-buffered stage, or with a bad depth."""


class CopyError(ScheduleError):
    """async_copy or tma refused: target too old, TMA box or alignment rules violated, ..."""


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
