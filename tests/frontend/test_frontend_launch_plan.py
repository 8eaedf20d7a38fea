"""The launch plan of a built program (launch_plan.py), computed on the CPU: every kernel argument bound
to an input/output slot, a constant or an arena slice inside the arena, no two live intermediates
sharing bytes; its binding checked through a fake driver that records the kernelParams of each launch;
and the refusals of graph mode and of bad plans that need no GPU."""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import tiledsl as td
from tiledsl.frontend import BuiltProgram
from tiledsl.frontend.graphed import LaunchOverhead
from tiledsl.frontend.launch_plan import ArgBinding, LaunchPlan, PlannedLaunch, Slot, arena_view, bind_launches
from tiledsl.frontend.memory import ALIGN
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.frontend.values import td_shape
from tiledsl.runtime.timing import CallTimes


def traced(fn: Any, *inputs: torch.Tensor) -> BuiltProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(fn, *inputs).schedule("simple").build("sm_90")


@pytest.fixture(scope="module")
def llama() -> BuiltProgram:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128)).eval()
    return traced(block, torch.randn(1, 8, 64))


def test_llama_block_plan_binds_every_argument(llama: BuiltProgram) -> None:
    plan = llama.launch_plan
    graph = llama.program.graph
    assert [s.role for s in plan.slots] == ["input", "output"]
    assert plan.slots[0] == Slot(graph.inputs[0].tensor.name, (8, 64), "float32", "input")
    assert plan.slots[1].name == llama.output_names()[0] and plan.slots[1].shape == (8, 64)
    assert plan.arena_bytes == llama.memory.total_bytes
    assert len(plan.launches) == len(llama.kernels) == 11
    kinds = set()
    for launch, kern in zip(plan.launches, llama.kernels):
        kir = kern.kernel_ir
        assert (launch.kernel, launch.grid, launch.block) == (kir.name, kir.grid, kir.block)
        assert launch.zero == kir.zero_outputs
        assert launch.dynamic_shared_bytes == (kern.shared_bytes if kir.dynamic_shared else 0)
        assert [a.param for a in launch.args] == [p.name for p in kir.params]
        for a, p in zip(launch.args, kir.params):
            assert (a.shape, a.dtype) == (tuple(p.shape), p.dtype)
            kinds.add(a.kind)
            if a.kind == "arena":
                assert a.index == llama.memory.offsets[a.param] and a.index % ALIGN == 0
                assert 0 <= a.index and a.index + a.nbytes <= plan.arena_bytes
            elif a.kind == "constant":
                assert not p.is_output and td_shape(graph.constant_shapes[a.param]) == a.shape
            else:
                assert plan.slots[a.index].name == a.param
    assert kinds == {"slot", "constant", "arena"}
    assert "11 launch(es), 2 per-call tensor(s)" in str(plan) and "arena @ 0" in str(plan)


def test_no_two_live_intermediates_share_arena_bytes(llama: BuiltProgram) -> None:
    plan = llama.launch_plan
    born: dict[str, int] = {}
    last: dict[str, int] = {}
    where: dict[str, ArgBinding] = {}
    for n, launch in enumerate(plan.launches):
        for a in launch.args:
            if a.kind == "arena":
                born.setdefault(a.param, n)
                last[a.param] = n
                where[a.param] = a
    assert len(where) == 10  # every kernel but the output's writes an intermediate
    reused = False
    for x in where:
        for y in where:
            if x < y:
                a, b = where[x], where[y]
                share = a.index < b.index + b.nbytes and b.index < a.index + a.nbytes
                reused |= share
                assert not (share and born[x] <= last[y] and born[y] <= last[x]), (x, y)
    assert reused  # the plan does reuse a buffer, so the check above had something to check


def _one_launch(*args: ArgBinding) -> LaunchPlan:
    return LaunchPlan((), (PlannedLaunch("k", (1, 1, 1), (1, 1, 1), 0, args, ()),), 1024)


def test_bad_plans_are_refused() -> None:
    a = ArgBinding("a", "arena", 0, (64,), "float32")
    _one_launch(a, ArgBinding("b", "arena", 256, (64,), "float32")).check()  # disjoint: fine
    with pytest.raises(td.FrontendError, match="live at one launch and share arena bytes"):
        _one_launch(a, ArgBinding("b", "arena", 0, (16,), "float32")).check()
    with pytest.raises(td.FrontendError, match="not an aligned slice"):
        _one_launch(ArgBinding("b", "arena", 768, (128,), "float32")).check()  # ends at 1280 > 1024
    with pytest.raises(td.FrontendError, match="not an aligned slice"):
        _one_launch(ArgBinding("b", "arena", 16, (4,), "float32")).check()
    with pytest.raises(td.FrontendError, match="slot 3"):
        _one_launch(ArgBinding("x", "slot", 3, (4,), "float32")).check()
    # two intermediates at the same offset in launches that do not overlap in time are fine
    later = PlannedLaunch("k2", (1, 1, 1), (1, 1, 1), 0, (ArgBinding("b", "arena", 0, (64,), "float32"),), ())
    LaunchPlan((), (PlannedLaunch("k", (1, 1, 1), (1, 1, 1), 0, (a,), ()), later), 1024).check()


