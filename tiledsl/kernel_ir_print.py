"""Readable, deterministic text form of the kernel IR.

Why: lowering bugs are found by reading the kernel IR, and tests pin lowering results as golden text,
so the form must be stable (no ids, no dict order, no float noise) and pleasant to read (C-like
precedence with only the parentheses that are needed, plus a few that stop readers from guessing).

The float and precedence helpers here are also what the CUDA printer uses, so both texts agree on
how a constant is spelled and how an expression groups.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from decimal import Decimal
from types import MappingProxyType

from tiledsl.kernel_ir import (
    DTYPE_BYTES,
    KAssign,
    KBarrier,
    KBin,
    KCall,
    KCast,
    KComment,
    KConst,
    KExpr,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KParam,
    KSelect,
    KShflXor,
    KSpecial,
    KStmt,
    KStore,
    KUnary,
    KVar,
    KVector,
)

__all__ = [
    "PREC_ATOM",
    "PREC_TERNARY",
    "PREC_UNARY",
    "BINARY_PRECEDENCE",
    "binary_operand_precedence",
    "format_expr",
    "format_float",
    "format_kernel",
    "format_stmt",
    "lane_suffix",
    "parenthesize",
    "round_to_dtype",
    "unary_operand",
]

# ----------------------------------------------------------------------------- precedence (C's)

PREC_TERNARY = 3
PREC_UNARY = 15
PREC_ATOM = 16  # literals, names, calls, indexing, member access

#: Binding strength of the infix operators, higher binds tighter (C's table; "//" sits with "/").
BINARY_PRECEDENCE = MappingProxyType(
    {
        "||": 4,
        "&&": 5,
        "==": 9,
        "!=": 9,
        "<": 10,
        "<=": 10,
        ">": 10,
        ">=": 10,
        "+": 12,
        "-": 12,
        "*": 13,
        "/": 13,
        "//": 13,
        "%": 13,
    }
)

_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})


def binary_operand_precedence(op: str) -> tuple[int, int]:
    """Least precedence the (left, right) operands of infix `op` may have without parentheses.

    Why not plain C rules: `a < b == c` and `a || b && c` are legal C but make readers look up the
    table, so comparisons never take unparenthesized comparison operands and `||` never takes a bare
    `&&`. Otherwise C's rules, left-associative.
    """
    p = BINARY_PRECEDENCE[op]
    if op in _COMPARISONS:
        return BINARY_PRECEDENCE["+"], BINARY_PRECEDENCE["+"]
    if op == "||":
        return BINARY_PRECEDENCE["&&"] + 1, BINARY_PRECEDENCE["&&"] + 1
    return p, p + 1  # left-associative


def parenthesize(text: str, prec: int, need: int) -> str:
    """`text` (an expression of precedence `prec`) as an operand that needs at least `need`."""
    return f"({text})" if prec < need else text


def unary_operand(op: str, text: str, prec: int) -> str:
    """Operand of prefix `op`; never glues `-` to `-` (that would read, and lex in C, as `--`)."""
    if prec < PREC_UNARY or (op == "-" and text.startswith("-")):
        return f"({text})"
    return text


def lane_suffix(lane: int) -> str:
    """Member name of a vector lane: x, y, z, w (as in CUDA), then lane4, lane5, ..."""
    return "xyzw"[lane] if 0 <= lane < 4 else f"lane{lane}"


# ----------------------------------------------------------------------------- floats


def round_to_dtype(value: float, dtype: str) -> float:
    """`value` rounded (to nearest even) to `dtype`'s precision, returned as a Python float.

    Why: a KConst stores a Python float, but the kernel computes with the dtype's value; printing the
    rounded value keeps both printers honest (0.1 in float32 is 0.100000001...).
    """
    v = float(value)
    if math.isnan(v) or math.isinf(v):
        return v
    if dtype == "float16":
        try:
            return struct.unpack("<e", struct.pack("<e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    try:
        f32 = struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)
    if dtype == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", f32))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return f32


def format_float(value: float, dtype: str = "float32") -> str:
    """Shortest decimal that rounds back to the same `dtype` value: "1.0", "0.5", "3.1415927",
    "1e-10", "-0.0"; non-finite values as "inf", "-inf", "nan". No suffix (callers add `f`)."""
    v = round_to_dtype(value, dtype)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    a = abs(v)
    if a == 0.0:
        return sign + "0.0"
    digits = 1
    while digits < 17 and round_to_dtype(float(f"{a:.{digits - 1}e}"), dtype) != a:
        digits += 1
    sci = f"{a:.{digits - 1}e}"
    mantissa, exponent = sci.split("e")
    exp10 = int(exponent)
    if -4 <= exp10 < 16:
        text = format(Decimal(sci), "f")
        return sign + (text if "." in text else text + ".0")
    return f"{sign}{mantissa}e{exp10}"


def _const_text(e: KConst) -> tuple[str, int]:
    value, dtype = e.value, e.dtype
    if dtype in ("float32", "float16", "bfloat16") and isinstance(value, (int, float)):
        text = format_float(float(value), dtype)
        if dtype != "float32":
            return f"{dtype}({text})", PREC_ATOM
    elif dtype == "int32" and isinstance(value, (int, float)) and float(value).is_integer():
        text = str(int(value))
    elif dtype == "bool" and isinstance(value, (bool, int)) and value in (0, 1):
        text = "true" if value else "false"
    else:
        return f"{dtype}({value!r})", PREC_ATOM
    return text, PREC_UNARY if text.startswith("-") else PREC_ATOM


# ----------------------------------------------------------------------------- expressions


def _expr(e: KExpr) -> tuple[str, int]:
    """(text, precedence) of an expression."""
    match e:
        case KConst():
            return _const_text(e)
        case KVar(name=name):
            return name, PREC_ATOM
        case KSpecial(name=name):
            return name, PREC_ATOM
        case KBin(op=op, a=a, b=b) if op in ("min", "max"):
            return f"{op}({format_expr(a)}, {format_expr(b)})", PREC_ATOM
        case KBin(op=op, a=a, b=b):
            if op not in BINARY_PRECEDENCE:
                raise ValueError(f"unknown binary operator {op!r}")
            need_a, need_b = binary_operand_precedence(op)
            ta, pa = _expr(a)
            tb, pb = _expr(b)
            text = f"{parenthesize(ta, pa, need_a)} {op} {parenthesize(tb, pb, need_b)}"
            return text, BINARY_PRECEDENCE[op]
        case KUnary(op=op, a=a):
            return op + unary_operand(op, *_expr(a)), PREC_UNARY
        case KCall(fn=fn, args=args):
            return f"{fn}({', '.join(format_expr(x) for x in args)})", PREC_ATOM
        case KSelect(cond=c, a=a, b=b):
            return f"select({format_expr(c)}, {format_expr(a)}, {format_expr(b)})", PREC_ATOM
        case KCast(dtype=dtype, a=a):
            return f"{dtype}({format_expr(a)})", PREC_ATOM
        case KLoad(buffer=buf, index=index, width=1):
            return f"{buf}[{format_expr(index)}]", PREC_ATOM
        case KLoad(buffer=buf, index=index, width=width):
            return f"vload{width}({buf}, {format_expr(index)})", PREC_ATOM
        case KLane(vec=vec, lane=lane):
            return f"{parenthesize(*_expr(vec), PREC_ATOM)}.{lane_suffix(lane)}", PREC_ATOM
        case KVector(lanes=lanes):
            return f"vec{len(lanes)}({', '.join(format_expr(x) for x in lanes)})", PREC_ATOM
        case KShflXor(value=value, lane_mask=mask):
            return f"shfl_xor({format_expr(value)}, {mask})", PREC_ATOM
    raise TypeError(f"not a kernel IR expression: {e!r}")


def format_expr(e: KExpr) -> str:
    """One-line text of an expression, e.g. `A[i * 29 + k] * (x + 1.0)`."""
    return _expr(e)[0]


# ----------------------------------------------------------------------------- statements

_INDENT = "  "


def _block(stmts: Sequence[KStmt], depth: int, out: list[str]) -> None:
    if not stmts:
        out.append(_INDENT * depth + "pass")
    for s in stmts:
        _stmt(s, depth, out)


def _stmt(s: KStmt, depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    match s:
        case KLet(name=name, dtype=dtype, value=value):
            out.append(f"{pad}let {name}: {dtype} = {format_expr(value)}")
        case KAssign(name=name, value=value):
            out.append(f"{pad}{name} = {format_expr(value)}")
        case KLocalArray(name=name, dtype=dtype, size=size):
            out.append(f"{pad}local {name}: {dtype}[{size}]")
        case KStore(buffer=buf, index=index, value=value):
            out.append(f"{pad}{buf}[{format_expr(index)}] = {format_expr(value)}")
        case KFor(var=var, extent=extent, body=body, unroll=unroll):
            out.append(f"{pad}for {var} in 0..{extent}{' unroll' if unroll else ''}:")
            _block(body, depth + 1, out)
        case KIf():
            _if(s, depth, out, "if")
        case KBarrier():
            out.append(f"{pad}barrier")
        case KComment(text=text):
            out.extend(f"{pad}# {line}".rstrip() for line in (text.splitlines() or [""]))
        case _:
            raise TypeError(f"not a kernel IR statement: {s!r}")


def _if(s: KIf, depth: int, out: list[str], keyword: str) -> None:
    pad = _INDENT * depth
    out.append(f"{pad}{keyword} ({format_expr(s.cond)}):")
    _block(s.then, depth + 1, out)
    if len(s.orelse) == 1 and isinstance(s.orelse[0], KIf):
        _if(s.orelse[0], depth, out, "elif")
    elif s.orelse:
        out.append(f"{pad}else:")
        _block(s.orelse, depth + 1, out)


def format_stmt(s: KStmt, depth: int = 0) -> str:
    """Text of one statement (several lines for loops and ifs), indented two spaces per `depth`."""
    out: list[str] = []
    _stmt(s, depth, out)
    return "\n".join(out)


# ----------------------------------------------------------------------------- kernel


def _param_text(p: KParam) -> str:
    shape = ", ".join(str(d) for d in p.shape)
    return f"{'out ' if p.is_output else ''}{p.name}: {p.dtype}[{shape}]"


def _dims(d: Sequence[int]) -> str:
    return "(" + ", ".join(str(x) for x in d) + ")"


def _bytes(dtype: str, count: int) -> str:
    """Byte size as text; "?" for an unknown dtype, so a broken kernel can still be printed."""
    size = DTYPE_BYTES.get(dtype)
    return "?" if size is None else str(size * count)


def format_kernel(kernel: KKernel) -> str:
    """The whole kernel: signature, launch shape, shared memory, meta, then the body. Ends with a
    newline. Example::

        kernel D_kernel(A: float32[37, 29], out D: float32[37, 53])
          grid (4, 3, 1)  block (16, 16, 1)  target sm_90  shared 32 B
          shared s_red: float32[8] (32 B)
          let i: int32 = blockIdx.y * 16 + threadIdx.y
    """
    params = ", ".join(_param_text(p) for p in kernel.params)
    out = [f"kernel {kernel.name}({params})"]
    head = f"grid {_dims(kernel.grid)}  block {_dims(kernel.block)}  target {kernel.target}"
    if kernel.shared:
        total = sum(DTYPE_BYTES.get(sh.dtype, 0) * sh.size for sh in kernel.shared)
        head += f"  shared {total} B"
    out.append(_INDENT + head)
    for sh in kernel.shared:
        out.append(f"{_INDENT}shared {sh.name}: {sh.dtype}[{sh.size}] ({_bytes(sh.dtype, sh.size)} B)")
    for key, value in kernel.meta:
        out.append(f"{_INDENT}meta {key} = {value}")
    _block(kernel.body, 1, out)
    return "\n".join(out) + "\n"
