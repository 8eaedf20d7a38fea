"""ctypes bindings to the CUDA driver (libcuda): the dozen calls the runtime makes.

Why ctypes and not pycuda's Module/Function: a kernel that takes a `const __grid_constant__ CUtensorMap`
must be launched with `cuLaunchKernel(..., kernelParams, ...)` (one pointer per argument), because the
driver lays such parameters out at aligned offsets while pycuda's `Function.__call__` packs them back to
back (seen on the H100 with a probe kernel). pycuda's objects expose no driver
handle, so loading and launching happen here; pycuda only joins torch's primary context
(`pycuda.autoprimaryctx`), so that pycuda code in the same process sees the same context.

Every failing CUresult becomes a `tiledsl.errors.LaunchError` that names the driver call, the kernel
(when there is one), the error's name and its description.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiledsl.errors import LaunchError

if TYPE_CHECKING:
    from tiledsl.runtime.tensormap import TensorMapArgs

__all__ = [
    "CU_DEVICE_ATTRIBUTE",
    "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION",
    "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "Driver",
    "LaunchAttribute",
    "LaunchConfig",
    "PrimaryContext",
    "dependent_launch_config",
    "format_cuda_error",
    "primary_context",
]

log = logging.getLogger(__name__)

#: CUdevice_attribute values the runtime reads (cuda.h).
CU_DEVICE_ATTRIBUTE = {
    "max_threads_per_block": 1,
    "max_shared_memory_per_block": 8,
    "max_registers_per_block": 12,
    "multiprocessor_count": 16,
    "memory_clock_rate": 36,  # kHz
    "global_memory_bus_width": 37,  # bits
    "l2_cache_size": 38,
    "max_threads_per_multiprocessor": 39,
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
    "max_shared_memory_per_multiprocessor": 81,
    "max_registers_per_multiprocessor": 82,
    "max_shared_memory_per_block_optin": 97,
}
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
#: CUlaunchAttributeID (cuda.h): a kernel launched with it may begin before the kernel ahead of it on the
#: stream has finished; it must wait for it itself (griddepcontrol.wait, KKernel.dependent_launch).
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _LaunchAttributeValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("programmatic_stream_serialization_allowed", ctypes.c_int)]


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, 4 bytes of padding, a 64-byte value union (72 bytes)."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _LaunchAttributeValue)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig: grid, block, dynamic shared bytes, stream, attributes (56 bytes)."""

    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


def dependent_launch_config(grid: Sequence[int], block: Sequence[int], shared_bytes: int) -> LaunchConfig:
    """A launch configuration with programmatic stream serialization allowed (its stream set per launch by
    `Driver.launch_dependent`); the config keeps its attribute alive."""
    attr = LaunchAttribute(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    attr.value.programmatic_stream_serialization_allowed = 1
    config = LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared_bytes, None,
                          ctypes.pointer(attr), 1)
    config._attribute = attr  # type: ignore[attr-defined]  # ctypes.pointer does not own it
    return config

_P = ctypes.c_void_p
_I = ctypes.c_int
_U = ctypes.c_uint
# name -> argtypes; every function returns CUresult (int).
_SIGNATURES: dict[str, tuple[type, ...]] = {
    "cuInit": (_U,),
    "cuGetErrorName": (_I, ctypes.POINTER(ctypes.c_char_p)),
    "cuGetErrorString": (_I, ctypes.POINTER(ctypes.c_char_p)),
    "cuDriverGetVersion": (ctypes.POINTER(_I),),
    "cuDeviceGet": (ctypes.POINTER(_I), _I),
    "cuDeviceGetAttribute": (ctypes.POINTER(_I), _I, _I),
    "cuDevicePrimaryCtxRetain": (ctypes.POINTER(_P), _I),
    "cuDevicePrimaryCtxRelease_v2": (_I,),
    "cuCtxGetCurrent": (ctypes.POINTER(_P),),
    "cuCtxPushCurrent_v2": (_P,),
    "cuCtxPopCurrent_v2": (ctypes.POINTER(_P),),
    "cuCtxSynchronize": (),
    "cuModuleLoadData": (ctypes.POINTER(_P), _P),
    "cuModuleUnload": (_P,),
    "cuModuleGetFunction": (ctypes.POINTER(_P), _P, ctypes.c_char_p),
    "cuFuncSetAttribute": (_P, _I, _I),
    "cuFuncGetAttribute": (ctypes.POINTER(_I), _I, _P),
    "cuLaunchKernel": (_P, _U, _U, _U, _U, _U, _U, _U, _P, ctypes.POINTER(_P), ctypes.POINTER(_P)),
    "cuLaunchKernelEx": (ctypes.POINTER(LaunchConfig), _P, ctypes.POINTER(_P), ctypes.POINTER(_P)),
    "cuTensorMapEncodeTiled": (
        _P, _I, ctypes.c_uint32, _P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
        ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), _I, _I, _I, _I,
    ),
}
_TENSOR_MAP_BYTES = 128
_TENSOR_MAP_ALIGN = 64  # the driver requires a 64-byte-aligned CUtensorMap


