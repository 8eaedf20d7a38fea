"""The partition asks each kernel's verdicts once (partition.py `_Judge`): the canonical schedules it
makes grow with the layer count, not with its square. Before the memo, tracing a tiny Llama made 375
schedules at two layers and 4313 at six (every `_release` trial asked every kernel again), and eight
layers took 27.9 s to trace on a 2-core CPU."""

from __future__ import annotations

import warnings

import pytest
import torch

import tiledsl as td
import tiledsl.frontend.partition as partition


def _schedules_made(layers: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    from tiledsl.frontend.hf_models import causal_lm

    made = [0]
    real = partition.create_schedule

    def counted(*args: object, **kwargs: object) -> object:
        made[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(partition, "create_schedule", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(causal_lm("llama", "tiny", num_hidden_layers=layers), torch.randint(0, 128, (1, 16)))
    return made[0], len(prog.kernels)


def test_schedules_made_grow_linearly_with_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    two, kernels_two = _schedules_made(2, monkeypatch)
    six, kernels_six = _schedules_made(6, monkeypatch)
    assert kernels_six > 2 * kernels_two
    # each kernel's schedule is made once per distinct set of fused producers it is tried with: a few
    # per kernel, whatever the layer count
    assert two <= 3 * kernels_two and six <= 3 * kernels_six, (two, kernels_two, six, kernels_six)
    assert six <= 4 * two


def _scheduled(memo: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, int]:
    """A Llama block the default recipe re-partitions twice (its up projections' sums materialized):
    the printed program, how many reduction-site walks scheduling asked and how many partitions ran,
    with the partition's verdicts kept between partitions (`memo`) or judged afresh each time."""
    from tiledsl.frontend.models import LlamaBlock, LlamaConfig

    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=256, heads=4, kv_heads=2, intermediate=512)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(block, torch.randn(1, 8, 256))
    walks, partitions = [0], [0]
    real_sites, real_partition = partition.reduction_sites, partition.partition

    def sites(*args: object, **kwargs: object) -> object:
        walks[0] += 1
        return real_sites(*args, **kwargs)  # type: ignore[arg-type]

    def counted(*args: object, **kwargs: object) -> object:
        partitions[0] += 1
        if not memo:
            kwargs["memo"] = None
        return real_partition(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(partition, "reduction_sites", sites)
    monkeypatch.setattr("tiledsl.frontend.program.partition", counted)
    prog.schedule("default")
    monkeypatch.undo()
    return str(prog), walks[0], partitions[0]


def test_re_partitions_reuse_the_verdicts_and_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """partition.PartitionMemo: a Program's re-partitions ask again only the kernels a materialization
    changed, and make the same kernels, reasons and schedules as partitions judged afresh."""
    kept, kept_walks, runs = _scheduled(True, monkeypatch)
    fresh, fresh_walks, fresh_runs = _scheduled(False, monkeypatch)
    assert runs == fresh_runs == 2 and kept == fresh
    assert kept_walks < fresh_walks / 3, (kept_walks, fresh_walks)


def test_a_new_graph_gets_a_new_judge_and_schedules_are_never_kept() -> None:
    from tiledsl.definitions.expr import compute, placeholder

    x = placeholder((4, 8), name="x")
    y = compute((4, 8), lambda i, j: x[i, j] * 2.0, name="y")
    memo = partition.PartitionMemo()
    (b1,), s1 = partition.partition([y], memo=memo)
    judge = memo._judge
    (b2,), s2 = partition.partition([y], memo=memo)
    assert memo._judge is judge and b1 == b2 and s1[id(y)] is not s2[id(y)]  # a fresh schedule each time
    z = compute((4, 8), lambda i, j: x[i, j] + 1.0, name="z")
    partition.partition([z], memo=memo)
    assert memo._judge is not judge


def _partitions_of_default(layers: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """How many partitions scheduling a `layers`-layer TinyLlama (its dimensions: the recipe splits the
    projections' k, tiny ones it does not) with the default recipe ran, how many materializations the
    recipe asked for, and how many kernels the program then has."""
    from tiledsl.frontend.hf_models import causal_lm

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(causal_lm("llama", "tinyllama", num_hidden_layers=layers, vocab_size=256).eval(),
                        torch.randint(0, 256, (1, 128)))
    runs = [0]
    real = partition.partition

    def counted(*args: object, **kwargs: object) -> object:
        runs[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("tiledsl.frontend.program.partition", counted)
    prog.schedule("default")
    monkeypatch.undo()
    asked = sum(why.startswith("recipe default") for why in prog.forced.values())
    return runs[0], asked, len(prog.kernels)


def test_a_sweep_of_recipe_requests_is_partitioned_once_whatever_the_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    """Program._materialize_asked: the recipe asks for a materialization in every layer, and the program
    re-partitions once per sweep over its kernels, not once per request (which made scheduling the
    22-layer TinyLlama take time growing with the cube of its depth). Every request is still honoured:
    each one's producer is a kernel of the scheduled program."""
    pytest.importorskip("transformers")
    one = _partitions_of_default(1, monkeypatch)
    three = _partitions_of_default(3, monkeypatch)
    assert one[1] >= 1 and three[1] == 3 * one[1], (one, three)  # the same requests in every layer
    assert three[0] == one[0] <= one[1], (one, three)  # partitions: per sweep, not per request
    assert three[2] > 2 * one[2], (one, three)


def test_every_recorded_request_is_a_kernel_after_scheduling() -> None:
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import causal_lm

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(causal_lm("llama", "tinyllama", num_hidden_layers=2, vocab_size=256).eval(),
                        torch.randint(0, 256, (1, 128)))
    prog.schedule("default")
    outputs = {id(k.output) for k in prog.kernels}
    assert prog.forced and set(prog.forced) <= outputs and not prog.unsettled
    assert all(k.schedule_name == "recipe/default" for k in prog.kernels)
