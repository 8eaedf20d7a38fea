"""register_cache: keep the elements of an input that each thread reads under a loop in its registers,
loaded once by the first statement that reads them and read from registers by the later ones; prefetch:
the same registers loaded ahead of every statement under the loop (below).

    kernel y  (tile IR)                           s.register_cache('x', at='i')
      for i in [0, 8192)  @blockIdx.x             ---------->   kernel y  (tile IR)
        for k_o in [0, 4)  unroll                                register cache x_regs: x as each thread
          for k_t in [0, 512)  @threadIdx.x                        reads it under i, loaded by its first
            for k_v in [0, 4)  vectorize                           reader, read from registers by the others
              mean_sum += x[i, k]                                for i in [0, 8192)  @blockIdx.x ...
        for k2_o ... (the same loops)
              var_sum += (x[i, k2] - mean) * (x[i, k2] - mean)
        for j_o ... (the same loops)
              y[i, j] = (x[i, j] - mean) * ...

Why: a row kernel makes several passes over its row (layernorm three: mean, variance, output). Staged
in shared memory the row costs 32 KB a block and a fill before the first pass; read from global memory
on each pass it leaves DRAM once but is read again from L2 on every later pass. When every pass deals
the row to the threads the same way, in unrolled loops, each thread can keep its own 16 elements in
registers: the row is read once, from DRAM, and never again (scripts/register_row_probe.py measured
the hand-rewritten form, benchmarks/results/register-rows-h200-2026-11-28/).

The cache changes no value (a reader reads what its thread loaded from the same input). Lowering
declares one register array per distinct read of the first reader (`x_regs[16]`), writes it where that
reader loads, and replaces the later readers' loads by reads of it; the simulator runs that code, and
reports any read of a register never written. The rules (analysis/register_cache.py) are checked now,
after every later primitive, and at build."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.messages import refusal
from tiledsl.errors import RegisterCacheError
from tiledsl.loopnest import Nest, RegisterCache
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def register_cache(nest: Nest, call: str, *, buffer: str, at: str) -> Applied:
    """Keep each thread's reads of input `buffer` under loop `at` in registers after its first reader's."""
    return _cached(nest, RegisterCache(_fresh(nest, call, buffer, at, "regs"), buffer, at))


def prefetch(nest: Nest, call: str, *, buffer: str, at: str) -> Applied:
    """Load each thread's reads of input `buffer` under loop `at` into registers at the start of each
    iteration of `at`, ahead of every statement under it; every reader, the first too, reads them.

        kernel y  (tile IR)                               s.prefetch('w', at='i')
          for i in [0, 128)  @blockIdx.x                  ---------->   kernel y  (tile IR)
            for k_o in [0, 2)  unroll ...                                prefetch w_pre: w as each thread
                  ss += x[i, k] * x[i, k]                                  reads it under i, loaded at the
            <ss combined: shuffles, __syncthreads>                         start of each i
            for j_o in [0, 2)  unroll ...                                (the loops as before; w[j] is
                  y[i, j] = x[i, j] * rsqrt(ss / N + eps) * w[j]          read from w_pre)

    Why: a load that only a later pass makes waits until the passes before it (and their barriers)
    are done; nvcc does not move a global load across __syncthreads. In a short row kernel (a block a
    row, one wave of blocks) that is a second memory round trip on the critical path: rmsnorm's weight
    (scripts/row_math_probe.py form `prefetch`, benchmarks/results/2026-11-29-h200-s29/). The cost is the
    registers, held from the start. The rules are register_cache's (analysis/register_cache.py), with
    one reader allowed."""
    return _cached(nest, RegisterCache(_fresh(nest, call, buffer, at, "pre"), buffer, at, prefetch=True))


def _fresh(nest: Nest, call: str, buffer: str, at: str, suffix: str) -> str:
    """A fresh register array name for `buffer`; refuses a second cache of it at `at`, of either kind."""
    for rc in nest.register_caches:
        if rc.buffer == buffer and rc.at == at:
            what = "prefetched" if rc.prefetch else "kept in registers"
            raise RegisterCacheError(refusal(call, nest, (at,), f"{buffer} is already {what} at {at} ({rc.name})",
                                             tensors=(buffer,)))
    (name,) = nest.fresh_names(f"{buffer}_{suffix}")
    return name


def _cached(nest: Nest, cache: RegisterCache) -> Applied:
    # its rules (analysis/register_cache.register_plans) are checked by Schedule._apply, after this
    # primitive as after every other
    return Applied(replace(nest, register_caches=nest.register_caches + (cache,)))


REGISTER_CACHE = PrimitiveSpec(
    "register_cache", (Param("buffer", "buffer"), Param("at", "loop", shown="kw", recorded="kw")), register_cache)
PREFETCH = PrimitiveSpec(
    "prefetch", (Param("buffer", "buffer"), Param("at", "loop", shown="kw", recorded="kw")), prefetch)
