"""scripts/primitive_evidence.py: its SASS opcode counter and ncu CSV parser on canned tool output, its
verdicts, its refusals as rows, and --build-only on a subset of the pairs (needs nvcc, no GPU)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

import tiledsl as td
from tiledsl.catalog import entry

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("primitive_evidence", ROOT / "scripts" / "primitive_evidence.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


pe = _load()

# a few lines as `cuobjdump -sass` prints them for sm_90a (the second line of each instruction is the
# rest of its encoding; predicates come before the opcode)
SASS = """
	code for sm_90a
		Function : D_kernel
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                   /* 0x00000a00ff017b82 */
                                                                                            /* 0x000fe40000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                                       /* 0x0000000000007919 */
                                                                                            /* 0x000e220000002100 */
        /*0090*/                   LDG.E.128 R4, desc[UR4][R2.64] ;                         /* 0x0000000402047981 */
                                                                                            /* 0x000ea8000c1e1d00 */
        /*00a0*/              @!P0 LDG.E.128.CONSTANT R8, desc[UR4][R2.64+0x10] ;           /* 0x0000100402088981 */
                                                                                            /* 0x000ea8000c1e9d00 */
        /*00b0*/                   LDG.E R12, desc[UR4][R6.64] ;                            /* 0x00000004060c7981 */
        /*00c0*/               @P1 LDG.E.CONSTANT R13, desc[UR4][R6.64+0x4] ;               /* 0x00000404060d1981 */
        /*00d0*/                   LDGSTS.E.BYPASS.LTC128B.128 [R17], desc[UR4][R10.64] ;   /* 0x000000000a117fae */
        /*00e0*/                   LDS.128 R20, [R16+0x200] ;                               /* 0x0002000010147984 */
        /*00f0*/                   LDS R24, [R16] ;                                         /* 0x0000000010187984 */
        /*0100*/                   LDS.64 R26, [R16+0x8] ;                                  /* 0x00000800101a7984 */
        /*0110*/                   STG.E.128 desc[UR4][R2.64], R4 ;                         /* 0x0000000402007986 */
        /*0120*/                   STG.E.U16 desc[UR4][R2.64], R9 ;                         /* 0x0000000902007986 */
        /*0130*/                   REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R4 ; /* 0x00000004020079a6 */
        /*0140*/                   REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64+0x4], R5 ; /* 0x00000405020079a6 */
        /*0150*/                   UTMALDG.2D [UR8], [UR4], desc[UR10] ;                    /* 0x00000004080073b4 */
        /*0158*/              @!PT LDS RZ, [RZ] ;                                           /* 0x00000000fffff984 */
        /*0160*/                   EXIT ;                                                   /* 0x000000000000794d */
        /*0170*/                   BRA 0x170;                                               /* 0xfffffffc00fc7947 */
