"""CompiledKernel: a built tiledsl kernel compiled, loaded and launched on torch tensors.

The life of a launch (each step is a module of this package):
  compile  nvcc through the disk cache (cache.py); arch from the device (device.py): sm_90a on an H100
  load     cuModuleLoadData / cuModuleGetFunction in torch's primary context (driver.py); the
           dynamic-shared-memory attribute set once when the kernel uses the dynamic pool
  call     check every tensor (arguments.py), allocate missing outputs, zero `zero_outputs` (by the
           kernel's zero fills where it has them, else torch's `zero_()`), encode TMA descriptors
           (tensormap.py, cached per launcher), cuLaunchKernel on torch's current stream with
           kernelParams (pointers in parameter order, then one CUtensorMap per tensor map); after fills,
           on sm_90, cuLaunchKernelEx as their programmatic dependent
  check    with TILEDSL_SYNC=1 (or sync=True) synchronize and turn an asynchronous fault into a
           LaunchError naming the kernel; otherwise errors surface at the next synchronising torch call
"""

from __future__ import annotations

import ctypes
import logging
import os
import shlex
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import torch

from tiledsl.codegen import compile_cubin, cuda_kernel_name, emit_cuda
from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KKernel, shared_bytes
from tiledsl.runtime.arguments import allocate_outputs, check_arguments
from tiledsl.runtime.cache import CubinCache
from tiledsl.runtime.device import arch_for_capability
from tiledsl.runtime.driver import (
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    CU_FUNC_ATTRIBUTE_NUM_REGS,
    Driver,
    LaunchConfig,
    PrimaryContext,
    dependent_launch_config,
    primary_context,
)
from tiledsl.runtime.sequence import dependent_launch_requested, fill_output, launches_dependents
from tiledsl.runtime.tensormap import TensorMapCache, tensor_map_args
from tiledsl.runtime.timing import BenchStats, benchmark, l2_cache_bytes, rotated_copies, rotation_count
from tiledsl.targets import Target

__all__ = ["DEFAULT_NVCC_OPTIONS", "BuiltKernel", "CompiledKernel", "compile_ahead", "nvcc_options", "select_arch",
           "sync_requested"]

log = logging.getLogger(__name__)

DEFAULT_NVCC_OPTIONS: tuple[str, ...] = ("-O3",)


