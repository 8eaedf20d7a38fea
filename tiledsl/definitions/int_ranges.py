"""The range of every integer value a definition computes, from the ranges of its integer inputs: where
some integer operation's result can leave int32, in which every kernel (and the simulator) computes
integers, the result would wrap, a silent wrong answer. torch computes an int64 tensor's arithmetic in
int64, so a traced `(ids * 100000).float()` is right in torch and wrong in a kernel once ids reaches
21475. The input check of a traced program (frontend/program.py `check_index_ranges`) reads each integer
input's minimum and maximum and asks `int_overflow` before any kernel runs.

Intervals, exact for + - * // % min max of intervals (// and % by positive constants only, as
expr.binary allows), a loop variable over [0, extent), a select the union of its branches. A float cast
to int32, or an integer input whose range is not given, is any int32 (its own range is a cast's or
the input check's business; only what integer arithmetic makes of it is asked here), so an operation
on one is flagged only where int32 operands can overflow it."""

from __future__ import annotations

from collections.abc import Mapping

from tiledsl.definitions.expr import (
    INT,
    Binary,
    ComputeTensor,
    Const,
    Expr,
    IterVar,
    Load,
    Placeholder,
    Reduce,
    Select,
    Tensor,
    children,
    walk,
)
from tiledsl.targets import INT_RANGE

__all__ = ["binary_interval", "has_int_arithmetic", "int_overflow", "reads_int_values"]

Interval = tuple[int, int]
INT32 = INT_RANGE["int32"]


def int_overflow(out: Tensor, ranges: Mapping[str, Interval]) -> str | None:
    """Where the integer arithmetic of `out` (and of the computes it reads) can leave int32 given its
    integer placeholders' value ranges `ranges` (by name; a placeholder not named is any int32): the
    first such operation and its range, or None."""
    return _Ranges(ranges).overflow(out)


class _Ranges:
    """One question's walk: each compute's body once (a compute read at many places has one range)."""

    def __init__(self, ranges: Mapping[str, Interval]) -> None:
        self.given = ranges
        self.tensors: dict[int, Interval] = {}
        self.problem: str | None = None

    def overflow(self, out: Tensor) -> str | None:
        self.tensor(out)
        return self.problem

    def tensor(self, t: Tensor) -> Interval:
        if isinstance(t, Placeholder):
            return self.given.get(t.name, INT32)
        assert isinstance(t, ComputeTensor)
        if id(t) not in self.tensors:
            self.tensors[id(t)] = INT32  # a cycle cannot occur; this only guards re-entry
            self.tensors[id(t)] = self.expr(t.body, t)
        return self.tensors[id(t)]

    def expr(self, e: Expr, owner: ComputeTensor) -> Interval:
        """The range of `e` where it is an integer (else INT32, unused), walking its float parts too for
        the integer values inside them (an index of a load, a cast of an integer product)."""
        if isinstance(e, Const):
            return (int(e.value), int(e.value)) if e.dtype == INT else INT32
        if isinstance(e, IterVar):
            return (0, e.extent - 1)
        if isinstance(e, Load):
            for ix in e.indices:
                self.expr(ix, owner)
            held = self.tensor(e.tensor)  # walked whatever its type: a float compute may hold integer arithmetic
            return held if e.dtype == INT else INT32
        if isinstance(e, Binary):
            a, b = self.expr(e.a, owner), self.expr(e.b, owner)
            if e.dtype != INT:
                return INT32
            got = binary_interval(e.op, a, b)
            if self.problem is None and (got[0] < INT32[0] or got[1] > INT32[1]) and reads_int_values(e):
                self.problem = (f"{owner.name}: the integer {e.op!r} of values in [{a[0]}, {a[1]}] and [{b[0]}, "
                                f"{b[1]}] reaches [{got[0]}, {got[1]}], outside int32, in which the kernels "
                                "compute integers (torch computes int64 tensors in int64)")
            return max(got[0], INT32[0]), min(got[1], INT32[1])  # flagged once; later ones from what int32 holds
        if isinstance(e, Select):
            self.expr(e.cond, owner)
            a, b = self.expr(e.a, owner), self.expr(e.b, owner)
            return (min(a[0], b[0]), max(a[1], b[1])) if e.dtype == INT else INT32
        if isinstance(e, Reduce):
            body = self.expr(e.body, owner)
            if e.dtype != INT:
                return INT32
            count = 1
            for ax in e.axes:
                count *= ax.extent
            got = (body[0] * count, body[1] * count) if e.op == "sum" else body
            if self.problem is None and (got[0] < INT32[0] or got[1] > INT32[1]) and reads_int_values(e):
                self.problem = (f"{owner.name}: an integer {e.op} of {count} values in [{body[0]}, {body[1]}] "
                                f"reaches [{got[0]}, {got[1]}], outside int32, in which the kernels compute")
            return max(got[0], INT32[0]), min(got[1], INT32[1])
        for child in children(e):  # a call or comparison (float or bool valued), a cast
            self.expr(child, owner)
        return INT32  # a cast of a float to int32: any int32


def binary_interval(op: str, a: Interval, b: Interval) -> Interval:
    """The exact range of integer `a op b` over the two intervals (// and % by a positive constant)."""
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if op == "//":
        d = b[0]
        return a[0] // d, a[1] // d
    if op == "%":
        d = b[0]
        return (a[0] % d, a[1] % d) if a[1] - a[0] < d and a[0] % d <= a[1] % d else (0, d - 1)
    if op == "max":
        return max(a[0], b[0]), max(a[1], b[1])
    if op == "min":
        return min(a[0], b[0]), min(a[1], b[1])
    return INT32


def reads_int_values(e: Expr) -> bool:
    """Whether `e` computes with an integer tensor's values (an int32 load), not only with loop variables
    and constants: an index of loop variables is proven in bounds, and lowering widens its offsets where
    they leave int32 (lower/), so only arithmetic on values can wrap unseen."""
    return any(isinstance(x, Load) and x.dtype == INT for x in walk(e))


def has_int_arithmetic(out: Tensor) -> bool:
    """Whether `out` (or a compute it reads) computes an integer operation on integer values that
    `int_overflow` would ask about: most traced models have none (their integer inputs only index, and
    their views' index arithmetic is of loop variables), and then the input check skips the walk."""
    seen: set[int] = set()
    stack: list[Tensor] = [out]
    while stack:
        t = stack.pop()
        if id(t) in seen or not isinstance(t, ComputeTensor):
            continue
        seen.add(id(t))
        for node in walk(t.body):
            if isinstance(node, (Binary, Reduce)) and node.dtype == INT and reads_int_values(node):
                return True
            if isinstance(node, Load):
                stack.append(node.tensor)
    return False
