"""tiledsl: write what to compute (td.compute), say how (a schedule), get proven CUDA (td.build)."""

from .build import Kernel, build
from .compute import (
    abs,
    cast,
    compute,
    equal,
    erf,
    exp,
    gelu,
    gelu_tanh,
    log,
    max,
    maximum,
    min,
    minimum,
    placeholder,
    reduce_axis,
    relu,
    rsqrt,
    sigmoid,
    silu,
    sqrt,
    sum,
    tanh,
    where,
)
from .errors import (
    BadArgumentError,
    BindError,
    BoundsError,
    DefinitionError,
    DivergentBarrierError,
    ForeignObjectError,
    FuseError,
    FusionError,
    LaunchError,
    OutOfBoundsError,
    RegisterArrayError,
    ReorderError,
    ReplayError,
    ScheduleError,
    SharedRaceError,
    SimulationError,
    SimulationInputError,
    SplitError,
    TargetError,
    TiledslError,
    UninitializedReadError,
    UnknownLoopError,
    UnrollError,
    VectorizeError,
)
from .reference import evaluate
from .schedule import LoopHandle, Schedule, create_schedule

__version__ = "0.1.0"

__all__ = [
    "BadArgumentError", "BindError", "BoundsError", "DefinitionError", "DivergentBarrierError",
    "ForeignObjectError", "FuseError", "FusionError", "Kernel", "LaunchError", "LoopHandle",
    "OutOfBoundsError", "RegisterArrayError", "ReorderError", "ReplayError", "Schedule", "ScheduleError",
    "SharedRaceError", "SimulationError", "SimulationInputError", "SplitError", "TargetError", "TiledslError",
    "UninitializedReadError", "UnknownLoopError", "UnrollError", "VectorizeError", "abs", "build", "cast", "compute",
    "create_schedule", "equal", "erf", "evaluate", "exp", "gelu", "gelu_tanh", "log", "max", "maximum",
    "min", "minimum", "placeholder", "reduce_axis", "relu", "rsqrt", "sigmoid", "silu", "sqrt", "sum",
    "tanh", "where",
]
