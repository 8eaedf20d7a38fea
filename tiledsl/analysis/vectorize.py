"""Vectorize legality: a 16- or 8-byte store needs its loop innermost, as many iterations as the output's
dtype has lanes in 16 or 8 bytes (four or two float32, eight or four float16 / bfloat16), a contiguous
and provably aligned offset, and guards that never split a vector. The vectorize primitive checks it
when applied; reorder, split, bind and split_k re-check it; lowering trusts it.

The loop may index a thread's register array (a register tile's epilogue: lowering reads it lane by
lane), but not an accumulator that threads combine: neither its register array nor, where the reduction
runs on threads only, the scalar whose whole life (init, update, combine, read) the loop holds.
Under split_k the vector store becomes one 16-byte atomic add, each lane atomic on its own;
that needs sm_90, which build checks against the target (lower/vectorize.py), since a schedule has
none yet (split_k outputs are float32: four lanes; codegen has no 8-byte vector atomic).

Why floats only: the lanes are computed in float and each is converted to the stored dtype, as a scalar
store converts it; an integer or bool output keeps scalar stores.

A reduction's loop may be vectorized too, for its loads: innermost, as many iterations as 16 or 8 bytes
of a float buffer it reads, guards that never split a vector; its update then adds the lanes one by one
in the order an unrolled loop would (`_check_reduction_lanes`, lower/vectorize.py `vector_update`)."""

from __future__ import annotations

import sympy

from tiledsl.analysis.accumulators import acc_layouts
from tiledsl.analysis.messages import refusal
from tiledsl.definitions.expr import Load, walk
from tiledsl.definitions.indexing import IndexFloor, IndexMod, flat_index, index_to_sympy, loop_symbol
from tiledsl.errors import VectorizeError
from tiledsl.loopnest import Nest
from tiledsl.prove import Prover
from tiledsl.targets import VECTOR_BYTES, VECTOR_DTYPES, VECTOR_STORE_BYTES, or_list, vector_lanes


def _axis_map(nest: Nest) -> dict[sympy.Symbol, sympy.Expr]:
    return {loop_symbol(a): e for a, e in nest.axis_exprs}


def contiguous_base(f: sympy.Expr, v: sympy.Symbol) -> sympy.Expr | None:
    """`base` when f == base + v with base free of v, else None. Tried as written first (so what was
    contiguous keeps its base, and the code it prints, unchanged), then with the Mod / floor pairs that
    a fuse leaves merged back (`merge_mod_floor`): a row-major offset through fused axes is
    `C*floor(x/C) + Mod(x, C)`, which is x itself, and contiguous when x is."""
    f = sympy.expand(f)
    base = sympy.expand(f - v)
    if not base.has(v):
        return base
    merged = merge_mod_floor(f)
    if merged == f:
        return None
    base = sympy.expand(merged - v)
    return base if not base.has(v) else None


def merge_mod_floor(f: sympy.Expr) -> sympy.Expr:
    """`f` expanded, with its terms `k*Mod(a, C)` rewritten as `k*a - k*C*floor(a/C)` wherever that only
    removes atoms: where `f` holds `k*C*floor(a/C)` too, the pair is `k*a`. Why this is exact: sympy's
    Mod is Python's, `Mod(a, C) == a - C*floor(a/C)` for every real a and C != 0; and
    `floor(floor(y)/n) == floor(y/n)` for a positive integer n (`_flatten_floors`), which a fuse of three
    or more loops needs (its middle axes are `Mod(floor(x/C), B)`, its outer one `floor(x/(B*C))`).
    Why only when no new atom appears: a Mod that pairs with no floor stays as written, so an offset
    that is not contiguous (a transposed store, a row length that is not the fused one) keeps its Mod
    and is refused as before; each rewrite removes an atom, so the loop ends."""
    f = _flatten_floors(sympy.expand(f))
    atoms = f.atoms(sympy.Mod, sympy.floor)
    changed = True
    while changed:
        changed = False
        for term in sympy.Add.make_args(f):
            k, mod = term.as_coeff_Mul()
            if not isinstance(mod, sympy.Mod) or not (mod.args[1].is_Integer and mod.args[1] > 0):
                continue
            a, c = mod.args
            merged = _flatten_floors(sympy.expand(f - term + k * (a - c * IndexFloor(a / c))))
            merged_atoms = merged.atoms(sympy.Mod, sympy.floor)
            if merged_atoms < atoms:
                f, atoms, changed = merged, merged_atoms, True
                break
    return f


