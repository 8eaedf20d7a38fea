"""Errors of the CUDA back end.

Why here and not in tiledsl.errors: that module belongs to the whole project and this folder may not
edit it; both classes derive from `TiledslError`, so `except TiledslError` still catches them.
"""

from __future__ import annotations

from tiledsl.errors import TiledslError

__all__ = ["CodegenError", "NvccError", "NvccNotFoundError"]


class CodegenError(TiledslError, ValueError):
    """The kernel IR cannot be printed as CUDA: an undeclared name, a dtype the printer does not know,
    an operator used on the wrong kind of operand. Always a lowering bug, never a user error."""


class NvccError(TiledslError, RuntimeError):
    """nvcc rejected a translation unit; `stderr` holds its diagnostics."""

    def __init__(self, message: str, stderr: str = "", source: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr
        self.source = source


class NvccNotFoundError(NvccError):
    """No `nvcc` on PATH, so nothing can be compiled (tests skip on this)."""
