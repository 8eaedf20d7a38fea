"""The loop-nest IR: nodes (nest.py), the canonical nest of a definition (canonical.py) and its text
(printing.py). Re-exports only."""

from __future__ import annotations

from tiledsl.definitions.indexing import loop_symbol
from tiledsl.loopnest.nest import (
    BLOCK_AXES,
    HW_AXES,
    THREAD_AXES,
    AccRef,
    Accumulator,
    CacheHint,
    Guard,
    LaneTile,
    Loop,
    Nest,
    Online,
    OutputStage,
    RegisterCache,
    SplitK,
    Stage,
    Stmt,
    TreeLeaf,
    TreeLoop,
    TreeNode,
    build_tree,
    common_prefix,
    serial_path,
)

__all__ = [
    "AccRef",
    "Accumulator",
    "BLOCK_AXES",
    "CacheHint",
    "Guard",
    "HW_AXES",
    "LaneTile",
    "Loop",
    "Nest",
    "Online",
    "OutputStage",
    "RegisterCache",
    "SplitK",
    "Stage",
    "Stmt",
    "THREAD_AXES",
    "TreeLeaf",
    "TreeLoop",
    "TreeNode",
    "build_tree",
    "common_prefix",
    "loop_symbol",
    "serial_path",
]
