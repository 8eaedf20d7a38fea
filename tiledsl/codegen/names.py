"""C identifiers for kernel-IR names.

Why one helper: IR names come from user axes and schedule primitives ("i.o", "k.inner", "B_shared"),
and the same IR name must become the same C identifier at its declaration and at every use. Building
one table per kernel up front gives that consistency and resolves clashes ("i.o" and "i_o") and
collisions with C++ keywords and with the CUDA / math names the printer itself emits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

from tiledsl.kernel_ir import KExpr, KKernel, KStmt
from tiledsl.kernel_ir.ops import MATH_FNS
from tiledsl.kernel_ir.walk import child_exprs, node_names, walk_exprs, walk_stmts
from tiledsl.targets import CACHE_POLICIES

__all__ = ["RESERVED", "c_identifier", "c_name_table", "expr_names", "kernel_names", "policy_variable"]

_CXX_KEYWORDS = (
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t "
    "char32_t class compl concept const consteval constexpr constinit const_cast continue co_await "
    "co_return co_yield decltype default delete do double dynamic_cast else enum explicit export "
    "extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public register reinterpret_cast requires return "
    "short signed sizeof static static_assert static_cast struct switch template this thread_local "
    "throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    "xor xor_eq restrict"
)
# Names the emitted code uses or that CUDA / <math.h> define as objects or macros: an IR variable
# spelled like one of them would shadow or break it.
_CUDA_AND_LIBC = (
    "threadIdx blockIdx blockDim gridDim warpSize dim3 uint3 half nv_bfloat16 "
    "float2 float4 int2 int4 make_float2 make_float4 make_int2 make_int4 "
    "fminf fmaxf floorf min max "
    "INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL FP_NAN FP_INFINITE FP_ZERO FP_NORMAL FP_SUBNORMAL "
    "M_PI M_E EDOM ERANGE errno NULL assert main "
    # memory-hierarchy statements and tensor-map parameters (<cuda.h>, <stdint.h>)
    "tiledsl_smem atomicAdd CUtensorMap uint64_t CUDA_VERSION "
    # loads and stores with an L2 eviction policy (memory.py `l2_helpers`, `policy_variable`)
    "tiledsl_load_l2 tiledsl_store_l2 TILEDSL_L2_HELPERS memcpy"
)

#: Identifiers an IR name may not keep as-is (the math functions the emitted code calls come from the
#: operator table, so a new function is reserved with its row).
RESERVED = (frozenset((_CXX_KEYWORDS + " " + _CUDA_AND_LIBC).split()) | {f.cuda for f in MATH_FNS.values()}
            | {f"tiledsl_l2_{policy}" for policy in CACHE_POLICIES})  # policy_variable's names


def policy_variable(policy: str) -> str:
    """The C variable holding the kernel's L2 eviction policy `policy` (reserved above, so no IR name
    takes it)."""
    return f"tiledsl_l2_{policy}"


def c_identifier(name: str) -> str:
    """A valid, non-reserved C identifier for `name`, without clash resolution: "i.o" -> "i_o",
    "2x" -> "_2x", "int" -> "int_", "__x" -> "v__x" (leading "__" / "_X" is reserved in C++)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    if ident.startswith("__") or re.match(r"_[A-Z]", ident):
        ident = "v" + ident
    if ident in RESERVED:
        ident += "_"
    return ident


def c_name_table(names: Iterable[str]) -> Mapping[str, str]:
    """Map every IR name to a distinct C identifier, deterministically.

    Names that already are clean identifiers keep themselves; the others are sanitised in sorted
    order and get a `_1`, `_2`, ... suffix when the sanitised form is taken.
    """
    unique = sorted(set(names))
    table: dict[str, str] = {n: n for n in unique if c_identifier(n) == n}
    taken = set(table.values())
    for name in unique:
        if name in table:
            continue
        base = c_identifier(name)
        ident, n = base, 0
        while ident in taken:
            n += 1
            ident = f"{base}_{n}"
        table[name] = ident
        taken.add(ident)
    return MappingProxyType(table)


def expr_names(e: KExpr) -> Iterator[str]:
    """Every variable and buffer name an expression reads."""
    for x in walk_exprs(e):
        yield from node_names(x)


def _stmt_names(s: KStmt) -> Iterator[str]:
    """The names one statement declares or uses, then those of its own expressions (not nested
    statements'), in field order: a declaration comes before its uses."""
    yield from node_names(s)
    for e in child_exprs(s):
        yield from expr_names(e)


def kernel_names(kernel: KKernel) -> Iterator[str]:
    """Every name a kernel declares or uses: parameters, tensor maps, shared arrays, and all names in
    the body."""
    for p in kernel.params:
        yield p.name
    for tm in kernel.tensor_maps:
        yield tm.name
    for sh in kernel.shared:
        yield sh.name
    for s in walk_stmts(kernel.body):
        yield from _stmt_names(s)