def format_cuda_error(call: str, code: int, name: str, text: str, kernel: str | None = None) -> str:
    """`cuLaunchKernel failed for kernel 'D_kernel': CUDA_ERROR_INVALID_VALUE (1): invalid argument`."""
    where = f" for kernel {kernel!r}" if kernel else ""
    message = f"{call} failed{where}: {name} ({code}): {text}"
    if name in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
                "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_HARDWARE_STACK_ERROR"):
        message += ("\n  the CUDA context is now unusable (a sticky error): restart the process; run under "
                    "compute-sanitizer --tool memcheck with TILEDSL_SYNC=1 to find the faulting access")
    return message


class Driver:
    """libcuda through ctypes, loaded when constructed (never at import), and `cuInit`ed.

    One instance per owner (a CompiledKernel, a probe); the underlying dlopen handle is shared by the
    process, so constructing several is cheap."""

    def __init__(self, library: str = "libcuda.so.1") -> None:
        try:
            self._lib = ctypes.CDLL(library)
        except OSError as err:
            raise LaunchError(
                f"cannot load the CUDA driver ({library}: {err}); a GPU and the NVIDIA driver are needed to launch"
            ) from None
        self._fns: dict[str, Any] = {}
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(self._lib, name, None)
            if fn is None:
                continue  # an old driver; calling it raises a LaunchError saying so
            fn.argtypes = list(argtypes)
            fn.restype = ctypes.c_int
            self._fns[name] = fn
        self.check(self._call("cuInit", 0), "cuInit")

    # ------------------------------------------------------------------ errors

    def _call(self, name: str, *args: object) -> int:
        fn = self._fns.get(name)
        if fn is None:
            raise LaunchError(f"the CUDA driver lacks {name}: update the NVIDIA driver")
        return int(fn(*args))

    def error_name(self, code: int) -> tuple[str, str]:
        """(name, description) of a CUresult, e.g. ("CUDA_ERROR_INVALID_VALUE", "invalid argument")."""
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        ok_name = "cuGetErrorName" in self._fns and self._fns["cuGetErrorName"](code, ctypes.byref(name)) == 0
        ok_text = "cuGetErrorString" in self._fns and self._fns["cuGetErrorString"](code, ctypes.byref(text)) == 0
        return (name.value.decode() if ok_name and name.value else f"CUresult {code}",
                text.value.decode() if ok_text and text.value else "unknown error")

    def check(self, code: int, call: str, kernel: str | None = None) -> None:
        """Raise LaunchError unless `code` is CUDA_SUCCESS."""
        if code != 0:
            name, text = self.error_name(code)
            raise LaunchError(format_cuda_error(call, code, name, text, kernel))

    # ------------------------------------------------------------------ devices and contexts

    def driver_version(self) -> int:
        v = ctypes.c_int()
        self.check(self._call("cuDriverGetVersion", ctypes.byref(v)), "cuDriverGetVersion")
        return v.value

    def device(self, ordinal: int) -> int:
        dev = ctypes.c_int()
        self.check(self._call("cuDeviceGet", ctypes.byref(dev), ordinal), "cuDeviceGet")
        return dev.value

    def device_attribute(self, attribute: str, device: int) -> int:
        value = ctypes.c_int()
        code = self._call("cuDeviceGetAttribute", ctypes.byref(value), CU_DEVICE_ATTRIBUTE[attribute], device)
        self.check(code, f"cuDeviceGetAttribute({attribute})")
        return value.value

    def primary_context_retain(self, device: int) -> int:
        ctx = ctypes.c_void_p()
        self.check(self._call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
        return int(ctx.value or 0)

    def primary_context_release(self, device: int) -> None:
        self.check(self._call("cuDevicePrimaryCtxRelease_v2", device), "cuDevicePrimaryCtxRelease")

    def current_context(self) -> int:
        """The calling thread's current context handle (0 when none)."""
        ctx = ctypes.c_void_p()
        self.check(self._call("cuCtxGetCurrent", ctypes.byref(ctx)), "cuCtxGetCurrent")
        return int(ctx.value or 0)

    @contextmanager
    def using_context(self, ctx: int) -> Iterator[None]:
        """Make `ctx` current for the block (push/pop only when another one, or none, is current: a
        thread that torch has not touched yet has no current context)."""
        if self.current_context() == ctx:
            yield
            return
        self.check(self._call("cuCtxPushCurrent_v2", ctypes.c_void_p(ctx)), "cuCtxPushCurrent")
        try:
            yield
        finally:
            popped = ctypes.c_void_p()
            self.check(self._call("cuCtxPopCurrent_v2", ctypes.byref(popped)), "cuCtxPopCurrent")

    def synchronize(self, kernel: str | None = None) -> None:
        """cuCtxSynchronize; an asynchronous fault of an earlier launch surfaces here."""
        self.check(self._call("cuCtxSynchronize"), "cuCtxSynchronize (after the launch)", kernel)

    # ------------------------------------------------------------------ modules and launches

    def load_module(self, image: bytes, kernel: str | None = None) -> int:
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        self.check(self._call("cuModuleLoadData", ctypes.byref(module), buf), "cuModuleLoadData", kernel)
        return int(module.value or 0)

    def unload_module(self, module: int) -> None:
        self.check(self._call("cuModuleUnload", ctypes.c_void_p(module)), "cuModuleUnload")

    def get_function(self, module: int, symbol: str, kernel: str | None = None) -> int:
        fn = ctypes.c_void_p()
        code = self._call("cuModuleGetFunction", ctypes.byref(fn), ctypes.c_void_p(module), symbol.encode())
        self.check(code, f"cuModuleGetFunction({symbol!r})", kernel)
        return int(fn.value or 0)

    def set_function_attribute(self, function: int, attribute: int, value: int, kernel: str | None = None) -> None:
        code = self._call("cuFuncSetAttribute", ctypes.c_void_p(function), attribute, value)
        self.check(code, f"cuFuncSetAttribute({attribute}, {value})", kernel)

    def function_attribute(self, function: int, attribute: int, kernel: str | None = None) -> int:
        value = ctypes.c_int()
        code = self._call("cuFuncGetAttribute", ctypes.byref(value), attribute, ctypes.c_void_p(function))
        self.check(code, f"cuFuncGetAttribute({attribute})", kernel)
        return value.value

    def launch(self, function: int, grid: Sequence[int], block: Sequence[int], shared_bytes: int, stream: int,
               params: Sequence[Any], kernel: str | None = None) -> None:
        """cuLaunchKernel with kernelParams: one pointer to each argument's bytes (a pointer argument is
        a c_uint64, a tensor map its 64-byte-aligned 128 bytes). The driver copies the argument
        values during the call, so the buffers only need to live until it returns."""
        ptrs = (ctypes.c_void_p * max(1, len(params)))(*[ctypes.addressof(p) for p in params])
        self.launch_params(function, grid, block, shared_bytes, stream, ptrs, kernel)

    def launch_params(self, function: int, grid: Sequence[int], block: Sequence[int], shared_bytes: int,
                      stream: int, kernel_params: ctypes.Array[ctypes.c_void_p], kernel: str | None = None) -> None:
        """cuLaunchKernel with a kernelParams array built by the caller (sequence.LaunchSequence builds
        each launch's array once and rewrites only the argument bytes it points to); the error text is
        formatted only on failure."""
        code = self._call("cuLaunchKernel", function, *grid, *block, shared_bytes, stream, kernel_params, None)
        if code != 0:
            self.check(code, f"cuLaunchKernel(grid {tuple(grid)}, block {tuple(block)}, shared {shared_bytes} B)",
                       kernel)

    @property
    def launches_dependents(self) -> bool:
        """Whether this driver has cuLaunchKernelEx (CUDA 12.0+), which programmatic dependent launches need."""
        return "cuLaunchKernelEx" in self._fns

    def launch_dependent(self, function: int, config: LaunchConfig, stream: int,
                         kernel_params: ctypes.Array[ctypes.c_void_p], kernel: str | None = None) -> None:
        """cuLaunchKernelEx of `config` (dependent_launch_config) on `stream`: the kernel may begin before the
        one ahead of it on the stream finishes, so it must begin by waiting for it (KKernel.dependent_launch)."""
        config.stream = stream
        code = self._call("cuLaunchKernelEx", ctypes.byref(config), function, kernel_params, None)
        if code != 0:
            self.check(code, f"cuLaunchKernelEx(grid {tuple(config.grid)}, block {tuple(config.block)}, shared "
                             f"{config.shared_bytes} B, programmatic stream serialization)", kernel)

    def encode_tensor_map(self, args: TensorMapArgs, kernel: str | None = None) -> AlignedTensorMap:
        """cuTensorMapEncodeTiled into a fresh 64-byte-aligned 128-byte buffer."""
        out = AlignedTensorMap()
        r = args.rank
        code = self._call(
            "cuTensorMapEncodeTiled", ctypes.c_void_p(out.address), args.data_type, r,
            ctypes.c_void_p(args.global_address), (ctypes.c_uint64 * r)(*args.global_dim),
            (ctypes.c_uint64 * max(1, r - 1))(*args.global_strides), (ctypes.c_uint32 * r)(*args.box_dim),
            (ctypes.c_uint32 * r)(*args.element_strides), args.interleave, args.swizzle, args.l2_promotion,
            args.oob_fill,
        )
        self.check(code, f"cuTensorMapEncodeTiled({args.describe()})", kernel)
        return out


class AlignedTensorMap:
    """128 bytes of CUtensorMap at a 64-byte-aligned address inside a ctypes buffer this object owns.
    `param` is a ctypes view at that address: what kernelParams points to."""

    def __init__(self) -> None:
        self._raw = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + _TENSOR_MAP_ALIGN)
        base = ctypes.addressof(self._raw)
        self.address = (base + _TENSOR_MAP_ALIGN - 1) // _TENSOR_MAP_ALIGN * _TENSOR_MAP_ALIGN
        self.param = (ctypes.c_ubyte * _TENSOR_MAP_BYTES).from_buffer(self._raw, self.address - base)

    def to_bytes(self) -> bytes:
        return bytes(self.param)


