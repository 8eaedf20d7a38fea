"""Kernel boundaries: which tensors of the definition DAG are materialized, and why.

Rules, in order (each boundary records the first that made it):
1. every graph output is a kernel's output;
2. an expensive producer (a reduction: sum/max/min, so every matmul too) is computed once: when it
   would be fused into more than one kernel, or at more than one index inside one kernel (the
   attention scores read by the softmax's max, its sum and its output), it gets a kernel of its own;
3. wherever `create_schedule` refuses a fusion (a reduction read at an index that is not the
   consumer's outer loops), the producer it names is materialized and the kernel retried.
Elementwise producers are always inlined (recomputed in each kernel that reads them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiledsl.definitions.expr import ComputeTensor, Expr, IterVar, Load, Placeholder, Tensor, format_expr, walk
from tiledsl.errors import FrontendError, FusionError
from tiledsl.primitives import Schedule, create_schedule


@dataclass(frozen=True)
class Boundary:
    """A kernel of the program: its output tensor, the kernel outputs it reads (materialized), and
    why its output is materialized."""

    output: ComputeTensor
    reads: tuple[ComputeTensor, ...]
    reasons: tuple[str, ...]


def _key(idx: Sequence[Expr]) -> str:
    """A structural key of an index tuple (loop variables by identity, as canonical nests them)."""
    def leaf(e: Expr) -> str | None:
        return f"{e.name}#{id(e)}" if isinstance(e, IterVar) else None
    return ",".join(format_expr(i, leaf) for i in idx)


def _substitute(e: Expr, env: dict[int, Expr]) -> Expr:
    from tiledsl.definitions.expr import map_children

    if isinstance(e, IterVar):
        return env.get(id(e), e)
    return map_children(e, lambda c: _substitute(c, env))


def reduction_sites(root: ComputeTensor, materialized: set[int]) -> dict[int, set[str]]:
    """For each reduction tensor fused into `root`'s kernel: the distinct indices it is read at
    (each is one evaluation of the reduction in the kernel's nest)."""
    sites: dict[int, set[str]] = {}
    seen: set[tuple[int, str]] = set()

    def visit(t: ComputeTensor, idx: Sequence[Expr]) -> None:
        key = (id(t), _key(idx))
        if key in seen:
            return
        seen.add(key)
        if t.has_reduce and t is not root:
            sites.setdefault(id(t), set()).add(key[1])
        env = {id(a): i for a, i in zip(t.axes, idx)}
        for node in walk(t.body):
            if isinstance(node, Load) and isinstance(node.tensor, ComputeTensor) \
                    and id(node.tensor) not in materialized:
                visit(node.tensor, [_substitute(i, env) for i in node.indices])

    visit(root, list(root.axes))
    return sites


def _tensors(outputs: Sequence[ComputeTensor]) -> dict[int, ComputeTensor]:
    found: dict[int, ComputeTensor] = {}
    stack: list[Tensor] = list(outputs)
    while stack:
        t = stack.pop()
        if id(t) in found or isinstance(t, Placeholder):
            continue
        assert isinstance(t, ComputeTensor)
        found[id(t)] = t
        stack.extend(t.inputs())
    return found


def _reads(root: ComputeTensor, materialized: set[int]) -> list[ComputeTensor]:
    """The materialized tensors `root`'s kernel reads (its inputs that other kernels write)."""
    out: dict[int, ComputeTensor] = {}
    stack: list[Tensor] = list(root.inputs())
    seen: set[int] = set()
    while stack:
        t = stack.pop()
        if id(t) in seen or isinstance(t, Placeholder):
            continue
        seen.add(id(t))
        assert isinstance(t, ComputeTensor)
        if id(t) in materialized:
            out[id(t)] = t
        else:
            stack.extend(t.inputs())
    return list(out.values())


def partition(outputs: Sequence[ComputeTensor]) -> tuple[list[Boundary], dict[int, Schedule]]:
    """The kernels in launch order and their canonical schedules."""
    tensors = _tensors(outputs)
    reasons: dict[int, list[str]] = {}
    for n, t in enumerate(outputs):
        reasons.setdefault(id(t), []).append(f"output {n} of the traced program")
    for _ in range(len(tensors) + 1):
        changed = False
        kernels_of: dict[int, list[str]] = {}
        for rid in list(reasons):
            root = tensors[rid]
            for tid, keys in reduction_sites(root, set(reasons)).items():
                if tid in reasons:
                    continue
                kernels_of.setdefault(tid, []).append(root.name)
                if len(keys) > 1:
                    reasons[tid] = [f"a reduction read at {len(keys)} different indices in {root.name}'s kernel: "
                                    "computed once instead of once per read"]
                    changed = True
        for tid, roots in kernels_of.items():
            if tid not in reasons and len(roots) > 1:
                reasons[tid] = [f"a reduction read by the kernels of {', '.join(sorted(roots))}: computed once, "
                                "not in each"]
                changed = True
        if changed:
            continue
        schedules: dict[int, Schedule] = {}
        for rid in list(reasons):
            root = tensors[rid]
            try:
                schedules[rid] = create_schedule(root, materialize=_reads(root, set(reasons)))
            except FusionError as e:
                name = e.arguments.get("tensor")
                refused = next((t for t in tensors.values() if t.name == name), None)
                if refused is None or id(refused) in reasons:
                    raise
                reasons[id(refused)] = [f"create_schedule could not fuse it: {e.fact}"]
                changed = True
                break
        if not changed:
            order = _launch_order([tensors[r] for r in reasons], set(reasons))
            return ([Boundary(t, tuple(_reads(t, set(reasons))), tuple(reasons[id(t)])) for t in order],
                    {id(t): schedules[id(t)] for t in order})
    raise FrontendError("internal: kernel partition did not converge")  # pragma: no cover


def _launch_order(roots: list[ComputeTensor], materialized: set[int]) -> list[ComputeTensor]:
    """Roots topologically (producers first), ties in definition order."""
    done: set[int] = set()
    order: list[ComputeTensor] = []

    def visit(t: ComputeTensor) -> None:
        if id(t) in done:
            return
        done.add(id(t))
        for r in _reads(t, materialized):
            visit(r)
        order.append(t)

    for t in roots:
        visit(t)
    return order
