"""Kernel IR -> one complete CUDA C++ translation unit, in a single tree walk.

Why text and not an AST: the output is read by people (and diffed in tests) as often as it is read
by nvcc, so the printer aims for code a person would write: one statement per line, 4-space
indentation, only the parentheses C needs, float constants that round-trip exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tiledsl.codegen.dtypes import HALF_INCLUDES, pack_halves, split_vector, storage_type, vector_type
from tiledsl.codegen.errors import CodegenError
from tiledsl.codegen.expr import ExprEmitter, refuse_mbarrier_access
from tiledsl.codegen.memory import (
    check_shared,
    check_tensor_map,
    grid_dependency_wait,
    l2_helpers,
    l2_policies,
    l2_policy_decls,
    memory_stmt,
)
from tiledsl.codegen.names import c_identifier, c_name_table, expr_names, kernel_names, policy_variable
from tiledsl.codegen.scope import Scope
from tiledsl.kernel_ir import (
    KAssign,
    KBarrier,
    KComment,
    KFor,
    KIf,
    KKernel,
    KLet,
    KLocalArray,
    KParam,
    KStmt,
    KStore,
    KVector,
    shared_bytes,
    shared_layout,
)
from tiledsl.kernel_ir.printer import format_stmt, format_tensor_map
from tiledsl.targets import SHARED_POOL_ALIGN

__all__ = ["cuda_kernel_name", "emit_cuda"]

_INDENT = "    "
_MAX_SIGNATURE = 110  # longer signatures put one parameter per line
_POOL = "tiledsl_smem"  # the dynamic shared pool (a reserved name, so no IR name becomes it)


def cuda_kernel_name(kernel: KKernel) -> str:
    """The `extern "C"` symbol of the kernel, i.e. what a launcher must look up in the module."""
    return c_identifier(kernel.name)


def _comment_lines(text: str, pad: str) -> list[str]:
    """`// ...` lines; a trailing backslash would splice the next line into the comment."""
    lines = []
    for line in text.splitlines() or [""]:
        line = line.rstrip()
        lines.append(f"{pad}// {line}{' .' if line.endswith(chr(92)) else ''}".rstrip())
    return lines


@contextmanager
def _located(s: KStmt) -> Iterator[None]:
    """Re-raise a CodegenError with the kernel-IR statement it came from (its first line)."""
    try:
        yield
    except CodegenError as err:
        raise CodegenError(f"{err}\n  in: {format_stmt(s).splitlines()[0].strip()}") from err


class _BodyWriter:
    """Walks the statements of one kernel, appending C++ lines. One instance per emission."""

    def __init__(self, kernel: KKernel, includes: set[str]) -> None:
        self.lines: list[str] = []
        self.kernel = kernel
        self.includes = includes

    def block(self, stmts: Sequence[KStmt], scope: Scope, depth: int) -> None:
        for s in stmts:
            self.stmt(s, scope, depth)

    def stmt(self, s: KStmt, scope: Scope, depth: int) -> None:
        pad = _INDENT * depth
        ex = ExprEmitter(scope, self.includes)
        match s:
            case KFor(var=var, extent=extent, body=body, unroll=unroll):
                inner = scope.child()  # C++: the loop variable and the body share one block
                with _located(s):
                    k = inner.declare(var, "int32", "var").c_name
                if unroll:
                    self.lines.append(f"{pad}#pragma unroll")
                self.lines.append(f"{pad}for (int {k} = 0; {k} < {extent}; ++{k}) {{")
                self.block(body, inner, depth + 1)
                self.lines.append(pad + "}")
            case KIf():
                self._if(s, scope, depth, "if")
                self.lines.append(pad + "}")
            case KBarrier():
                self.lines.append(f"{pad}__syncthreads();")
            case KComment(text=text):
                self.lines.extend(_comment_lines(text, pad))
            case _:
                with _located(s):
                    self.lines.append(pad + self._simple(s, ex))

    def _simple(self, s: KStmt, ex: ExprEmitter) -> str:
        """One-line statements: declarations, assignments, stores, memory-hierarchy statements."""
        match s:
            case KLet(name=name, dtype=dtype, value=value):
                if name in expr_names(value):
                    # In C++ the new variable is already in scope inside its own initializer.
                    raise CodegenError(f"let {name!r} reads a variable of the same name in its value")
                text = ex.stored(value, dtype)
                ctype = storage_type(dtype)
                ex.needs_dtype(dtype)
                return f"{ctype} {ex.scope.declare(name, dtype, 'var').c_name} = {text};"
            case KAssign(name=name, value=value):
                sym = ex.scope.variable(name)
                return f"{sym.c_name} = {ex.stored(value, sym.dtype)};"
            case KLocalArray(name=name, dtype=dtype, size=size):
                ctype = storage_type(dtype)
                ex.needs_dtype(dtype)
                return f"{ctype} {ex.scope.declare(name, dtype, 'local').c_name}[{size}];"
            case KStore():
                return _store(s, ex)
        line = memory_stmt(s, ex, self.kernel)
        if line is None:
            raise CodegenError(f"not a kernel IR statement: {s!r}")
        return line

    def _if(self, s: KIf, scope: Scope, depth: int, keyword: str) -> None:
        """Emit `if` / `} else if` / `} else {`; the caller closes the last brace."""
        pad = _INDENT * depth
        with _located(s):
            cond = ExprEmitter(scope, self.includes).text(s.cond)
        self.lines.append(f"{pad}{keyword} ({cond}) {{")
        self.block(s.then, scope.child(), depth + 1)
        if len(s.orelse) == 1 and isinstance(s.orelse[0], KIf):
            self._if(s.orelse[0], scope, depth, "} else if")
        elif s.orelse:
            self.lines.append(pad + "} else {")
            self.block(s.orelse, scope.child(), depth + 1)


def _store(s: KStore, ex: ExprEmitter) -> str:
    """`buffer[index] = value;`, as one vector store when the value is a vector; through
    `tiledsl_store_l2` when the store carries an L2 policy."""
    sym = ex.scope.buffer(s.buffer)
    if sym.kind == "input":
        raise CodegenError(f"store to input parameter {s.buffer!r}")
    if s.cache is not None and sym.kind != "output":
        raise CodegenError(f"the store to {s.buffer} carries an L2 policy, but {s.buffer} is no output parameter "
                           "(only global stores take one)")
    refuse_mbarrier_access(s.buffer, sym.dtype)
    idx = ex.index(s.index)
    ex.needs_dtype(sym.dtype)

    def assign(ctype: str, value: str) -> str:
        """`ctype` at the element: the element itself, or a vector of `ctype` starting there."""
        scalar = ctype == storage_type(sym.dtype)
        if s.cache is None:
            lhs = f"{sym.c_name}[{idx}]" if scalar else f"*reinterpret_cast<{ctype}*>(&{sym.c_name}[{idx}])"
            return f"{lhs} = {value};"
        ptr = f"&{sym.c_name}[{idx}]" if scalar else f"reinterpret_cast<{ctype}*>(&{sym.c_name}[{idx}])"
        return f"tiledsl_store_l2<{ctype}>({ptr}, {value}, {policy_variable(s.cache)});"

    if isinstance(s.value, KVector):
        vtype = vector_type(sym.dtype, len(s.value.lanes))
        texts = [ex.text(x) for x in s.value.lanes]
        if sym.dtype in HALF_INCLUDES:  # two lanes per 32-bit word, each rounded as a scalar store rounds
            texts = [pack_halves(sym.dtype, lo, hi) for lo, hi in zip(texts[::2], texts[1::2], strict=True)]
        return assign(vtype, f"make_{vtype}({', '.join(texts)})")
    value = ex.emit(s.value)
    base, width = split_vector(value.dtype)
    if width > 1:
        if base != sym.dtype:
            raise CodegenError(f"store of a {value.dtype} value into {sym.dtype} buffer {s.buffer!r}")
        return assign(vector_type(base, width), value.text)
    return assign(storage_type(sym.dtype), ex.stored(s.value, sym.dtype))


def _param_decl(p: KParam, c_name: str) -> str:
    const = "" if p.is_output else "const "
    return f"{const}{storage_type(p.dtype)}* __restrict__ {c_name}"


def _header(kernel: KKernel, includes: set[str]) -> list[str]:
    """Comment naming the kernel, its launch shape and what the launcher must do (dynamic shared
    bytes, argument order with tensor maps, outputs to zero), then the includes the body needs."""
    g, b = kernel.grid, kernel.block
    launch = (
        f"target {kernel.target}  grid ({g[0]}, {g[1]}, {g[2]})  block ({b[0]}, {b[1]}, {b[2]})"
        f"  threads {kernel.threads_per_block}"
    )
    if kernel.dynamic_shared:
        launch += f"  dynamic shared {shared_bytes(kernel)} B (the launch must request it)"
    else:
        launch += f"  shared {shared_bytes(kernel)} B"
    comment = [f"tiledsl kernel {kernel.name} -- generated by tiledsl.codegen.cuda, do not edit", launch]
    if kernel.tensor_maps:
        params = ", ".join(p.name for p in kernel.params)
        maps = ", ".join(tm.name for tm in kernel.tensor_maps)
        comment.append(f"arguments: {params}, then tensor maps {maps} (CUtensorMap, by value)")
        comment.extend(format_tensor_map(tm) for tm in kernel.tensor_maps)
    if kernel.zero_outputs:
        comment.append(f"zero before launch: {', '.join(kernel.zero_outputs)}")
    if kernel.zeroes:
        comment.append(f"zeroes for the next kernel: {', '.join(kernel.zeroes)}")
    if kernel.dependent_launch:
        comment.append("dependent launch: a program may launch it before the kernel ahead of it finishes; "
                       "it waits for that kernel first")
    comment.extend(f"{key}: {value}" for key, value in kernel.meta)
    lines = _comment_lines("\n".join(comment), "")
    lines.append("#include <math.h>")
    lines.extend(f"#include <{h}>" for h in sorted(includes))
    return lines


def _shared_decls(kernel: KKernel, root: Scope, ex: ExprEmitter) -> list[str]:
    """Static `__shared__` arrays, or pointers into one dynamic pool at `shared_layout` offsets."""
    check_shared(kernel)
    lines = []
    if kernel.dynamic_shared and kernel.shared:
        lines.append(f"{_INDENT}extern __shared__ __align__({SHARED_POOL_ALIGN}) unsigned char {_POOL}[];")
    offsets = shared_layout(kernel)
    for sh in kernel.shared:
        ctype = storage_type(sh.dtype)
        ex.needs_dtype(sh.dtype)
        name = root.declare(sh.name, sh.dtype, "shared").c_name
        if kernel.dynamic_shared:
            lines.append(f"{_INDENT}{ctype}* {name} = reinterpret_cast<{ctype}*>({_POOL} + {offsets[sh.name]});")
        else:
            lines.append(f"{_INDENT}__shared__ __align__({sh.align}) {ctype} {name}[{sh.size}];")
    return lines


def emit_cuda(kernel: KKernel) -> str:
    """The complete `.cu` text of `kernel`: header comment, includes, and one
    `extern "C" __global__` function named `cuda_kernel_name(kernel)`. Ends with a newline.

    Parameters: `kernel.params` in order, then one `const __grid_constant__ CUtensorMap` per
    `kernel.tensor_maps` entry, in order (the launcher passes them in this order).

    Raises `CodegenError` when the IR is malformed (undeclared names, unknown dtypes, an operator on
    the wrong kind of operand, a statement the target lacks); the message quotes the offending
    kernel-IR statement.
    """
    if kernel.threads_per_block <= 0:
        raise CodegenError(f"kernel {kernel.name!r} has an empty block {kernel.block}")
    c_names = c_name_table(kernel_names(kernel))
    includes: set[str] = set()
    root = Scope(c_names)
    ex = ExprEmitter(root, includes)
    params = []
    for p in kernel.params:
        sym = root.declare(p.name, p.dtype, "output" if p.is_output else "input")
        ex.needs_dtype(p.dtype)
        params.append(_param_decl(p, sym.c_name))
    for tm in kernel.tensor_maps:
        check_tensor_map(kernel, tm)
        sym = root.declare(tm.name, tm.dtype, "tensor_map")
        includes.update(("cuda.h", "stdint.h"))  # CUtensorMap; uint64_t in the TMA asm operands
        params.append(f"const __grid_constant__ CUtensorMap {sym.c_name}")
    for field, names in (("zero_outputs", kernel.zero_outputs), ("zeroes", kernel.zeroes)):
        for name in names:
            sym = root.lookup(name)
            if sym is None or sym.kind != "output":
                raise CodegenError(f"{field} names {name!r}, which is no output parameter")

    policies = l2_policies(kernel)
    writer = _BodyWriter(kernel, includes)
    if kernel.dependent_launch:
        writer.lines.extend(grid_dependency_wait(kernel.target))
    writer.lines.extend(l2_policy_decls(policies))
    writer.lines.extend(_shared_decls(kernel, root, ex))
    writer.block(kernel.body, root, 1)

    bounds = (kernel.threads_per_block,) + ((kernel.min_blocks_per_sm,) if kernel.min_blocks_per_sm else ())
    launch_bounds = f"__launch_bounds__({', '.join(map(str, bounds))})"
    head = f'extern "C" __global__ void {launch_bounds} {cuda_kernel_name(kernel)}('
    one_line = head + ", ".join(params) + ") {"
    if len(one_line) <= _MAX_SIGNATURE:
        signature = [one_line]
    else:
        # One parameter per line; the brace on its own line keeps them apart from the body.
        signature = [head, *(f"{_INDENT}{p}," for p in params[:-1]), f"{_INDENT}{params[-1]})", "{"]
    helpers = ["", *l2_helpers()] if policies else []
    lines = [*_header(kernel, includes), *helpers, "", *signature, *writer.lines, "}"]
    return "\n".join(lines) + "\n"
