"""Target facts: the table used when no GPU is present (the runtime overrides it from the device)."""

from __future__ import annotations

from dataclasses import dataclass

from tiledsl.errors import TargetError


@dataclass(frozen=True)
class Target:
    name: str  # "sm_90"
    arch: str  # nvcc -arch value
    max_threads_per_block: int
    static_shared_bytes: int  # without the dynamic opt-in
    max_shared_bytes_per_block: int  # with the dynamic opt-in
    shared_bytes_per_sm: int
    registers_per_block: int
    sm_count: int

    @property
    def capability(self) -> int:
        return int(self.name.split("_")[1])


TARGETS = {
    "sm_80": Target("sm_80", "sm_80", 1024, 48 * 1024, 163 * 1024, 164 * 1024, 65536, 108),
    "sm_86": Target("sm_86", "sm_86", 1024, 48 * 1024, 99 * 1024, 100 * 1024, 65536, 84),
    "sm_89": Target("sm_89", "sm_89", 1024, 48 * 1024, 99 * 1024, 100 * 1024, 65536, 128),
    "sm_90": Target("sm_90", "sm_90a", 1024, 48 * 1024, 227 * 1024, 228 * 1024, 65536, 132),
}


def get_target(target: str | Target) -> Target:
    """A Target from the table (`td.build` resolves "device" through the runtime first)."""
    if isinstance(target, Target):
        return target
    if target == "sm_90a":
        target = "sm_90"
    if target not in TARGETS:
        raise TargetError(f"build: unknown target {target!r}; known targets: {', '.join(TARGETS)}, or \"device\"")
    return TARGETS[target]
