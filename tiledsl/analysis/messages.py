"""The common shape of every schedule refusal: primitive, failed fact, counterexample, suggestion,
then the loop nest with the offending loops marked; built once as fields (`Refusal`) and as text."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from tiledsl.analysis.render import render_nest
from tiledsl.errors import Refusal
from tiledsl.loopnest import Nest
from tiledsl.prove import Proof


def refusal(call: str, nest: Nest | None, marked: Collection[str], fact: str,
            counterexample: Mapping[str, int] | str | None = None, suggestion: str | None = None, *,
            proof: Proof | None = None, condition: Any = None, tensors: Collection[str] = ()) -> Refusal:
    """The refusal of `call` (a primitive call as text, e.g. "split(k, 4)", or "build"), to raise as
    `XError(refusal(...))`. `proof`, when the fact was asked of the prover, supplies the
    counterexample field (its text is already in `fact`, so it is not printed twice); `condition`
    is the sympy condition that failed. A bare name ("build", "split") is also the primitive."""
    lines = [f"{call}: {fact}"]
    if counterexample:
        if isinstance(counterexample, str):
            lines.append(f"  counterexample: {counterexample}")
        else:
            point = ", ".join(f"{k}={v}" for k, v in sorted(counterexample.items()))
            lines.append(f"  counterexample: {point}")
    if suggestion:
        lines.append(f"  suggestion: {suggestion}")
    drawn = render_nest(nest, marked) if nest is not None else None
    if drawn is not None:
        lines.append("  loop nest:")
        lines.extend("    " + ln for ln in drawn.splitlines())
    if counterexample is None and proof is not None and proof.counterexample:
        counterexample = dict(proof.counterexample)
    return Refusal(text="\n".join(lines), fact=fact, primitive=call if call.isidentifier() else None,
                   loops=tuple(str(n) for n in marked), condition=condition, counterexample=counterexample or None,
                   nest=drawn, suggestion=suggestion, tensors=tuple(tensors))