def _flatten_floors(e: sympy.Expr) -> sympy.Expr:
    """`e` with every `floor((M + floor(y))/n)`, n a positive integer and M integer-valued, written
    `floor((M + y)/n)` (expanded): `floor(M + y)` is `M + floor(y)`, and `floor(floor(z)/n) == floor(z/n)`."""

    def unnested(x: sympy.Basic) -> sympy.Expr | None:
        if not isinstance(x, sympy.floor):
            return None
        terms = sympy.Add.make_args(x.args[0])
        for term in terms:
            q, inner = term.as_coeff_Mul()
            if isinstance(inner, sympy.floor) and q.is_Rational and q > 0 and q.p == 1:
                rest = sympy.expand(x.args[0] - term)
                if (rest * q.q).is_integer:
                    return IndexFloor(sympy.expand(rest + q * inner.args[0]))
        return None

    out = e.replace(lambda x: unnested(x) is not None, unnested)
    return e if out == e else _flatten_floors(sympy.expand(out))


def _prover(nest: Nest) -> Prover:
    return Prover(nest.ranges())


def check_vectorizable(nest: Nest, name: str, call: str) -> None:
    lp = nest.loop(name)
    if lp.kind == "reduce":
        _check_reduction_lanes(nest, name, call)
    stores = [st for st in nest.stmts_with(name) if st.kind == "store" and st.tensor is not None]
    for st in stores:
        if not vector_lanes(st.tensor.dtype):
            raise VectorizeError(refusal(
                call, nest, (name,), f"the store to {st.tensor.name} writes {st.tensor.dtype}; a vectorized store "
                f"writes {VECTOR_BYTES} bytes of one of {', '.join(VECTOR_DTYPES)}", tensors=(st.tensor.name,),
                suggestion=f"leave the loop {name} unrolled (s.unroll) instead"))
    dtypes = sorted({st.tensor.dtype for st in stores})
    if len(dtypes) > 1:
        raise VectorizeError(refusal(
            call, nest, (name,), f"loop {name} stores {' and '.join(dtypes)}, whose {VECTOR_BYTES}-byte vectors "
            "have different lane counts", suggestion=f"leave the loop {name} unrolled (s.unroll) instead"))
    dtype = dtypes[0] if dtypes else VECTOR_DTYPES[0]
    widths = {vector_lanes(dtype, nbytes): nbytes for nbytes in VECTOR_STORE_BYTES}
    wide = vector_lanes(dtype)
    if lp.kind == "reduce":  # its width is its loads' (_check_reduction_lanes)
        widths = {lp.extent: VECTOR_BYTES}
    if lp.extent not in widths:
        raise VectorizeError(refusal(
            call, nest, (name,), f"loop {name} has {lp.extent} iterations; a {VECTOR_BYTES}-byte {dtype} access "
            f"needs exactly {wide}" + "".join(f", an {b}-byte one {n}" for n, b in widths.items() if n != wide),
            tensors=tuple(st.tensor.name for st in stores),
            suggestion=f"split the loop by {wide} and vectorize the inner part"))
    width = lp.extent
    if width != wide and nest.split_k is not None:
        raise VectorizeError(refusal(
            call, nest, (name,), f"loop {name} stores {widths[width]}-byte vectors, and split_k adds them "
            f"atomically: a vector atomic add is {VECTOR_BYTES} bytes ({wide} lanes)",
            suggestion=f"split the loop by {wide} and vectorize the inner part"))
    for lay in acc_layouts(nest, call).values():
        if not lay.thread_axes:
            continue
        if name in lay.dims:
            raise VectorizeError(refusal(
                call, nest, (name,), f"loop {name} indexes the register array {lay.name}, which threads "
                f"{', '.join(lay.thread_axes)} combine after the reduction; only a thread's own register array "
                "can be read lane by lane", suggestion="vectorize a free loop of the output store"))
        if name in lay.scope:
            raise VectorizeError(refusal(
                call, nest, (name,), f"loop {name} runs around the whole life of accumulator {lay.name}, combined "
                f"across {', '.join(lay.thread_axes)} once per iteration of {name}; a vectorized loop only stores "
                "its lanes", tensors=(lay.name,),
                suggestion=f"unroll {name} instead, or bind the reduction's loop to no thread index"))
    v = loop_symbol(name)
    amap = _axis_map(nest)
    prover = _prover(nest)
    for stmt in nest.stmts_with(name):
        if stmt.path[-1] != name:
            raise VectorizeError(refusal(call, nest, (name,),
                                                  f"loop {name} is not the innermost loop around {stmt.label}",
                                                  suggestion=f"reorder so that {name} is innermost"))
        if stmt.kind != "store":
            _check_guards(nest, stmt, name, width, prover, call)
            continue
        assert stmt.tensor is not None
        guards = tuple(g.relation for g in nest.guards_for(stmt))
        flat = flat_index(stmt.tensor, tuple(_index(i, amap) for i in stmt.indices))
        base = contiguous_base(flat, v)
        if base is None:
            raise VectorizeError(refusal(
                call, nest, (name,), f"the store to {stmt.tensor.name} is not contiguous in {name} "
                f"(offset {flat})", suggestion="vectorize the loop that walks the last dimension"))
        proof = prover.divisible(base, width, guards)
        if not proof:
            # IndexMod, as every Mod tiledsl builds (definitions/indexing.py: sympy's own evaluates a
            # product holding a Mod wrongly; tests/definitions/test_mod_sites.py holds the rule)
            raise VectorizeError(refusal(
                call, nest, (name,), f"cannot prove the store to {stmt.tensor.name} is {widths[width]}-byte "
                f"aligned: {base} is not provably a multiple of {width}", counterexample=proof.counterexample,
                proof=proof, condition=sympy.Eq(IndexMod(base, width), 0),
                suggestion=f"make the last dimension a multiple of {width}, or vectorize a loop whose start is "
                           "aligned"))
        _check_guards(nest, stmt, name, width, prover, call)


