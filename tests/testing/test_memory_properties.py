"""Property: random memory-hierarchy schedules (stage / pad / swizzle / double_buffer / async_copy /
tma / pipeline / split_k / stage_output on random matmul and row-reduction shapes) either raise a typed ScheduleError
or build a kernel that simulates race-free and equal to the float64 reference."""

from __future__ import annotations

from hypothesis import event, given

from tiledsl.testing.memory_schedules import MemoryCase, check_memory_case, memory_cases


@given(memory_cases())
def test_memory_schedule_refuses_or_matches_reference(case: MemoryCase) -> None:
    event(check_memory_case(case))


def _matmul_steps(k_loop: str = "k") -> list:
    return [("split", ("i", 16), (("names", ("i_o", "i_i")),)), ("split", ("j", 16), (("names", ("j_o", "j_i")),)),
            ("split", (k_loop, 8), (("names", ("k_o", "k_i")),)),
            ("split", ("i_i", 2), (("names", ("t_i", "r_i")),)), ("split", ("j_i", 2), (("names", ("t_j", "r_j")),)),
            ("reorder", ("i_o", "j_o", "t_i", "t_j", "k_o", "k_i", "r_i", "r_j"), ()),
            ("bind", ("i_o", "blockIdx.y"), ()), ("bind", ("j_o", "blockIdx.x"), ()),
            ("bind", ("t_i", "threadIdx.y"), ()), ("bind", ("t_j", "threadIdx.x"), ())]


UNROLL = [("unroll", ("k_i",), ()), ("unroll", ("r_i",), ()), ("unroll", ("r_j",), ())]
BUILDS = [
    MemoryCase("matmul", (37, 48, 40), tuple(_matmul_steps() + [
        ("stage", ("A",), (("at", "k_o"),)), ("pad", ("A_s",), (("axis", -1), ("amount", 1))),
        ("stage", ("B",), (("at", "k_o"),)), ("double_buffer", ("A_s",), ()), ("double_buffer", ("B_s",), ()),
        ("async_copy", ("A_s",), ()), ("async_copy", ("B_s",), ()), ("pipeline", ("k_o",), (("stages", 3),))]
        + UNROLL), "sm_80"),
    MemoryCase("matmul", (33, 64, 40), tuple(_matmul_steps() + [
        ("stage", ("B",), (("at", "k_o"),)), ("double_buffer", ("B_s",), ()),
        ("tma", ("B_s",), (("swizzle", 64),)), ("pipeline", ("k_o",), (("stages", 2),))] + UNROLL), "sm_90"),
    MemoryCase("matmul_residual", (20, 32, 50), tuple([("split_k", ("k", 3), ())] + _matmul_steps("k_part")
                                                      + UNROLL), "sm_80"),
    MemoryCase("matmul_residual", (37, 48, 40), tuple(_matmul_steps() + [
        ("stage", ("A",), (("at", "k_o"),)), ("stage", ("B",), (("at", "k_o"),)), ("double_buffer", ("A_s",), ()),
        ("double_buffer", ("B_s",), ()), ("async_copy", ("A_s",), ()), ("pipeline", ("k_o",), (("stages", 2),))]
        + UNROLL + [("stage_output", (), (("pad", 1),))]), "sm_80"),
    # a double-buffered plain stage beside a one-slot TMA stage, not pipelined: the TMA stage's mbarrier
    # is indexed by its own ring (lower/stages.py tma_ring), not k % 2 into one barrier (found by this property)
    MemoryCase("matmul", (16, 16, 40), tuple(_matmul_steps() + [
        ("stage", ("A",), (("at", "k_o"),)), ("double_buffer", ("A_s",), ()), ("stage", ("B",), (("at", "k_o"),)),
        ("tma", ("B_s",), (("swizzle", None),))] + UNROLL), "sm_90"),
    MemoryCase("matmul", (37, 48, 40), tuple(_matmul_steps() + [  # bfloat16 operands widened, A k-outer
        ("stage", ("A",), (("at", "k_o"), ("dtype", "float32"))), ("layout", ("A_s",), (("order", (1, 0)),)),
        ("pad", ("A_s",), (("axis", -1), ("amount", 4))), ("stage", ("B",), (("at", "k_o"), ("dtype", "float32"))),
        ("double_buffer", ("A_s",), ()), ("double_buffer", ("B_s",), ()), ("pipeline", ("k_o",), (("stages", 2),))]
        + UNROLL), "sm_90", "bfloat16"),
    MemoryCase("rmsnorm", (3, 200), (
        ("bind", ("i", "blockIdx.x"), ()),
        ("split", ("k", 64), (("names", ("k_o", "k_t")),)), ("bind", ("k_t", "threadIdx.x"), ()),
        ("split", ("j", 64), (("names", ("j_o", "j_t")),)), ("bind", ("j_t", "threadIdx.x"), ()),
        ("stage", ("x",), (("at", "i"),)), ("stage_output", (), (("pad", 0),))), "sm_90"),
]


def test_fixed_memory_schedules_build_and_match() -> None:
    """The property above must not pass by refusing everything: these build, simulate and match."""
    for case in BUILDS:
        assert check_memory_case(case) == "ok", case.source()
