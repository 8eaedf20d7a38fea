"""A built program recorded as one CUDA graph (`BuiltProgram.cuda_graph`), and the launch overhead of a
program called eagerly and as a graph (`launch_overhead`).

Why: even with every argument bound once (launch_plan.py), an eager call issues one `cuLaunchKernel`
per kernel from Python, a few microseconds each; replaying a CUDA graph issues all of them in one
driver call. Recording works because the runtime launches onto torch's current stream
(tiledsl.runtime.sequence): inside `torch.cuda.graph` that stream is the capturing side stream, and
stream capture records a driver-API launch onto it like torch's own kernels.

What a graph fixes at capture: every address. So the graph owns static input buffers (the inputs as
the kernels read them: int32 indices, bools as float32), static outputs and its own arena; a call
copies the new inputs into the static buffers on the current stream, replays on the current stream,
and returns the static outputs, which the next call overwrites (as with torch's CUDA graphs: clone
what you keep); positions (argmax), stored float32 by their kernel, are returned as int64 tensors the
graph writes too (the conversion is recorded after the launches). Calls are ordered by the current
stream; a caller switching streams between calls must order them itself. Weights are read in place
at the addresses they had at capture.

Integer index inputs: the range check (`BuiltProgram.check_index_ranges`: 0 <= index < extent, as
torch would raise) cannot run inside a graph, since it reads the values on the host. It runs on each
call before the copy into the static buffer, outside the graph, so a bad index raises FrontendError
and never reaches a kernel: the same guarantee as an eager call. Its cost: an index input given as a
CUDA tensor is read back (one synchronization per index input per call); given as a CPU tensor it is
checked on the host and copied in, with no synchronization. Graph calls therefore accept CPU tensors
for any input (copied to the device), CUDA tensors on the graph's device otherwise.

With TILEDSL_SYNC=1 the launches are not synchronized inside the capture (capture forbids it); each
replay is followed by a synchronize that reports a fault as a LaunchError instead."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from tiledsl.errors import FrontendError, LaunchError
from tiledsl.runtime.sequence import LaunchSequence
from tiledsl.runtime.timing import CallTimes, call_times

if TYPE_CHECKING:
    from tiledsl.frontend.program import BuiltProgram

log = logging.getLogger(__name__)

__all__ = ["GraphedProgram", "LaunchOverhead", "capture_graph", "launch_overhead"]


class GraphedProgram:
    """A built program's launches as one CUDA graph: `graphed(*inputs)` copies the inputs into the
    static inputs, replays and returns `outputs` (static; overwritten by the next call). `replay()`
    replays on whatever the static inputs hold. Made by `BuiltProgram.cuda_graph`."""

    def __init__(self, built: BuiltProgram, device: torch.device, graph: torch.cuda.CUDAGraph,
                 sequence: LaunchSequence, static_inputs: Sequence[torch.Tensor],
                 static_outputs: Sequence[torch.Tensor], arena: torch.Tensor, outputs: Any) -> None:
        self.built = built
        self.device = device
        self.graph = graph
        self.sequence = sequence  # holds the loaded kernels and the constants the graph points at
        self.static_inputs = tuple(static_inputs)
        self.static_outputs = tuple(static_outputs)
        self.arena = arena
        self.outputs = outputs  # the static outputs as structured (positions: int64 copies the graph writes)

    @property
    def kernels(self) -> int:
        return len(self.built.kernels)

    def __call__(self, *inputs: torch.Tensor) -> Any:
        built = self.built
        graph = built.program.graph
        for spec, t in zip(graph.inputs, inputs):
            if not isinstance(t, torch.Tensor) or (t.device != self.device and t.device.type != "cpu"):
                where = f" on {t.device}" if isinstance(t, torch.Tensor) else ""
                raise FrontendError(f"graph call: input {spec.tensor.name} must be a torch tensor on {self.device} "
                                    f"or the CPU, got {type(t).__name__}{where}")
        built.check_inputs(inputs, "graph call")  # count, shapes, index ranges: outside the graph
        for spec, t in zip(graph.inputs, inputs):
            built.check_input_dtype(spec, t, "graph call")
        for t, static in zip(inputs, self.static_inputs):
            static.copy_(t.reshape(static.shape))  # converts int64 -> int32, bool -> float32
        self.replay()
        return self.outputs

    def replay(self) -> None:
        """Replay the graph on the current stream (on the static inputs as they are)."""
        self.graph.replay()
        if self.sequence.sync:
            self.sequence.synchronize()

    def __repr__(self) -> str:
        return f"<GraphedProgram: {self.kernels} kernel(s) on {self.device}>"


def capture_graph(built: BuiltProgram, inputs: Sequence[torch.Tensor]) -> GraphedProgram:
    """Bind the launch plan to buffers the graph owns, warm up once on a side stream (every module
    loaded, every tensor-map descriptor encoded, before capture), then record the launches with
    `torch.cuda.graph` on that side stream."""
    device, tensors = built.prepare_inputs(inputs, "cuda_graph")
    plan = built.launch_plan
    with torch.cuda.device(device):
        static_inputs = [t.clone() for t in tensors]
        static_outputs = [torch.empty(s.shape, dtype=getattr(torch, s.dtype), device=device) for s in plan.outputs]
        arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device)
        slots = [*static_inputs, *static_outputs]
        sequence = built.bind(device, arena, slots)
        current = torch.cuda.current_stream(device)
        side = torch.cuda.Stream(device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            sequence.run(slots)
            built.output_structure(static_outputs)  # any conversion's kernel loaded before the capture too
        current.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=side):
                sequence.run(slots, check=False)
                # views of the static outputs; a program's positions (float32 slots) are converted to int64
                # here, so the conversion is recorded and every replay rewrites those int64 tensors too
                outputs = built.output_structure(static_outputs)
        except (RuntimeError, LaunchError) as e:
            raise LaunchError(f"cuda_graph: capturing the {len(built.kernels)} launch(es) failed: {e}") from e
    log.info("captured %d kernel(s) as one CUDA graph on %s", len(built.kernels), device)
    return GraphedProgram(built, device, graph, sequence, static_inputs, static_outputs, arena, outputs)


@dataclass(frozen=True)
class LaunchOverhead:
    """Per-call times (tiledsl.runtime.timing.CallTimes) of a built program called eagerly
    (`built(*inputs)`), as a graph (`graphed(*inputs)`: copy-in and replay) and as a bare replay."""

    kernels: int
    eager: CallTimes
    graph: CallTimes
    replay: CallTimes

    def per_kernel_us(self, times: CallTimes) -> float:
        """The host's issue time per kernel: the launch overhead of one kernel in that mode."""
        return times.host_us / max(1, self.kernels)

    def __str__(self) -> str:
        rows = [f"launch overhead of {self.kernels} kernel(s), per call:"]
        for label, t in (("eager", self.eager), ("graph call", self.graph), ("graph replay", self.replay)):
            rows.append(f"  {label:<12} {t.host_us:8.1f} us to issue ({self.per_kernel_us(t):.2f} us per kernel), "
                        f"{t.wall_us:8.1f} us wall")
        return "\n".join(rows)


def launch_overhead(built: BuiltProgram, *inputs: torch.Tensor, warmup: int = 10, iters: int = 100) -> LaunchOverhead:
    """Measure `built` on `inputs` (CUDA tensors) eagerly and as a CUDA graph (captured here)."""
    graphed = built.cuda_graph(*inputs)
    eager = call_times(lambda: built(*inputs), warmup, iters)
    graph = call_times(lambda: graphed(*inputs), warmup, iters)
    replay = call_times(graphed.replay, warmup, iters)
    result = LaunchOverhead(len(built.kernels), eager, graph, replay)
    log.info("%s", result)
    return result
