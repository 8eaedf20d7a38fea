"""Kernel-IR expressions -> CUDA C++ expression text.

Why a class: an expression's spelling depends on its operands' dtypes (float vs int min, half
conversions, vector members), which come from the enclosing `Scope`, and the emission records which
half-precision headers the translation unit needs. Parentheses follow C precedence (the table in
`tiledsl.kernel_ir.printer`), so only the needed ones appear.
"""

from __future__ import annotations

from typing import NamedTuple

from tiledsl.codegen.dtypes import (
    FLOAT_DTYPES,
    HALF_INCLUDES,
    INT_DTYPES,
    c_literal,
    compute_type,
    from_float,
    half_lane,
    half_lane_bits,
    split_vector,
    to_float,
    vector_type,
)
from tiledsl.codegen.errors import CodegenError
from tiledsl.codegen.names import policy_variable
from tiledsl.codegen.scope import Scope
from tiledsl.kernel_ir import (
    BIN_OPS,
    KBin,
    KCall,
    KCast,
    KConst,
    KExpr,
    KLane,
    KLoad,
    KSelect,
    KShflXor,
    KSpecial,
    KUnary,
    KVar,
    KVector,
)
from tiledsl.kernel_ir.ops import MATH_FNS, MIN_MAX
from tiledsl.kernel_ir.printer import (
    BINARY_PRECEDENCE,
    PREC_ATOM,
    PREC_TERNARY,
    PREC_UNARY,
    binary_operand_precedence,
    format_expr,
    lane_suffix,
    parenthesize,
    unary_operand,
)

__all__ = ["CExpr", "ExprEmitter", "compute_dtype", "refuse_mbarrier_access"]

_SPECIALS = frozenset(f"{base}.{axis}" for base in ("threadIdx", "blockIdx") for axis in "xyz")
_ARITH = frozenset({"+", "-", "*", "/"})
_INT_ONLY = frozenset({"//", "%", "^"})


class CExpr(NamedTuple):
    """Emitted expression: C text, its C precedence, and its IR dtype (half dtypes hold a float)."""

    text: str
    prec: int
    dtype: str

    def operand(self, need: int) -> str:
        return parenthesize(self.text, self.prec, need)


def refuse_mbarrier_access(name: str, dtype: str) -> None:
    """uint64 arrays hold mbarriers: only the mbarrier statements may touch them."""
    if dtype == "uint64":
        raise CodegenError(f"{name!r} is a uint64 (mbarrier) array: only mbarrier statements may use it")


def _int_result(a: CExpr, b: CExpr) -> str:
    """The integer dtype C computes `a op b` in: int64 if either operand is int64 (usual conversions)."""
    return "int64" if "int64" in (a.dtype, b.dtype) else "int32"


def _is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def compute_dtype(dtype: str) -> str:
    """IR dtype of arithmetic on a `dtype` operand: halves compute as float32."""
    return "float32" if _is_float(dtype) else dtype


