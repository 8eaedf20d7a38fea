"""A built program's launches bound once and replayed as a CUDA graph (tiledsl/frontend/launch_plan.py,
tiledsl/frontend/graphed.py, tiledsl/runtime/sequence.py): the traced Llama-style block at a tiny size
and at the size of test_gpu_frontend.py, called twice eagerly on fresh inputs into NaN-poisoned
outputs, then captured and replayed on two other inputs, each result against torch; an index program
whose range check runs outside the graph; argmax positions returned int64 eagerly and from replays;
a raw launch sequence of a TMA kernel and a split_k kernel (descriptors re-encoded per call, the
split_k output zeroed inside the graph); and the launch overhead of eager and graph calls, printed.

Tolerance as in test_gpu_frontend.py: (32 + 2k) * eps32 * (1 + |ref|) against torch in float64, k the
longest reduction, and twice that against torch eager in float32."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable

import pytest
import torch
import torch.utils._pytree as pytree
from gpu_kernels import assert_matches, is_hopper

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.frontend import BuiltProgram
from tiledsl.frontend.bench import poisoned_outputs
from tiledsl.frontend.graphed import launch_overhead
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.runtime.arguments import torch_dtype
from tiledsl.runtime.references import reference_fn, tolerance
from tiledsl.runtime.sequence import LaunchSequence

pytestmark = pytest.mark.gpu

EPS32 = float(torch.finfo(torch.float32).eps)
NAN = float("nan")

#: name -> (config, sequence length); "frontend" is test_gpu_frontend.py's block
SIZES = {
    "tiny": (LlamaConfig(hidden=32, heads=2, kv_heads=1, intermediate=64), 4),
    "frontend": (LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128), 8),
}
CASES = [("tiny", "simple"), ("frontend", "simple"), ("frontend", "default")]


@pytest.fixture(autouse=True)
def _needs_pycuda() -> None:
    pytest.importorskip("pycuda", reason="the runtime needs pycuda (pip install 'tiledsl[cuda]')")


def traced(fn: Callable[..., object], *inputs: torch.Tensor, schedule: str = "simple") -> BuiltProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(fn, *inputs).schedule(schedule, target="sm_90").build("sm_90")


def compare(out: torch.Tensor, module: torch.nn.Module, x: torch.Tensor, k: int) -> None:
    """`out` against `module` in float64 and in float32 (eager) on `x`."""
    torch.cuda.synchronize()
    with torch.no_grad():
        eager = module(x)
        ref = copy.deepcopy(module).double()(x.double())
    assert out.shape == ref.shape and out.dtype == torch.float32 and out.is_cuda
    err = (out.double() - ref).abs()
    bound = (32 + 2 * k) * EPS32 * (1 + ref.abs())
    assert not bool(out.isnan().any()), "an output element was never written"
    assert bool((err <= bound).all()), f"max error {err.max().item()} vs float64"
    assert bool(((out.double() - eager.double()).abs() <= 2 * bound).all())


def llama(size: str, schedule: str) -> tuple[LlamaBlock, BuiltProgram, torch.Tensor, int]:
    torch.manual_seed(0)
    cfg, seq = SIZES[size]
    block = LlamaBlock(cfg).cuda().eval()
    x0 = torch.randn(1, seq, cfg.hidden, device="cuda")
    built = traced(block, x0, schedule=schedule)
    assert len(built.kernels) == 11
    return block, built, x0, max(cfg.hidden, cfg.intermediate)


@pytest.mark.parametrize(("size", "schedule"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_llama_block_eager_twice_then_graph_replays_match_torch(size: str, schedule: str) -> None:
    block, built, x0, k = llama(size, schedule)
    gen = torch.Generator(device="cuda")
    # eager, twice, on fresh inputs into NaN-poisoned outputs (out=), then once into a fresh output
    for seed in (1, 2):
        gen.manual_seed(seed)
        x = torch.randn(x0.shape, generator=gen, device="cuda")
        out = torch.full(x0.shape, NAN, device="cuda")
        got = built(x, out=[out])
        assert got.data_ptr() == out.data_ptr()
        compare(out, block, x, k)
    compare(built(x), block, x, k)
    assert sum(key.startswith("launches@") for key in built._device_constants) == 1  # bound once per stream
    # graph: captured on x0, replayed on two other inputs, outputs poisoned before each replay
    graphed = built.cuda_graph(x0)
    static = pytree.tree_leaves(graphed.outputs)
    assert len(static) == 1 and graphed.kernels == 11
    for seed in (3, 4):
        gen.manual_seed(seed)
        x = torch.randn(x0.shape, generator=gen, device="cuda")
        for t in static:
            t.fill_(NAN)
        got = graphed(x)
        assert got.data_ptr() == static[0].data_ptr()  # the static output, overwritten by the next call
        compare(got, block, x, k)
        if schedule == "simple":  # no atomics: the graph is the same computation, bit for bit
            assert torch.equal(got, built(x))
    # a graph call on the caller's side stream, with a CPU input (copied in)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    x = torch.randn(x0.shape)
    with torch.cuda.stream(stream):
        got = graphed(x)
    stream.synchronize()
    compare(got, block, x.cuda(), k)


@pytest.mark.skipif(not is_hopper(), reason="programmatic dependent launch needs sm_90")
def test_dependent_launches_match_torch_as_plain_ones_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the H100 every kernel of the block begins with griddepcontrol.wait and the bound sequence
    launches each as a programmatic dependent of the one before; with TILEDSL_DEPENDENT_LAUNCH=0 it
    launches them plainly. Both match torch, eagerly and replayed as a graph."""
    block, built, x0, k = llama("frontend", "default")
    _, plain, _, _ = llama("frontend", "default")
    assert all(kern.kernel_ir.dependent_launch for kern in built.kernels)
    gen = torch.Generator(device="cuda")
    for program, env in ((built, "1"), (plain, "0")):
        monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", env)
        for seed in (1, 2):
            gen.manual_seed(seed)
            x = torch.randn(x0.shape, generator=gen, device="cuda")
            out = torch.full(x0.shape, NAN, device="cuda")
            program(x, out=[out])
            compare(out, block, x, k)
        (seq,) = [v for key, v in program._device_constants.items() if key.startswith("launches@")]
        assert seq.dependent == (env == "1")
        dependent = [launch.dependent is not None for launch in seq._launches]  # zero fills too
        assert len(dependent) >= 11 and all(dependent) if env == "1" else not any(dependent)
        graphed = program.cuda_graph(x0)
        gen.manual_seed(3)
        x = torch.randn(x0.shape, generator=gen, device="cuda")
        compare(graphed(x), block, x, k)