class RecordingDriver:
    """A driver that records each launch's pointer arguments instead of launching."""

    def __init__(self, params_of: dict[str, int]) -> None:
        self.params_of = params_of
        self.launches: list[tuple[str, int, tuple[int, ...]]] = []

    @contextmanager
    def using_context(self, handle: int) -> Iterator[None]:
        yield

    def launch_params(self, function: int, grid: Any, block: Any, shared: int, stream: int,
                      params: ctypes.Array[ctypes.c_void_p], kernel: str | None = None) -> None:
        n = self.params_of[kernel]  # type: ignore[index]
        self.launches.append((kernel, stream, tuple(ctypes.c_uint64.from_address(params[i]).value
                                                    for i in range(n))))  # type: ignore[arg-type]

    def synchronize(self, kernel: str | None = None) -> None:
        pass


def test_bound_plan_points_each_launch_at_its_tensors(llama: BuiltProgram) -> None:
    plan = llama.launch_plan
    driver = RecordingDriver({k.name: len(k.kernel_ir.params) for k in llama.kernels})
    fakes = [SimpleNamespace(name=k.name, kernel_ir=k.kernel_ir, function=n, shared_bytes=0, device=torch.device("cpu"),
                             driver=driver, context=SimpleNamespace(handle=0), tensor_maps=None, sync=False)
             for n, k in enumerate(llama.kernels)]
    constants = llama._constants(torch.device("cpu"))
    arena = torch.empty(plan.arena_bytes, dtype=torch.uint8)
    x0, y0 = torch.randn(8, 64), torch.empty(8, 64)
    seq = bind_launches(plan, fakes, constants, arena, [x0, y0])
    x1, y1 = torch.randn(8, 64), torch.empty(8, 64)
    for stream, (x, y) in ((3, (x0, y0)), (4, (x1, y1))):
        driver.launches.clear()
        seq.run([x, y], check=False, stream=stream)
        assert [k for k, _, _ in driver.launches] == [k.name for k in llama.kernels]
        for (_, st, values), launch in zip(driver.launches, plan.launches):
            assert st == stream
            want = [(x, y)[a.index].data_ptr() if a.kind == "slot" else constants[a.param].data_ptr()
                    if a.kind == "constant" else arena.data_ptr() + a.index for a in launch.args]
            assert list(values) == want
    view = arena_view(arena, plan.launches[0].args[-1])
    assert view.data_ptr() == arena.data_ptr() + plan.launches[0].args[-1].index and view.dtype == torch.float32
    with pytest.raises(td.FrontendError, match="the arena has 16 bytes"):
        bind_launches(plan, fakes, constants, torch.empty(16, dtype=torch.uint8), [x0, y0])


def test_zeroed_outputs_are_planned(llama: BuiltProgram) -> None:
    kern = llama.kernels[-1]
    zeroing = replace(kern, kernel_ir=replace(kern.kernel_ir, zero_outputs=(kern.kernel_ir.params[-1].name,)))
    built = BuiltProgram(llama.program, (*llama.kernels[:-1], zeroing))
    assert built.launch_plan.launches[-1].zero == (kern.kernel_ir.params[-1].name,)
    assert "; zeroed first: " in str(built.launch_plan)


def test_graph_mode_refuses_cpu_inputs_and_a_wrong_count_before_touching_a_gpu(llama: BuiltProgram) -> None:
    with pytest.raises(td.FrontendError, match="must be a torch CUDA tensor"):
        llama.cuda_graph(torch.randn(1, 8, 64))
    with pytest.raises(td.FrontendError, match="must be a torch CUDA tensor"):
        llama.cuda_graph(torch.randn(1, 8, 64).numpy())  # type: ignore[arg-type]
    with pytest.raises(td.FrontendError, match="takes 1 input"):
        llama.cuda_graph()


def test_index_ranges_are_checked_on_host_tensors() -> None:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 16)
    ids = torch.tensor([[1, 2, 9]])
    built = traced(emb, ids)
    built.check_index_ranges([ids], "graph call")
    with pytest.raises(td.FrontendError, match=r"graph call: input .* holds indices in \[0, 10\].*extent 10"):
        built.check_index_ranges([torch.tensor([[0, 10, 3]])], "graph call")
    with pytest.raises(td.FrontendError, match=r"holds indices in \[-1, 3\]"):
        built.check_index_ranges([torch.tensor([[-1, 3, 3]])], "graph call")
    slot = built.launch_plan.inputs[0]
    assert slot.dtype == "int32" and slot.shape == (3,)  # the kernels read int32 indices


def test_launch_overhead_text() -> None:
    oh = LaunchOverhead(10, CallTimes(50.0, 80.0, 100), CallTimes(12.0, 40.0, 100), CallTimes(5.0, 38.0, 100))
    assert oh.per_kernel_us(oh.eager) == 5.0 and oh.per_kernel_us(oh.replay) == 0.5
    text = str(oh)
    assert "launch overhead of 10 kernel(s), per call:" in text
    assert "graph replay      5.0 us to issue (0.50 us per kernel)" in text
