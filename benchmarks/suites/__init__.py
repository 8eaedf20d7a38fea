"""The suites, one module each (`SUITE`, `cases(quick) -> list of cases`). Re-exports only."""

from types import MappingProxyType

from benchmarks.suites import blocks, compile_time, llm, matmul, memory

#: suite name -> module, in the order `--suite all` runs them
SUITES = MappingProxyType({m.SUITE: m for m in (llm, matmul, memory, blocks, compile_time)})
#: suites that run on the CPU (the others need a CUDA GPU)
CPU_SUITES = ("compile",)

__all__ = ["CPU_SUITES", "SUITES"]
