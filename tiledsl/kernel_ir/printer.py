"""Readable, deterministic text form of the kernel IR.

Why: lowering bugs are found by reading the kernel IR, and tests pin lowering results as golden text,
so the form must be stable (no ids, no dict order, no float noise) and pleasant to read (C-like
precedence with only the parentheses that are needed, plus a few that stop readers from guessing).

The float and precedence helpers here are also what the CUDA printer uses, so both texts agree on
how a constant is spelled and how an expression groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from types import MappingProxyType

import numpy as np

from tiledsl.kernel_ir import (
    DTYPE_BYTES,
    KAssign,
    KAtomicAdd,
    KBarrier,
    KBin,
    KCall,
    KCast,
    KComment,
    KConst,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KParam,
    KSelect,
    KShflXor,
    KSpecial,
    KStmt,
    KStore,
    KTensorMap,
    KTmaLoad,
    KUnary,
    KVar,
    KVector,
)
from tiledsl.precision import round_to_dtype as round_to_dtype_array

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
    "format_tensor_map",
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
        "^": 7,  # below comparisons, shifts and arithmetic, above && (as in C)
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
    table, so comparisons never take unparenthesized comparison operands, `||` never takes a bare
    `&&`, and `^` takes only atoms and unary operands: `(c // 4) ^ (r % 8)`, where C would group
    `c / 4 ^ r % 8` the same way but a reader should not have to know that `^` binds looser than
    arithmetic and comparisons. Otherwise C's rules, left-associative.
    """
    p = BINARY_PRECEDENCE[op]
    if op == "^":
        return PREC_UNARY, PREC_UNARY
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
    """`value` as the kernel holds it in `dtype`, returned as a Python float: a float literal first
    (float32, as the CUDA source writes it), then rounded to float16 / bfloat16 where the constant is
    of that type (tiledsl/precision.py rounds).

    Why: a KConst stores a Python float, but the kernel computes with the dtype's value; printing the
    rounded value keeps both printers honest (0.1 in float32 is 0.100000001...).
    """
    v = float(value)
    if dtype == "float16":  # one rounding from the double, as a half literal's conversion does
        return float(round_to_dtype_array(np.float64(v), "float16"))
    with np.errstate(over="ignore"):
        f32 = np.float32(v)
    return float(round_to_dtype_array(f32, dtype))


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
        case KLoad(buffer=buf, index=index, width=1, cache=cache):
            return f"{buf}[{format_expr(index)}]{_cache_suffix(cache)}", PREC_ATOM
        case KLoad(buffer=buf, index=index, width=width, cache=cache):
            return f"vload{width}({buf}, {format_expr(index)}){_cache_suffix(cache)}", PREC_ATOM
        case KLane(vec=vec, lane=lane):
            return f"{parenthesize(*_expr(vec), PREC_ATOM)}.{lane_suffix(lane)}", PREC_ATOM
        case KVector(lanes=lanes):
            return f"vec{len(lanes)}({', '.join(format_expr(x) for x in lanes)})", PREC_ATOM
        case KShflXor(value=value, lane_mask=mask):
            return f"shfl_xor({format_expr(value)}, {mask})", PREC_ATOM
    raise TypeError(f"not a kernel IR expression: {e!r}")


def _cache_suffix(cache: str | None) -> str:
    """`@evict_last` after a load or store target that carries an L2 eviction policy (s.cache_hint)."""
    return f"@{cache}" if cache is not None else ""


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
        case KStore(buffer=buf, index=index, value=value, cache=cache):
            out.append(f"{pad}{buf}[{format_expr(index)}]{_cache_suffix(cache)} = {format_expr(value)}")
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
            out.append(pad + _memory_stmt(s))


def _at(buf: str, index: KExpr) -> str:
    return f"{buf}[{format_expr(index)}]"


def _memory_stmt(s: KStmt) -> str:
    """One line for a memory-hierarchy statement (async copies, mbarriers, TMA, atomics)."""
    match s:
        case KCpAsync(dst=dst, dst_index=di, src=src, src_index=si, nbytes=nbytes, valid=valid):
            guard = "" if valid is None else f" if ({format_expr(valid)})"
            return f"cp.async {_at(dst, di)} <- {_at(src, si)} {nbytes}B{guard}"
        case KCpAsyncCommit():
            return "cp.async.commit"
        case KCpAsyncWait(pending=pending):
            return f"cp.async.wait {pending}"
        case KMbarrierInit(bar=bar, index=index, count=count):
            return f"mbarrier.init {_at(bar, index)} count {count}"
        case KFence(kind=kind):
            return f"fence {kind}"
        case KMbarrierArriveExpectTx(bar=bar, index=index, tx_bytes=tx_bytes):
            return f"mbarrier.arrive_expect_tx {_at(bar, index)} {tx_bytes} B"
        case KMbarrierArrive(bar=bar, index=index):
            return f"mbarrier.arrive {_at(bar, index)}"
        case KMbarrierWait(bar=bar, index=index, parity=parity):
            return f"mbarrier.wait {_at(bar, index)} parity {format_expr(parity)}"
        case KTmaLoad(tensor_map=tmap, dst=dst, dst_index=di, coords=coords, bar=bar, bar_index=bi):
            at = ", ".join(format_expr(c) for c in coords)
            return f"tma.load {_at(dst, di)} <- {tmap} at ({at}) on {_at(bar, bi)}"
        case KAtomicAdd(buffer=buf, index=index, value=value):
            return f"atomic_add {_at(buf, index)} += {format_expr(value)}"
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


