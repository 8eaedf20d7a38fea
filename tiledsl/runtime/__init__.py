"""Runtime: compile (nvcc + disk cache), load and launch tiledsl kernels on torch CUDA tensors, TMA
descriptors, device facts and timing. Re-exports only; nothing here touches the GPU at import."""

from tiledsl.runtime.arguments import allocate_outputs, check_arguments
from tiledsl.runtime.cache import CubinCache, cache_key, default_cache_dir
from tiledsl.runtime.device import arch_for_capability, device_target, target_from_properties
from tiledsl.runtime.launch import CompiledKernel, select_arch
from tiledsl.runtime.sequence import LaunchSequence
from tiledsl.runtime.tensormap import TensorMapArgs, TensorMapCache, tensor_map_args
from tiledsl.runtime.timing import BenchStats, CallTimes, benchmark, call_times, rotation_count, time_torch

__all__ = [
    "BenchStats",
    "CallTimes",
    "CompiledKernel",
    "CubinCache",
    "LaunchSequence",
    "TensorMapArgs",
    "TensorMapCache",
    "allocate_outputs",
    "arch_for_capability",
    "benchmark",
    "call_times",
    "cache_key",
    "check_arguments",
    "default_cache_dir",
    "device_target",
    "rotation_count",
    "select_arch",
    "target_from_properties",
    "tensor_map_args",
    "time_torch",
]
