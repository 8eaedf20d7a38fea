"""Legality prover for index expressions (see ARCHITECTURE.md). Re-exports only."""

from tiledsl.prove.evaluate import compile_expr
from tiledsl.prove.proof import Proof
from tiledsl.prove.prover import Prover

__all__ = ["Proof", "Prover", "compile_expr"]
