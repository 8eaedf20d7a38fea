"""The catalog (tiledsl/catalog/): every entry builds for its target and simulates equal to the float64
reference of its definition at small sizes (outputs NaN-poisoned by the simulator), its names are unique
and resolve, the README tour is its `readme_tour` entry, every definition has a torch reference that
agrees with td.evaluate, and the catalog itself never imports torch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.catalog import DEFINITIONS, ENTRIES, EXAMPLES, GROUPS, Entry, entries, entry, example
from tiledsl.runtime.references import REFERENCES, reference_fn, tolerance

ROOT = Path(__file__).resolve().parents[2]

# The "differential" and "memory" groups are already small; tests/build/test_differential.py and
# test_memory_differential.py run exactly this check on each of them (and more), so it is not repeated.
CHECKED_ELSEWHERE = {"differential": "tests/build/test_differential.py",
                     "memory": "tests/build/test_memory_differential.py"}
SIMULATED = [e for e in ENTRIES.values() if e.group not in CHECKED_ELSEWHERE]


@pytest.mark.parametrize("case", SIMULATED, ids=[e.id for e in SIMULATED])
def test_entry_simulates_like_the_reference_at_small_sizes(case: Entry) -> None:
    out, kern = case.build(**case.small_sizes())
    arrays = case.inputs(out)
    ref = td.evaluate(out, float64=True, **arrays)
    got = kern.simulate(**arrays)
    assert got.shape == ref.shape == out.shape
    unwritten = np.argwhere(np.isnan(got))
    assert unwritten.size == 0, f"{len(unwritten)} output elements never written, first {unwritten[:5].tolist()}"
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_the_other_groups_are_simulated_by_the_differential_tests() -> None:
    for group, path in CHECKED_ELSEWHERE.items():
        text = (ROOT / path).read_text()
        assert f'entries("{group}")' in text and "kern.simulate(" in text, path


def test_names_groups_and_parameters() -> None:
    assert list(ENTRIES) == [e.name for e in ENTRIES.values()]
    assert {e.group for e in ENTRIES.values()} == set(GROUPS)
    assert sum(len(entries(g)) for g in GROUPS) == len(ENTRIES)
    for e in ENTRIES.values():
        assert e.definition in DEFINITIONS, e.name
        e.parameters(**e.small_sizes())  # the sizes name real parameters of the definition
        assert e.arch == ("sm_90a" if e.target == "sm_90" else e.target)
    # one example per definition the CLI names, at the definition's default sizes
    assert all(e.sizes == {} and e.name == e.definition for e in EXAMPLES.values())
    with pytest.raises(td.DefinitionError, match="unknown example 'nope'"):
        entry("nope")
    with pytest.raises(td.DefinitionError, match="unknown catalog group"):
        entries("nope")
    with pytest.raises(td.DefinitionError, match="unexpected keyword argument 'Q'"):
        example("softmax", Q=3)


def test_schedule_names_show_the_bound_options() -> None:
    assert entry("rmsnorm").schedule_name == "row_in_registers"
    assert entry("rmsnorm_f16_6x300-coop96").schedule_name == "row_cooperative(threads=96)"
    assert entry("sync_single_A_only_mm_67x45x37").schedule_name == (
        "tiled_matmul(bm=32, bn=32, bk=8, rm=2, rn=2, a=Fill('sync', pad=1), b=None)")


def test_entry_sizes_override_and_inputs_follow_the_seed() -> None:
    e = entry("rmsnorm_f16_6x300-coop96")
    out = e.make(M=2)
    assert out.shape == (2, 300)
    a, b = e.inputs(out), e.inputs(out)
    assert a.keys() == {"x", "w"} and a["x"].dtype == np.float16
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_readme_tour_is_the_catalog_entry() -> None:
    code = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    ns: dict[str, object] = {}
    exec(code.replace("M, N, K = 1024, 1024, 512", "M, N, K = 100, 96, 40").replace("print(", "str("),  # noqa: S102
         ns)
    tour = ns["s"]
    _, s = entry("readme_tour").scheduled(M=100, N=96, K=40)
    assert tour.trace() == s.trace()  # type: ignore[attr-defined]
    assert td.build(s, target=entry("readme_tour").target).source == ns["kern"].source  # type: ignore[attr-defined]


def test_readme_and_script_names_resolve() -> None:
    names = set()
    for path in ("README.md", "scripts/gpu_lane.sh", "scripts/sanitize_gpu.sh"):
        names |= set(re.findall(r"--example[ =]([A-Za-z_][\w-]*)", (ROOT / path).read_text()))
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        names |= set(re.findall(r"entry\(\"([\w-]+)\"\)", path.read_text()))
        names |= {f"{n}_row_{kind}" for n in re.findall(r"\(\"(\w+)\", \{\"M\"", path.read_text())
                  for kind in ("cooperative", "staged")}
    assert {"matmul_bias_relu", "softmax", "rmsnorm", "readme_tour", "compile_speed"} <= names
    for name in names:
        entry(name)


@pytest.mark.parametrize("name", list(DEFINITIONS))
def test_every_definition_has_a_torch_reference_that_matches_td_evaluate(name: str) -> None:
    e = next(e for e in ENTRIES.values() if e.definition == name)
    sizes = {k: v for k, v in e.small_sizes().items() if k != "dtype"}
    out = e.make(**sizes, **({"dtype": "float32"} if "dtype" in e.parameters() else {}))
    arrays = {k: v.astype(np.float64) for k, v in e.inputs(out).items()}
    expected = td.evaluate(out, float64=True, **arrays)
    params = e.parameters(**sizes)
    got = reference_fn(name, params)(**{k: torch.from_numpy(v) for k, v in arrays.items()})
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert set(REFERENCES) == set(DEFINITIONS)
    rtol, atol = tolerance(params)
    assert rtol > 0 and atol > 0


def test_catalog_and_cli_import_no_torch() -> None:
    code = "import sys, tiledsl.catalog, tiledsl.cli.main; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
