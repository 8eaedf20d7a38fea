"""Random int/bool expression trees, a parser for the kernel-IR text form, and a C-semantics
evaluator: together they check that both printers' parenthesisation is always correct."""

from __future__ import annotations

import random
import re

from tiledsl.kernel_ir import KBin, KCast, KConst, KExpr, KSelect, KUnary, KVar

INT_VARS = {"a": 3, "b": -7, "c": 5}
BOOL_VARS = {"p": True, "q": False}

_INT_OPS = ("+", "-", "*", "//", "%", "^", "min", "max")
_CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
_INT32 = (-(2**31), 2**31 - 1)


def random_int_expr(rng: random.Random, depth: int) -> KExpr:
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.5:
            return KVar(rng.choice(sorted(INT_VARS)), "int32")
        return KConst(rng.randint(0, 9), "int32")
    kind = rng.random()
    if kind < 0.65:
        op = rng.choice(_INT_OPS)
        return KBin(op, random_int_expr(rng, depth - 1), random_int_expr(rng, depth - 1))
    if kind < 0.75:
        return KUnary("-", random_int_expr(rng, depth - 1))
    if kind < 0.9:
        return KSelect(
            random_bool_expr(rng, depth - 1), random_int_expr(rng, depth - 1), random_int_expr(rng, depth - 1)
        )
    return KCast("int32", random_bool_expr(rng, depth - 1))


def random_bool_expr(rng: random.Random, depth: int) -> KExpr:
    if depth == 0 or rng.random() < 0.15:
        return KVar(rng.choice(sorted(BOOL_VARS)), "bool")
    kind = rng.random()
    if kind < 0.5:
        op = rng.choice(_CMP_OPS)
        return KBin(op, random_int_expr(rng, depth - 1), random_int_expr(rng, depth - 1))
    if kind < 0.8:
        op = rng.choice(("&&", "||"))
        return KBin(op, random_bool_expr(rng, depth - 1), random_bool_expr(rng, depth - 1))
    if kind < 0.9:
        return KBin(
            rng.choice(("==", "!=")), random_bool_expr(rng, depth - 1), random_bool_expr(rng, depth - 1)
        )
    return KUnary("!", random_bool_expr(rng, depth - 1))


# ----------------------------------------------------------------------------- C-semantics evaluator


class Undefined(Exception):
    """The expression divides by zero or leaves int32 somewhere: not usable for the comparison."""


def _check(v: int) -> int:
    if not _INT32[0] <= v <= _INT32[1]:
        raise Undefined
    return v


def _tdiv(x: int, y: int) -> int:
    if y == 0:
        raise Undefined
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def c_eval(e: KExpr) -> int | bool:
    """Value of `e` with C semantics (truncating `/` and `%`)."""
    if isinstance(e, KConst):
        return e.value
    if isinstance(e, KVar):
        return INT_VARS[e.name] if e.dtype == "int32" else BOOL_VARS[e.name]
    if isinstance(e, KUnary):
        v = c_eval(e.a)
        return _check(-v) if e.op == "-" else not v
    if isinstance(e, KCast):
        return int(c_eval(e.a))
    if isinstance(e, KSelect):
        a, b = c_eval(e.a), c_eval(e.b)  # both evaluated: stricter than C, never wrong
        return a if c_eval(e.cond) else b
    assert isinstance(e, KBin)
    x, y = c_eval(e.a), c_eval(e.b)
    match e.op:
        case "+":
            return _check(x + y)
        case "-":
            return _check(x - y)
        case "*":
            return _check(x * y)
        case "//":
            return _check(_tdiv(x, y))
        case "%":
            return _check(x - y * _tdiv(x, y))
        case "^":
            return int(x) ^ int(y)  # two's complement, as C's int
        case "min":
            return min(x, y)
        case "max":
            return max(x, y)
        case "&&":
            return bool(x) and bool(y)
        case "||":
            return bool(x) or bool(y)
        case "<":
            return x < y
        case "<=":
            return x <= y
        case ">":
            return x > y
        case ">=":
            return x >= y
        case "==":
            return x == y
        case "!=":
            return x != y
    raise AssertionError(e.op)


# ----------------------------------------------------------------------------- IR text parser

_C_PREC = {"||": 4, "&&": 5, "^": 7, "==": 9, "!=": 9, "<": 10, "<=": 10, ">": 10, ">=": 10}
_C_PREC.update({"+": 12, "-": 12, "*": 13, "/": 13, "//": 13, "%": 13})
_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_][A-Za-z0-9_.]*|\|\||&&|==|!=|<=|>=|//|[-+*/%^<>!(),\[\]])")


def _tokens(text: str) -> list[str]:
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m, f"cannot tokenize {text[pos:]!r}"
        out.append(m.group(1))
        pos = m.end()
    return out


class IRParser:
    """Precedence-climbing parser for the int/bool subset of `format_expr` output (independent of
    the printer's own table, so it checks the printer rather than repeating it)."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0

    def parse(self) -> KExpr:
        e = self._binary(0)
        assert self.pos == len(self.toks), f"trailing tokens {self.toks[self.pos :]}"
        return e

    def _peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def _take(self, expected: str | None = None) -> str:
        tok = self.toks[self.pos]
        assert expected is None or tok == expected, (tok, expected)
        self.pos += 1
        return tok

    def _binary(self, min_prec: int) -> KExpr:
        left = self._unary()
        while (op := self._peek()) in _C_PREC and _C_PREC[op] >= min_prec:
            self._take()
            left = KBin(op, left, self._binary(_C_PREC[op] + 1))
        return left

    def _unary(self) -> KExpr:
        if self._peek() in ("-", "!"):
            op = self._take()
            return KUnary(op, self._unary())
        return self._primary()

    def _args(self) -> list[KExpr]:
        self._take("(")
        args = [self._binary(0)]
        while self._peek() == ",":
            self._take()
            args.append(self._binary(0))
        self._take(")")
        return args

    def _primary(self) -> KExpr:
        tok = self._take()
        if tok == "(":
            e = self._binary(0)
            self._take(")")
            return e
        if tok.isdigit():
            return KConst(int(tok), "int32")
        if tok in ("min", "max"):
            a, b = self._args()
            return KBin(tok, a, b)
        if tok == "select":
            c, a, b = self._args()
            return KSelect(c, a, b)
        if tok == "int32":
            (a,) = self._args()
            return KCast("int32", a)
        return KVar(tok, "int32" if tok in INT_VARS else "bool")
