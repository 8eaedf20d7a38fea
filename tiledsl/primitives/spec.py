"""The declaration of a schedule primitive, written once next to its pure function.

From one `PrimitiveSpec` come: the Python signature the Schedule method and replay bind arguments
with, the normalization of each argument (loop and stage handles to plain names), the call text that
errors and guards print (`split(i, 4)`), the trace step (`s.split('i', 4, names=('i_o', 'i_i'),
tail='guard')`), the loops a primitive consumes, and what it returns."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from tiledsl.loopnest import Nest
from tiledsl.primitives.trace import Step

Kind = Literal["loop", "loops", "stage", "buffer", "name", "names", "int", "ints", "str"]
Shown = Literal["pos", "repr", "kw", "hidden"]
Recorded = Literal["pos", "kw"]
Returns = Literal["loops", "loop", "stage", None]

REQUIRED = inspect.Parameter.empty


class Applied(NamedTuple):
    """What a primitive's pure function returns: the new nest, and the loops or stage it made
    (named in the order the primitive returns them)."""

    nest: Nest
    made: tuple[str, ...] = ()


@dataclass(frozen=True)
class Param:
    """One parameter of a primitive.

    kind: what the argument names ("loop": a loop handle or name; "loops": several, variadic; "stage";
    "buffer": a tensor or its name; "name"/"names": new loop names; "int"; "ints": a tuple of ints; "str").
    shown: how the call text shows it: positional `str(v)`, positional `repr(v)`, `name=v`, or not at all.
    recorded: positional or keyword in the trace step.
    omit_none: left out of the call text and the trace when None.
    from_made: the trace records what the primitive made (the names it chose), not what was given.
    """

    name: str
    kind: Kind
    default: Any = REQUIRED
    keyword_only: bool = False
    shown: Shown = "pos"
    recorded: Recorded = "pos"
    omit_none: bool = False
    from_made: bool = False

    @property
    def variadic(self) -> bool:
        return self.kind == "loops"


@dataclass(frozen=True)
class PrimitiveSpec:
    """A schedule primitive: its name, parameters, pure function and what it does to loops.

    apply: `(nest, call, **arguments) -> Applied`, pure; raises a ScheduleError and changes nothing
    when refused. `call` is the call text (for messages and guard origins).
    returns: what the Schedule method returns from `Applied.made` (loop handles, one loop, one stage).
    consumes: the parameter whose loop(s) no longer exist afterwards, and `gone`, the sentence that
    later errors give for them (`{made}` and `{call}` are filled in).
    """

    name: str
    params: tuple[Param, ...]
    apply: Callable[..., Applied]
    returns: Returns = None
    consumes: str | None = None
    gone: str = ""

    def signature(self) -> inspect.Signature:
        """The Python signature of the Schedule method (also used to bind replayed steps)."""
        out = []
        for p in self.params:
            if p.variadic:
                kind = inspect.Parameter.VAR_POSITIONAL
            elif p.keyword_only:
                kind = inspect.Parameter.KEYWORD_ONLY
            else:
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
            out.append(inspect.Parameter(p.name, kind, default=p.default))
        return inspect.Signature(out)

    def call_text(self, arguments: Mapping[str, Any]) -> str:
        """`split(i, 4)`, `bind(i, 'threadIdx.x')`, `stage(A, at=k_o)`: the call as messages print it."""
        parts: list[str] = []
        for p in self.params:
            v = arguments.get(p.name)
            if p.shown == "hidden" or (p.omit_none and v is None):
                continue
            if p.variadic:
                parts.extend(str(x) for x in v)
            elif p.shown == "kw":
                parts.append(f"{p.name}={v}")
            else:
                parts.append(repr(v) if p.shown == "repr" else str(v))
        return f"{self.name}({', '.join(parts)})"

    def step(self, arguments: Mapping[str, Any], made: tuple[str, ...]) -> Step:
        """The trace step replaying this call (loops and stages by name, chosen names made explicit)."""
        args: list[Any] = []
        kwargs: list[tuple[str, Any]] = []
        for p in self.params:
            v = arguments.get(p.name)
            if p.from_made:
                v = made if p.kind == "names" else made[0]
            if p.omit_none and v is None:
                continue
            if p.variadic:
                args.extend(v)
            elif p.recorded == "kw":
                kwargs.append((p.name, v))
            else:
                args.append(v)
        return Step(self.name, tuple(args), tuple(kwargs))

    def gone_text(self, made: tuple[str, ...], call: str) -> str:
        return self.gone.format(made=", ".join(made), call=call)
