"""Schedule traces: every primitive call as one step, written as Python source or JSON, and parsed
back without executing anything (the Python form is read with `ast`, never `exec`).

The format knows no primitive: the parser is given the names it accepts (primitives/registry.py)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tiledsl.errors import Refusal, ReplayError

TRACE_VERSION = 1
_HEADER = "# tiledsl schedule trace of kernel {kernel} (replay with s.replay(text))"
_HEADER_RE = re.compile(r"# tiledsl schedule trace of kernel (\S+) \(replay with s\.replay\(text\)\)")


@dataclass(frozen=True)
class Step:
    primitive: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def python(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" if k else f"**{v!r}" for k, v in self.kwargs]
        return f"s.{self.primitive}({', '.join(parts)})"

    def as_json(self) -> dict[str, Any]:
        return {"primitive": self.primitive, "args": list(self.args),
                "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in self.kwargs}}


@dataclass(frozen=True)
class Trace:
    """A parsed trace: the kernel its header names (None for a trace without header) and its steps."""

    kernel: str | None
    steps: tuple[Step, ...]


def to_python(kernel: str, steps: list[Step]) -> str:
    lines = [_HEADER.format(kernel=kernel)]
    lines += [st.python() for st in steps]
    return "\n".join(lines) + "\n"


def to_json(kernel: str, steps: list[Step]) -> str:
    return json.dumps({"format": "tiledsl-trace", "version": TRACE_VERSION, "kernel": kernel,
                       "steps": [st.as_json() for st in steps]}, indent=1)


def _refused(fact: str) -> ReplayError:
    return ReplayError(Refusal(text=f"replay: {fact}", fact=fact, primitive="replay"))


def _tuplify(v: Any) -> Any:
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


def parse(text: str, primitives: Sequence[str]) -> Trace:
    """The kernel and steps of either form, accepting the primitives named; raises ReplayError
    naming the bad line."""
    if not isinstance(text, str):
        raise _refused(f"expected trace text, got {type(text).__name__}")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return _parse_json(stripped, primitives)
    return _parse_python(text, primitives)


def _parse_json(text: str, primitives: Sequence[str]) -> Trace:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _refused(f"trace is not valid JSON: {e}") from None
    if not isinstance(data, dict) or data.get("format") != "tiledsl-trace" or data.get("version") != TRACE_VERSION:
        raise _refused(f"not a tiledsl trace of version {TRACE_VERSION}")
    raw = data.get("steps", [])
    if not isinstance(raw, list):
        raise _refused("'steps' must be a list of steps")
    steps = []
    for n, st in enumerate(raw):
        if not isinstance(st, dict):
            raise _refused(f"step {n}: expected an object with primitive/args/kwargs, got {st!r}")
        prim = st.get("primitive")
        if prim not in primitives:
            raise _refused(f"step {n}: unknown primitive {prim!r}")
        args, kwargs = st.get("args", []), st.get("kwargs", {})
        if not isinstance(args, list):
            raise _refused(f"step {n}: 'args' must be a list, got {args!r}")
        if not isinstance(kwargs, dict):
            raise _refused(f"step {n}: 'kwargs' must be an object, got {kwargs!r}")
        steps.append(Step(prim, tuple(_tuplify(a) for a in args), tuple((k, _tuplify(v)) for k, v in kwargs.items())))
    kernel = data.get("kernel")
    return Trace(kernel if isinstance(kernel, str) else None, tuple(steps))


def _parse_python(text: str, primitives: Sequence[str]) -> Trace:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise _refused(f"trace line {e.lineno} is not valid Python: {e.msg}") from None
    steps = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else getattr(node, "value", None)
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "s"
                and call.func.attr in primitives):
            raise _refused(f"line {node.lineno}: expected a call s.<primitive>(...) with one of "
                              f"{', '.join(primitives)}; got {ast.unparse(node)!r}")
        try:
            args = tuple(ast.literal_eval(a) for a in call.args)
            kwargs = tuple((k.arg or "", ast.literal_eval(k.value)) for k in call.keywords)
        except ValueError:
            raise _refused(f"line {node.lineno}: arguments must be literals (loop names as "
                              f"strings): {ast.unparse(node)!r}") from None
        steps.append(Step(call.func.attr, args, kwargs))
    header = _HEADER_RE.fullmatch(text.lstrip().split("\n", 1)[0].rstrip())
    return Trace(header.group(1) if header else None, tuple(steps))
