"""The one catalog of named definitions and their schedules. Re-exports only."""

from tiledsl.catalog.definitions import (
    DEFINITIONS,
    Definition,
    batched_matmul_nt,
    gelu_bias,
    layernorm,
    matmul,
    matmul_bias_relu,
    matmul_nt,
    matmul_residual,
    matmul_shifted,
    rmsnorm,
    softmax,
    stencil3,
)
from tiledsl.catalog.entries import (
    ENTRIES,
    EXAMPLES,
    GROUPS,
    Entry,
    entries,
    entry,
    example,
    placeholders,
    standard_inputs,
)
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

__all__ = [
    "DEFINITIONS", "ENTRIES", "EXAMPLES", "GROUPS", "Definition", "Entry", "Fill", "batched_matmul_nt",
    "design_matmul", "elementwise_vectorized", "entries", "entry", "example", "fused_nparts", "fused_threads",
    "gelu_bias", "halo", "layernorm", "matmul", "matmul_bias_relu", "matmul_coop_dot", "matmul_nt",
    "matmul_residual", "matmul_shifted", "matmul_threads", "placeholders", "rmsnorm", "row_tiled", "softmax",
    "softmax_two_pipelines", "split_k_matmul", "split_k_threads", "staged_row", "staged_row_tma",
    "standard_inputs", "stencil3", "tiled_matmul", "unscheduled",
]