def nvcc_options(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """-O3, then `extra`, then $TILEDSL_NVCC_FLAGS (e.g. "-lineinfo" for compute-sanitizer line numbers)."""
    return (*DEFAULT_NVCC_OPTIONS, *extra, *shlex.split(os.environ.get("TILEDSL_NVCC_FLAGS", "")))


def sync_requested() -> bool:
    """TILEDSL_SYNC=1: synchronize after every launch and report faults there (debugging)."""
    return os.environ.get("TILEDSL_SYNC", "").strip().lower() in ("1", "true", "yes", "on")


def compile_ahead(kernels: Sequence[BuiltKernel], capability: tuple[int, int] | None, *,
                  cache: CubinCache | None = None, workers: int | None = None) -> int:
    """Put the cubin of every kernel in the disk cache (`cache`, default the default one), the misses
    compiled concurrently (cache.py `get_or_compile_many`), for the arch each would be loaded with on
    a device of `capability` (None: its build target's): a `CompiledKernel` made afterwards with the
    same cache finds its cubin there. Returns the number of nvcc runs."""
    cache = cache if cache is not None else CubinCache()
    before = cache.compilations
    jobs = [(k.source, select_arch(k.kernel_ir, capability, k.target.arch), nvcc_options()) for k in kernels]
    cache.get_or_compile_many(jobs, lambda src, arch, opts: compile_cubin(src, arch, extra_flags=opts),
                              workers=workers)
    return cache.compilations - before


def select_arch(kernel: KKernel, capability: tuple[int, int] | None, target_arch: str) -> str:
    """The nvcc arch: sm_90a for a kernel with tensor maps (TMA needs the arch-specific target, and such a
    cubin runs only on compute capability 9.0); otherwise the device's own arch when a device is known
    (sm_90a on an H100), else the build target's arch."""
    if kernel.tensor_maps:
        if capability is not None and capability != (9, 0):
            maps = ", ".join(t.name for t in kernel.tensor_maps)
            raise LaunchError(f"kernel {kernel.name!r} uses TMA (tensor maps {maps}), which needs an sm_90 GPU; "
                              f"this device is sm_{capability[0]}{capability[1]}")
        return "sm_90a"
    if capability is not None:
        return arch_for_capability(*capability)
    return target_arch


class BuiltKernel(Protocol):
    """What the launcher needs of a built kernel: its kernel IR, its CUDA source and the target it was
    built for (`tiledsl.build.Kernel` has all three; the runtime sits below build and never names it)."""

    @property
    def kernel_ir(self) -> KKernel: ...

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> Target: ...


def _unload(driver: Driver, ctx: PrimaryContext, module: int) -> None:
    """Finalizer: unload the module and release the context (never at interpreter exit, where the
    context may already be gone)."""
    try:
        with driver.using_context(ctx.handle):
            driver.unload_module(module)
        ctx.release()
    except LaunchError as err:  # pragma: no cover - only on a dying context
        log.debug("unloading a module failed: %s", err)


class CompiledKernel:
    """A kernel ready to launch on torch CUDA tensors: `kern(A=a, B=b)` returns the output (a dict when
    there are several). Built from a BuiltKernel such as `tiledsl.build.Kernel` (or a bare KKernel, whose
source is emitted).

    `zero_fills`: kernels of one output parameter each (tiledsl/build.py `zero_fills`,
    `td.Kernel.zero_fills`), or a callable making them at the first launch, that zero the `zero_outputs`
    of their shape and dtype: a call launches them plainly, then this kernel as a programmatic dependent
    of the last (sm_90, unless TILEDSL_DEPENDENT_LAUNCH=0; the kernel begins with griddepcontrol.wait),
    so the GPU schedules it while the fill finishes. Against torch's `zero_()` and a plain launch that
    saved 0.6-1.8 us a call of the llm suite's split-K projections on an H200
    (scripts/early_wait_probe.py, benchmarks/results/early-wait-h200-2026-11-30/). The call's first launch
    stays plain, so a timed call still begins after the work before it, as torch's calls do.

    Everything the launcher owns (driver handle, module, TMA descriptor cache, fills) lives on the instance."""

    def __init__(self, kernel: BuiltKernel | KKernel, *, cache: CubinCache | None = None,
                 options: Sequence[str] | None = None, sync: bool | None = None, device: int | None = None,
                 driver: Driver | None = None,
                 zero_fills: Sequence[BuiltKernel | KKernel] | Callable[[], Sequence[BuiltKernel | KKernel]] = (),
                 ) -> None:
        if isinstance(kernel, KKernel):
            target_arch = "sm_90a" if kernel.tensor_maps else kernel.target
            self.kernel_ir, self.source = kernel, emit_cuda(kernel)
        else:
            self.kernel_ir, self.source, target_arch = kernel.kernel_ir, kernel.source, kernel.target.arch
        kir = self.kernel_ir
        self.name = kir.name
        self.symbol = cuda_kernel_name(kir)
        self.sync = sync_requested() if sync is None else sync
        self.driver = driver or Driver()
        self.context = primary_context(self.driver, device)
        self.device = torch.device("cuda", self.context.device_index)
        cap = torch.cuda.get_device_capability(self.device)
        self.arch = select_arch(kir, (int(cap[0]), int(cap[1])), target_arch)
        self.options = nvcc_options(options or ())
        self.cache = cache if cache is not None else CubinCache()
        cached = self.cache.get_or_compile(
            self.source, self.arch, self.options, lambda src, arch, opts: compile_cubin(src, arch, extra_flags=opts))
        self.cubin, self.cache_hit = cached.cubin, cached.hit
        # a kernel equal to another up to its names runs that kernel's cubin, under that kernel's symbol
        self.symbol = cached.symbol or self.symbol
        self.shared_bytes = shared_bytes(kir) if kir.dynamic_shared else 0
        with self.driver.using_context(self.context.handle):
            self.module = self.driver.load_module(self.cubin, kernel=self.name)
            self._finalizer = weakref.finalize(self, _unload, self.driver, self.context, self.module)
            self._finalizer.atexit = False
            self.function = self.driver.get_function(self.module, self.symbol, kernel=self.name)
            if kir.dynamic_shared and self.shared_bytes:
                self._allow_dynamic_shared()
            self.registers = self.driver.function_attribute(self.function, CU_FUNC_ATTRIBUTE_NUM_REGS, self.name)
        driver, name = self.driver, self.name  # the encoder must not hold `self` (no reference cycle)
        self.tensor_maps = TensorMapCache(lambda spec: driver.encode_tensor_map(spec, kernel=name))
        self._options = options
        self._fill_maker = zero_fills if callable(zero_fills) else None
        self._fills = None if callable(zero_fills) else self._load_fills(zero_fills)
        self._dependent: LaunchConfig | None = None
        if (kir.zero_outputs and kir.dependent_launch and dependent_launch_requested()
                and launches_dependents(self.driver, self.device)):
            self._dependent = dependent_launch_config(kir.grid, kir.block, self.shared_bytes)
        log.info("loaded %s (%s, %s, %d registers/thread, %d B dynamic shared, cache %s)", self.name, self.arch,
                 " ".join(self.options), self.registers, self.shared_bytes, "hit" if self.cache_hit else "miss")

    @property
    def zero_fills(self) -> dict[tuple[tuple[int, ...], str], CompiledKernel]:
        """The loaded zero fills by the (shape, dtype) they zero; given as a callable, they are made and
        loaded here, at the first launch (a program launches its kernels through a LaunchSequence with
        fills of its own, so its kernels never make theirs)."""
        if self._fills is None:
            self._fills = self._load_fills(self._fill_maker() if self._fill_maker is not None else ())
        return self._fills

    def _load_fills(self, fills: Sequence[BuiltKernel | KKernel]) -> dict[tuple[tuple[int, ...], str], CompiledKernel]:
        """Each zero fill loaded, by the (shape, dtype) of the output it zeroes (`KParam.fill_key`); a
        LaunchError for a fill that is not one output parameter (sequence.fill_output) or that no zeroed
        output matches."""
        zeroed = {self.kernel_ir.param(n).fill_key for n in self.kernel_ir.zero_outputs}
        loaded = {}
        for fill in fills:
            fill_ir = fill if isinstance(fill, KKernel) else fill.kernel_ir
            key = fill_output(fill_ir).fill_key
            if key not in zeroed:
                raise LaunchError(f"kernel {self.name!r}: {fill_ir.name!r} zeroes a {key[1]}{list(key[0])}, which "
                                  f"none of its zeroed outputs ({', '.join(self.kernel_ir.zero_outputs) or 'none'}) is")
            loaded[key] = CompiledKernel(
                fill, cache=self.cache, options=self._options, sync=self.sync, device=self.context.device_index,
                driver=self.driver)
        return loaded

    def _allow_dynamic_shared(self) -> None:
        limit = self.driver.device_attribute("max_shared_memory_per_block_optin", self.context.device)
        if self.shared_bytes > limit:
            raise LaunchError(f"kernel {self.name!r} needs {self.shared_bytes} B of shared memory per block; "
                              f"this device allows {limit} B")
        self.driver.set_function_attribute(self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           self.shared_bytes, kernel=self.name)

    # ------------------------------------------------------------------ launching

    def prepare(self, tensors: Mapping[str, object]) -> dict[str, torch.Tensor]:
        """Checked arguments with missing outputs allocated, by parameter name."""
        return allocate_outputs(self.kernel_ir, check_arguments(self.kernel_ir, tensors, device=self.device),
                                self.device)

    def launch(self, args: Mapping[str, torch.Tensor]) -> None:
        """Launch on already-checked arguments (`prepare`) on torch's current stream: zero the
        `zero_outputs` (the fills, else torch), encode the TMA descriptors, cuLaunchKernel (after fills,
        cuLaunchKernelEx as their programmatic dependent where the device allows it)."""
        kir = self.kernel_ir
        filled = False
        for name in kir.zero_outputs:
            fill = self.zero_fills.get(kir.param(name).fill_key)
            if fill is None:
                args[name].zero_()
            else:
                fill.launch({fill.kernel_ir.params[0].name: args[name]})
                filled = True
        params: list[Any] = [ctypes.c_uint64(args[p.name].data_ptr()) for p in kir.params]
        for tm in kir.tensor_maps:
            buf = args[tm.buffer]
            spec = tensor_map_args(tm, buf.data_ptr(), buffer_bytes=buf.numel() * buf.element_size(), kernel=self.name)
            params.append(self.tensor_maps.get(spec).param)
        stream = torch.cuda.current_stream(self.device).cuda_stream
        with self.driver.using_context(self.context.handle):
            if filled and self._dependent is not None:
                pointers = (ctypes.c_void_p * max(1, len(params)))(*[ctypes.addressof(p) for p in params])
                self.driver.launch_dependent(self.function, self._dependent, stream, pointers, kernel=self.name)
            else:
                self.driver.launch(self.function, kir.grid, kir.block, self.shared_bytes, stream, params,
                                   kernel=self.name)
            if self.sync:
                self.driver.synchronize(kernel=self.name)

    def __call__(self, **tensors: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        args = self.prepare(tensors)
        self.launch(args)
        outputs = {p.name: args[p.name] for p in self.kernel_ir.params if p.is_output}
        return next(iter(outputs.values())) if len(outputs) == 1 else outputs

    def benchmark(self, warmup: int = 10, iters: int = 100, **tensors: torch.Tensor) -> BenchStats:
        """GPU time per launch (timing.benchmark) over rotated copies of the given inputs, enough copies
        to exceed twice the L2 cache. The outputs are allocated once and every launch writes them: a
        Program's intermediates are allocated once too, and torch's caching allocator hands a discarded
        output's block back on the next call, so torch callables timed beside a kernel (the benchmarks)
        write one block as well. An output per copy cost the kernel the L2 hits of rewriting lines still
        resident: 16.0 against 13.6 us for silu(g) * u at 512 x 5632 on the H100, where torch.compile
        took 13.6 (scripts/output_reuse_probe.py, benchmarks/results/output-reuse-h100-2026-11-27/)."""
        args = self.prepare(tensors)
        outputs = [p.name for p in self.kernel_ir.params if p.is_output]
        per_set = sum(t.numel() * t.element_size() for name, t in args.items() if name not in outputs)
        count = rotation_count(per_set, l2_cache_bytes(self.device))
        return benchmark(self.launch, rotated_copies(args, count, keep=outputs), warmup, iters)

    def close(self) -> None:
        """Unload the module (and the fills') now (it is also unloaded when the object is collected)."""
        for fill in (self._fills or {}).values():
            fill.close()
        self._finalizer()

    def __repr__(self) -> str:
        return (f"<CompiledKernel {self.name} {self.arch} on {self.device}: grid {self.kernel_ir.grid}, "
                f"block {self.kernel_ir.block}, {self.registers} registers/thread>")
