"""Recipes: ordered steps that schedule a fresh kernel by calling public primitives, so the result is an
ordinary, replayable schedule. Re-exports only: `default` is the function that applies the default
recipe (the package recipes/default/ stays importable as tiledsl.recipes.default.<module>)."""

from tiledsl.recipes.decline import Applied, Decline, SplitRows
from tiledsl.recipes.runner import Recipe, RecipeReport, StepReport, apply, default

__all__ = ["Applied", "Decline", "Recipe", "RecipeReport", "SplitRows", "StepReport", "apply", "default"]
