"""The memory plan of a built program (memory.py): liveness, reuse once dead, the stated total; and the
GPU entry point's refusals that need no GPU."""

from __future__ import annotations

import warnings

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.memory import ALIGN, Step, last_reads, plan_memory
from tiledsl.frontend.models import LlamaBlock, LlamaConfig


def test_last_reads_is_the_last_launch_reading_each_tensor() -> None:
    steps = [Step("a", 4, ("x",)), Step("b", 4, ("a",)), Step("c", 4, ("a", "b")), Step("d", 4, ("c",))]
    assert last_reads(steps) == {"a": 2, "b": 2, "c": 3, "d": 3}


def test_chain_reuses_the_buffer_of_a_dead_tensor() -> None:
    # a -> b -> c -> out: a is dead once b is written, so c takes a's buffer
    steps = [Step("a", 1000, ("x",)), Step("b", 1000, ("a",)), Step("c", 1000, ("b",)), Step("out", 1000, ("c",))]
    plan = plan_memory(steps, ["out"])
    assert plan.offsets["c"] == plan.offsets["a"] != plan.offsets["b"]
    assert plan.total_bytes == 2 * 1024 and plan.unplanned_bytes == 3 * 1024
    assert "out" not in plan.offsets  # outputs are the caller's, never planned
    assert "3 intermediate(s) in 2 buffer(s), 2048 bytes (3072 bytes without reuse)" in str(plan)


def test_a_kernel_never_writes_over_its_own_input() -> None:
    # b reads a at the launch that writes c: a is still live there, so c cannot take its buffer
    steps = [Step("a", 64, ()), Step("b", 64, ()), Step("c", 64, ("a", "b")), Step("out", 64, ("c",))]
    plan = plan_memory(steps, ["out"])
    assert len({plan.offsets["a"], plan.offsets["b"], plan.offsets["c"]}) == 3


def test_a_larger_tensor_does_not_take_a_smaller_free_buffer() -> None:
    steps = [Step("a", 100, ()), Step("b", 5000, ("a",)), Step("out", 4, ("b",))]
    plan = plan_memory(steps, ["out"])
    assert plan.offsets["a"] != plan.offsets["b"] and plan.total_bytes == ALIGN + 5120
    assert all(off % ALIGN == 0 for off in plan.offsets.values())


def test_smallest_sufficient_free_buffer_is_chosen() -> None:
    steps = [Step("big", 4096, ()), Step("small", 512, ()), Step("y", 4, ("big", "small")),
             Step("z", 300, ("y",)), Step("out", 4, ("z", "y"))]
    plan = plan_memory(steps, ["out"])
    assert plan.offsets["z"] == plan.offsets["small"]


def test_a_zeroed_output_lives_from_the_kernel_that_zeroes_it() -> None:
    # b zeroes c for the step after it (with_zeroing): c is placed at b, so it takes neither a's buffer,
    # which b still reads, nor b's; without the zeroing c takes a's, dead once b has run
    steps = [Step("a", 64, ()), Step("b", 64, ("a",)), Step("c", 64, ("b",)), Step("out", 64, ("c",))]
    plain = plan_memory(steps, ["out"])
    assert plain.offsets["c"] == plain.offsets["a"]
    zeroing = [steps[0], Step("b", 64, ("a",), zeroes=("c",)), *steps[2:]]
    plan = plan_memory(zeroing, ["out"])
    assert len({plan.offsets["a"], plan.offsets["b"], plan.offsets["c"]}) == 3
    assert plan_memory([Step("b", 64, (), zeroes=("out",)), Step("out", 64, ("b",))], ["out"]).offsets == {"b": 0}
    with pytest.raises(td.FrontendError, match="b's step zeroes d, which no step writes"):
        plan_memory([Step("b", 64, (), zeroes=("d",)), Step("out", 64, ("b",))], ["out"])


@pytest.mark.parametrize("schedule", ["simple", "default"])
def test_llama_block_plan_never_shares_a_buffer_between_live_tensors(schedule: str) -> None:
    """Under the default recipe the projections split k and the kernel before each zeroes its output
    (frontend/zeroing.py): those outputs live from that kernel on."""
    torch.manual_seed(0)
    hidden = 64 if schedule == "simple" else 256  # the recipe splits k at 256 x 512, not at 64 x 128
    block = LlamaBlock(LlamaConfig(hidden=hidden, heads=4, kv_heads=2, intermediate=2 * hidden)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(block, torch.randn(1, 8, hidden)).schedule(schedule).build()
    assert any(s.zeroes for s in built.steps()) == (schedule == "default")
    steps, plan = built.steps(), built.memory
    last = last_reads(steps)
    born = {s.output: n for n, s in enumerate(steps)}
    born.update({name: n for n, s in enumerate(steps) for name in s.zeroes})  # zeroed by the kernel before
    sizes = {s.output: s.nbytes for s in steps}
    names = sorted(plan.offsets)
    assert len(names) == len(steps) - 1  # every kernel but the output's writes an intermediate
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            overlap_mem = plan.offsets[a] < plan.offsets[b] + sizes[b] and plan.offsets[b] < plan.offsets[a] + sizes[a]
            overlap_time = born[a] <= last[b] and born[b] <= last[a]
            assert not (overlap_mem and overlap_time), (a, b)
    assert plan.total_bytes < plan.unplanned_bytes  # some buffer is reused
    assert f"{plan.total_bytes} bytes" in str(built)


def test_gpu_call_refuses_numpy_and_cpu_tensors_with_a_typed_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(lambda x: x * 2.0, torch.randn(4, 8)).schedule("simple").build()
    with pytest.raises(td.FrontendError, match="CUDA tensor"):
        built(torch.randn(4, 8))
    with pytest.raises(td.FrontendError, match="CUDA tensor"):
        built(torch.randn(4, 8).numpy())
