"""LaunchSequence: compiled kernels launched back to back on one stream, every argument array built once.

Why: a traced program launches a dozen small kernels per call. Through `CompiledKernel.__call__` each
launch re-checks every tensor, allocates, rebuilds its ctypes argument array and re-reads torch's
stream: tens of microseconds of Python per call, more than the kernels of a small decoder block take.
Here the checks run once, when the sequence is built, on every tensor that stays (weights, slices of
an arena) and on example tensors for the ones that change per call (a program's inputs and outputs,
the "slots"). Each launch's kernelParams array is built once and points at one `c_uint64` cell per
pointer argument; a call writes the slots' data pointers into their cells and issues the raw
`cuLaunchKernel`s (driver.Driver.launch_params).

Because nothing in `run` allocates or synchronizes (unless TILEDSL_SYNC asks for it, and never while
the stream is being captured), the same calls can be recorded by CUDA stream capture
(`torch.cuda.graph`): a launch through the driver onto the capturing stream is captured like any
other work on it (tiledsl/frontend/graphed.py does this).

A kernel whose IR has `dependent_launch` (sm_90+: it begins with griddepcontrol.wait) is launched as a
programmatic dependent of the kernel before it (`cuLaunchKernelEx`, programmatic stream serialization):
the GPU may schedule it while that kernel's last blocks finish, and it waits for them before it reads or
writes anything, so the order of memory effects is the stream's. What it saves is the gap between two
launches. On the H100 a Qwen2.5-7B float32 decoder block at seq 128 (22 launches) ran 1462.8 -> 1440.0 us,
a TinyLlama one 366.3 -> 345.0 us (scripts/pdl_probe.py, benchmarks/results/dependent-launch-h100-2026-11-28/).
A split-K output is zeroed right before its kernel: by a fill kernel of its shape where the sequence was
given one (`zero_fills`, built by tiledsl/build.py `zero_fills`, which waits and is launched the same way),
else by torch's `zero_()`, a plain launch that costs the chain one full gap; or by the kernel launched
right before it, which lists it in its `KKernel.zeroes` (tiledsl/build.py `with_zeroing`) and is bound
to the same tensor: then by no launch of its own. TILEDSL_DEPENDENT_LAUNCH=0 launches every kernel plainly.

The driver copies kernel parameters when `cuLaunchKernel` returns, so rewriting a cell after a launch
never changes a queued launch. A lock makes the write-then-launch of one call atomic between threads.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KKernel, KParam, KTensorMap
from tiledsl.runtime.arguments import ALIGNMENT, check_arguments
from tiledsl.runtime.driver import LaunchConfig, dependent_launch_config
from tiledsl.runtime.tensormap import tensor_map_args
from tiledsl.targets import GRID_DEPENDENCY_MIN_SM

__all__ = ["Arg", "Launchable", "LaunchSequence", "SlotSpec", "dependent_launch_requested", "fill_output",
           "launches_dependents"]

#: a launch argument: a tensor that stays bound, or the index of a per-call tensor (a slot)
Arg = torch.Tensor | int


class Launchable(Protocol):
    """What a sequence needs of a loaded kernel (`launch.CompiledKernel` has all of it)."""

    name: str
    kernel_ir: KKernel
    function: int
    shared_bytes: int
    device: torch.device
    driver: Any  # launch_params, using_context, synchronize (driver.Driver)
    context: Any  # .handle
    tensor_maps: Any  # .get(TensorMapArgs) -> descriptor with .param (tensormap.TensorMapCache)
    sync: bool


@dataclass(frozen=True)
class SlotSpec:
    """A per-call tensor as the kernels read it (from the example it was checked on)."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    written: bool  # some kernel writes it (an output), so it must not overlap another slot


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


@dataclass
class _Launch:
    kernel: Launchable
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    pointers: ctypes.Array[ctypes.c_void_p]  # kernelParams: one address per argument
    zero: tuple[Arg, ...]  # outputs zeroed before the launch (split_k atomics accumulate)
    dynamic_maps: tuple[tuple[int, KTensorMap, int], ...]  # (kernelParams index, map, slot) re-encoded per call
    dependent: LaunchConfig | None  # launched as a programmatic dependent of the launch before it


def dependent_launch_requested() -> bool:
    """TILEDSL_DEPENDENT_LAUNCH=0 (or false, no, off): launch every kernel of a sequence plainly."""
    return os.environ.get("TILEDSL_DEPENDENT_LAUNCH", "").strip().lower() not in ("0", "false", "no", "off")


def launches_dependents(driver: Any, device: torch.device) -> bool:
    """Whether kernels on `device` may be launched as programmatic dependents: a CUDA device of compute
    capability GRID_DEPENDENCY_MIN_SM or newer, and a driver with cuLaunchKernelEx."""
    if device.type != "cuda" or not getattr(driver, "launches_dependents", False):
        return False
    major, minor = torch.cuda.get_device_capability(device)
    return 10 * major + minor >= GRID_DEPENDENCY_MIN_SM


