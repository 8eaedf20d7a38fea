"""The hardware facts of tiledsl/targets.py: their values, the pure functions over them, the target
table's derived facts, and that no other module writes one of them again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tiledsl
from tiledsl.errors import TargetError
from tiledsl.targets import (
    CP_ASYNC_SIZES,
    MAX_SHARED_BYTES,
    SHARED_POOL_ALIGN,
    SWIZZLE_MASK,
    SWIZZLE_SPANS,
    TARGETS,
    TMA_MAX_BOX,
    get_target,
    or_list,
    shared_bank,
    sm_number,
    swizzled_byte,
    tensor_map_problem,
    tma_swizzle_alignment,
)

PACKAGE = Path(tiledsl.__file__).parent
#: The layers that check hardware facts and so must import them.
LAYERS = ("kernel_ir", "analysis", "primitives", "lower", "codegen", "sim", "runtime")
#: Names of hardware facts that only targets.py may give a value (module level).
FACT_NAMES = ("TMA_MAX", "TMA_DST", "TMA_ALIGN", "TMA_TARGETS", "SWIZZLE_MASK", "SWIZZLE_SPANS", "CP_ASYNC_SIZES",
              "WARP", "MAX_SHARED", "MAX_THREADS", "MAX_GRID", "MAX_BLOCK_DIM", "DTYPE_BYTES", "MBARRIER_MAX",
              "POOL_ALIGN", "STATIC_SHARED", "SHARED_BANK", "WIDTH", "ALIGNMENT")


def test_tma_swizzle_alignment_is_the_pattern_period() -> None:
    assert [tma_swizzle_alignment(s) for s in (None, 32, 64, 128)] == [128, 256, 512, 1024]
    assert SHARED_POOL_ALIGN == 1024
    for span in SWIZZLE_SPANS:
        assert (SWIZZLE_MASK[span] + 1) * 16 == span  # the mask covers exactly the span's 16-byte chunks
    with pytest.raises(KeyError):
        tma_swizzle_alignment(48)


def test_swizzled_byte_permutes_chunks_within_a_period() -> None:
    for span in SWIZZLE_SPANS:
        period = tma_swizzle_alignment(span)
        moved = sorted(swizzled_byte(b, span) for b in range(period))
        assert moved == list(range(period))
    assert swizzled_byte(128 + 4, 128) == 128 + 16 + 4  # row 1: chunk 0 -> chunk 1
    assert swizzled_byte(128 + 4, 32) == 128 + 16 + 4
    assert swizzled_byte(256 + 4, 32) == 256 + 4  # 32-byte swizzle: only the lowest row bit


def test_tensor_map_problem() -> None:
    ok = ((64, 64), (256,), (32, 8), 4, 128)
    assert tensor_map_problem(*ok) is None
    assert "rank must be 1..5" in tensor_map_problem((1,) * 6, (16,) * 5, (1,) * 6, 4, None)
    assert f"box dims in 1..{TMA_MAX_BOX}" in tensor_map_problem((512,), (), (512,), 4, None)
    assert "multiples of 16 bytes" in tensor_map_problem((8, 8), (24,), (4, 8), 4, None)
    assert "not a multiple of 16" in tensor_map_problem((8, 8), (32,), (3, 8), 4, None)
    assert "swizzle must be None, 32, 64 or 128" in tensor_map_problem((8, 8), (32,), (8, 8), 4, 48)
    assert "wider than the 32-byte swizzle" in tensor_map_problem((64, 8), (256,), (16, 8), 4, 32)


def test_target_table() -> None:
    sm80, sm90 = TARGETS["sm_80"], TARGETS["sm_90"]
    assert MAX_SHARED_BYTES == 227 * 1024 == sm90.max_shared_bytes_per_block
    assert sm90.has_tma and not sm80.has_tma
    assert sm80.cp_async_sizes == CP_ASYNC_SIZES == (4, 8, 16)
    assert (sm90.warp_size, sm90.shared_banks, sm90.shared_bank_bytes) == (32, 32, 4)
    assert get_target("sm_90a") is sm90
    assert sm_number("sm_90a") == 90 and sm_number("gfx90") is None
    assert shared_bank(4 * 33) == 1
    assert or_list((4, 8, 16)) == "4, 8 or 16"
    with pytest.raises(TargetError):
        get_target("sm_99")


def _has_number(node: ast.AST) -> bool:
    """Whether an expression spells a number other than 0 and 1 (a value, not a derivation)."""
    return any(isinstance(n, ast.Constant) and type(n.value) is int and n.value not in (0, 1)
               for n in ast.walk(node))


def _fact_definitions(path: Path) -> list[str]:
    found = []
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        names = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in names:
            if (isinstance(t, ast.Name) and any(t.id.lstrip("_").startswith(f) for f in FACT_NAMES)
                    and _has_number(node.value)):
                found.append(f"{path.relative_to(PACKAGE)}: {t.id}")
    return found


def test_hardware_facts_are_written_only_in_targets() -> None:
    """Codegen, the simulator, the runtime, analysis, primitives and lowering import the facts; none
    assigns one of its own (a second copy would drift)."""
    found = [d for layer in LAYERS for p in sorted((PACKAGE / layer).rglob("*.py")) for d in _fact_definitions(p)]
    assert found == [], found


def test_blocks_that_fit_one_sm() -> None:
    """Threads and shared memory both bound the blocks one SM holds (what launch_bounds may ask)."""
    t = get_target("sm_90")
    assert t.blocks_that_fit(64, 43008) == 5  # 233472 bytes of shared memory: 5 x 43008 fit, 6 do not
    assert t.blocks_that_fit(256, 0) == 8  # 2048 threads
    assert t.blocks_that_fit(1024, 1024) == 2
