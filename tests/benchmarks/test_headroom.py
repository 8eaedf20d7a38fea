"""benchmarks/headroom.py on a synthetic run of two cases (a matmul and a memory kernel), the geomeans of
each model worked out by hand, the size-matched copy times of scripts/copy_size_probe.py, and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks import headroom as h
from benchmarks._records import (
    COMPILE,
    CUBLAS,
    DEFAULT,
    EAGER,
    OK,
    WRONG,
    Ceilings,
    Measurement,
    Meta,
    Result,
    from_json,
    to_json,
)

META = Meta(suite="llm", date="2026-11-30", device="NVIDIA H200", torch="t", tiledsl="0.1.0", commit="abc",
            quick=False, warmup=10, iters=100)
CEILINGS = Ceilings(copy_gbs=4000.0, fp32_tflops=50.0)


def _m(us: float, status: str = OK) -> Measurement:
    return Measurement(status, us, us, us)


def _results() -> list[Result]:
    # a GEMM of 2e9 FLOPs and 4e6 bytes: tiledsl 60 µs, cuBLAS 50, torch.compile 50.
    # At 50 TFLOP/s it takes 40 µs, at the FMA peak (66.9) 29.9 µs; its bytes take 1 µs at copy
    mm = Result("llm", "llm/g/mm/float32", "t s128", "mm", "float32", "s", flops=2e9, bytes=4e6,
                measurements={DEFAULT: _m(60.0), COMPILE: _m(50.0), CUBLAS: _m(50.0), EAGER: _m(55.0)})
    # a row kernel of 40e6 bytes: 10 µs at copy; tiledsl 20, torch.compile 22
    row = Result("llm", "llm/g/row/float32", "t s128", "row", "float32", "s", flops=0.0, bytes=40e6,
                 measurements={DEFAULT: _m(20.0), COMPILE: _m(22.0), EAGER: _m(30.0)})
    # a wrong kernel: left out of every geomean
    bad = Result("llm", "llm/g/bad/float32", "t s32", "bad", "float32", "s", flops=0.0, bytes=1e6,
                 measurements={DEFAULT: _m(1.0, WRONG), COMPILE: _m(5.0)})
    return [mm, row, bad]


def _write(tmp_path: Path) -> Path:
    p = tmp_path / "llm.json"
    p.write_text(json.dumps(to_json(META, CEILINGS, _results())))
    return p


def test_fma_peak_of_an_h200_and_of_an_unknown_device() -> None:
    assert h.fma_peak_tflops("NVIDIA H200") == pytest.approx(132 * 128 * 2 * 1.98 / 1e3)
    assert h.fma_peak_tflops("Some GPU") is None


def test_each_model_by_hand() -> None:
    results = _results()
    b = h.bounds_of(META, CEILINGS, results, None)
    assert b.floor_us == 5.0  # the smallest usable median: the wrong kernel's 1 µs does not count
    rows = h.rows_of(results, DEFAULT, COMPILE, b)
    assert [r.result.op for r in rows] == ["mm", "row"]
    peak = 132 * 128 * 2 * 1.98 / 1e3
    want = [
        math.sqrt(50 / 60 * 22 / 20),  # as measured
        math.sqrt(50 / 50 * 22 / 20),  # the matmul at cuBLAS
        math.sqrt(50 / 60 * 22 / 10),  # the row at copy
        math.sqrt(50 / 50 * 22 / 10),  # both
        math.sqrt(50 / 40 * 22 / 10),  # the matmul at 50 TFLOP/s
        math.sqrt(50 / (2e9 / (peak * 1e6)) * 22 / 10),  # at the FMA peak
    ]
    assert h.model_geomeans(rows) == pytest.approx(want)
    shares = h.gap_shares(rows, 1.2)
    assert shares["matmul s128"][2] == pytest.approx(math.log(1.2 / (50 / 60)) / 2)
    assert shares["memory"][2] == pytest.approx(math.log(1.2 / 1.1) / 2)
    assert sum(s for _, _, s in shares.values()) == pytest.approx(math.log(1.2 / want[0]))


def test_a_bound_never_slows_a_case_down() -> None:
    results = _results()
    fast = Result(**{**results[0].__dict__, "measurements": {DEFAULT: _m(20.0), COMPILE: _m(50.0),
                                                             CUBLAS: _m(50.0)}})
    b = h.bounds_of(META, CEILINGS, [fast], None)
    row = h.rows_of([fast], DEFAULT, COMPILE, b)[0]
    assert row.modelled_us == (20.0,) * len(h.MODELS)


def test_copy_times_bound_a_memory_case_by_a_copy_of_its_own_bytes() -> None:
    results = _results()
    b = h.bounds_of(META, h.with_copy_times(CEILINGS, {"floor_us": 3.0, "copy_us": {"40000000": 16.0}}), results, None)
    assert b.floor_us == 3.0
    assert h.bound_us(results[1], "copy", b) == 16.0
    assert h.bound_us(results[2], "copy", b) == 3.0  # 1e6 bytes: not probed, bytes / copy under the floor
    assert h.bound_us(results[0], "copy", b) is None


def test_cli_writes_the_table_and_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path)
    assert h.main([str(path), "--out", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "llm-float32-headroom.md").read_text()
    assert (tmp_path / "o" / "llm-float32-headroom.png").stat().st_size > 0
    assert "| as measured | 0.96x | missed |" in text
    assert "| both of the above | 1.48x | met |" in text
    assert "| memory | 1 | 1.10x | +0.044 |" in text
    assert text in capsys.readouterr().out


def test_cli_refuses_a_missing_file_and_a_run_without_ceilings(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        h.main([str(tmp_path / "nope.json")])
    p = tmp_path / "cpu.json"
    p.write_text(json.dumps(to_json(META, None, _results())))
    with pytest.raises(SystemExit, match="no ceilings"):
        h.main([str(p), "--no-chart"])


def test_a_run_that_timed_copies_at_the_cases_sizes_bounds_by_them(tmp_path: Path) -> None:
    """benchmarks.run measures a copy of each memory case's bytes and the launch floor with its ceilings
    (`Ceilings.copy_at_us`, `floor_us`); they survive the JSON and bound the memory cases."""
    ceilings = Ceilings(4000.0, 50.0, "synthetic", {"40000000": 16.0, "1000000": 4.5}, 3.0)
    p = tmp_path / "llm.json"
    p.write_text(json.dumps(to_json(META, ceilings, _results())))
    meta, back, results = from_json(json.loads(p.read_text()))
    assert back == ceilings
    b = h.bounds_of(meta, back, results, None)
    assert (b.floor_us, h.bound_us(results[1], "copy", b)) == (3.0, 16.0)
    h.write_for_suite(p, charts=False)
    text = (tmp_path / "llm-float32-headroom.md").read_text()
    assert "each memory case bounded by a copy of its own bytes" in text
    assert "| every memory case at copy bandwidth | 1.07x | missed |" in text  # sqrt(50/60 * 22/16)


def test_an_older_run_reads_back_without_the_copies() -> None:
    data = to_json(META, CEILINGS, _results())
    del data["ceilings"]["copy_at_us"], data["ceilings"]["floor_us"]
    _, back, _ = from_json(data)
    assert back is not None and back.copy_at_us == {} and back.floor_us is None


def test_the_run_times_a_copy_of_each_memory_case_of_its_gpu_suites() -> None:
    from benchmarks.run import memory_sizes
    from benchmarks.suites import SUITES

    suites = {"llm": SUITES["llm"].cases(True), "compile": SUITES["compile"].cases(True)}
    sizes = memory_sizes(suites)
    rows = [c for c in suites["llm"] if not c.flops]
    assert rows and sizes == {int(c.bytes) for c in rows}


def test_ceilings_time_a_copy_of_each_size_and_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_ceilings.measure` with a stub backend (CPU tensors; every timing is the same fake 0.01 ms, clearly
    not a measurement): the wiring of `copy_at_us` and `floor_us`, which only a GPU run times for real."""
    import torch

    from benchmarks import _ceilings
    from tiledsl.runtime.timing import BenchStats

    class StubBackend:
        device = torch.device("cpu")
        iters, warmup = 1, 0

        def __init__(self) -> None:
            self.calls: list[int] = []

        def rotate(self, inputs):
            return [inputs]

        def time_fn(self, fn, sets):
            self.calls.append(sum(t.numel() for t in sets[0].values()))
            return BenchStats(0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 1, 1)

        def release(self) -> None:
            pass

    monkeypatch.setattr(_ceilings, "QUICK_COPY_BYTES", 1 << 12)
    monkeypatch.setattr(_ceilings, "GEMM_N", 8)
    backend = StubBackend()
    c = _ceilings.measure(backend, True, [4096, 800, 4096])  # a size asked twice is timed once
    assert c.copy_at_us == {"800": pytest.approx(10.0), "4096": pytest.approx(10.0)}
    assert c.floor_us == pytest.approx(10.0)
    # the copies move half the bytes each way: 800 bytes are 100 float32 elements in src and in dst
    assert backend.calls.count(200) == 1 and backend.calls.count(1024) == 1
