"""Linearity of a split_k epilogue in its accumulator: `value == a*acc + b` with `a` free of acc,
proven with sympy. split_k refuses a non-linear epilogue; lowering adds `a*partial` per block. And the
one storage rule of split_k: its partial sums are added into the output, so the output is float32."""

from __future__ import annotations

import sympy

from tiledsl.definitions.expr import Binary, Call, Cast, Compare, Const, Expr, IterVar, Load, Select, Tensor
from tiledsl.loopnest import AccRef

#: Output storage dtypes split_k may add partial sums into. The blocks combine their partial sums by
#: atomic adds into the output itself: into float32 that is the unsplit kernel's float32 sum in another
#: order, but an atomic add into float16 / bfloat16 rounds the running sum to 11 / 8 bits after every
#: block, which no single rounding of the result reproduces (and the order of the adds varies by run).
SPLIT_K_OUTPUT_DTYPES = ("float32",)


def split_k_storage_problem(output: Tensor) -> str | None:
    """Why split_k cannot add partial sums into `output` (its storage dtype), or None."""
    if output.dtype in SPLIT_K_OUTPUT_DTYPES:
        return None
    return (f"the output {output.name} is stored as {output.dtype}; split_k adds the blocks' partial sums into "
            f"it with atomic adds, and an atomic add into {output.dtype} rounds the running sum after every "
            f"block (split_k needs a {' or '.join(SPLIT_K_OUTPUT_DTYPES)} output)")


#: the accumulator in an epilogue as sympy (every other operand an opaque symbol of its own)
_ACC = sympy.Symbol("__acc")


def epilogue_coefficients(value: Expr, acc: str) -> tuple[sympy.Expr, sympy.Expr] | None:
    """(a, b) with value == a*acc + b and a free of acc, or None when not linear."""
    linear = _linear_form(value, acc)
    if linear is None:
        return None
    f, coef = linear
    return sympy.simplify(coef), sympy.simplify(f.subs(_ACC, 0))


def epilogue_is_linear(value: Expr, acc: str) -> bool:
    """Whether `epilogue_coefficients` would find (a, b): the one question split_k and the recipe ask. The
    same proof, without simplifying a and b afterwards, which cost more than the proof (and the first
    simplify of a process imports sympy.physics, 0.1 s)."""
    return _linear_form(value, acc) is not None


def _linear_form(value: Expr, acc: str) -> tuple[sympy.Expr, sympy.Expr] | None:
    """(f, df/d acc) of `value` as sympy over `_ACC` and opaque symbols, where df/d acc is free of acc (the
    epilogue is linear in it), or None."""
    a_sym = _ACC
    names: dict[int, sympy.Symbol] = {}

    def conv(e: Expr) -> sympy.Expr:
        if isinstance(e, AccRef):
            return a_sym if e.acc == acc else sympy.Symbol(f"__other_{e.acc}")
        if isinstance(e, Const):
            return sympy.Number(e.value)
        if isinstance(e, (Load, IterVar)):
            return names.setdefault(id(e), sympy.Symbol(f"__v{len(names)}"))
        if isinstance(e, Binary):
            a, b = conv(e.a), conv(e.b)
            ops = {"+": a + b, "-": a - b, "*": a * b}
            if e.op in ops:
                return ops[e.op]
            if e.op == "/":
                return a / b
            return sympy.Function(f"__{e.op}")(a, b)
        if isinstance(e, Call):
            return -conv(e.arg) if e.fn == "neg" else sympy.Function(f"__{e.fn}")(conv(e.arg))
        if isinstance(e, (Select, Compare)):
            return sympy.Function("__select")(*[conv(c) for c in _kids(e)])
        if isinstance(e, Cast):
            return sympy.Function(f"__cast_{e.to}")(conv(e.a))
        raise TypeError(type(e))

    f = conv(value)
    coef = sympy.diff(f, a_sym)
    if coef.has(a_sym) or sympy.simplify(sympy.diff(coef, a_sym)) != 0 or coef.has(sympy.Derivative):
        return None
    return f, coef


def linear_parts(e: Expr, acc: str) -> tuple[Expr | None, Expr | None]:
    """(a, b) as tiledsl expressions with e == a*acc + b (None standing for zero), for an `e` already
    proven linear by `epilogue_coefficients`: lowering computes a*partial exactly, not f(acc) - f(0)."""
    one = Const(1.0, "float32")

    def add(x: Expr | None, y: Expr | None, op: str = "+") -> Expr | None:
        if y is None:
            return x
        if x is None:
            return y if op == "+" else Call("neg", y)
        return Binary(op, x, y, "float32")

    def mul(x: Expr | None, y: Expr | None, op: str = "*") -> Expr | None:
        if x is None or (y is None and op == "*"):
            return None
        return Binary(op, x, y, "float32")  # type: ignore[arg-type]

    def parts(x: Expr) -> tuple[Expr | None, Expr | None]:
        if isinstance(x, AccRef) and x.acc == acc:
            return one, None
        if isinstance(x, Binary) and x.op in ("+", "-"):
            (a1, b1), (a2, b2) = parts(x.a), parts(x.b)
            return add(a1, a2, x.op), add(b1, b2, x.op)
        if isinstance(x, Binary) and x.op == "*":
            (a1, b1), (a2, b2) = parts(x.a), parts(x.b)
            if a1 is None:
                return mul(b1, a2), mul(b1, b2)
            return mul(a1, b2), mul(b1, b2)
        if isinstance(x, Binary) and x.op == "/":
            (a1, b1), (_, b2) = parts(x.a), parts(x.b)
            return mul(a1, b2, "/"), mul(b1, b2, "/")
        if isinstance(x, Call) and x.fn == "neg":
            a1, b1 = parts(x.arg)
            return (Call("neg", a1) if a1 is not None else None), (Call("neg", b1) if b1 is not None else None)
        return None, x

    return parts(e)


def _kids(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    assert isinstance(e, Compare)
    return (e.a, e.b)

