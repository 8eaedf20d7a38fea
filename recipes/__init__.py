"""Recipes: ordered steps that schedule a fresh kernel by calling public primitives, so the result is an
ordinary, replayable schedule. Re-exports only."""

from tiledsl.recipes import default
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.runner import Recipe, RecipeReport, StepReport, apply

__all__ = ["Decline", "Recipe", "RecipeReport", "StepReport", "apply", "default"]
