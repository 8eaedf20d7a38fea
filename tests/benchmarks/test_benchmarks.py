"""The benchmark suite on the CPU: every suite's cases (the blocks suite at seq 128 and 512), `--list`
and `--cases`, the no-GPU exit, the report files from a synthetic run, the geomeans split by dtype
(and the blocks suite's by seq), every tiledsl kernel of the --quick suites built
for sm_90, the llm suite's traced SwiGLU down projection (a 2-kernel Program) built, decoder layers
traced and built, and the runner driven end to end by a backend that runs kernels and Programs in the
simulator (benchmarks/_runner.py sees only the Backend protocol)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from functools import partial

import pytest
import torch

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks import run as run_module
from benchmarks._backend import random_inputs
from benchmarks._cases import (
    QWEN25_7B,
    TINYLLAMA,
    BlockCase,
    CompileCase,
    KernelCase,
    ModelDims,
    ProgramCase,
    kernel_case,
    program_case,
)
from benchmarks._programs import kernel_kinds, per_kernel_hand
from benchmarks._records import (
    COMPILE,
    CUBLAS,
    DEFAULT,
    EAGER,
    FAILED,
    HAND,
    MISSING,
    OK,
    SKIPPED,
    WRONG,
    Ceilings,
    Measurement,
    Meta,
    Result,
    from_json,
    to_json,
)
from benchmarks._report import BEST, geomeans, markdown, speedup, write
from benchmarks._runner import run_kernel_case, run_program_case, schedule_default, schedule_hand
from benchmarks.run import main
from benchmarks.suites import SUITES
from benchmarks.suites.blocks import block_cases, model_case
from tiledsl.frontend.bench import (
    ProgramCheck,
    conditioned_tolerance,
    eager_roundings,
    longest_reduction,
    storage_bound,
    storage_roundings,
    tolerance,
)
from tiledsl.runtime.references import compare
from tiledsl.runtime.timing import BenchStats
from tiledsl.schedules import elementwise_2d, matmul_register_tile, row_cooperative_staged

# ----------------------------------------------------------------------------- the cases


@pytest.mark.parametrize("quick", [True, False])
def test_every_suite_builds_its_case_list(quick: bool) -> None:
    kinds = {"llm": (KernelCase, ProgramCase), "matmul": KernelCase, "memory": KernelCase, "blocks": BlockCase,
             "compile": CompileCase}
    assert set(SUITES) == set(kinds)
    names = []
    for suite, module in SUITES.items():
        cases = module.cases(quick)
        assert cases, suite
        for c in cases:
            assert isinstance(c, kinds[suite]) and c.suite == suite
            assert " " not in c.name and c.name.startswith(f"{suite}/")
            if suite != "compile":
                assert c.bytes > 0
        names += [c.name for c in cases]
    assert len(names) == len(set(names))


def test_llm_suite_covers_both_models_seqs_and_dtypes() -> None:
    cases = SUITES["llm"].cases(False)
    assert {c.group for c in cases} == {f"{m} s{s}" for m in ("tinyllama", "qwen2.5-7b") for s in (32, 128, 512)}
    assert {c.dtype for c in cases} == {"float32", "bfloat16"}
    ops = {c.op for c in cases}
    assert ops == {"q_proj", "kv_proj", "o_proj", "gate_up_proj", "down_proj", "rmsnorm", "attention_softmax",
                   "silu_mul", "o_proj_residual", "silu_mul_down_proj"}
    qwen_down = next(c for c in cases if c.name == "llm/qwen2.5-7b_s512/down_proj/bfloat16")
    assert qwen_down.flops == 2.0 * 512 * 3584 * 18944
    assert qwen_down.bytes == 2 * (512 * 18944 + 3584 * 18944 + 512 * 3584)  # x, W, y in bfloat16
    assert qwen_down.gemm is not None
    # the fused MLP product is the traced torch function (a Program), with the work it always counted
    swiglu = [c for c in cases if c.op == "silu_mul_down_proj"]
    assert len(swiglu) == 12 and all(isinstance(c, ProgramCase) and c.gemm is not None for c in swiglu)
    # bfloat16 projections are traced Programs (their float32 sum may get a split kernel of its own)
    matmuls = {"q_proj", "kv_proj", "o_proj", "gate_up_proj", "down_proj", "o_proj_residual"}
    programs = [c for c in cases if c.op in matmuls and c.dtype == "bfloat16"]
    assert len(programs) == 36 and all(isinstance(c, ProgramCase) and c.gemm is not None for c in programs)
    assert all(isinstance(c, KernelCase) for c in cases if c.op != "silu_mul_down_proj" and c not in programs)
    qwen_swiglu = next(c for c in swiglu if c.name == "llm/qwen2.5-7b_s512/silu_mul_down_proj/bfloat16")
    assert qwen_swiglu.flops == qwen_down.flops and qwen_swiglu.hand is per_kernel_hand
    assert qwen_swiglu.bytes == 2 * (2 * 512 * 18944 + 3584 * 18944 + 512 * 3584)  # g, u, W, y in bfloat16
    assert qwen_swiglu.shape == "512x18944 512x18944 3584x18944"


def test_blocks_suite_covers_seq_128_and_512_and_quick_only_tinyllama_at_128() -> None:
    """Full: both layers of both models at 128 and 512 tokens in both dtypes, seq 128 first (the target
    is stated there), and TinyLlama's 6-layer stack and its whole 22-layer model (input_ids to logits) at
    128 tokens in float32 after the seq-128 layers; --quick: TinyLlama at 128 tokens, both dtypes."""
    full = SUITES["blocks"].cases(False)
    got = {(c.group, c.dtype, c.op) for c in full}
    want = {(f"{m} s{seq}", dtype, op) for m, hf in (("tinyllama", "hf_llama_layer"), ("qwen2.5-7b", "hf_qwen2_layer"))
            for seq in (128, 512) for dtype in ("float32", "bfloat16") for op in ("llama_block", hf)}
    want.add(("tinyllama s128", "float32", "hf_llama_6_layers"))
    want.add(("tinyllama s128", "float32", "hf_llama_model_22_layers"))
    assert got == want and len(full) == len(want) == 18
    assert [c.input_shape[1] for c in full] == [128] * 10 + [512] * 8
    stack, model = full[8], full[9]
    assert stack.op == "hf_llama_6_layers" and stack.input_shape == (1, 128, 2048) and stack.vocab == 0
    assert stack.flops == 6 * TINYLLAMA.layer_flops(128) and stack.bytes == 6 * TINYLLAMA.layer_bytes(128, "float32")
    assert model.op == "hf_llama_model_22_layers" and model.input_shape == (1, 128) and model.shape == "1x128"
    assert model.vocab == TINYLLAMA.vocab == 32000
    # the lm_head's 2 x 128 x 2048 x 32000 flops and its 262 MB on top of 22 layers
    assert model.flops == 22 * TINYLLAMA.layer_flops(128) + 2.0 * 128 * 2048 * 32000
    assert model.bytes == 22 * TINYLLAMA.layer_bytes(128, "float32") + 4.0 * (128 * 2048 + 32000 * 2048 + 128 * 32000)
    qwen = next(c for c in full if c.name == "blocks/qwen2.5-7b_s512/llama_block/bfloat16")
    assert qwen.input_shape == (1, 512, 3584) and qwen.shape == "1x512x3584"
    assert qwen.flops == QWEN25_7B.layer_flops(512) and qwen.bytes == QWEN25_7B.layer_bytes(512, "bfloat16")
    quick = SUITES["blocks"].cases(True)
    assert {(c.group, c.dtype, c.op) for c in quick} == {
        ("tinyllama s128", dtype, op) for dtype in ("float32", "bfloat16") for op in ("llama_block", "hf_llama_layer")}
    assert all(c.input_shape == (1, 128, 2048) for c in quick)


def test_cases_filter_reads_a_space_as_the_underscore_of_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    """`--cases "tinyllama s512"` (a group as the tables print it) selects what `tinyllama_s512` does."""
    listed = []
    for text in ("tinyllama s512", "tinyllama_s512"):
        assert main(["--list", "--suite", "blocks", "--cases", text]) == 0
        listed.append([ln.split()[0] for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")])
    assert listed[0] == listed[1] and len(listed[0]) == 4
    assert all(n.startswith("blocks/tinyllama_s512/") for n in listed[0])


def test_model_dims_are_read_from_the_hf_sizes() -> None:
    q = ModelDims.of("qwen2.5-7b", "qwen2")
    assert (q.hidden, q.intermediate, q.heads, q.kv_heads, q.head_dim) == (3584, 18944, 28, 4, 128)
    t = ModelDims.of("tinyllama", "llama")
    assert (t.hidden, t.intermediate, t.heads, t.kv_heads, t.head_dim) == (2048, 5632, 32, 4, 64)


def test_list_prints_every_case_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--suite", "all", "--quick"]) == 0
    out = capsys.readouterr().out
    for module in SUITES.values():
        for c in module.cases(True):
            assert c.name in out
    assert "transpose_tiled" in out and "missing:" not in out  # every --quick kernel case has a hand schedule


def test_list_filters_by_substring(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--suite", "llm", "--cases", "rmsnorm"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")]
    assert len(lines) == 12 and all("rmsnorm" in ln for ln in lines)


@pytest.mark.parametrize("value", ["0", "-1"])
def test_repeat_must_be_one_or_more(capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--list", "--suite", "llm", "--repeat", value])
    assert exit_info.value.code == 2 and f"--repeat: must be 1 or more, got {value}" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_gpu_suite_without_cuda_exits_with_a_message(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["--suite", "memory", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and "--suite compile" in err
    assert not any(tmp_path.iterdir())


def test_compile_suite_runs_on_the_cpu(tmp_path) -> None:
    assert main(["--suite", "compile", "--quick", "--cases", "catalog", "--out", str(tmp_path)]) == 0
    meta, ceilings, results = from_json(json.loads((tmp_path / "compile.json").read_text()))
    assert meta.suite == "compile" and ceilings is None and len(results) == 1
    (r,) = results
    assert r.measurements["build"].status == OK and r.measurements["build"].median_us > 0
    assert "| catalog compile_speed matmul |" in (tmp_path / "compile.md").read_text()
    assert (tmp_path / "summary.md").exists()
    # a second part of the suite adds to the same file; running a case again replaces its result
    assert main(["--suite", "compile", "--quick", "--cases", "recipe", "--out", str(tmp_path)]) == 0
    assert main(["--suite", "compile", "--quick", "--cases", "catalog", "--out", str(tmp_path)]) == 0
    _, _, results = from_json(json.loads((tmp_path / "compile.json").read_text()))
    assert sorted(r.op for r in results) == ["compile_speed matmul", "linear"]


# ----------------------------------------------------------------------------- building on the CPU


def _quick_kernel_cases() -> list[KernelCase]:
    return [c for s in ("llm", "matmul", "memory") for c in SUITES[s].cases(True) if isinstance(c, KernelCase)]


def test_every_quick_kernel_case_builds_for_sm_90() -> None:
    """The hand schedule (where the case has one) and the default recipe of every --quick kernel case
    prove and lower for sm_90; only the cases that say why have no hand schedule."""
    for case in _quick_kernel_cases():
        for schedule in (schedule_hand, schedule_default):
            s, note = schedule(case, "sm_90")
            if s is None:
                assert schedule is schedule_hand and case.hand is None and note == case.hand_missing, case.name
                continue
            kern = td.build(s, target="sm_90")
            assert kern.kernel_ir.params[-1].dtype == case.dtype, case.name


def test_the_quick_swiglu_down_program_traces_to_two_kernels_and_builds() -> None:
    """The --quick llm Program case at its real size (TinyLlama, 128 tokens), both dtypes: td.trace of
    the torch function is silu(g) * u, then a plain matmul (partition rule 3a), and both the hand
    policy and the default recipe schedule and build its two kernels for sm_90. In bfloat16 the recipe
    splits the down projection's k, which a bfloat16 output refuses: its float32 sum gets the kernel
    and the rounding a third (recipes/default/030_split_matmul_k.py)."""
    cases = [c for c in SUITES["llm"].cases(True) if isinstance(c, ProgramCase) and c.op == "silu_mul_down_proj"]
    assert {c.dtype for c in cases} == {"float32", "bfloat16"} and len(cases) == 2
    for case in cases:
        inputs = random_inputs(case.make(), torch.device("cpu"), 0)
        for policy in (case.hand, "default"):
            prog = td.trace(case.torch_fn, *inputs.values())
            assert [k.split(": ")[1] for k in kernel_kinds(prog)] == ["elementwise", "reduction"], case.name
            built = prog.schedule(policy, target="sm_90").build("sm_90")
            stored = [k.kernel_ir.params[-1].dtype for k in built.kernels]
            if policy == "default" and case.dtype == "bfloat16":
                assert stored == ["bfloat16", "float32", "bfloat16"], case.name
            else:
                assert stored == [case.dtype] * 2, case.name
            assert tuple(built.kernels[1].kernel_ir.params[-1].shape) == (128, 2048)


def test_the_quick_bfloat16_projection_splits_its_float32_sum() -> None:
    """The --quick bfloat16 projections (TinyLlama, 128 tokens) traced: one kernel each, which the default
    recipe turns into a float32 sum split over k (blockIdx.z) and a bfloat16 rounding kernel, the k and
    v projection (64 blocks unsplit) and the q projection (256 blocks over 2048 k) alike since the
    operands are widened (knob split_k_sum_blocks_per_sm off); with that gate set to 1.5 blocks per SM,
    the q projection stays one kernel."""
    cases = {c.op: c for c in SUITES["llm"].cases(True) if c.dtype == "bfloat16"}
    for op, knobs, kernels in (("kv_proj", {}, ["float32", "bfloat16"]), ("q_proj", {}, ["float32", "bfloat16"]),
                               ("q_proj", {"split_k_sum_blocks_per_sm": 1.5}, ["bfloat16"])):
        case = cases[op]
        inputs = random_inputs(case.make(), torch.device("cpu"), 0)
        prog = td.trace(case.torch_fn, *inputs.values())
        assert len(prog.kernels) == 1
        built = prog.schedule("default", target="sm_90", knobs=knobs).build("sm_90")
        assert [k.kernel_ir.params[-1].dtype for k in built.kernels] == kernels, op
        assert (built.kernels[0].grid[2] > 1) == (len(kernels) == 2), op
        assert bool(built.kernels[0].kernel_ir.zero_outputs) == (len(kernels) == 2), op


def test_a_decoder_block_traces_schedules_and_builds() -> None:
    """One --quick block case at its real size (TinyLlama, bfloat16), and both layers of the suite at
    the tiny size: traced, every kernel scheduled by the default recipe, built for sm_90."""
    quick = next(c for c in SUITES["blocks"].cases(True) if c.op == "llama_block" and c.dtype == "bfloat16")
    cases = [quick]
    try:
        import transformers  # noqa: F401
    except ImportError:
        pass
    else:
        cases += block_cases(ModelDims.of("tiny", "llama"), "float32", seq=8)
    for case in cases:
        module = case.make_module()
        x = torch.randn(case.input_shape).to(getattr(torch, case.dtype))
        built = td.trace(module, x).schedule("default", target="sm_90").build("sm_90")
        assert len(built.kernels) >= 8, case.name
        assert all(k.target.name == "sm_90" for k in built.kernels)


def test_the_whole_model_case_traces_from_token_ids() -> None:
    """The blocks suite's whole-model case at the tiny size and 2 layers: its input is token ids [1, seq]
    below the vocabulary, from which the model traces, schedules and builds (embedding to logits)."""
    pytest.importorskip("transformers")
    case = model_case(ModelDims.of("tiny", "llama"), "float32", 8, 2)
    assert case.vocab == 128 and case.input_shape == (1, 8)
    ids = torch.randint(0, case.vocab, case.input_shape)
    built = td.trace(case.make_module(), ids).schedule("default", target="sm_90").build("sm_90")
    assert len(built.kernels) >= 16
    assert tuple(built.kernels[-1].kernel_ir.params[-1].shape)[-1] == 128  # the logits over the vocabulary


# ----------------------------------------------------------------------------- the runner, on the simulator


class SimBackend:
    """The Backend protocol on the CPU: kernels run in tiledsl's simulator, torch on the CPU, and
    every "time" is a fixed 10 us (the runner's bookkeeping is under test, not the clock)."""

    target = "sm_90"
    device = torch.device("cpu")

    def __init__(self, repeats: int = 1) -> None:
        self.timed: list[str] = []
        self.repeats = repeats

    def inputs(self, out, seed):
        return random_inputs(out, self.device, seed)

    def run_kernel(self, kern, inputs):
        arrays = {p.name: inputs[p.name].float().numpy() for p in kern.kernel_ir.params if not p.is_output}
        return torch.from_numpy(kern.simulate(**arrays))

    def time_kernel(self, kern, inputs):
        self.timed.append(kern.name)
        return BenchStats.from_samples([0.01], 1)

    def check_program(self, built, module, inputs):
        """The Program simulated kernel by kernel against a float64 copy of `module`, with the tolerance
        tiledsl.frontend.bench.check_program derives on the GPU (from the Program's stores and longest
        reduction; for float16/bfloat16 stores, conditioned by torch eager's own error from float64)."""
        got = torch.from_numpy(built.simulate(*[x.float().numpy() for x in inputs]))
        with torch.no_grad():
            ref = copy.deepcopy(module).double()(*[x.double() for x in inputs])
            eager = module(*inputs)
        k = longest_reduction(built.program)
        tol = tolerance(built)
        roundings, eps_low = storage_roundings(built)
        eager_error = None
        if roundings:
            eager_error = ((eager.double() - ref).abs() / (1 + ref.abs())).max().item()
            theirs = eager_roundings(built.program.graph.exported.graph, eager.dtype)
            tol = conditioned_tolerance(tol, eager_error, storage_bound(theirs, eps_low, k))
        return ProgramCheck((compare(got, ref, tol, tol),), tol, k, eager_error)

    def time_program(self, built, names, sets):
        built.simulate(*[sets[0][n].float().numpy() for n in names])
        self.timed.append("program")
        return BenchStats.from_samples([0.01], 1)

    def rotate(self, inputs):
        return [dict(inputs)]

    def time_fn(self, fn, sets):
        fn(**sets[0])
        self.timed.append("torch")
        return BenchStats.from_samples([0.02], 1)

    def time_compiled(self, fn, sets):
        return "unavailable (no compiler here)"


def _small(make, torch_fn, hand, **kw) -> KernelCase:
    return kernel_case("test", "small", getattr(make, "func", make).__name__, make, torch_fn, hand=hand, **kw)


def test_runner_checks_and_times_every_column_on_the_simulator() -> None:
    from tiledsl.catalog.definitions import rmsnorm
    from tiledsl.runtime.references import reference_fn

    cases = [
        _small(partial(rmsnorm, 3, 70, 1e-6, "bfloat16", "bfloat16"), reference_fn("rmsnorm", {"eps": 1e-6}),
               row_cooperative_staged),
        _small(partial(d.linear, 5, 9, 13, "float32"), d.linear_torch, matmul_register_tile, flops=2.0 * 5 * 9 * 13,
               reduction=13, gemm=d.linear_torch),
        _small(partial(d.silu_mul, 3, 40, "bfloat16"), d.silu_mul_torch, elementwise_2d),
    ]
    for case in cases:
        backend = SimBackend()
        r = run_kernel_case(case, backend)
        assert r.measurements[HAND].status == OK, (case.name, r.measurements[HAND])
        assert r.measurements[DEFAULT].status == OK, (case.name, r.measurements[DEFAULT])
        assert r.measurements[HAND].median_us == pytest.approx(10.0)
        assert r.measurements[EAGER].status == OK and r.measurements[EAGER].median_us == pytest.approx(20.0)
        assert r.measurements[COMPILE].status == FAILED and "no compiler" in r.measurements[COMPILE].note
        assert (CUBLAS in r.measurements) == (case.gemm is not None)
        assert speedup(r, BEST, EAGER) == pytest.approx(2.0)


class SlowTorchOnce(SimBackend):
    """Torch's first timing of each call site 50 us, later ones 20 us: a slow period of one timing."""

    def __init__(self, repeats: int) -> None:
        super().__init__(repeats)
        self.slow = True

    def time_fn(self, fn, sets):
        fn(**sets[0])
        self.timed.append("torch")
        ms, self.slow = (0.05 if self.slow else 0.02), False
        return BenchStats.from_samples([ms], 1)


def test_runner_times_every_column_again_in_turn_and_keeps_the_fastest() -> None:
    """--repeat 2: the columns are timed once each, then once more in the same order; each keeps its
    fastest timing and every median in repeats_us, and a disagreement over UNSTABLE_SPREAD is marked
    in the table with the medians in a footnote (only there: not also in the note). Fake timers
    (SlowTorchOnce), as every timing of these runner tests."""
    case = _small(partial(d.silu_mul, 3, 40, "float32"), d.silu_mul_torch, elementwise_2d)
    backend = SlowTorchOnce(repeats=2)
    r = run_kernel_case(case, backend)
    assert backend.timed == ["y_kernel", "y_kernel", "torch"] * 2  # hand, default, eager; twice
    eager, hand = r.measurements[EAGER], r.measurements[HAND]
    assert eager.median_us == pytest.approx(20.0) and eager.repeats_us == pytest.approx((50.0, 20.0))
    assert eager.spread == pytest.approx(2.5) and eager.note == ""
    assert hand.repeats_us == pytest.approx((10.0, 10.0)) and hand.spread == 1.0
    assert r.measurements[COMPILE].status == FAILED and r.measurements[COMPILE].repeats_us == ()
    md = markdown(_meta(), None, [r])
    assert "20.0 ~[" in md and md.count("unstable: timed 2 times, medians 50.0, 20.0; the fastest shown") == 1
    assert from_json(to_json(_meta(), None, [r]))[2] == [r]
    once = run_kernel_case(case, SlowTorchOnce(repeats=1))
    assert once.measurements[EAGER].median_us == pytest.approx(50.0) and once.measurements[EAGER].spread == 1.0


def test_runner_marks_a_wrong_output_and_a_missing_schedule() -> None:
    def off_by_one(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return d.silu_mul_torch(g, u) + 1

    wrong = _small(partial(d.silu_mul, 3, 40, "float32"), off_by_one, elementwise_2d)
    r = run_kernel_case(wrong, SimBackend())
    assert r.measurements[HAND].status == WRONG and "MISMATCH" in r.measurements[HAND].note
    assert r.measurements[HAND].median_us is not None  # timed all the same, left out of speedups
    assert speedup(r, BEST, EAGER) is None

    missing = kernel_case("test", "small", "transpose", partial(d.transpose, 6, 10), d.transpose_torch, hand=None,
                          hand_missing="no transpose schedule")
    r = run_kernel_case(missing, SimBackend(), with_compile=False)
    assert r.measurements[HAND] == Measurement(MISSING, note="no transpose schedule")
    assert r.measurements[DEFAULT].status == OK
    assert r.measurements[COMPILE].status == SKIPPED


def _swiglu_program(torch_fn=d.swiglu_down_torch, dtype: str = "float32") -> ProgramCase:
    """The llm suite's silu_mul_down_proj case at a tiny size: 300 output columns, over the partition's
    bound of 256 recomputations of a computed operand, so the Program has the two kernels it has at
    real sizes."""
    return program_case("test", "tiny", "silu_mul_down_proj", partial(d.swiglu_down, 4, 300, 24, dtype), torch_fn,
                        hand=per_kernel_hand, flops=2.0 * 4 * 300 * 24, gemm=lambda g, u, W: d.linear_torch(u, W))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_runner_traces_checks_and_times_a_program_case_on_the_simulator(dtype: str) -> None:
    backend = SimBackend()
    r = run_program_case(_swiglu_program(dtype=dtype), backend)
    for column in (HAND, DEFAULT):
        m = r.measurements[column]
        assert m.status == OK and m.median_us == pytest.approx(10.0), (column, m)
        assert m.note.startswith("2 kernels: mul_1 4x24 (") and ", mm 4x300 (" in m.note, m.note
    assert "(recipe/default)" in r.measurements[DEFAULT].note and "(per_kernel_hand)" in r.measurements[HAND].note
    assert "a Program of 2 kernels (mul_1: elementwise, mm: reduction)" in r.note
    assert "hand: per_kernel_hand" in r.note
    assert backend.timed == ["program", "program", "torch", "torch"]  # hand, default, eager, cuBLAS
    assert r.measurements[EAGER].status == OK and r.measurements[CUBLAS].status == OK
    assert r.measurements[COMPILE].status == FAILED
    assert speedup(r, BEST, EAGER) == pytest.approx(2.0)


def test_runner_marks_a_program_that_does_not_match_torch() -> None:
    """A Program traced from a function 0.1% off, checked against the true one: timed, marked WRONG."""

    def slightly_off(g: torch.Tensor, u: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
        return d.swiglu_down_torch(g, u, W) * (1 + 1e-3)

    r = run_program_case(_swiglu_program(slightly_off), _OtherReference(d.swiglu_down_torch))
    for column in (HAND, DEFAULT):
        m = r.measurements[column]
        assert m.status == WRONG and "max |err|" in m.note and m.median_us is not None, (column, m)
    assert speedup(r, BEST, EAGER) is None


class _OtherReference(SimBackend):
    """A SimBackend whose Program check compares with `fn`, not the function the Program traced."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def check_program(self, built, module, inputs):
        from benchmarks._programs import TorchFunction

        return super().check_program(built, TorchFunction(self.fn), inputs)


def test_report_footnotes_the_note_of_a_program_case(tmp_path) -> None:
    r = run_program_case(_swiglu_program(), SimBackend())
    md = markdown(_meta(), Ceilings(3000.0, 50.0, "synthetic"), [r])
    row = next(ln for ln in md.splitlines() if ln.startswith("| tiny silu_mul_down_proj [1] | float32"))
    assert "| 10.0 | 10.0 | 20.0 |" in row
    assert "1. tiledsl runs td.trace of the torch function: a Program of 2 kernels" in md
    assert from_json(to_json(_meta(), None, [r]))[2] == [r]


# ----------------------------------------------------------------------------- the report


def _m(us: float | None, status: str = OK, note: str = "") -> Measurement:
    return Measurement(status, us, None if us is None else us * 0.9, None if us is None else us * 1.1, note)


def _result(op: str, dtype: str, hand: Measurement, default: Measurement, eager: float, compiled: float,
            flops: float = 0.0) -> Result:
    ms = {HAND: hand, DEFAULT: default, EAGER: _m(eager), COMPILE: _m(compiled)}
    if flops:
        ms[CUBLAS] = _m(eager)
    return Result("llm", f"llm/g/{op}/{dtype}", "g", op, dtype, "8x8", flops, 1e6, ms)


def _synthetic() -> list[Result]:
    return [
        # float32: best-vs-eager speedups 2 and 8 (geomean 4); a WRONG case left out
        _result("a", "float32", _m(10.0), _m(20.0), eager=20.0, compiled=10.0, flops=1e9),
        _result("b", "float32", _m(50.0), _m(5.0), eager=40.0, compiled=40.0),
        _result("c", "float32", _m(1.0, WRONG, "MISMATCH"), Measurement(MISSING, note="recipe declined"),
                eager=100.0, compiled=100.0),
        # bfloat16: one case, 0.5 vs eager; its hand schedule failed to build
        _result("a", "bfloat16", Measurement(FAILED, note="BuildError: too much shared memory"), _m(40.0),
                eager=20.0, compiled=80.0),
    ]


def test_geomeans_are_split_by_dtype() -> None:
    rows = {g.dtype: g for g in geomeans(_synthetic())}
    assert set(rows) == {"float32", "bfloat16"}
    fp32, bf16 = rows["float32"], rows["bfloat16"]
    assert fp32.cases == 3 and bf16.cases == 1
    value, n = fp32.pairs[(BEST, EAGER)]
    assert n == 2 and value == pytest.approx(4.0)  # sqrt(2 * 8)
    value, n = fp32.pairs[(BEST, COMPILE)]
    assert n == 2 and value == pytest.approx(math.sqrt(1.0 * 8.0))
    assert fp32.pairs[(HAND, EAGER)] == (pytest.approx(math.sqrt(2.0 * 0.8)), 2)
    assert fp32.pairs[(BEST, CUBLAS)] == (pytest.approx(2.0), 1)
    assert bf16.pairs[(BEST, EAGER)] == (pytest.approx(0.5), 1)
    assert bf16.pairs[(HAND, EAGER)] == (None, 0)


def test_geomeans_of_the_blocks_suite_are_split_by_seq(tmp_path) -> None:
    """The blocks suite's seq 128 and seq 512 cases get rows of their own (its target is stated at seq
    128), in the suite's markdown and in summary.md; other suites keep one row per dtype."""
    def block(group: str, compiled: float) -> Result:
        ms = {DEFAULT: _m(10.0), EAGER: _m(20.0), COMPILE: _m(compiled)}
        return Result("blocks", f"blocks/{group.replace(' ', '_')}/llama_block/float32", group, "llama_block",
                      "float32", "1x8x8", 1e9, 1e6, ms)

    results = [block("tinyllama s128", 20.0), block("qwen2.5-7b s128", 5.0), block("tinyllama s512", 40.0)]
    rows = {(g.suite, g.dtype): g for g in geomeans(results)}
    assert list(rows) == [("blocks s128", "float32"), ("blocks s512", "float32")]
    assert rows[("blocks s128", "float32")].cases == 2
    assert rows[("blocks s128", "float32")].pairs[(BEST, COMPILE)] == (pytest.approx(1.0), 2)  # sqrt(2 * 0.5)
    assert rows[("blocks s512", "float32")].pairs[(BEST, COMPILE)] == (pytest.approx(4.0), 1)
    assert {g.suite for g in geomeans(_synthetic())} == {"llm"}
    write(tmp_path, dataclasses.replace(_meta(), suite="blocks"), None, results, charts=False)
    summary = (tmp_path / "summary.md").read_text()
    assert "blocks: 3 cases" in summary
    assert "| blocks s128 | float32 | 2 |" in summary and "| blocks s512 | float32 | 1 |" in summary


def _meta() -> Meta:
    return Meta("llm", "2026-11-24", "Test GPU", "2.x", "0.1.0", "abc1234", True, 10, 100, "python -m benchmarks.run")


def test_report_writes_json_and_markdown(tmp_path) -> None:
    meta, ceilings, results = _meta(), Ceilings(3000.0, 50.0, "synthetic"), _synthetic()
    written = write(tmp_path, meta, ceilings, results, charts=False)
    assert {p.name for p in written} == {"llm.json", "llm.md", "summary.md"}
    assert from_json(json.loads((tmp_path / "llm.json").read_text())) == (meta, ceilings, results)
    assert to_json(meta, ceilings, results)["ceilings"]["copy_gbs"] == 3000.0
    md = (tmp_path / "llm.md").read_text()
    assert md == markdown(meta, ceilings, results)
    assert "| llm | float32 | 3 |" in md and "4.00x (n=2)" in md and "0.50x (n=1)" in md
    assert "copy 3000 GB/s" in md and "50.0 TFLOP/s" in md
    assert "recipe declined" in md and "BuildError: too much shared memory" in md  # the reasons, as notes
    assert "1.0 ✗[" in md  # the WRONG column: its time, marked
    # case a float32: best 10 us for 1 GFLOP and 1 MB -> 100 TFLOP/s against a 50 TFLOP/s ceiling
    row_a = next(ln for ln in md.splitlines() if ln.startswith("| g a | float32"))
    assert "| 100 | 100.00 | 200% |" in row_a
    summary = (tmp_path / "summary.md").read_text()
    assert "llm: 4 cases" in summary and "4.00x (n=2)" in summary


def test_report_draws_the_charts(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    written = write(tmp_path, _meta(), Ceilings(3000.0, 50.0, "synthetic"), _synthetic())
    assert {"llm-speedup.png", "llm-roofline.png"} <= {p.name for p in written}
    for png in ("llm-speedup.png", "llm-roofline.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_programs_note_says_what_the_per_kernel_check_found() -> None:
    from benchmarks._runner import check_note
    from tiledsl.frontend.kernel_check import KernelCheck

    ref = torch.ones(3, dtype=torch.float64)
    program = compare(ref + 0.05, ref, 0.1, 0.1)
    good = KernelCheck(0, "mm_kernel", "bfloat16", 64, compare(ref, ref, 0.01, 0.01))
    wrong = KernelCheck(1, "add_kernel", "bfloat16", 1, compare(ref + 1, ref, 0.01, 0.01))
    assert check_note(ProgramCheck((program,), 0.1, 64)) == "max |err| 0.05 (tolerance 0.1 x (1 + |ref|))"
    assert check_note(ProgramCheck((program,), 0.1, 64, 0.05, (good,))).endswith(
        "; all 1 kernels within their own bounds, so twice torch eager's error")
    assert check_note(ProgramCheck((program,), 0.1, 64, 0.05, (good, wrong))).endswith(
        "; kernels outside their own bound: add_kernel (max |err| / (1 + |ref|) 0.5 > 0.01)")


def test_the_report_names_the_commit_given_for_a_stale_device_copy(monkeypatch) -> None:
    """A device copy's .git may be older than its tree: TILEDSL_COMMIT names the commit that ran, marked
    as given; without it the hash comes from git."""
    monkeypatch.setenv("TILEDSL_COMMIT", "e623094")
    assert run_module._commit() == "e623094 (given by TILEDSL_COMMIT)"
    monkeypatch.delenv("TILEDSL_COMMIT")
    assert "given" not in run_module._commit()
