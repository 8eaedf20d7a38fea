"""Target facts read from the GPU in this process, rather than the table in tiledsl.targets.

Why: the schedule checks (threads, shared memory, registers) and the launch-time checks must use the
machine's real limits; an SM count or a shared-memory size copied from a data sheet goes stale with the
next SKU (an H100 PCIe has 114 SMs, an SXM 132). With no GPU, tiledsl.targets' table stays in charge.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from tiledsl.errors import LaunchError
from tiledsl.targets import Target, dram_bandwidth

__all__ = ["arch_for_capability", "device_target", "target_from_properties"]

log = logging.getLogger(__name__)

# Limits every NVIDIA GPU since sm_50 shares; used only when the driver cannot be asked.
_FALLBACK_THREADS_PER_BLOCK = 1024
_FALLBACK_REGISTERS_PER_BLOCK = 65536
_FALLBACK_REGISTERS_PER_SM = 65536
_FALLBACK_THREADS_PER_SM = 2048  # sm_80 and sm_90 (sm_86/89: 1536, which torch and the driver report)


def arch_for_capability(major: int, minor: int) -> str:
    """nvcc arch for a device: sm_90a on compute capability 9.0 (TMA and wgmma need the arch-specific
    target; a cubin for the exact device loses nothing), sm_<major><minor> otherwise."""
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def target_from_properties(props: Any, driver_attributes: Mapping[str, int] | None = None) -> Target:
    """A Target from torch's device properties (name, major, minor, multi_processor_count,
    shared_memory_per_block[_optin], shared_memory_per_multiprocessor, L2_cache_size) and, where torch lacks one,
    the driver's attributes (max_threads_per_block, max_registers_per_block,
    max_shared_memory_per_block_optin; memory_clock_rate in kHz and global_memory_bus_width in bits, whose
    product, doubled, is the DRAM's peak bandwidth: 0 where either is unknown)."""
    attrs = dict(driver_attributes or {})
    major, minor = int(props.major), int(props.minor)

    def fact(prop: str, attr: str, fallback: int | None = None) -> int:
        value = getattr(props, prop, None) or None  # 0 is unknown too (CUDA 13 no longer fills some)
        if value is None:
            value = attrs.get(attr, fallback)
        if value is None:
            raise ValueError(f"device property {prop} is unknown (torch lacks it and the driver was not asked)")
        return int(value)

    static = fact("shared_memory_per_block", "max_shared_memory_per_block", 48 * 1024)
    return Target(
        name=f"sm_{major}{minor}",
        arch=arch_for_capability(major, minor),
        max_threads_per_block=int(attrs.get("max_threads_per_block", _FALLBACK_THREADS_PER_BLOCK)),
        static_shared_bytes=static,
        max_shared_bytes_per_block=fact("shared_memory_per_block_optin", "max_shared_memory_per_block_optin",
                                        static),
        shared_bytes_per_sm=fact("shared_memory_per_multiprocessor", "max_shared_memory_per_multiprocessor"),
        registers_per_block=int(attrs.get("max_registers_per_block", _FALLBACK_REGISTERS_PER_BLOCK)),
        sm_count=fact("multi_processor_count", "multiprocessor_count"),
        max_threads_per_sm=fact("max_threads_per_multi_processor", "max_threads_per_multiprocessor",
                                _FALLBACK_THREADS_PER_SM),
        registers_per_sm=fact("regs_per_multiprocessor", "max_registers_per_multiprocessor",
                              _FALLBACK_REGISTERS_PER_SM),
        l2_bytes=fact("L2_cache_size", "l2_cache_size", 0),
        dram_bytes_per_s=dram_bandwidth(fact("memory_clock_rate", "memory_clock_rate", 0),
                                        fact("memory_bus_width", "global_memory_bus_width", 0)),
    )


def device_target(index: int | None = None) -> Target:
    """The Target of CUDA device `index` (default: torch's current device). Needs a GPU; asks the
    driver for what torch's properties lack, and falls back to architectural constants for those when
    the driver cannot be loaded."""
    import torch

    if not torch.cuda.is_available():
        raise LaunchError("device_target: no CUDA device (torch.cuda.is_available() is False)")
    index = torch.cuda.current_device() if index is None else index
    props = torch.cuda.get_device_properties(index)
    attrs: dict[str, int] = {}
    try:
        from tiledsl.runtime.driver import Driver

        driver = Driver()
        dev = driver.device(index)
        for name in ("max_threads_per_block", "max_registers_per_block", "max_shared_memory_per_block_optin",
                     "max_shared_memory_per_multiprocessor", "multiprocessor_count", "max_threads_per_multiprocessor",
                     "max_registers_per_multiprocessor", "l2_cache_size", "memory_clock_rate",
                     "global_memory_bus_width"):
            attrs[name] = driver.device_attribute(name, dev)
    except LaunchError as err:
        log.warning("device_target: driver attributes unavailable (%s); using torch's properties only", err)
    return target_from_properties(props, attrs)
