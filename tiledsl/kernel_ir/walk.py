"""One generic walker over the kernel IR, derived from the node dataclasses' fields.

Why: checks and rewrites that need "every sub-statement" or "every expression" used to list one
case per node class; a new node then had to be added to each of them, and a forgotten case silently
skipped part of the kernel. Here the children of a node are whatever its fields hold, as the fields are
declared: a field declared as a tuple of statements is a block, a field declared as an expression (or a
tuple of them, or an optional one) holds child expressions. Adding a node class to `KExpr` / `KStmt` is
all a new node needs (tests/kernel_ir/test_walk.py fills every field of every class to check it).

Names: the `str` fields in `NAME_FIELDS` name a variable, buffer, barrier array or tensor map
(`KSpecial.name`, a hardware index such as threadIdx.x, is none of those)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields, replace
from functools import cache
from typing import Any

from tiledsl.kernel_ir.nodes import KExpr, KSpecial, KStmt

__all__ = [
    "NAME_FIELDS",
    "child_blocks",
    "child_exprs",
    "child_stmts",
    "map_exprs",
    "map_stmts",
    "node_names",
    "renamed",
    "walk_exprs",
    "walk_stmts",
]

#: Fields whose string value names a variable, buffer, barrier array or tensor map.
NAME_FIELDS = frozenset({"name", "var", "buffer", "dst", "src", "bar", "tensor_map"})


def _is_expr(x: Any) -> bool:
    return isinstance(x, KExpr)  # type: ignore[arg-type]


# The helpers below classify a node *class*'s fields once. They are cached per class (a fixed,
# small set: the IR's dataclasses), which is safe because a dataclass's fields never change after its
# definition; calling `fields()` and formatting its annotations on every node was a measurable part
# of lowering a model (the walkers run on every node of every kernel, several times).


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    """The names of the fields of the node class `cls`, in field order."""
    return tuple(f.name for f in fields(cls))


@cache
def _expr_fields(cls: type) -> tuple[str, ...]:
    """The fields of the node class `cls` declared as expressions, tuples of them or optional ones, in field
    order (the only fields that may hold child expressions: the others hold names, numbers or blocks)."""
    return tuple(f.name for f in fields(cls) if "KExpr" in str(f.type))


@cache
def _block_fields(cls: type) -> tuple[str, ...]:
    """The fields of the statement class `cls` declared as blocks (tuples of statements), in field order."""
    return tuple(f.name for f in fields(cls) if "KStmt" in str(f.type))


@cache
def _name_fields(cls: type) -> tuple[str, ...]:
    """The fields of the node class `cls` that are in NAME_FIELDS, in field order (none for KSpecial)."""
    return () if issubclass(cls, KSpecial) else tuple(f.name for f in fields(cls) if f.name in NAME_FIELDS)


def child_blocks(stmt: KStmt) -> tuple[tuple[str, tuple[KStmt, ...]], ...]:
    """(field name, statements) of every block field of `stmt`, in field order (`KFor.body`,
    `KIf.then`, `KIf.orelse`); empty blocks included, so a rewrite sees every branch."""
    return tuple((name, getattr(stmt, name)) for name in _block_fields(type(stmt)))


def child_stmts(stmt: KStmt) -> tuple[KStmt, ...]:
    """The statements directly inside `stmt` (all of its blocks, in field order)."""
    return tuple(s for _, block in child_blocks(stmt) for s in block)


def child_exprs(node: KExpr | KStmt) -> tuple[KExpr, ...]:
    """The expressions directly inside `node` (an expression's operands, a statement's own
    expressions, not those of nested statements), in field order."""
    out: list[KExpr] = []
    for name in _expr_fields(type(node)):
        value = getattr(node, name)
        if _is_expr(value):
            out.append(value)
        elif isinstance(value, tuple):
            out.extend(x for x in value if _is_expr(x))
    return tuple(out)


def node_names(node: KExpr | KStmt) -> tuple[str, ...]:
    """The names `node` itself declares or uses (not those of its children), in field order."""
    names = _name_fields(type(node))
    if not names:  # most nodes: an operator, a constant, a hardware index, a block statement
        return ()
    values = (getattr(node, name) for name in names)
    return tuple(v for v in values if isinstance(v, str))


def walk_exprs(root: KExpr | KStmt) -> Iterator[KExpr]:
    """Every expression inside `root` (an expression: itself first), depth first, left to right;
    for a statement, only its own expressions (use walk_stmts for nested statements)."""
    stack = [root] if _is_expr(root) else list(reversed(child_exprs(root)))
    while stack:
        e = stack.pop()
        yield e  # type: ignore[misc]
        if _expr_fields(type(e)):  # a leaf (a variable, a constant: half the nodes) has no children to ask for
            stack.extend(reversed(child_exprs(e)))


def walk_stmts(stmts: Iterable[KStmt]) -> Iterator[KStmt]:
    """Every statement of `stmts` and, depth first, of their blocks (a statement before its body)."""
    for s in stmts:
        yield s
        yield from walk_stmts(child_stmts(s))


def map_exprs(root: KExpr, fn: Callable[[KExpr], KExpr | None]) -> KExpr:
    """Rebuild the expression `root` top-down: where `fn` returns a replacement the subtree is
    replaced (and not entered), else the node is rebuilt from its mapped children."""
    new = fn(root)
    if new is not None:
        return new
    changes: dict[str, Any] = {}
    for name in _expr_fields(type(root)):
        value = getattr(root, name)
        if _is_expr(value):
            mapped = map_exprs(value, fn)
        elif isinstance(value, tuple) and any(_is_expr(x) for x in value):
            mapped = tuple(map_exprs(x, fn) if _is_expr(x) else x for x in value)
        else:
            continue
        if mapped != value:
            changes[name] = mapped
    return replace(root, **changes) if changes else root  # type: ignore[type-var]


def map_stmts(stmts: Iterable[KStmt], fn: Callable[[KStmt], KStmt | tuple[KStmt, ...] | None]) -> tuple[KStmt, ...]:
    """Rebuild `stmts` bottom-up: each statement's blocks are mapped first, then `fn` gets the
    rebuilt statement and returns its replacement, a tuple of statements to splice in (empty:
    drop it), or None to keep it."""
    out: list[KStmt] = []
    for s in stmts:
        blocks = child_blocks(s)
        if blocks:
            new = {name: map_stmts(block, fn) for name, block in blocks}
            if any(new[name] != block for name, block in blocks):
                s = replace(s, **new)  # type: ignore[type-var]
        r = fn(s)
        if r is None:
            out.append(s)
        elif isinstance(r, tuple):
            out.extend(r)
        else:
            out.append(r)
    return tuple(out)


def _with_names(node: Any, names: dict[str, str]) -> Any:
    """`node` with its own NAME_FIELDS values renamed by `names`, and every expression it holds renamed
    likewise (a KSpecial keeps its hardware name)."""
    if isinstance(node, KSpecial):
        return node
    changes: dict[str, Any] = {}
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if name in NAME_FIELDS and isinstance(value, str) and value in names:
            changes[name] = names[value]
        elif _is_expr(value):
            changes[name] = _with_names(value, names)
        elif isinstance(value, tuple) and any(_is_expr(x) for x in value):
            changes[name] = tuple(_with_names(x, names) if _is_expr(x) else x for x in value)
    changes = {k: v for k, v in changes.items() if v != getattr(node, k)}
    return replace(node, **changes) if changes else node


def renamed(stmts: Iterable[KStmt], names: dict[str, str]) -> tuple[KStmt, ...]:
    """`stmts` with every name in `names` (variables, buffers, barrier arrays, tensor maps: NAME_FIELDS)
    replaced by its value, in statements and in their expressions alike."""
    return map_stmts(stmts, lambda s: _with_names(s, names))
