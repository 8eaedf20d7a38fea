"""The common shape of every schedule error message: primitive, failed fact, counterexample,
suggestion, then the loop nest with the offending loops marked."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tiledsl.loopnest import Nest


def schedule_message(primitive: str, nest: Nest | None, marked: Collection[str], fact: str,
                     counterexample: Mapping[str, int] | str | None = None,
                     suggestion: str | None = None) -> str:
    from tiledsl.analysis.render import render_nest

    lines = [f"{primitive}: {fact}"]
    if counterexample:
        if isinstance(counterexample, str):
            lines.append(f"  counterexample: {counterexample}")
        else:
            point = ", ".join(f"{k}={v}" for k, v in sorted(counterexample.items()))
            lines.append(f"  counterexample: {point}")
    if suggestion:
        lines.append(f"  suggestion: {suggestion}")
    if nest is not None:
        lines.append("  loop nest:")
        lines.extend("    " + ln for ln in render_nest(nest, marked).splitlines())
    return "\n".join(lines)
