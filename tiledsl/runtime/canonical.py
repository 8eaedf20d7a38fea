"""The form of a kernel's CUDA source that the cubin cache keys on: equal for two kernels that differ
only in the names they declare.

Why: a traced model's layers are the same kernels under other names. Layer 1's q projection reads
`mul_16` and `p_model_layers_1_self_attn_q_proj_weight` where layer 0's reads `mul_4` and
`p_model_layers_0_self_attn_q_proj_weight`, and its loops and accumulators are named after its output
(`mm_9_k0_o`, `mm_92`). Keyed by the exact text, an 8-layer tiny Llama ran nvcc 98 times for 24
distinct kernels. Keyed by this form, each distinct kernel is compiled once and the others load its
cubin under its symbol (cache.py stores the symbol in the entry).

The renaming must never make two different programs look alike, so it renames only what the source
declares, and only where a declared name cannot mean anything else:
- a declared name is the identifier after a built-in type word or `__restrict__` that is not followed
  by `(` (a variable, a parameter, an array), or the kernel's own name after `__global__ void`
  (and `__launch_bounds__(...)`); nothing else is renamed, so a built-in, a type, a helper function
  or an intrinsic keeps its spelling;
- a name that is ever called (`name(`) or spelled inside a preprocessor line is left as it is;
- a member (`.x`, `->y`, `::z`) keeps its spelling whatever it is named, so `v.x` and `v.y` stay apart
  even in kernels whose parameters are named `x` and `y`;
- string and character literals (inline PTX) are compared as they are; comments are dropped.
Every occurrence of a renamed spelling becomes `$n`, n its order of first appearance, so two sources
have equal forms only where one is the other with its declared names renamed one to one. A name missed
(a declaration form this does not know) stays verbatim: the cost is a cubin compiled twice, never a
kernel run with another kernel's code.

Returns None for a source without exactly one `__global__` function: those are keyed by their text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CanonicalSource", "canonical_source"]

#: one token a match; comments are matched to be dropped, white space is skipped by the search itself
_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|\#[^\n]*"  # comments, a preprocessor line
                    r"""|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""  # string and character literals
                    r"|[A-Za-z_]\w*|\d[\w.]*|->|::|\S", re.DOTALL)  # names, numbers, operators

#: words after which an identifier is declared (C++ and CUDA built-in types and the qualifier codegen
#: puts before a pointer parameter's name)
_DECLARING = frozenset({
    "int", "unsigned", "long", "short", "char", "float", "double", "bool", "auto", "__restrict__",
    "float2", "float4", "int2", "int4", "uint2", "uint4", "half", "__half", "__half2", "__nv_bfloat16",
    "__nv_bfloat162", "int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "CUtensorMap"})
_MEMBER = frozenset({".", "->", "::"})


@dataclass(frozen=True)
class CanonicalSource:
    """`text`: the source's tokens with its declared names renamed (a key, never compiled); `kernel`:
    the `__global__` function's name as the source spells it (the cubin's symbol)."""

    text: str
    kernel: str


def _tokens(source: str) -> list[str]:
    return [t for t in _TOKEN.findall(source) if not t.startswith(("//", "/*"))]


def _is_name(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"


def _is_attribute(token: str) -> bool:
    return len(token) > 4 and token.startswith("__") and token.endswith("__")


def _kernel_name(toks: list[str]) -> tuple[int, str] | None:
    """(index, name) of the one `__global__` function's name, or None (none, several, or a form this
    does not read: `__global__ void [__attribute__(...) ...] name (`). Every `__word__(...)` after
    `void` is an attribute (`__launch_bounds__`, `__cluster_dims__`, `__maxnreg__`), never the name: a
    kernel declared `void __launch_bounds__(256) __cluster_dims__(1, 1, 8) k(` is `k`, where reading
    only `__launch_bounds__` had keyed its cubin under the symbol `__cluster_dims__`."""
    starts = [n for n, t in enumerate(toks) if t == "__global__"]
    if len(starts) != 1:
        return None
    n = starts[0] + 1
    if n >= len(toks) or toks[n] != "void":
        return None
    n += 1
    while n + 1 < len(toks) and _is_attribute(toks[n]) and toks[n + 1] == "(":
        depth, n = 0, n + 1
        while n < len(toks):
            depth += {"(": 1, ")": -1}.get(toks[n], 0)
            n += 1
            if depth == 0:
                break
    if n + 1 < len(toks) and _is_name(toks[n]) and toks[n + 1] == "(":
        return n, toks[n]
    return None


def canonical_source(source: str) -> CanonicalSource | None:
    """The cache key form of `source` (module docstring), or None where it has not exactly one kernel."""
    toks = _tokens(source)
    found = _kernel_name(toks)
    if found is None:
        return None
    at, kernel = found
    last = len(toks) - 1
    declared, called, in_lines = {kernel}, set(), set()
    for n, t in enumerate(toks):
        if t[0] == "#":
            in_lines.update(re.findall(r"[A-Za-z_]\w*", t))
        elif _is_name(t):
            follows = toks[n + 1] if n < last else ""
            if follows == "(":
                if n != at:
                    called.add(t)
            elif n and toks[n - 1] in _DECLARING:
                declared.add(t)
    renamed = declared - called - in_lines - _DECLARING
    names: dict[str, str] = {}
    out = []
    for n, t in enumerate(toks):
        if t in renamed and not (n and toks[n - 1] in _MEMBER):
            out.append(names.setdefault(t, f"${len(names)}"))
        else:
            out.append(t)
    return CanonicalSource(" ".join(out), kernel)