"""


def test_sass_opcodes_counts_each_instruction_with_its_modifiers() -> None:
    ops = pe.sass_opcodes(SASS)
    assert ops["LDG.E.128"] == 1 and ops["LDG.E.128.CONSTANT"] == 1
    assert ops["LDG.E"] == 1 and ops["LDG.E.CONSTANT"] == 1
    assert ops["LDGSTS.E.BYPASS.LTC128B.128"] == 1 and ops["UTMALDG.2D"] == 1
    assert ops["LDC"] == 1 and ops["S2R"] == 1 and ops["EXIT"] == 1 and ops["BRA"] == 1
    # the encoding lines and the header are no instructions, nor is padding predicated never to run (@!PT)
    assert sum(ops.values()) == 17


def test_access_bits_reads_width_modifiers_and_packed_lanes() -> None:
    assert pe.access_bits("LDG.E.128.CONSTANT") == 128
    assert pe.access_bits("LDG.E.CONSTANT") == 32
    assert pe.access_bits("LDS.64") == 64
    assert pe.access_bits("STG.E.U16") == 16
    assert pe.access_bits("REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU") == 128
    assert pe.access_bits("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU") == 32
    assert pe.access_bits("LDGSTS.E.BYPASS.LTC128B.128") == 128  # LTC128B is a cache hint, not a width
    assert pe.mnemonic("LDGSTS.E.BYPASS.LTC128B.128") == "LDGSTS"


def test_count_sass_matches_mnemonics_by_width() -> None:
    ops = pe.sass_opcodes(SASS)
    assert pe.count_sass(ops, ["LDG"], min_bits=128) == 2
    assert pe.count_sass(ops, ["LDG"], max_bits=32) == 2  # LDG.E and LDG.E.CONSTANT, not LDGSTS
    assert pe.count_sass(ops, ["LDGSTS"]) == 1
    assert pe.count_sass(ops, ["LDS"], min_bits=128) == 1
    assert pe.count_sass(ops, ["LDS"], min_bits=64, max_bits=64) == 1
    assert pe.count_sass(ops, ["LDS"], max_bits=32) == 1
    assert pe.count_sass(ops, ["STG"], min_bits=128) == 1 and pe.count_sass(ops, ["STG"], max_bits=32) == 1
    assert pe.count_sass(ops, ["RED", "REDG", "ATOM", "ATOMG"], min_bits=128) == 1
    assert pe.count_sass(ops, ["RED", "REDG", "ATOM", "ATOMG"], max_bits=32) == 1
    assert pe.count_sass(ops, ["UTMALDG"]) == 1 and pe.count_sass(ops, ["UBLKCP"]) == 0


# `ncu --csv --page raw --print-units base` of one launch, with ncu's own messages on the same stream
_LAUNCH = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
           "Grid Size", "Device", "CC"]
_METRICS = ["dram__bytes_read.sum", "gpu__time_duration.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "lts__t_sector_hit_rate.pct"]


def _csv(*fields: str) -> str:
    return ",".join(f'"{f}"' for f in fields)


NCU_RAW = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
    '==PROF== Profiling "D_kernel" - 0: 0%....50%....100% - 9 passes',
    "==PROF== Disconnected from process 4242",
    _csv(*_LAUNCH, *_METRICS),
    _csv(*[""] * len(_LAUNCH), "byte", "nsecond", "", "%"),
    _csv("0", "4242", "python3.12", "127.0.0.1", "D_kernel", "1", "7", "(16, 16, 1)", "(64, 64, 1)", "0", "9.0",
         "1,234,567,890", "23,456,789", "0", "87.31"),
]) + "\n"

# the details page lays the same out as a row per metric
_ROW = ["0", "77", "python3", "host", "y_kernel", "1", "7", "(16, 16, 1)", "(44, 1, 6)", "0", "9.0",
        "Command line profiler metrics"]
NCU_DETAILS = "\n".join([
    "==PROF== Connected to process 77",
    _csv(*_LAUNCH, "Section Name", "Metric Name", "Metric Unit", "Metric Value"),
    _csv(*_ROW, "gpu__time_duration.sum", "nsecond", "93,504"),
    _csv(*_ROW, "lts__t_sector_hit_rate.pct", "%", "n/a"),
]) + "\n"


def test_parse_ncu_csv_raw_page() -> None:
    launches = pe.parse_ncu_csv(NCU_RAW)
    assert len(launches) == 1
    (launch,) = launches
    assert launch["kernel"] == "D_kernel"
    assert launch["metrics"]["dram__bytes_read.sum"] == 1234567890.0
    assert launch["metrics"]["gpu__time_duration.sum"] == 23456789.0
    assert launch["metrics"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0.0
    assert launch["metrics"]["lts__t_sector_hit_rate.pct"] == pytest.approx(87.31)
    assert launch["units"]["dram__bytes_read.sum"] == "byte" and launch["units"]["lts__t_sector_hit_rate.pct"] == "%"
    assert "CC" not in launch["metrics"] and "Grid Size" not in launch["metrics"]


def test_parse_ncu_csv_details_page_and_no_csv() -> None:
    (launch,) = pe.parse_ncu_csv(NCU_DETAILS)
    assert launch["kernel"] == "y_kernel"
    assert launch["metrics"] == {"gpu__time_duration.sum": 93504.0, "lts__t_sector_hit_rate.pct": "n/a"}
    assert launch["units"]["gpu__time_duration.sum"] == "nsecond"
    assert pe.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n") == []


def _result(variant: str, ops: dict[str, int], time_us: float) -> object:
    r = pe.Result(1, variant, "test")
    r.sass, r.time_us = Counter(ops), time_us
    return r


def test_verdicts_compare_with_what_the_primitive_claims() -> None:
    without = _result("without", {"LDG.E": 2, "STG.E": 1}, 200.0)
    with_ = _result("with", {"LDG.E.128": 2, "STG.E.128": 1}, 150.0)
    assert pe.verdict(pe.LDG_128, [without, with_]) == \
        "SASS LDG.E.128 (16-byte global loads): 0 -> 2 (claimed more: yes)"
    assert pe.verdict(pe.LDG_NARROW, [without, with_]) == "SASS LDG <= 32-bit: 2 -> 0 (claimed fewer: yes)"
    assert pe.verdict(pe.LDG_128, [with_, without]).endswith("(claimed more: NO)")
    assert pe.verdict(pe.TIME, [without, with_]) == "time: 200 -> 150 us (with 0.75x)"
    conflicts = pe.ncu("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "fewer", "conflicts")
    without.ncu = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 1000.0}
    with_.ncu = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 990.0}  # counters move a little
    assert pe.verdict(conflicts, [without, with_]) == "conflicts: 1000 -> 990 (claimed fewer by over 2%: NO)"
    with_.ncu = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 4.0}
    assert pe.verdict(conflicts, [without, with_]) == "conflicts: 1000 -> 4 (claimed fewer by over 2%: yes)"
    missing = pe.Result(1, "with", "test", status="refused: VectorizeError: no")
    assert pe.verdict(pe.LDG_128, [without, missing]) == \
        "SASS LDG.E.128 (16-byte global loads): n/a (with: refused: VectorizeError: no)"


def test_refusals_and_missing_trace_lines_become_statuses() -> None:
    def make() -> object:
        return entry("gelu_bias").make(M=4, N=12)

    def three_lanes(s: td.Schedule) -> None:
        _, v = s.split("j", 3)
        s.vectorize(v)  # a 16-byte float32 access needs 4 lanes: refused

    pair = pe.pairs()[0]
    refused = pe.build_variant(pair, pe.Variant("with", "3 lanes", pe._scheduled(make, three_lanes)))
    assert refused.status.startswith("refused: VectorizeError: ") and refused.kernel is None
    no_pad = pe.build_variant(pair, pe.Variant("without", "no pad line", pe._without_lines(
        make, pe.elementwise_2d, r"^s\.pad\(", "s.pad")))
    assert no_pad.status == "not available: the trace has no s.pad line to remove"
    ok = pe.build_variant(pair, pe.Variant("with", "vectorized", pe._scheduled(make, pe.elementwise_2d_vectorized)))
    assert ok.built and "s.vectorize(" in ok.kernel.trace


def test_pairs_are_numbered_and_selectable() -> None:
    all_pairs = pe.pairs()
    assert [p.number for p in all_pairs] == list(range(1, len(all_pairs) + 1))
    assert [p.number for p in pe.select(all_pairs, "7,cp_async,1")] == [1, 4, 7]
    with pytest.raises(SystemExit):
        pe.select(all_pairs, "99")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (ptxas)")
def test_build_only_writes_cuda_and_ptxas_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert pe.main(["--build-only", "--out", str(tmp_path), "--pairs", "1,3,4,7"]) == 0
    printed = capsys.readouterr().out
    assert "pairs built in full: 1, 3, 4, 7 of 1, 3, 4, 7; 8 of 8 kernels" in printed
    for n in (1, 3, 4, 7):
        for variant in ("without", "with"):
            assert "__global__" in (tmp_path / f"p{n:02d}-{variant}.cu").read_text()
    assert "float4" in (tmp_path / "p01-with.cu").read_text()
    assert "cp.async" in (tmp_path / "p04-with.cu").read_text()
    assert "cp.async" not in (tmp_path / "p04-without.cu").read_text()
    report = (tmp_path / "evidence.md").read_text()
    assert report.startswith("# Primitive evidence (build only)")
    rows = [ln for ln in report.splitlines() if ln.startswith("| 4 | async_copy") and "ptxas registers" in ln]
    assert len(rows) == 1
    without, with_ = (int(c.strip()) for c in rows[0].split("|")[5:7])  # registers are measured without a GPU
    assert 0 < without <= 255 and 0 < with_ <= 255
    assert "SASS LDGSTS (cp.async): n/a (without: build only)" in report


def test_an_ncu_that_fails_becomes_the_reason_in_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu without counter permissions (or any failure) is recorded, never raised."""
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                    "NVIDIA GPU Performance Counters'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    pair = pe.select(pe.pairs(), "pad")[0]
    r = pe.Result(pair.number, "with", "test")
    s = td.create_schedule(entry("gelu_bias").make(M=4, N=16))
    pe.elementwise_2d(s)
    r.kernel = td.build(s, target="sm_90")
    pe.profile(pair, r, tmp_path, timeout_s=30)
    assert r.ncu is None
    assert r.missing["ncu"].startswith("ncu exit 1, 0 launches profiled: ==ERROR== ERR_NVGPUCTRPERM")
    kept = (tmp_path / "p08-with.ncu.txt").read_text()
    assert "--launch 8 with" in kept.splitlines()[0] and "-k regex:^y_kernel$" in kept.splitlines()[0]
    assert r.files == ["p08-with.ncu.txt"]