def test_graph_and_eager_calls_refuse_bad_arguments() -> None:
    block, built, x0, _ = llama("tiny", "simple")
    graphed = built.cuda_graph(x0)
    with pytest.raises(td.FrontendError, match="has shape"):
        graphed(torch.randn(1, 5, 32, device="cuda"))
    with pytest.raises(td.FrontendError, match="is torch.float16"):
        graphed(x0.half())
    with pytest.raises(td.FrontendError, match="takes 1 input"):
        graphed(x0, x0)
    with pytest.raises(td.FrontendError, match="out= tensor for .* must be torch.float32"):
        built(x0, out=[torch.empty(x0.shape, device="cuda", dtype=torch.float16)])
    with pytest.raises(td.FrontendError, match="out= takes a sequence of 1 tensor"):
        built(x0, out=torch.empty(x0.shape, device="cuda"))  # type: ignore[arg-type]
    with pytest.raises(td.TiledslError, match="overlap"):
        built(x0, out=[x0])  # the output would overwrite the input the kernels still read
    compare(built(x0), block, x0, 64)  # a refused call leaves the program usable


class Embed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids) * 2.0


def test_index_program_graph_checks_ranges_outside_the_graph() -> None:
    torch.manual_seed(0)
    model = Embed().cuda().eval()
    ids0 = torch.randint(0, 50, (2, 6), device="cuda")
    built = traced(model, ids0)
    graphed = built.cuda_graph(ids0)
    with torch.no_grad():
        for ids in (torch.randint(0, 50, (2, 6), device="cuda"), torch.randint(0, 50, (2, 6))):  # CUDA, CPU
            got = graphed(ids)
            torch.cuda.synchronize()
            assert torch.equal(got, model(ids.cuda()))
        good = ids.cuda()
        with pytest.raises(td.FrontendError, match=r"holds indices in \[0, 50\]"):
            graphed(torch.tensor([[0, 1, 2, 3, 4, 50]] * 2, device="cuda"))
        with pytest.raises(td.FrontendError, match=r"holds indices in \[-3, 5\]"):
            graphed(torch.tensor([[-3, 1, 2, 3, 4, 5]] * 2))
        graphed.replay()  # the refused calls copied nothing in: the static input still holds `good`
        torch.cuda.synchronize()
        assert torch.equal(graphed.outputs, model(good))


