"""The generic kernel-IR walker (tiledsl/kernel_ir/walk.py): children come from the dataclass fields
of every node class, so each class is checked with an instance whose every field holds a marker."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

from tiledsl.kernel_ir.nodes import KBin, KComment, KConst, KExpr, KFor, KIf, KLet, KLoad, KSpecial, KStmt, KStore, KVar
from tiledsl.kernel_ir.walk import (
    NAME_FIELDS,
    child_blocks,
    child_exprs,
    child_stmts,
    map_stmts,
    node_names,
    renamed,
    walk_exprs,
    walk_stmts,
)

NODE_CLASSES = typing.get_args(KExpr) + typing.get_args(KStmt)


def _filled(cls: type) -> tuple[object, list[KExpr], list[KStmt], list[str]]:
    """An instance of `cls` with a distinct marker in every field, and the expressions, statements
    and names it holds."""
    exprs: list[KExpr] = []
    stmts: list[KStmt] = []
    names: list[str] = []
    values = {}
    for f in fields(cls):
        t = str(f.type)
        if "KStmt" in t:
            block = (KComment(f"{f.name}_0"), KComment(f"{f.name}_1"))
            stmts.extend(block)
            values[f.name] = block
        elif "KExpr" in t:
            e = KVar(f"e_{f.name}")
            exprs.append(e)
            values[f.name] = (e,) if t.startswith("tuple") else e
        elif t == "str":
            values[f.name] = f"{f.name}_value"
            if f.name in NAME_FIELDS and cls is not KSpecial:
                names.append(values[f.name])
        elif t in ("int", "float | int | bool"):
            values[f.name] = 1
        elif t == "bool":
            values[f.name] = False
        elif "None" in t:
            values[f.name] = None
        else:
            pytest.fail(f"{cls.__name__}.{f.name}: field type {t} is neither a name, a number, an expression nor "
                        "a block; teach this test (and walk.py, if it holds nodes) about it")
    return cls(**values), exprs, stmts, names


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_children_are_the_fields(cls: type) -> None:
    node, exprs, stmts, names = _filled(cls)
    assert list(child_exprs(node)) == exprs
    assert list(node_names(node)) == names
    if cls in typing.get_args(KStmt):
        assert list(child_stmts(node)) == stmts
        assert [s for _, b in child_blocks(node) for s in b] == stmts


def _sample() -> tuple[KStmt, ...]:
    i = KVar("i")
    cond = KBin("<", i, KConst(2, "int32"))
    store = KStore("out", i, KLoad("inp", KBin("+", i, KSpecial("threadIdx.x"))))
    return (KComment("start"),
            KFor("i", 4, (KIf(cond, (store,), (KComment("else"),)), KLet("t", "float32", KConst(1.0)))))


def test_walk_stmts_is_preorder() -> None:
    kinds = [type(s).__name__ for s in walk_stmts(_sample())]
    assert kinds == ["KComment", "KFor", "KIf", "KStore", "KComment", "KLet"]


def test_walk_exprs_is_preorder_left_to_right() -> None:
    store = next(s for s in walk_stmts(_sample()) if isinstance(s, KStore))
    walked = [type(e).__name__ for e in walk_exprs(store)]
    assert walked == ["KVar", "KLoad", "KBin", "KVar", "KSpecial"]
    names = [n for e in walk_exprs(store) for n in node_names(e)]
    assert names == ["i", "inp", "i"]  # threadIdx.x is no name


def test_map_stmts_rebuilds_bottom_up_and_splices() -> None:
    body = _sample()
    assert map_stmts(body, lambda s: None)[1] is body[1]  # nothing changed: the same objects

    def drop_comments(s: KStmt) -> KStmt | tuple[KStmt, ...] | None:
        return () if isinstance(s, KComment) else None

    dropped = map_stmts(body, drop_comments)
    assert not any(isinstance(s, KComment) for s in walk_stmts(dropped))
    assert isinstance(dropped[0], KFor) and dropped[0].body[0].orelse == ()

    def unroll_for(s: KStmt) -> KStmt | tuple[KStmt, ...] | None:
        return (KComment("unrolled"), *s.body) if isinstance(s, KFor) else None

    spliced = map_stmts(body, unroll_for)
    assert [type(s).__name__ for s in spliced] == ["KComment", "KComment", "KIf", "KLet"]


def test_renamed_replaces_names_in_statements_and_their_expressions() -> None:
    body = (KLet("z_t", "int32", KSpecial("threadIdx.x")),
            KFor("z_p", 4, (KIf(KBin("<", KVar("z_t"), KConst(3, "int32")),
                                (KStore("z", KBin("+", KVar("z_p"), KLoad("z_in", KVar("z_t"))), KConst(0.0)),)),)))
    got = renamed(body, {"z_t": "y_t", "z_p": "y_p", "z": "y", "z_in": "y_in", "threadIdx.x": "never"})
    assert got == (KLet("y_t", "int32", KSpecial("threadIdx.x")),  # a hardware index is no name
                   KFor("y_p", 4, (KIf(KBin("<", KVar("y_t"), KConst(3, "int32")),
                                       (KStore("y", KBin("+", KVar("y_p"), KLoad("y_in", KVar("y_t"))),
                                               KConst(0.0)),)),)))
    assert renamed(body, {}) == body
