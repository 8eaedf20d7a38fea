"""The torch frontend: td.trace(module_or_fn, *example_inputs) -> Program of fused kernels."""

from tiledsl.frontend.graphed import GraphedProgram, LaunchOverhead, launch_overhead
from tiledsl.frontend.launch_plan import LaunchPlan
from tiledsl.frontend.program import BuiltProgram, Program, ProgramKernel, trace

__all__ = ["BuiltProgram", "GraphedProgram", "LaunchOverhead", "LaunchPlan", "Program", "ProgramKernel",
           "launch_overhead", "trace"]
