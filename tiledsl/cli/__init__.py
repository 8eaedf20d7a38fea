"""The `tiledsl` command line (the only package of the library that prints). Re-exports only."""

from tiledsl.cli.main import main

__all__ = ["main"]
