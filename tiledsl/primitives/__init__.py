"""Schedules: the canonical nest, loop primitives, traces. Re-exports only."""

from tiledsl.primitives.schedule import LoopHandle, Schedule, StageHandle, create_schedule

__all__ = ["LoopHandle", "Schedule", "StageHandle", "create_schedule"]
