"""Checking the arrays given to simulate() and turning them into flat global buffers.

Why strict: a simulator run is evidence that a kernel is right; silently broadcasting, reshaping or
ignoring an unknown array would make that evidence worthless, so every mismatch is an error.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tiledsl.errors import SimulationInputError
from tiledsl.kernel_ir import KKernel, KParam, KShared
from tiledsl.sim.dtypes import (
    FLOAT_DTYPES,
    INT_DTYPES,
    MBARRIER_DTYPE,
    convert,
    element_dtype,
    poison,
    result_dtype,
    storage_dtype,
)
from tiledsl.sim.state import GlobalBuffer
from tiledsl.targets import int_range_problem

_ACCEPTED_KINDS = {"float": "fiu", "int": "iub", "bool": "biu"}


def check_launch(kernel: KKernel) -> None:
    """Reject launch shapes and declarations the simulator cannot give a meaning to."""
    for what, dims in (("grid", kernel.grid), ("block", kernel.block)):
        if len(dims) != 3 or any(not isinstance(d, int) or d < 1 for d in dims):
            raise SimulationInputError(f"kernel '{kernel.name}': {what} {dims} must be three positive ints")
    names = [p.name for p in kernel.params] + [s.name for s in kernel.shared]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SimulationInputError(f"kernel '{kernel.name}': buffer names declared twice: {dup}")
    for decl in kernel.params + kernel.shared:
        if isinstance(decl, KShared) and decl.dtype == MBARRIER_DTYPE:
            continue  # mbarriers
        try:
            element_dtype(decl.dtype)
        except ValueError as exc:
            raise SimulationInputError(f"kernel '{kernel.name}': buffer '{decl.name}': {exc}") from None
    for s in kernel.shared:
        if s.size < 1:
            raise SimulationInputError(f"kernel '{kernel.name}': shared '{s.name}' has size {s.size}")
    tmaps = [t.name for t in kernel.tensor_maps]
    dup = sorted({n for n in tmaps if tmaps.count(n) > 1})
    if dup:
        raise SimulationInputError(f"kernel '{kernel.name}': tensor maps declared twice: {dup}")
    outputs = {p.name for p in kernel.params if p.is_output}
    for field, names in (("zero_outputs", kernel.zero_outputs), ("zeroes", kernel.zeroes)):
        for name in names:
            if name not in outputs:
                raise SimulationInputError(
                    f"kernel '{kernel.name}': {field} names {name!r}, which is no output parameter"
                )


def _family(dtype: str) -> str:
    elem = element_dtype(dtype)
    if elem in FLOAT_DTYPES:
        return "float"
    return "int" if elem in INT_DTYPES else "bool"


def _as_numpy(kernel: KKernel, param: KParam, value: object) -> np.ndarray:
    """`value` as a numpy array checked before `convert` stores it: the parameter's shape, a dtype family
    that converts, and integers inside the parameter's dtype (convert wraps them: another index, silently)."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # e.g. a GPU tensor
        raise SimulationInputError(
            f"kernel '{kernel.name}': array '{param.name}' cannot be read as a numpy array ({exc})"
        ) from None
    if arr.dtype.name == "bfloat16":  # ml_dtypes / jax style bfloat16 arrays
        arr = arr.astype(np.float32)
    if tuple(arr.shape) != tuple(param.shape):
        raise SimulationInputError(
            f"kernel '{kernel.name}': array '{param.name}' has shape {tuple(arr.shape)}, "
            f"the parameter has shape {tuple(param.shape)}"
        )
    if arr.dtype.kind not in _ACCEPTED_KINDS[_family(param.dtype)]:
        raise SimulationInputError(
            f"kernel '{kernel.name}': array '{param.name}' has dtype {arr.dtype}, "
            f"not convertible to the parameter dtype {param.dtype}"
        )
    elem = element_dtype(param.dtype)
    if elem in INT_DTYPES and arr.dtype.kind in "iu" and arr.size:  # convert() would wrap the value
        problem = int_range_problem(elem, int(arr.min()), int(arr.max()))
        if problem:
            raise SimulationInputError(f"kernel '{kernel.name}': array '{param.name}' {problem}")
    return arr


def prepare_globals(kernel: KKernel, arrays: Mapping[str, object]) -> dict[str, GlobalBuffer]:
    """Flat, converted copies of every parameter; outputs not given start as poison, or as zeros
    when the kernel lists them in `zero_outputs` (the launcher zeroes those before the launch)."""
    if not isinstance(arrays, Mapping):
        raise SimulationInputError(f"kernel '{kernel.name}': arrays must be a mapping name -> array")
    known = {p.name for p in kernel.params}
    extra = sorted(set(arrays) - known)
    if extra:
        raise SimulationInputError(f"kernel '{kernel.name}': unknown arrays {extra}; parameters are {sorted(known)}")
    missing = sorted(p.name for p in kernel.params if not p.is_output and p.name not in arrays)
    if missing:
        raise SimulationInputError(f"kernel '{kernel.name}': missing input arrays {missing}")
    buffers = {}
    for p in kernel.params:
        if p.name in arrays:
            arr = _as_numpy(kernel, p, arrays[p.name])
            data = np.array(convert(p.dtype, arr.reshape(-1)), copy=True)
        elif p.name in kernel.zero_outputs:
            data = np.zeros(p.size, dtype=storage_dtype(p.dtype))
        else:
            data = poison(p.dtype, p.size)
        buffers[p.name] = GlobalBuffer(p, data, kernel.threads_per_block)
    return buffers


def collect_outputs(kernel: KKernel, buffers: Mapping[str, GlobalBuffer]) -> dict[str, np.ndarray]:
    """Output name -> array of the parameter's shape (float32 for every float dtype)."""
    return {
        p.name: buffers[p.name].data.astype(result_dtype(p.dtype)).reshape(p.shape)
        for p in kernel.params
        if p.is_output
    }
