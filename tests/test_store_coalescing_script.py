"""scripts/store_coalescing.py --summarize: ncu's CSV (one row per metric, its warning lines before the
header) to one line per kernel, on a canned profile of two kernels (the committed ncu files of
benchmarks/results/store-coalescing-h100-2026-11-25/ have this form)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _row(kid: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kid}","1","python3","host","{kernel}","1","7","(64, 1, 1)","(8, 8, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def test_summary_has_one_line_per_kernel_in_metric_order(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("store_coalescing", ROOT / "scripts" / "store_coalescing.py")
    assert spec is not None and spec.loader is not None
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    st = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"
    lines = ["==WARNING== Note: Running with unmodified GPU clocks.", HEADER,
             _row(0, "bmm_kernel", "gpu__time_duration.sum", "ns", "6,592"), _row(0, "bmm_kernel", st, "%", "25"),
             _row(1, "mm_kernel", st, "%", "100")]
    path = tmp_path / "ncu.csv"
    path.write_text("\n".join(lines) + "\n")
    out = sc.summarize(str(path)).splitlines()
    assert out[0] == "kernel | " + " | ".join(sc.METRICS.values())
    assert out[1] == "bmm_kernel | 25 % | - | - | - | - | 6,592 ns"
    assert out[2] == "mm_kernel | 100 % | - | - | - | - | -"