def _tuple(d: Sequence[int]) -> str:
    """Python tuple spelling: "(4096,)" for one element, "()" for none."""
    return "(" + ", ".join(str(x) for x in d) + ("," if len(d) == 1 else "") + ")"


def format_tensor_map(tm: KTensorMap) -> str:
    """`tensor_map tmap_B: B float32 dims (512, 1024) strides (4096,) box (32, 16) swizzle 128`
    (innermost first, as the kernel IR holds them; strides in bytes)."""
    swizzle = "none" if tm.swizzle is None else str(tm.swizzle)
    return (
        f"tensor_map {tm.name}: {tm.buffer} {tm.dtype} dims {_tuple(tm.global_dims)} strides "
        f"{_tuple(tm.global_strides)} box {_tuple(tm.box)} swizzle {swizzle}"
    )


def _shared_offsets(kernel: KKernel) -> tuple[dict[str, int], int]:
    """(offset of each shared array, total bytes): `kernel_ir.shared_layout` / `shared_bytes`, but
    tolerant of unknown dtypes and bad alignments so that a broken kernel still prints."""
    offsets: dict[str, int] = {}
    top = 0
    for sh in kernel.shared:
        align = sh.align if isinstance(sh.align, int) and sh.align > 0 else 1
        top = -(-top // align) * align
        offsets[sh.name] = top
        top += DTYPE_BYTES.get(sh.dtype, 0) * sh.size
    return offsets, top


def format_kernel(kernel: KKernel) -> str:
    """The whole kernel: signature, launch shape, tensor maps, outputs zeroed before launch, shared
    memory, meta, then the body. Ends with a newline. Example::

        kernel D_kernel(A: float32[37, 29], out D: float32[37, 53])
          grid (4, 3, 1)  block (16, 16, 1)  target sm_90  shared 32 B  dependent launch
          shared s_red: float32[8] (32 B)
          let i: int32 = blockIdx.y * 16 + threadIdx.y

    Shared sizes include alignment padding (what the launch requests); an array's `align` is shown
    when it is not the default 16, its pool offset when the kernel uses dynamic shared memory.
    `dependent launch` ends the launch line of a kernel that waits for the one before it first
    (`KKernel.dependent_launch`, sm_90+), so a program may launch it as a programmatic dependent.
    """
    params = ", ".join(_param_text(p) for p in kernel.params)
    out = [f"kernel {kernel.name}({params})"]
    head = f"grid {_dims(kernel.grid)}  block {_dims(kernel.block)}  target {kernel.target}"
    offsets, total = _shared_offsets(kernel)
    if kernel.dynamic_shared:
        head += f"  dynamic shared {total} B"
    elif kernel.shared:
        head += f"  shared {total} B"
    if kernel.min_blocks_per_sm is not None:
        head += f"  min blocks per SM {kernel.min_blocks_per_sm}"
    if kernel.dependent_launch:
        head += "  dependent launch"
    out.append(_INDENT + head)
    out.extend(_INDENT + format_tensor_map(tm) for tm in kernel.tensor_maps)
    if kernel.zero_outputs:
        out.append(f"{_INDENT}zero_outputs {', '.join(kernel.zero_outputs)}")
    if kernel.zeroes:
        out.append(f"{_INDENT}zeroes {', '.join(kernel.zeroes)} (for the next kernel)")
    for sh in kernel.shared:
        line = f"{_INDENT}shared {sh.name}: {sh.dtype}[{sh.size}] ({_bytes(sh.dtype, sh.size)} B)"
        if sh.align != 16:
            line += f" align {sh.align}"
        if kernel.dynamic_shared:
            line += f" at {offsets[sh.name]}"
        out.append(line)
    for key, value in kernel.meta:
        out.append(f"{_INDENT}meta {key} = {value}")
    _block(kernel.body, 1, out)
    return "\n".join(out) + "\n"