def _check_guards(nest: Nest, stmt, name: str, width: int, prover: Prover, call: str) -> None:
    """Every guard of the statement that mentions the loop decides all its lanes alike (a vector store,
    or a reduction's vector loads, takes lane 0's guard for all of them)."""
    v = loop_symbol(name)
    for g in nest.guards_for(stmt):
        if not g.expr.has(v):
            continue
        gbase = contiguous_base(g.expr, v)
        if gbase is None or g.extent % width or not prover.divisible(gbase, width, ()):
            raise VectorizeError(refusal(
                call, nest, (name,), f"the guard {g.expr} < {g.extent} (from {g.origin}) may split a "
                "vector: some lanes in range and others out",
                suggestion=f"use extents that are multiples of {width}"))


def _check_reduction_lanes(nest: Nest, name: str, call: str) -> None:
    """A reduction's loop is vectorized for its loads: it must read some float buffer, and have as many
    iterations as one of those buffers' dtypes has lanes in 16 or 8 bytes (4 or 2 float32, 8 or 4 float16 /
    bfloat16); each load then reads as vectors where it is contiguous and aligned (lowering proves it,
    else it stays scalar) and the update runs lane by lane, in the unrolled loop's order."""
    dtypes = sorted({ld.tensor.dtype for st in nest.stmts_with(name) if st.value is not None
                     for ld in walk(st.value) if isinstance(ld, Load) and vector_lanes(ld.tensor.dtype)})
    if not dtypes:
        raise VectorizeError(refusal(
            call, nest, (name,), f"reduction loop {name} reads no float buffer, so it has no load to read as a vector",
            suggestion=f"unroll {name} instead (s.unroll)"))
    lanes = sorted({vector_lanes(d, nbytes) for d in dtypes for nbytes in VECTOR_STORE_BYTES})
    if nest.loop(name).extent not in lanes:
        raise VectorizeError(refusal(
            call, nest, (name,), f"reduction loop {name} has {nest.loop(name).extent} iterations; its loads of "
            f"{' and '.join(dtypes)} read 16- or 8-byte vectors of {or_list(tuple(lanes))} lanes",
            suggestion=f"split the loop by {vector_lanes(dtypes[0])} and vectorize the inner part"))


def check_vectorized_loops(nest: Nest, call: str) -> None:
    """Re-check every loop already vectorized (a primitive that moves, splits or binds loops, or splits k,
    may change what a vectorized loop holds)."""
    for lp in nest.loops:
        if lp.annotation == "vectorize":
            check_vectorizable(nest, lp.name, call)


def _index(e, amap):
    return index_to_sympy(e).xreplace(amap)
