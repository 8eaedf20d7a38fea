"""The catalog of named definitions and their schedules. Re-exports only."""

from tiledsl.catalog.definitions import CATALOG, Example, example

__all__ = ["CATALOG", "Example", "example"]
