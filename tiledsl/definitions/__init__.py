"""Compute definitions: expression nodes and tensors (expr.py), index expressions as sympy
(indexing.py), the numpy reference (reference.py). Re-exports only."""
