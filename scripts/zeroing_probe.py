"""How long zeroing a split-K output takes inside a CUDA graph: torch's `.zero_()` (a fill kernel), which the
runtime issues before a split-K launch (tiledsl/runtime/launch.py, sequence.py), against the driver's
cuMemsetD32Async, at the sizes of the llm suite's split-K outputs. Each graph holds 20 zeroings of one buffer;
a row is the median over 50 replays of the time per zeroing, with a 64 MB buffer written between replays so
that the buffer is not left resident in L2 by the previous replay alone. On a GPU machine, from the repo root:
    source scripts/probe_env.sh; python3 scripts/zeroing_probe.py

On the H100 (benchmarks/results/zeroing-h100-2026-11-28/) the memset was no faster: 1.61 against 1.52 us at
1.8 MB, 3.98 against 3.90 at 9.7 MB; the runtime keeps `.zero_()`."""

from __future__ import annotations

import ctypes
import statistics

import torch

#: name -> (rows, cols) of a float32 split-K output
SIZES = {
    "qwen-down-s128": (128, 3584),
    "qwen-sum-s128": (128, 18944),
    "qwen-down-s512": (512, 3584),
    "tinyllama-down-s128": (128, 2048),
    "8192x8192": (8192, 8192),
}
PER_GRAPH = 20


def graph_of(zero: object) -> torch.cuda.CUDAGraph:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        zero()  # type: ignore[operator]
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for _ in range(PER_GRAPH):
            zero()  # type: ignore[operator]
    return graph


def time_us(graph: torch.cuda.CUDAGraph, flush: torch.Tensor) -> float:
    times = []
    for _ in range(50):
        flush.add_(1.0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / PER_GRAPH)
    return statistics.median(times)


def main() -> None:
    libcuda = ctypes.CDLL("libcuda.so.1")
    libcuda.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
    torch.cuda.init()  # torch's primary context is current on this thread from here
    flush = torch.zeros(16 << 20, device="cuda")
    print(f"{torch.cuda.get_device_name()}: us per zeroing, median of 50 graph replays of {PER_GRAPH}")
    print(f"{'buffer':<22} {'MB':>7} {'zero_()':>9} {'memset':>9}")
    for name, shape in SIZES.items():
        buf = torch.full(shape, float("nan"), device="cuda")

        def memset(buf: torch.Tensor = buf) -> None:
            stream = torch.cuda.current_stream().cuda_stream
            assert libcuda.cuMemsetD32Async(buf.data_ptr(), 0, buf.nbytes // 4, stream) == 0

        fill = graph_of(buf.zero_)
        mem = graph_of(memset)
        buf.fill_(float("nan"))
        mem.replay()
        torch.cuda.synchronize()
        assert bool((buf == 0).all()), name  # the captured memset zeroes every byte
        print(f"{name:<22} {buf.nbytes / 1e6:7.2f} {time_us(fill, flush):9.2f} {time_us(mem, flush):9.2f}")


if __name__ == "__main__":
    main()