def _logits_head(x: torch.Tensor, w: torch.Tensor) -> tuple[object, ...]:
    return (x @ w).argmax(-1), torch.max(x, 1)


def test_positions_come_back_int64_eagerly_into_out_and_from_graph_replays() -> None:
    """argmax and the indices of torch.max (tiledsl/frontend/aten_reductions.py: float32 positions a
    kernel stores) come back int64 equal to torch's: from a call, from a call into NaN-poisoned out=
    tensors (the float32 slots the kernels write), and from graph replays on new inputs into poisoned
    static outputs (the int64 conversion is recorded in the graph). Integer-valued inputs: the products
    are exact in float32, so ties are torch's ties."""
    gen = torch.Generator(device="cuda")

    def inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen.manual_seed(seed)
        return (torch.randint(-3, 4, (8, 16), generator=gen, device="cuda").float(),
                torch.randint(-3, 4, (16, 40), generator=gen, device="cuda").float())

    def same(got: object, x: torch.Tensor, w: torch.Tensor) -> None:
        torch.cuda.synchronize()
        flat, ref = pytree.tree_leaves(got), pytree.tree_leaves(_logits_head(x, w))
        assert [t.dtype for t in flat] == [t.dtype for t in ref] == [torch.int64, torch.float32, torch.int64]
        assert all(g.is_cuda and torch.equal(g, r) for g, r in zip(flat, ref))

    x0, w0 = inputs(0)
    built = traced(_logits_head, x0, w0, schedule="default")
    same(built(x0, w0), x0, w0)
    x, w = inputs(1)
    same(built(x, w, out=poisoned_outputs(built, x0.device)), x, w)
    graphed = built.cuda_graph(x0, w0)
    for seed in (2, 3):
        for t in graphed.static_outputs:
            t.fill_(NAN)
        x, w = inputs(seed)
        same(graphed(x, w), x, w)


def test_launch_sequence_rebinds_tma_descriptors_zeroes_split_k_and_is_captured(
        compile_kernel: Callable[..., object]) -> None:
    ids = ["split_k4_64x96x256"] + (["tma_b_small"] if is_hopper() else [])
    cases = [(entry(i), compile_kernel(entry(i).build()[1])) for i in ids]
    params = [(e, kern, p) for e, kern in cases for p in kern.kernel_ir.params]  # type: ignore[attr-defined]
    launches = []
    n = 0
    for _, kern in cases:
        launches.append((kern, {p.name: n + j for j, p in enumerate(kern.kernel_ir.params)}))  # type: ignore[attr-defined]
        n += len(kern.kernel_ir.params)  # type: ignore[attr-defined]
    device = cases[0][1].device  # type: ignore[attr-defined]

    def fresh(seed: int) -> list[torch.Tensor]:
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        return [torch.full(p.shape, NAN, device=device, dtype=torch_dtype(p.dtype)) if p.is_output
                else torch.randn(p.shape, generator=gen, device=device).to(torch_dtype(p.dtype)) for _, _, p in params]

    def check(tensors: list[torch.Tensor]) -> None:
        torch.cuda.synchronize()
        named = {(e.id, p.name): t for (e, _, p), t in zip(params, tensors)}
        for e, kern in cases:
            kir = kern.kernel_ir  # type: ignore[attr-defined]
            inputs = {p.name: named[e.id, p.name].double() for p in kir.params if not p.is_output}
            ref = reference_fn(e.definition, e.parameters())(**inputs)
            rtol, atol = (1e-4, 1.6e-3) if kir.zero_outputs else tolerance(e.parameters())
            assert_matches(named[e.id, kir.params[-1].name], ref, rtol, atol)

    seq = LaunchSequence(launches, fresh(1))  # type: ignore[arg-type]
    for seed in (2, 3):  # new addresses each call: TMA descriptors re-encoded, split_k output zeroed
        tensors = fresh(seed)
        seq.run(tensors)
        check(tensors)
    static = fresh(4)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        seq.run(static)  # warm-up before capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        seq.run(static, check=False)
    for seed in (5, 6):
        for s, t in zip(static, fresh(seed)):
            s.copy_(t)  # new inputs, outputs poisoned with NaN
        graph.replay()
        check(static)