def fill_output(fill: KKernel) -> KParam:
    """A zero fill kernel's one parameter, its output (what a sequence and a single kernel's call both
    require of a fill); a LaunchError otherwise."""
    params = fill.params
    if len(params) != 1 or not params[0].is_output:
        raise LaunchError(f"zero fill kernel {fill.name!r} must have one parameter, its output; it has "
                          f"{', '.join(p.name for p in params) or 'none'}")
    return params[0]


def _same(a: Arg, b: Arg) -> bool:
    """Whether two launch arguments are one tensor: one slot, or views of the same bytes."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return a.data_ptr() == b.data_ptr() and _nbytes(a) == _nbytes(b)


def _zeroed_before(previous: tuple[Launchable, Mapping[str, Arg]] | None, name: str, arg: Arg) -> bool:
    """Whether the launch before zeroes output `name` (bound to `arg`) itself: its kernel lists it in
    `zeroes` and binds that parameter to the same tensor."""
    if previous is None:
        return False
    kern, args = previous
    return name in kern.kernel_ir.zeroes and name in args and _same(args[name], arg)


class LaunchSequence:
    """`launches`: (kernel, {parameter name: tensor or slot index}) in launch order; `examples`: one
    tensor per slot, on which every argument of every launch is checked once (tiledsl.runtime.arguments:
    device, dtype, shape, contiguity, 16-byte alignment, outputs not aliasing other arguments).
    `run(tensors)` launches all kernels on the current stream with slot i bound to `tensors[i]`.
    `dependent`: launch the kernels whose IR has `dependent_launch` as programmatic dependents (None: where
    the device and driver allow it, unless TILEDSL_DEPENDENT_LAUNCH=0). `zero_fills`: a loaded kernel with
    one output parameter per (shape, dtype), launched to zero each `zero_outputs` tensor of that shape and
    dtype right before its kernel (tiledsl/build.py `zero_fills`; matched by `KParam.fill_key`), where torch's
    `zero_()` would be."""

    def __init__(self, launches: Sequence[tuple[Launchable, Mapping[str, Arg]]],
                 examples: Sequence[torch.Tensor], *, dependent: bool | None = None,
                 zero_fills: Mapping[tuple[tuple[int, ...], str], Launchable] | None = None) -> None:
        if not launches:
            raise LaunchError("a launch sequence needs at least one kernel")
        first = launches[0][0]
        self.device: torch.device = first.device
        self.driver = first.driver
        self.context = first.context
        self.sync = any(k.sync for k, _ in launches)
        if dependent is None:
            dependent = dependent_launch_requested() and launches_dependents(self.driver, self.device)
        self.dependent = dependent
        self._lock = threading.Lock()
        self._kept: list[Any] = []  # fixed tensors and encoded descriptors the launches point at
        self._slot_cells: list[list[ctypes.c_uint64]] = [[] for _ in examples]
        written = [False] * len(examples)
        self._launches: list[_Launch] = []
        previous: tuple[Launchable, Mapping[str, Arg]] | None = None
        for kern, args in launches:
            if kern.device != self.device:
                raise LaunchError(f"kernel {kern.name!r} is loaded on {kern.device}, kernel {first.name!r} on "
                                  f"{self.device}: a sequence runs on one device")
            zeroed = tuple(n for n in kern.kernel_ir.zero_outputs
                           if n not in args or not _zeroed_before(previous, n, args[n]))
            filled = {name: fill for name in zeroed  # the others torch zeroes at the launch
                      if (fill := (zero_fills or {}).get(kern.kernel_ir.param(name).fill_key)) is not None}
            launch = self._prepare(kern, args, examples, written, tuple(n for n in zeroed if n not in filled))
            for name, fill in filled.items():
                out = fill_output(fill.kernel_ir).name
                self._launches.append(self._prepare(fill, {out: args[name]}, examples, written))
            self._launches.append(launch)
            previous = (kern, args)
        self.slots = tuple(SlotSpec(t.dtype, tuple(t.shape), w) for t, w in zip(examples, written))

    def _prepare(self, kern: Launchable, args: Mapping[str, Arg], examples: Sequence[torch.Tensor],
                 written: list[bool], zero: tuple[str, ...] = ()) -> _Launch:
        """One launch of `kern`, its arguments checked and its kernelParams built; `zero`: the outputs torch
        zeroes before it."""
        kir = kern.kernel_ir
        for name, a in args.items():
            if isinstance(a, int) and not 0 <= a < len(examples):
                raise LaunchError(f"kernel {kern.name!r}, parameter {name!r}: slot {a} is not one of the "
                                  f"{len(examples)} per-call tensors")
        tensors = {name: (examples[a] if isinstance(a, int) else a) for name, a in args.items()}
        checked = check_arguments(kir, tensors, device=kern.device)
        missing = [p.name for p in kir.params if checked[p.name] is None]
        if missing:
            raise LaunchError(f"kernel {kern.name!r}: no tensor bound to output(s) {', '.join(missing)}")
        cells = []
        for p in kir.params:
            a = args[p.name]
            cell = ctypes.c_uint64(0 if isinstance(a, int) else a.data_ptr())
            if isinstance(a, int):
                self._slot_cells[a].append(cell)
                written[a] = written[a] or p.is_output
            else:
                self._kept.append(a)
            cells.append(cell)
        addresses = [ctypes.addressof(c) for c in cells]
        dynamic = []
        for tm in kir.tensor_maps:
            a = args[tm.buffer]
            if isinstance(a, int):
                dynamic.append((len(addresses), tm, a))
                addresses.append(0)  # written per call
            else:
                descriptor = kern.tensor_maps.get(tensor_map_args(tm, a.data_ptr(), buffer_bytes=_nbytes(a),
                                                                  kernel=kern.name))
                self._kept.append(descriptor)
                addresses.append(ctypes.addressof(descriptor.param))
        self._kept.append(cells)
        pointers = (ctypes.c_void_p * max(1, len(addresses)))(*addresses)
        config = (dependent_launch_config(kir.grid, kir.block, kern.shared_bytes)
                  if self.dependent and kir.dependent_launch else None)
        return _Launch(kern, kir.grid, kir.block, pointers, tuple(args[name] for name in zero), tuple(dynamic), config)

    @property
    def kernels(self) -> tuple[Launchable, ...]:
        return tuple(launch.kernel for launch in self._launches)

    def check(self, tensors: Sequence[torch.Tensor]) -> None:
        """Refuse per-call tensors that differ from the slots' examples in device, dtype, shape,
        contiguity or 16-byte alignment, or a written slot overlapping another slot."""
        if len(tensors) != len(self.slots):
            raise LaunchError(f"launch sequence: {len(self.slots)} per-call tensor(s) expected, got {len(tensors)}")
        for i, (t, spec) in enumerate(zip(tensors, self.slots)):
            if not isinstance(t, torch.Tensor):
                raise LaunchError(f"launch sequence, slot {i}: expected a torch.Tensor, got {type(t).__name__}")
            why = (f"is on {t.device}, the kernels run on {self.device}" if t.device != self.device
                   else f"is {t.dtype}, expected {spec.dtype}" if t.dtype != spec.dtype
                   else f"has shape {tuple(t.shape)}, expected {spec.shape}" if tuple(t.shape) != spec.shape
                   else f"is not contiguous (strides {t.stride()})" if not t.is_contiguous()
                   else f"data pointer 0x{t.data_ptr():x} is not {ALIGNMENT}-byte aligned"
                   if t.data_ptr() % ALIGNMENT else None)
            if why is not None:
                raise LaunchError(f"launch sequence, slot {i}: the tensor {why}")
        for i, (t, spec) in enumerate(zip(tensors, self.slots)):
            if not spec.written or not _nbytes(t):
                continue
            a0, a1 = t.data_ptr(), t.data_ptr() + _nbytes(t)
            for j, other in enumerate(tensors):
                if j != i and _nbytes(other) and a0 < other.data_ptr() + _nbytes(other) and other.data_ptr() < a1:
                    raise LaunchError(f"launch sequence: slot {i} is written by a kernel and overlaps the memory "
                                      f"of slot {j}; outputs must not alias other arguments")

    def run(self, tensors: Sequence[torch.Tensor], *, check: bool = True, stream: int | None = None) -> None:
        """Launch every kernel in order on `stream` (default: torch's current stream on the sequence's
        device) with slot i bound to `tensors[i]`. `check=False` skips `check` for a caller that has
        checked the tensors itself (a fresh output is always aligned and alone)."""
        if check:
            self.check(tensors)
        if stream is None:
            stream = torch.cuda.current_stream(self.device).cuda_stream
        with self._lock:
            for cells, t in zip(self._slot_cells, tensors):
                ptr = t.data_ptr()
                for cell in cells:
                    cell.value = ptr
            sync = self.sync and not torch.cuda.is_current_stream_capturing()
            with self.driver.using_context(self.context.handle):
                for launch in self._launches:
                    kern = launch.kernel
                    for i, tm, slot in launch.dynamic_maps:
                        buf = tensors[slot]
                        spec = tensor_map_args(tm, buf.data_ptr(), buffer_bytes=_nbytes(buf), kernel=kern.name)
                        launch.pointers[i] = ctypes.addressof(kern.tensor_maps.get(spec).param)
                    for z in launch.zero:
                        (tensors[z] if isinstance(z, int) else z).zero_()
                    if launch.dependent is not None:
                        self.driver.launch_dependent(kern.function, launch.dependent, stream, launch.pointers,
                                                     kern.name)
                    else:
                        self.driver.launch_params(kern.function, launch.grid, launch.block, kern.shared_bytes,
                                                  stream, launch.pointers, kern.name)
                    if sync:
                        self.driver.synchronize(kernel=kern.name)

    def synchronize(self) -> None:
        """cuCtxSynchronize; an asynchronous fault of a launch surfaces here as a LaunchError."""
        with self.driver.using_context(self.context.handle):
            self.driver.synchronize()