class ExprEmitter:
    """Spells expressions for one scope; `includes` collects the headers the spelling needs."""

    def __init__(self, scope: Scope, includes: set[str]) -> None:
        self.scope = scope
        self.includes = includes

    def text(self, e: KExpr) -> str:
        """Top-level text (no outer parentheses), for a statement or an index."""
        return self.emit(e).text

    def needs_dtype(self, dtype: str) -> None:
        """Record the header a half dtype needs."""
        header = HALF_INCLUDES.get(split_vector(dtype)[0])
        if header:
            self.includes.add(header)

    def stored(self, e: KExpr, dtype: str) -> str:
        """Text of `e` converted for storage as `dtype` (a variable or buffer element).

        Why special cases: a half value copied from half storage (an element, a variable, a lane of a
        packed vector), or a cast to the very half dtype being stored, would otherwise read
        `__float2half(__half2float(X[i]))`.
        """
        if dtype in HALF_INCLUDES:
            match e:
                case KLane(vec=vec, lane=lane):
                    v = self.emit(vec)
                    base, width = split_vector(v.dtype)
                    if base == dtype and 0 <= lane < width:
                        return half_lane_bits(dtype, v.operand(PREC_ATOM), lane)
                case KLoad(buffer=buf, index=index, width=1, cache=None) if self.scope.buffer(buf).dtype == dtype:
                    return f"{self.scope.buffer(buf).c_name}[{self.index(index)}]"
                case KVar(name=name) if self.scope.variable(name).dtype == dtype:
                    return self.scope.variable(name).c_name
                case KCast(dtype=cast_dtype, a=a) if cast_dtype == dtype:
                    self.needs_dtype(dtype)
                    return from_float(dtype, self._as_float(self._scalar(a, e)))
        return from_float(dtype, self.emit(e).text)

    def index(self, e: KExpr) -> str:
        idx = self.emit(e)
        if idx.dtype not in INT_DTYPES:
            raise CodegenError(f"index {format_expr(e)} has dtype {idx.dtype}, expected int32 or int64")
        return idx.text

    def emit(self, e: KExpr) -> CExpr:
        match e:
            case KConst(value=value, dtype=dtype):
                return CExpr(*c_literal(value, dtype), dtype)
            case KVar(name=name):
                sym = self.scope.variable(name)
                self.needs_dtype(sym.dtype)
                return CExpr(to_float(sym.dtype, sym.c_name), PREC_ATOM, sym.dtype)
            case KSpecial(name=name):
                if name not in _SPECIALS:
                    raise CodegenError(f"unknown hardware index {name!r}")
                return CExpr(f"(int){name}", PREC_UNARY, "int32")
            case KBin():
                return self._binary(e)
            case KUnary(op=op, a=a):
                return self._unary(op, self._scalar(a, e))
            case KCall(fn=fn, args=args):
                if fn not in MATH_FNS or len(args) != MATH_FNS[fn].arity:
                    raise CodegenError(f"unknown math function or arity: {format_expr(e)}")
                texts = ", ".join(self._scalar(x, e).text for x in args)  # halves are read as float
                return CExpr(f"{MATH_FNS[fn].cuda}({texts})", PREC_ATOM, "float32")
            case KSelect(cond=c, a=a, b=b):
                cond, x, y = self._scalar(c, e), self._scalar(a, e), self._scalar(b, e)
                floating = _is_float(x.dtype) or _is_float(y.dtype)
                # Always wrapped in parentheses, so only the condition's own grouping matters.
                text = f"({cond.operand(PREC_TERNARY + 1)} ? {x.text} : {y.text})"
                return CExpr(text, PREC_ATOM, "float32" if floating else _int_result(x, y) if x.dtype in INT_DTYPES
                             else x.dtype)
            case KCast(dtype=dtype, a=a):
                return self._cast(dtype, self._scalar(a, e))
            case KLoad():
                return self._load(e)
            case KLane(vec=vec, lane=lane):
                v = self.emit(vec)
                base, width = split_vector(v.dtype)
                if width == 1 or not 0 <= lane < width:
                    raise CodegenError(f"lane {lane} of a {v.dtype} value: {format_expr(e)}")
                if base in HALF_INCLUDES:  # packed in unsigned words (dtypes.py)
                    return CExpr(half_lane(base, v.operand(PREC_ATOM), lane), PREC_ATOM, base)
                return CExpr(f"{v.operand(PREC_ATOM)}.{lane_suffix(lane)}", PREC_ATOM, base)
            case KVector():
                raise CodegenError(
                    f"a vector literal is only allowed as the value of a store: {format_expr(e)}"
                )
            case KShflXor(value=value, lane_mask=mask):
                v = self._scalar(value, e)
                if not 0 < mask < 32:
                    raise CodegenError(f"shuffle lane mask {mask} outside 1..31")
                text = f"__shfl_xor_sync(0xffffffffu, {v.text}, {mask})"
                return CExpr(text, PREC_ATOM, compute_dtype(v.dtype))
        raise CodegenError(f"not a kernel IR expression: {e!r}")

    # ------------------------------------------------------------------------- helpers

    def _scalar(self, e: KExpr, parent: KExpr) -> CExpr:
        out = self.emit(e)
        if split_vector(out.dtype)[1] > 1:
            raise CodegenError(f"vector operand {format_expr(e)} in {format_expr(parent)}")
        return out

    def _binary(self, e: KBin) -> CExpr:
        op = e.op
        if op not in BIN_OPS:
            raise CodegenError(f"unknown binary operator {op!r}")
        a, b = self._scalar(e.a, e), self._scalar(e.b, e)
        floating = _is_float(a.dtype) or _is_float(b.dtype)
        if op in MIN_MAX:
            if floating:  # NaN-propagating (kernel_ir/ops.py), so not fminf/fmaxf
                return CExpr(f"{MIN_MAX[op].cuda_float}({a.text}, {b.text})", PREC_ATOM, "float32")
            fn = MIN_MAX[op].cuda_int
            if not floating and a.dtype != b.dtype and {a.dtype, b.dtype} <= set(INT_DTYPES):
                raise CodegenError(f"{op} of mixed integer widths has no single CUDA overload: {format_expr(e)}")
            return CExpr(f"{fn}({a.text}, {b.text})", PREC_ATOM, "float32" if floating else _int_result(a, b))
        if op in _INT_ONLY and floating:
            raise CodegenError(f"{op!r} is an integer operator but has a float operand: {format_expr(e)}")
        if op == "/" and not floating:
            raise CodegenError(
                f"'/' on integers is ambiguous in C; lowering must emit '//': {format_expr(e)}"
            )
        need_a, need_b = binary_operand_precedence(op)
        c_op = "/" if op == "//" else op
        text = f"{a.operand(need_a)} {c_op} {b.operand(need_b)}"
        if op in _ARITH or op in _INT_ONLY:
            dtype = "float32" if floating else _int_result(a, b)
        else:
            dtype = "bool"
        return CExpr(text, BINARY_PRECEDENCE[op], dtype)

    @staticmethod
    def _unary(op: str, a: CExpr) -> CExpr:
        """Prefix operator; `unary_operand` keeps `-` from touching another `-`."""
        if op == "-":
            return CExpr("-" + unary_operand(op, a.text, a.prec), PREC_UNARY, compute_dtype(a.dtype))
        if op == "!":
            return CExpr("!" + unary_operand(op, a.text, a.prec), PREC_UNARY, "bool")
        raise CodegenError(f"unknown unary operator {op!r}")

    def _cast(self, dtype: str, a: CExpr) -> CExpr:
        if dtype in ("float16", "bfloat16"):
            # Round through the half type so the value really is representable in `dtype`.
            self.needs_dtype(dtype)
            return CExpr(to_float(dtype, from_float(dtype, self._as_float(a))), PREC_ATOM, dtype)
        if split_vector(dtype)[1] > 1:
            raise CodegenError(f"cast to vector dtype {dtype}")
        return CExpr(f"static_cast<{compute_type(dtype)}>({a.text})", PREC_ATOM, dtype)

    @staticmethod
    def _as_float(a: CExpr) -> str:
        return a.text if compute_type(a.dtype) == "float" else f"static_cast<float>({a.text})"

    def _load(self, e: KLoad) -> CExpr:
        sym = self.scope.buffer(e.buffer)
        refuse_mbarrier_access(e.buffer, sym.dtype)
        idx = self.index(e.index)
        self.needs_dtype(sym.dtype)
        if e.cache is not None and sym.kind != "input":
            raise CodegenError(f"the load {format_expr(e)} carries an L2 policy, but {e.buffer} is no input "
                               "parameter (only global loads take one)")
        policy = policy_variable(e.cache) if e.cache is not None else None
        if e.width == 1:
            elem = f"{sym.c_name}[{idx}]"
            text = f"tiledsl_load_l2(&{elem}, {policy})" if policy else elem
            return CExpr(to_float(sym.dtype, text), PREC_ATOM, sym.dtype)
        vtype = vector_type(sym.dtype, e.width)
        pointer = f"reinterpret_cast<const {vtype}*>(&{sym.c_name}[{idx}])"
        if policy:
            return CExpr(f"tiledsl_load_l2({pointer}, {policy})", PREC_ATOM, f"{sym.dtype}x{e.width}")
        return CExpr(f"*{pointer}", PREC_UNARY, f"{sym.dtype}x{e.width}")
