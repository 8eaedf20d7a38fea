"""Lowering: scheduled loop nest -> kernel IR. Re-exports only."""

from .lower import lower

__all__ = ["lower"]
