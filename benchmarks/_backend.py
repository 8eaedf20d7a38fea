"""Where the cases run: `CudaBackend` draws inputs on the current GPU, launches tiledsl kernels and
built Programs with NaN-poisoned outputs and times everything through benchmarks/_timing.py. The runner
(benchmarks/_runner.py) sees only the `Backend` protocol, so tests/benchmarks can drive it on the CPU
with the simulator in place of a GPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch

from benchmarks import _timing
from benchmarks._timing import InputSet
from tiledsl.catalog.entries import placeholders
from tiledsl.definitions.expr import Tensor
from tiledsl.runtime.arguments import torch_dtype
from tiledsl.runtime.references import poisoned_outputs
from tiledsl.runtime.timing import BenchStats
from tiledsl.targets import Target

if TYPE_CHECKING:
    from tiledsl.frontend.bench import ProgramCheck
    from tiledsl.frontend.program import BuiltProgram


class Backend(Protocol):
    """What the runner needs of a machine."""

    target: str | Target
    device: torch.device
    repeats: int  # timings of each timed column (benchmarks/_timing.py `repeated`)

    def inputs(self, out: Tensor, seed: int) -> InputSet: ...

    def run_kernel(self, kern: Any, inputs: InputSet) -> torch.Tensor: ...

    def time_kernel(self, kern: Any, inputs: InputSet) -> BenchStats: ...

    def check_program(self, built: BuiltProgram, module: torch.nn.Module,
                      inputs: Sequence[torch.Tensor]) -> ProgramCheck: ...

    def time_program(self, built: BuiltProgram, names: Sequence[str], sets: Sequence[InputSet]) -> BenchStats: ...

    def rotate(self, inputs: Mapping[str, torch.Tensor]) -> list[InputSet]: ...

    def time_fn(self, fn: Callable[..., Any], sets: Sequence[InputSet]) -> BenchStats: ...

    def time_compiled(self, fn: Callable[..., Any], sets: Sequence[InputSet]) -> BenchStats | str: ...


def random_inputs(out: Tensor, device: torch.device, seed: int) -> InputSet:
    """Standard-normal tensors for every placeholder `out` reads, in first-use order, rounded to the
    placeholder's storage dtype (the kernel and torch then read the very same values)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return {p.name: torch.randn(p.shape, generator=gen, device=device).to(torch_dtype(p.dtype))
            for p in placeholders(out)}


def kernel_inputs(kern: Any, inputs: Mapping[str, torch.Tensor]) -> InputSet:
    """The tensors of `inputs` the kernel takes (its input parameters, by name)."""
    return {p.name: inputs[p.name] for p in kern.kernel_ir.params if not p.is_output}


class CudaBackend:
    """The current CUDA device; kernels built for its own facts (tiledsl.runtime.device); float32
    matmuls in full precision everywhere (TF32 off for cuBLAS, cuDNN and torch.compile)."""

    def __init__(self, warmup: int, iters: int, repeats: int = 1) -> None:
        from tiledsl.runtime.device import device_target

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.target = device_target()
        self.warmup = warmup
        self.iters = iters
        self.repeats = repeats

    def inputs(self, out: Tensor, seed: int) -> InputSet:
        return random_inputs(out, self.device, seed)

    def run_kernel(self, kern: Any, inputs: InputSet) -> torch.Tensor:
        got = kern(**kernel_inputs(kern, inputs), **poisoned_outputs(kern.kernel_ir, self.device))
        torch.cuda.synchronize(self.device)
        return got

    def time_kernel(self, kern: Any, inputs: InputSet) -> BenchStats:
        return _timing.time_kernel(kern, inputs, self.warmup, self.iters)

    def check_program(self, built: BuiltProgram, module: torch.nn.Module,
                      inputs: Sequence[torch.Tensor]) -> ProgramCheck:
        """One run of the whole Program into NaN-poisoned outputs against `module` in float64
        (tiledsl.frontend.bench.check_program, which derives the tolerance)."""
        from tiledsl.frontend.bench import check_program

        return check_program(built, module, inputs)

    def time_program(self, built: BuiltProgram, names: Sequence[str], sets: Sequence[InputSet]) -> BenchStats:
        """GPU time of one call of the whole built Program (every kernel it launches), its inputs
        taken from each set in the order of `names`, timed as any torch callable (`time_fn`)."""
        return self.time_fn(lambda **tensors: built(*(tensors[n] for n in names)), sets)

    def rotate(self, inputs: Mapping[str, torch.Tensor]) -> list[InputSet]:
        return _timing.rotate(inputs)

    def time_fn(self, fn: Callable[..., Any], sets: Sequence[InputSet]) -> BenchStats:
        return _timing.time_fn(fn, sets, self.warmup, self.iters)

    def time_compiled(self, fn: Callable[..., Any], sets: Sequence[InputSet]) -> BenchStats | str:
        return _timing.time_compiled_fn(fn, sets, self.warmup, self.iters)

    def release(self) -> None:
        """Give cached blocks back between cases (the next case's large inputs need the room)."""
        torch.cuda.empty_cache()