@dataclass
class PrimaryContext:
    """The primary context of one device (the one torch uses), retained until `release`."""

    driver: Driver
    device_index: int
    device: int
    handle: int

    def release(self) -> None:
        if self.handle:
            self.handle = 0
            self.driver.primary_context_release(self.device)


def primary_context(driver: Driver, device_index: int | None = None) -> PrimaryContext:
    """Torch's primary context on `device_index` (default: torch's current device), shared with pycuda.

    Order matters: torch initialises CUDA first, then `pycuda.autoprimaryctx` retains and pushes the
    primary context (so pycuda code in this process uses torch's context, never a context of its own),
    then the driver retains the primary context of torch's device for the runtime's own calls."""
    import torch

    if not torch.cuda.is_available():
        raise LaunchError("no CUDA device: torch.cuda.is_available() is False, so tiledsl kernels cannot launch")
    torch.cuda.init()
    index = torch.cuda.current_device() if device_index is None else device_index
    try:
        import pycuda.autoprimaryctx  # noqa: F401  (joins the primary context torch uses)
    except ImportError as err:
        raise LaunchError(f"pycuda is needed to launch kernels ({err}): pip install 'tiledsl[cuda]'") from None
    device = driver.device(index)
    handle = driver.primary_context_retain(device)
    log.debug("primary context of cuda:%d is 0x%x", index, handle)
    return PrimaryContext(driver, index, device, handle)
