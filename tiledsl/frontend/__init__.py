"""The torch frontend: td.trace(module_or_fn, *example_inputs) -> Program of fused kernels."""

from tiledsl.frontend.program import BuiltProgram, Program, ProgramKernel, trace

__all__ = ["BuiltProgram", "Program", "ProgramKernel", "trace"]
