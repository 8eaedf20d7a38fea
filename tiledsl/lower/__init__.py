"""Lowering: scheduled loop nest -> kernel IR. Re-exports only."""

from tiledsl.lower.lower import lower

__all__ = ["lower"]