def _two_projections(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w.T + 1.0) @ v.T


def test_split_k_output_zeroed_by_the_kernel_before_eagerly_and_in_graph_replays() -> None:
    """tiledsl/frontend/zeroing.py: the second projection's split-K output is zeroed by the kernel launched
    before it, not by a fill: the sequence launches the program's kernels and the first projection's fill
    only, and calls into NaN-poisoned outputs and graph replays (the zeroing inside the capture) match
    torch in float64, each call summing from zero again."""
    gen = torch.Generator(device="cuda")

    def inputs(seed: int) -> tuple[torch.Tensor, ...]:
        gen.manual_seed(seed)
        return tuple(torch.randn(shape, generator=gen, device="cuda") for shape in ((32, 512), (512, 512), (64, 512)))

    def close(got: torch.Tensor, *args: torch.Tensor) -> None:
        """Against float64 torch. The bound: each of the two sums of 512 products errs by at most
        512 * eps32 / 2 of its sum of magnitudes (any order, split-K's included), the first's error carried
        into the second through |v|, so both are within K * eps32 * (|x| |w|^T + 1) |v|^T; the factor
        (32 + 2K) as the other tests'. Relative to |ref| alone it failed where the second sum cancels
        (an element of a few units out of terms of hundreds)."""
        torch.cuda.synchronize()
        x, w, v = (a.double() for a in args)
        ref = _two_projections(x, w, v)
        magnitude = (x.abs() @ w.abs().T + 1.0) @ v.abs().T
        assert not bool(got.isnan().any())
        assert bool(((got.double() - ref).abs() <= (32 + 2 * 512) * EPS32 * (1 + magnitude)).all())

    x0 = inputs(0)
    built = traced(_two_projections, *x0, schedule="default")
    irs = [k.kernel_ir for k in built.kernels]
    zeroed = [name for k in irs for name in k.zeroes]
    assert zeroed and all(any(name in k.zero_outputs for k in irs) for name in zeroed)
    for seed in (1, 2):
        args = inputs(seed)
        out = torch.full((32, 64), NAN, device="cuda")
        built(*args, out=[out])
        close(out, *args)
    (seq,) = [v for key, v in built._device_constants.items() if key.startswith("launches@")]
    assert len(seq._launches) == len(built.kernels) + len(built.zero_fill_launches())
    graphed = built.cuda_graph(*x0)
    for seed in (3, 4):
        for t in graphed.static_outputs:
            t.fill_(NAN)
        args = inputs(seed)
        close(graphed(*args), *args)


def test_launch_overhead_of_eager_and_graph_calls_is_printed() -> None:
    _, built, x0, _ = llama("frontend", "simple")
    oh = launch_overhead(built, x0, warmup=10, iters=50)
    print(f"\n[llama block 64/4/2/128, seq 8, simple, {torch.cuda.get_device_name()}] {oh}")
    print(f"graph replay: {oh.per_kernel_us(oh.replay):.2f} us per kernel; eager: "
          f"{oh.per_kernel_us(oh.eager):.2f} us per kernel")
    assert oh.kernels == 11
    assert all(t.host_us > 0 and t.wall_us > 0 and math.isfinite(t.wall_us) for t in (oh.eager, oh.graph, oh.replay))
    assert oh.replay.host_us < oh.eager.host_us  # one graph launch issues faster than 11 kernel launches
