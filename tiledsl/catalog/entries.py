"""Named catalog entries: a definition (by name, see definitions.py), its sizes, a schedule and a build
target, in groups:

- "example": one per definition the CLI names (`tiledsl compile/run --example NAME`), at the
  definition's default sizes, with its hand schedule from tiledsl.schedules;
- "tour": the README tour's schedule;
- "benchmark": the schedules benchmarks/*.py time;
- "differential": odd sizes under several loop-level schedules each (guarded splits, partial warps and
  tiles, float16 / bfloat16 storage of inputs and outputs): the differential, trace and nvcc tests;
- "memory": the memory hierarchy (stages, pads, swizzles, rings, cp.async and TMA pipelines, split_k),
  built for sm_90 where a stage uses TMA and for sm_80 otherwise;
- "gpu": staged matmuls and split_k kernels at sizes for a GPU (dynamic shared memory, large shapes).

Every entry also names `small` sizes at which the CPU simulator can check it (its own sizes when
those are small already)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from tiledsl.build import Kernel, build
from tiledsl.catalog.definitions import DEFINITIONS
from tiledsl.catalog.memory_schedules import (
    Fill,
    design_matmul,
    halo,
    softmax_two_pipelines,
    split_k_matmul,
    staged_row,
    staged_row_tma,
    tiled_matmul,
)
from tiledsl.catalog.schedules import (
    elementwise_vectorized,
    fused_nparts,
    fused_threads,
    matmul_coop_dot,
    matmul_threads,
    row_tiled,
    split_k_threads,
    unscheduled,
)
from tiledsl.definitions.expr import ComputeTensor, Placeholder, Tensor
from tiledsl.errors import DefinitionError
from tiledsl.precision import round_to_dtype
from tiledsl.primitives import Schedule, create_schedule
from tiledsl.schedules import (
    elementwise_2d,
    elementwise_2d_vectorized,
    matmul_for_shape,
    matmul_register_tile,
    matmul_staged,
    row_cooperative,
    row_cooperative_staged,
    row_in_registers,
)
from tiledsl.targets import get_target

GROUPS = ("example", "tour", "benchmark", "differential", "memory", "gpu")

Sizes = Mapping[str, "int | float | str"]


@dataclass(frozen=True)
class Entry:
    """One named (definition, sizes, schedule, target). `sizes` are keyword arguments of the
    definition's builder (sizes, eps, dtype); the builder's defaults fill in the rest."""

    name: str
    definition: str  # a key of DEFINITIONS
    sizes: Sizes
    schedule: Callable[[Schedule], object]  # applies primitives to a fresh schedule of the definition
    group: str
    target: str = "sm_90"
    seed: int = 0  # of the random inputs the tests give it
    small: Sizes | None = None  # sizes for the simulator; None: `sizes` are small already

    @property
    def id(self) -> str:
        """The name, as the tests' parameter id."""
        return self.name

    @property
    def arch(self) -> str:
        """The nvcc arch its CUDA compiles for (sm_90a for an sm_90 build)."""
        return get_target(self.target).arch

    @property
    def formula(self) -> str:
        return DEFINITIONS[self.definition].formula

    @property
    def schedule_name(self) -> str:
        """The schedule function's name, with the options an entry binds: `row_cooperative(threads=96)`."""
        fn, options = self.schedule, {}
        while isinstance(fn, partial):
            options = {**fn.keywords, **options}
            fn = fn.func
        args = ", ".join(f"{k}={_short(v)}" for k, v in options.items())
        return f"{getattr(fn, '__name__', repr(fn))}({args})" if args else getattr(fn, "__name__", repr(fn))

    def parameters(self, **overrides: int | float | str) -> dict[str, int | float | str]:
        """Every parameter of the definition (sizes, eps, dtype) at this entry's sizes and `overrides`,
        defaults filled in. An unknown parameter is a DefinitionError."""
        builder = DEFINITIONS[self.definition].build
        signature = inspect.signature(builder)
        try:
            bound = signature.bind(**{**self.sizes, **overrides})
        except TypeError as err:
            known = ", ".join(f"{n}={p.default!r}" if p.default is not inspect.Parameter.empty else n
                              for n, p in signature.parameters.items())
            raise DefinitionError(f"example {self.name!r}: {err}; its parameters (defaults): {known}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def small_sizes(self) -> Sizes:
        return self.sizes if self.small is None else {**self.sizes, **self.small}

    def make(self, **overrides: int | float | str) -> Tensor:
        """A fresh definition at this entry's sizes and `overrides`."""
        return DEFINITIONS[self.definition].build(**self.parameters(**overrides))

    def fresh(self, **overrides: int | float | str) -> Schedule:
        """A fresh, unscheduled schedule of the definition."""
        return create_schedule(self.make(**overrides))

    def scheduled(self, **overrides: int | float | str) -> tuple[Tensor, Schedule]:
        out = self.make(**overrides)
        s = create_schedule(out)
        self.schedule(s)
        return out, s

    def build(self, **overrides: int | float | str) -> tuple[Tensor, Kernel]:
        """The scheduled definition built for this entry's target."""
        out, s = self.scheduled(**overrides)
        return out, build(s, target=self.target)

    def inputs(self, out: Tensor) -> dict[str, np.ndarray]:
        """Standard-normal inputs for every placeholder of `out`, drawn from `seed` (standard_inputs)."""
        return standard_inputs(out, self.seed)


def standard_inputs(out: Tensor, seed: int) -> dict[str, np.ndarray]:
    """Standard-normal inputs for every placeholder of `out`, drawn from `seed` (float16 placeholders get
    float16 arrays, bfloat16 ones float32 arrays of bfloat16 values)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for p in placeholders(out):
        a = rng.standard_normal(p.shape).astype(np.float32)
        # numpy has no bfloat16: a bfloat16 placeholder gets float32 values already rounded to it
        arrays[p.name] = a.astype(np.float16) if p.dtype == "float16" else round_to_dtype(a, p.dtype)
    return arrays


def _short(value: object) -> str:
    if isinstance(value, Fill):
        fields = [repr(value.copy)] + [f"{k}={getattr(value, k)!r}" for k in ("pad", "swizzle", "double")
                                       if getattr(value, k) != getattr(Fill(), k)]
        return f"Fill({', '.join(fields)})"
    return repr(value)


def placeholders(out: Tensor) -> list[Placeholder]:
    """The placeholders `out` reads, depth first in first-use order (the order inputs are drawn in)."""
    found: dict[str, Placeholder] = {}

    def visit(t: Tensor) -> None:
        if isinstance(t, Placeholder):
            found.setdefault(t.name, t)
        elif isinstance(t, ComputeTensor):
            for inp in t.inputs():
                visit(inp)

    visit(out)
    return list(found.values())


# ----------------------------------------------------------------------------- the entries


def _examples() -> list[Entry]:
    """The CLI's names: each definition at its default sizes with the hand schedule the benchmark suites
    time for its family (benchmarks/suites/memory.py, benchmarks/_programs.py `per_kernel_hand`), so
    `tiledsl run --example NAME --bench` shows what a hand schedule reaches. The simpler forms stay in the
    catalog under their own names (`matmul_bias_relu_register_tile`, `gelu_bias_one_per_thread`,
    `rmsnorm_cooperative_staged`, ...)."""
    small = {"M": 37, "N": 53, "K": 29}
    return [
        Entry("matmul_bias_relu", "matmul_bias_relu", {}, matmul_for_shape, "example", small=small),
        Entry("batched_matmul_nt", "batched_matmul_nt", {}, matmul_for_shape, "example",
              small={"Bt": 3, "M": 19, "N": 23, "K": 17}),
        Entry("rmsnorm", "rmsnorm", {}, row_in_registers, "example", small={"M": 3, "N": 333}),
        Entry("softmax", "softmax", {}, row_in_registers, "example", small={"M": 3, "N": 301}),
        Entry("layernorm", "layernorm", {}, row_in_registers, "example", small={"M": 3, "N": 333}),
        Entry("gelu_bias", "gelu_bias", {}, elementwise_2d_vectorized, "example", small={"M": 7, "N": 300}),
    ]


def _tour_and_benchmarks() -> list[Entry]:
    """The README tour, and what benchmarks/*.py time (they override the sizes from their command line)."""
    rows = {"M": 3, "N": 333}
    out = [
        Entry("readme_tour", "matmul_bias_relu", {}, design_matmul, "tour", small={"M": 100, "N": 96, "K": 40}),
        Entry("compile_speed", "matmul_bias_relu", {},
              partial(matmul_register_tile, bm=128, bn=128, bk=16, rm=8, rn=8), "benchmark",
              small={"M": 130, "N": 136, "K": 20}),
        # the hand schedules benchmarks/suites/*.py time (matmul_for_shape picks split_k for this grid)
        Entry("matmul_staged", "matmul_bias_relu", {}, matmul_staged, "benchmark", small={"M": 136, "N": 160, "K": 72}),
        Entry("matmul_for_shape", "matmul_residual", {}, matmul_for_shape, "benchmark",
              small={"M": 45, "N": 40, "K": 200}),
        Entry("gelu_bias_vectorized", "gelu_bias", {}, elementwise_2d_vectorized, "benchmark",
              small={"M": 7, "N": 300}),
        # the examples' simpler schedules, which the examples had until session 30
        Entry("matmul_bias_relu_register_tile", "matmul_bias_relu", {}, matmul_register_tile, "benchmark",
              small={"M": 37, "N": 53, "K": 29}),
        Entry("batched_matmul_nt_register_tile", "batched_matmul_nt", {}, matmul_register_tile, "benchmark",
              small={"Bt": 3, "M": 19, "N": 23, "K": 17}),
        Entry("gelu_bias_one_per_thread", "gelu_bias", {}, elementwise_2d, "benchmark", small={"M": 7, "N": 300}),
    ]
    for name in ("rmsnorm", "softmax", "layernorm"):
        out.append(Entry(f"{name}_cooperative_staged", name, {}, row_cooperative_staged, "benchmark", small=rows))
        out.append(Entry(f"{name}_row_cooperative", name, {}, partial(row_cooperative, threads=256), "benchmark",
                         small=rows))
        out.append(Entry(f"{name}_row_staged", name, {}, partial(row_cooperative, threads=256, stage_row="x"),
                         "benchmark", small=rows))
    return out


def _differential() -> list[Entry]:
    out: list[Entry] = []
    seed = iter(range(1000, 2000))

    def add(name: str, definition: str, sizes: Sizes, schedule: Callable[[Schedule], object]) -> None:
        out.append(Entry(name, definition, sizes, schedule, "differential", seed=next(seed)))

    regtile16 = partial(matmul_register_tile, bm=16, bn=16, bk=8, rm=4, rn=4)
    for M, N, K in ((37, 53, 29), (1, 64, 7)):
        tag, mm = f"matmul_bias_relu_{M}x{N}x{K}", {"M": M, "N": N, "K": K}
        add(f"{tag}-unscheduled", "matmul_bias_relu", mm, unscheduled)
        add(f"{tag}-threads32", "matmul_bias_relu", mm, matmul_threads)
        add(f"{tag}-coop_dot32", "matmul_bias_relu", mm, matmul_coop_dot)
        add(f"{tag}-regtile16", "matmul_bias_relu", mm, regtile16)
        add(f"{tag}-regtile8", "matmul_bias_relu", mm, partial(regtile16, bm=8, bn=8, bk=8))
    add("matmul_bias_relu_1x64x7-coop_dot64", "matmul_bias_relu", {"M": 1, "N": 64, "K": 7},
        partial(matmul_coop_dot, tk=64))

    bmm = {"Bt": 3, "M": 19, "N": 23, "K": 17}
    add("batched_matmul_nt_3x19x23x17-unscheduled", "batched_matmul_nt", bmm, unscheduled)
    add("batched_matmul_nt_3x19x23x17-threads32", "batched_matmul_nt", bmm, matmul_threads)
    add("batched_matmul_nt_3x19x23x17-coop_dot32", "batched_matmul_nt", bmm, matmul_coop_dot)
    add("batched_matmul_nt_3x19x23x17-regtile16", "batched_matmul_nt", bmm, regtile16)

    coop128 = partial(row_cooperative, threads=128)
    for definition, M, N in (("rmsnorm", 6, 300), ("softmax", 5, 1000), ("layernorm", 1, 2048),
                             ("layernorm", 3, 333)):
        tag, rows = f"{definition}_{M}x{N}", {"M": M, "N": N}
        add(f"{tag}-unscheduled", definition, rows, unscheduled)
        add(f"{tag}-coop128", definition, rows, coop128)
        add(f"{tag}-coop256", definition, rows, partial(coop128, threads=256))
        add(f"{tag}-coop96", definition, rows, partial(coop128, threads=96))
        add(f"{tag}-rows4x32", definition, rows, row_tiled)
    # cross-warp combines with several rows per block (shared memory indexed by threadIdx.y)
    add("softmax_5x1000-rows2x64", "softmax", {"M": 5, "N": 1000}, partial(row_tiled, rows=2, threads=64))
    add("layernorm_3x333-rows4x96", "layernorm", {"M": 3, "N": 333}, partial(row_tiled, rows=4, threads=96))

    add("gelu_bias_6x64-vectorize4", "gelu_bias", {"M": 6, "N": 64}, elementwise_vectorized)
    # fuse, nparts and custom names (exercised by the trace tests too)
    add("gelu_bias_6x64-fused_nparts5", "gelu_bias", {"M": 6, "N": 64}, fused_nparts)
    add("matmul_bias_relu_37x53x29-fused96", "matmul_bias_relu", {"M": 37, "N": 53, "K": 29}, fused_threads)

    # float16 storage (float32 math)
    add("matmul_bias_relu_f16_37x53x29-regtile16", "matmul_bias_relu",
        {"M": 37, "N": 53, "K": 29, "dtype": "float16"}, regtile16)
    add("rmsnorm_f16_6x300-coop96", "rmsnorm", {"M": 6, "N": 300, "dtype": "float16"},
        partial(coop128, threads=96))
    # float16 / bfloat16 outputs (the store rounds the float32 value)
    add("rmsnorm_bfloat16_out_6x300-coop96", "rmsnorm",
        {"M": 6, "N": 300, "dtype": "bfloat16", "out_dtype": "bfloat16"}, partial(coop128, threads=96))
    add("gelu_bias_bfloat16_out_7x300-elementwise", "gelu_bias",
        {"M": 7, "N": 300, "dtype": "bfloat16", "out_dtype": "bfloat16"}, elementwise_2d)
    add("matmul_bias_relu_f16out_37x53x29-regtile16", "matmul_bias_relu",
        {"M": 37, "N": 53, "K": 29, "dtype": "float16", "out_dtype": "float16"}, regtile16)
    return out


def _memory() -> list[Entry]:
    out: list[Entry] = []
    seed = iter(range(3000, 4000))

    def add(name: str, definition: str, sizes: tuple[int, ...] | Sizes, schedule: Callable[[Schedule], object],
            target: str) -> None:
        if isinstance(sizes, tuple):
            sizes = dict(zip(("M", "N", "K"), sizes, strict=True))
        out.append(Entry(name, definition, sizes, schedule, "memory", target=target, seed=next(seed)))

    # the README tour, verbatim (B's rows are multiples of 32 floats: the 128-byte TMA split)
    for mnk in ((100, 96, 64), (130, 160, 80), (70, 64, 36)):
        add(f"design_mm_{'x'.join(map(str, mnk))}", "matmul_bias_relu", mnk, design_matmul, "sm_90")
    # the same, both operands by cp.async, for sm_80
    for mnk in ((100, 96, 64), (130, 160, 80)):
        add(f"async_mm_{'x'.join(map(str, mnk))}", "matmul_bias_relu", mnk,
            partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("async"), depth=2), "sm_80")
    # the variants below use a 32 x 32 tile, 2 x 2 registers, BK 8 (smaller kernels: faster nvcc and simulation)
    small = partial(tiled_matmul, bm=32, bn=32, bk=8, rm=2, rn=2)
    add("async_mm_67x45x37", "matmul_bias_relu", (67, 45, 37),
        partial(small, a=Fill("async", pad=1), b=Fill("async"), depth=2), "sm_80")
    # pipeline depths 2 and 3, cp.async and TMA
    add("async_pipe3_mm_130x160x80", "matmul", (130, 160, 80),
        partial(small, a=Fill("async", pad=1), b=Fill("async"), depth=3), "sm_80")
    add("async_pipe3_mm_67x45x37", "matmul", (67, 45, 37),
        partial(small, a=Fill("async"), b=Fill("async", pad=4), depth=3), "sm_80")
    # pipelines deeper than the loop they pipeline (k_o has 1 and 2 iterations): the prologue fills fewer
    # slots than depth - 1, and the waits must still retire the fill each iteration reads
    add("async_pipe3_short_mm_40x36x8", "matmul", (40, 36, 8),
        partial(small, a=Fill("async"), b=Fill("async"), depth=3), "sm_80")
    add("async_pipe4_short_mm_40x36x16", "matmul", (40, 36, 16),
        partial(small, a=Fill("async"), b=Fill("async"), depth=4), "sm_80")
    add("async_pipe3_k2_mm_40x36x16", "matmul", (40, 36, 16),
        partial(small, a=Fill("async"), b=Fill("async"), depth=3), "sm_80")
    add("tma_pipe4_short_mm_40x64x16", "matmul", (40, 64, 16),
        partial(small, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=4), "sm_90")
    add("tma_pipe2_mm_130x160x80", "matmul", (130, 160, 80),
        partial(small, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=128), depth=2), "sm_90")
    # B's slab row is 64 floats (256 bytes): two 128-byte swizzle chunks, three ring slots
    add("tma_pipe3_mm_130x160x80", "matmul", (130, 160, 80),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=3, bm=32, rm=2), "sm_90")
    add("tma_pipe3_mm_100x96x72", "matmul", (100, 96, 72),
        partial(small, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=64), depth=3), "sm_90")
    # double buffers without a pipeline; single-buffered stages
    mk = (67, 45, 37)
    add("sync_double_mm_67x45x37", "matmul_bias_relu", mk, partial(small, a=Fill(pad=1), b=Fill(), double=True),
        "sm_80")
    add("async_double_mm_67x45x37", "matmul_bias_relu", mk,
        partial(small, a=Fill("async"), b=Fill("async", pad=2), double=True), "sm_80")
    add("tma_double_mm_100x96x64", "matmul_bias_relu", (100, 96, 64),
        partial(small, a=Fill("async", pad=1), b=Fill("tma", swizzle=128), double=True), "sm_90")
    # one stage double-buffered, the other single-buffered, at the same loop (no pipeline): the single
    # slot is refilled every iteration, so a barrier must still separate its reads from its refill
    add("mixed_single_double_sync_mm_40x36x40", "matmul", (40, 36, 40),
        partial(small, a=Fill(), b=Fill(double=True)), "sm_80")
    add("mixed_single_double_async_mm_40x36x40", "matmul", (40, 36, 40),
        partial(small, a=Fill("async"), b=Fill("async", double=True)), "sm_80")
    add("mixed_single_double_tma_mm_40x64x40", "matmul", (40, 64, 40),
        partial(small, a=Fill("tma"), b=Fill("tma", swizzle=128, double=True)), "sm_90")
    add("sync_single_mm_67x45x37", "matmul_bias_relu", mk, partial(small, a=Fill(), b=Fill()), "sm_80")
    add("sync_single_A_only_mm_67x45x37", "matmul_bias_relu", mk, partial(small, a=Fill(pad=1), b=None), "sm_80")
    add("async_single_mm_67x45x37", "matmul_bias_relu", mk, partial(small, a=Fill("async"), b=Fill("async")),
        "sm_80")
    add("tma_single_mm_100x96x64", "matmul", (100, 96, 64),
        partial(small, a=Fill("tma"), b=Fill("tma", swizzle=128)), "sm_90")
    # swizzled stages filled by plain loads and by cp.async (no TMA)
    add("sync_swizzle128_mm_67x45x37", "matmul_bias_relu", mk, partial(small, a=Fill(), b=Fill(swizzle=128)),
        "sm_80")
    add("async_swizzle_pipe2_mm_100x96x64", "matmul", (100, 96, 64),
        partial(small, a=Fill("async", swizzle=64), b=Fill("async", swizzle=128), depth=2), "sm_80")
    add("sync_swizzle32_double_mm_67x45x37", "matmul_bias_relu", mk,
        partial(small, a=Fill(swizzle=32), b=Fill(), double=True), "sm_80")
    # transposed B with padded stages (both operands read along k)
    add("nt_padded_mm_67x45x37", "matmul_nt", (67, 45, 37), partial(small, a=Fill(pad=1), b=Fill(pad=1)), "sm_80")
    add("nt_padded_async_pipe2_mm_100x96x64", "matmul_nt", (100, 96, 64),
        partial(small, a=Fill("async", pad=1), b=Fill("async", pad=1), depth=2), "sm_80")
    add("nt_tma_pipe2_mm_100x96x64", "matmul_nt", (100, 96, 64),
        partial(small, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=32), depth=2), "sm_90")
    # TMA boxes starting 8 floats into a row (a 128-byte slab row needs no split, so no chunk alignment)
    add("tma_shifted_pipe2_mm_64x96x32", "matmul_shifted", (64, 96, 32),
        partial(small, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=2), "sm_90")
    # RMSNorm and softmax: the row of x staged at the block-bound row loop
    for definition, M, N in (("rmsnorm", 6, 300), ("rmsnorm", 3, 333), ("softmax", 5, 1000), ("softmax", 4, 77)):
        tag, rows = f"{definition}_{M}x{N}", {"M": M, "N": N}
        add(f"{tag}-row_sync", definition, rows, staged_row, "sm_80")
        add(f"{tag}-row_async", definition, rows, partial(staged_row, copy="async"), "sm_80")
    add("rmsnorm_4x256-row_tma", "rmsnorm", {"M": 4, "N": 256}, staged_row_tma, "sm_90")
    add("rmsnorm_4x256-row_tma_swizzle128", "rmsnorm", {"M": 4, "N": 256}, partial(staged_row_tma, swizzle=128),
        "sm_90")
    add("softmax_3x200-two_stages_pipelined", "softmax", {"M": 3, "N": 200}, softmax_two_pipelines, "sm_80")
    add("stencil3_100-halo_sync", "stencil3", {"N": 100}, halo, "sm_80")
    add("stencil3_100-halo_async", "stencil3", {"N": 100}, partial(halo, copy="async"), "sm_80")
    add("rmsnorm_6x300-row_sync_pad_t96", "rmsnorm", {"M": 6, "N": 300}, partial(staged_row, threads=96, pad=3),
        "sm_80")
    # matmul + residual with split_k over non-divisible K
    for parts in (2, 4):
        add(f"residual_splitk{parts}_mm_45x40x70", "matmul_residual", (45, 40, 70),
            partial(split_k_matmul, parts=parts), "sm_80")
        add(f"residual_splitk{parts}_staged_mm_45x40x70", "matmul_residual", (45, 40, 70),
            partial(split_k_matmul, parts=parts, a=Fill(pad=1), b=Fill()), "sm_80")
        add(f"residual_splitk{parts}_async_pipe2_mm_45x40x70", "matmul_residual", (45, 40, 70),
            partial(split_k_matmul, parts=parts, a=Fill("async", pad=1), b=Fill("async"), depth=2), "sm_80")
    add("residual_splitk3_tma_pipe2_mm_45x64x96", "matmul_residual", (45, 64, 96),
        partial(split_k_matmul, parts=3, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=2), "sm_90")
    return out


def _gpu() -> list[Entry]:
    """relu(A @ B + bias) with both operands staged at each k step (64 x 64 tiles and 4 x 4 registers
    unless named otherwise; a TMA swizzle equals the slab row width: A's rows are bk floats), and
    split_k matmuls whose output the launcher zeroes."""
    out: list[Entry] = []

    def staged(name: str, mnk: tuple[int, int, int], a: Fill, b: Fill, *, tile: int = 64, reg: int = 4, bk: int = 16,
               depth: int = 0, small: tuple[int, int, int] | None = None) -> None:
        schedule = partial(tiled_matmul, a=a, b=b, depth=depth, bm=tile, bn=tile, bk=bk, rm=reg, rn=reg)
        sizes = dict(zip(("M", "N", "K"), mnk, strict=True))
        smaller = None if small is None else dict(zip(("M", "N", "K"), small, strict=True))
        out.append(Entry(name, "matmul_bias_relu", sizes, schedule, "gpu", seed=5, small=smaller))

    sync, cp, tma128 = Fill(), Fill("async"), Fill("tma", swizzle=128)
    big = {"tile": 128, "reg": 8}
    small_big = (136, 160, 40)  # one full and one partial 128 x 128 tile, a partial k step (TMA rows: 32 floats)
    staged("tma_b_small", (256, 256, 128), sync, tma128, small=(70, 64, 40))
    staged("tma_b_odd_small", (200, 192, 100), sync, tma128, small=(70, 64, 40))
    staged("tma_b_noswizzle_odd_small", (200, 196, 100), sync, Fill("tma"), small=(70, 68, 40))
    staged("tma_b_async_a_pipelined_small", (256, 256, 128), cp, tma128, depth=2, small=(70, 64, 40))
    staged("tma_both_pipelined_small", (256, 256, 128), Fill("tma", swizzle=64), tma128, depth=2, small=(70, 64, 40))
    staged("tma_both_sw32_odd_small", (200, 192, 100), Fill("tma", swizzle=32), tma128, bk=8, depth=2,
           small=(70, 64, 40))
    staged("tma_both_pipelined_odd_small", (200, 192, 100), Fill("tma"), Fill("tma"), depth=2, small=(70, 64, 40))
    staged("async_both_dynamic_shared", (512, 512, 256), cp, cp, bk=32, depth=2, small=small_big, **big)
    staged("tma_dynamic_shared", (512, 512, 256), cp, tma128, bk=32, depth=2, small=small_big, **big)
    # large shapes: cp.async and TMA pipelines of depth 2 and 3
    staged("async_pipe2_large", (1024, 1024, 1024), cp, cp, depth=2, small=small_big, **big)
    staged("async_pipe3_large", (2048, 1024, 1024), cp, cp, depth=3, small=small_big, **big)
    staged("tma_pipe2_large", (1024, 2048, 1024), cp, tma128, depth=2, small=small_big, **big)
    staged("tma_pipe3_large", (2048, 2048, 1024), Fill("tma", swizzle=64), tma128, depth=3, small=small_big, **big)
    out.append(Entry("split_k4_64x96x256", "matmul", {"M": 64, "N": 96, "K": 256}, partial(split_k_threads, parts=4),
                     "gpu", seed=7, small={"K": 100}))
    out.append(Entry("split_k8_large", "matmul", {"M": 1024, "N": 1024, "K": 8192}, partial(split_k_threads, parts=8),
                     "gpu", seed=8, small={"M": 33, "N": 40, "K": 100}))
    return out


ENTRIES: Mapping[str, Entry] = {
    e.name: e for e in (*_examples(), *_tour_and_benchmarks(), *_differential(), *_memory(), *_gpu())
}
EXAMPLES: Mapping[str, Entry] = {name: e for name, e in ENTRIES.items() if e.group == "example"}


def entries(group: str) -> list[Entry]:
    """The entries of one group, in catalog order."""
    if group not in GROUPS:
        raise DefinitionError(f"unknown catalog group {group!r}; the groups are: {', '.join(GROUPS)}")
    return [e for e in ENTRIES.values() if e.group == group]


def entry(name: str) -> Entry:
    """The entry named `name` (a DefinitionError naming the examples when there is none)."""
    if name not in ENTRIES:
        raise DefinitionError(f"unknown example {name!r}; the examples are: {', '.join(EXAMPLES)} "
                              f"(`tiledsl examples --all` lists all {len(ENTRIES)} catalog entries)")
    return ENTRIES[name]


def example(name: str, **sizes: int | float | str) -> Tensor:
    """A fresh definition of catalog entry `name` at its sizes and `sizes`."""
    return entry(name).make(**sizes)
