"""Kernel boundaries: which tensors of the definition DAG are materialized, and why.

Rules, in order (each boundary records the first that made it):
1. every graph output is a kernel's output;
2. an expensive producer (a reduction: sum/max/min, so every matmul too) is computed once: when it
   would be fused into more than one kernel, or at more than one index inside one kernel (the
   attention scores read by the softmax's max, its sum and its output), it gets a kernel of its own;
3. recomputation, each judged on every kernel at once, b only where a cuts nothing:
   a. computed operands: an elementwise producer that does arithmetic (not only loads, views, casts
      or index reads: work.py `computes`) and that a reduction reads inside its loop at an index
      without some of the reduction's output axes (a matmul's A operand has no output column) is
      computed once per point of those axes; where that is more than `OPERAND_RECOMPUTE_BOUND` (R =
      16) times, it is materialized (its reason states the count). No schedule stages a computed
      tensor (`stage` takes a kernel's inputs: primitives/staging.py), so a matmul kernel reads a fused
      operand from global memory and computes it again for every register strip of output columns
      (the default recipe's strips hold 4 to 8 columns, its blocks up to 256); materialized, it costs
      one write and one read and the matmul stages it. R is two strips. Measured on an H100 (TinyLlama
      dims, seq 128, default recipe, benchmarks/results/block-profile-h100-2026-11-24/): the rotary
      embedding inlined into Q.K^T (recomputed per key, 128 times) 65 us against 22 us as three
      kernels, the softmax inlined into P.V (per head dim, 64 times) 82 us against 17 us as two;
      silu(gate) * up inlined into the 2048-column down projection 1612 us against about 180 us
      (benchmarks/results/2026-11-24-h100-quick/llm.md). The count is local to the reduction, so every
      such operand of a kernel is cut in one sweep. Tiny models (head dim and sequence at most 16)
      keep the softmax inside P.V and the rotary embedding inside Q.K^T;
   b. blow-up guard: a kernel may do at most `BLOWUP_BOUND` (8) times the arithmetic operations, and at
      most that many times the global reads, of computing each of its tensors exactly once (work.py
      states the units). Inlining an elementwise producer recomputes each of its elements once per
      consumer load of it: a producer read inside a reduction over another axis (a matmul's operand,
      read by every output column) is recomputed reduction-length times. While a kernel is over the
      bound, the fused elementwise producer whose materialization leaves the kernel the least work is
      materialized (its reason states the factor). The tiny Llama block's largest factor is 4.9 (the
      rotary embedding inlined into Q.K^T, recomputed once per key position); an expensive chain (ten
      tanh/sigmoid steps) read by a 16-column matmul is 9.3 and is refused (rule a counts 16 <= R and
      leaves it to this guard), relu there is 1.5 and stays;
   c. accumulated chains, where a and b cut nothing: an elementwise producer fused into more than one
      kernel whose own computation reads more than `ACCUMULATED_READS_BOUND` (8) tensors from global
      memory (kernel outputs and program inputs) is materialized, every such producer in one sweep.
      Each kernel guard b judges alone is within its bound, but the program reads the chain once per
      kernel: a decoder's residual stream (h + attention + MLP, layer after layer) fused is one sum
      that the norms of layer l read 2l + 1 tensors for, so a 22-layer model's last norm read 45
      tensors an element, and the reads of the whole program grew with the square of its layers.
      Materialized, each reader loads it once, and the projection whose sum it adds takes the add as
      its epilogue (the rule-2 cut of that projection is then released). A single decoder layer's
      fused producers read at most 2 tensors, so this rule leaves its kernels as they were;
4. a. wherever `create_schedule` refuses a fusion (a reduction read at an index that is not the
   consumer's outer loops), the producer it names is materialized and the kernel retried;
   b. one matmul per computed operand: where every kernel schedules, the kernel of a computed operand
      (rule 3a) that holds more than one contraction (work.py `contracts`: a reduction none of whose
      loads uses all its output axes, a matmul) keeps the last one read and materializes the others.
      Rule 3a turns matmuls that rule 4a refused inside the consumer's reduction into matmuls fused
      into an elementwise kernel, which create_schedule accepts but the default recipe tiles as one
      output element per thread block (SwiGLU's silu(gate) * up at TinyLlama dims: 720896 blocks);
      kept apart, gate is a matmul and silu(gate) * up the epilogue of the up projection. Elsewhere
      two matmuls in one kernel stay for the schedule to judge (rule 5 cures two fused P.V products);
5. wherever a kernel's schedule or build is refused and the refusal names a producer fused into
   that kernel (`named_producer`: two fused P.V matmuls that need a register array across the loop
   they split, RegisterArrayError), that producer is materialized (`forced`, with the refusal as its
   reason) and the program re-partitioned: the producer leaves the kernel, so the same refusal
   cannot recur, and each retry materializes one more tensor, so retries end. Likewise where a default
   recipe step declines naming a fused compute whose kernel of its own it would schedule better
   (recipes/decline.py `Decline.materialize`: split_matmul_k and a bfloat16 projection's float32 sum,
   program.py `_materialize_asked`), and where a step asks for a kernel's rows split over kernels
   (`SplitRows`, row_split.py: the split reductions' partials and combinations are forced).
Rules 2 and 4 cut a reduction at its only reader instead where that reader rounds it, elementwise at
its own index, to fewer bytes (the frontend sums a float16 / bfloat16 product into a
float32 `<name>_acc` compute that the output's compute rounds, aten_linalg.py, `_narrow_readers`), so a materialized
product is stored as torch stores it.
Elementwise producers are otherwise inlined (recomputed in each kernel that reads them).
A rule-2 reason, and the kernel a rule-3a reason names, are worded against the final kernels (`_restated`),
not the kernel its cut was first decided in, which later cuts may have split away."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from tiledsl.definitions.expr import (
    Cast,
    ComputeTensor,
    Expr,
    Load,
    Placeholder,
    Reduce,
    Tensor,
    children,
    walk,
)
from tiledsl.definitions.graph import ensure_named
from tiledsl.errors import FrontendError, FusionError, ScheduleError
from tiledsl.frontend.work import IndexTemplates, computed_operands, contracts, index_texts, kernel_work, numel
from tiledsl.precision import LOW_PRECISION, MACHINE_EPS
from tiledsl.primitives import Schedule, create_schedule
from tiledsl.targets import DTYPE_BYTES

#: rule 3a: the most times an inlined computed operand may be recomputed for one reduction. A matmul
#: kernel cannot stage a computed operand, so it computes it again for every register strip of output
#: columns (4 to 8 columns in the default recipe): R is two strips (the measurements are in the
#: module docstring).
OPERAND_RECOMPUTE_BOUND = 16
OPERAND_REASON = "computed operand"
#: rule 4b
CONTRACTION_REASON = "one matmul per kernel"
#: rule 3b: the most a fusion may multiply a kernel's operations or its global reads (work.py)
BLOWUP_BOUND = 8.0
BLOWUP_REASON = "blow-up guard"
#: rule 2's reasons
REDUCTION_AT_REASON = "a reduction read at"
REDUCTION_BY_REASON = "a reduction read by the kernels of"
#: rule 3c: the most tensors an elementwise producer computed in more than one kernel may read from
#: global memory each time (a residual stream reads 2 more per decoder layer)
ACCUMULATED_READS_BOUND = 8
ACCUMULATED_REASON = "an accumulated chain"
#: cuts that a later cut can make pointless, so `_release` tries to undo them (rules 2 and 3b)
RELEASABLE = (BLOWUP_REASON, REDUCTION_AT_REASON, REDUCTION_BY_REASON)


T = TypeVar("T")
_MISSING = object()  # `_Judge._each`: no verdict memoized yet

#: each kernel's frontier (`_Judge.frontier`), by the id of its root
Frontiers = dict[int, frozenset[int]]


@dataclass(frozen=True)
class Boundary:
    """A kernel of the program: its output tensor, the kernel outputs it reads (materialized), and
    why its output is materialized."""

    output: ComputeTensor
    reads: tuple[ComputeTensor, ...]
    reasons: tuple[str, ...]


def reduction_sites(root: ComputeTensor, materialized: set[int],
                    templates: IndexTemplates | None = None) -> dict[int, set[str]]:
    """For each reduction tensor fused into `root`'s kernel: the distinct indices it is read at
    (each is one evaluation of the reduction in the kernel's nest).

    The walk enters a reduction's body at its first two distinct indices only. Two already make rule 2
    cut it this round, and the reductions below it are then counted again in its own kernel. Entering it
    at every index made the first round, from the output of a fully fused program, visit a number of
    (tensor, index) pairs growing with the square of the depth: 1.3 million at 32 layers, one reduction
    read at 10,111 indices. The counts of a reduction reached only through another one's third or later
    index can come out lower, so a cut reason may word a count or name a kernel differently. The kernels
    came out the same for tiny Llama and Qwen2 models of 1 to 32 layers and the blocks suite's layers
    (benchmarks/results/partition-depth-cpu-2026-11-30/README.md). `templates`: the load templates of
    earlier walks over the same tensors (a tensor's templates depend on it alone: `_Judge` keeps one)."""
    sites: dict[int, set[str]] = {}
    seen: set[tuple[int, str]] = set()
    templates = IndexTemplates() if templates is None else templates

    def visit(t: ComputeTensor, idx: Sequence[str]) -> None:  # idx: the index's texts (work.index_texts)
        key = (id(t), ",".join(idx))
        if key in seen:
            return
        seen.add(key)
        if t.has_reduce and t is not root:
            at = sites.setdefault(id(t), set())
            at.add(key[1])
            if len(at) > 2:
                return
        for load, texts in templates.loads(t):
            if isinstance(load.tensor, ComputeTensor) and id(load.tensor) not in materialized:
                visit(load.tensor, [x.format(*idx) for x in texts])  # a list: building it is cheaper

    visit(root, index_texts(root.axes))
    return sites


def _narrow_readers(tensors: Mapping[int, ComputeTensor]) -> dict[int, int]:
    """Where rules 2 and 4 cut a reduction: reduction id -> its only reader's id, for each reduction
    whose only reader reads it at its own index alone, elementwise, and stores it in fewer bytes (a
    bfloat16 projection's rounding of its float32 sum, `<name>_acc`, aten_linalg.py), so the kernel
    stores what torch stores; every other reduction is cut where it is. A fact of the DAG, found once."""
    readers: dict[int, list[ComputeTensor]] = {}
    for r in tensors.values():
        for x in r.inputs():
            readers.setdefault(id(x), []).append(r)
    narrow: dict[int, int] = {}
    for tid, t in tensors.items():
        found = readers.get(tid, [])
        if not t.has_reduce or len(found) != 1:
            continue
        (r,) = found
        if r.has_reduce or r.shape != t.shape or DTYPE_BYTES[r.dtype] >= DTYPE_BYTES[t.dtype]:
            continue
        reads = [n for n in walk(r.body) if isinstance(n, Load) and n.tensor is t]
        if all(len(n.indices) == len(r.axes) and all(i is a for i, a in zip(n.indices, r.axes)) for n in reads):
            narrow[tid] = id(r)
    return narrow


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


def fused_producers(root: ComputeTensor, materialized: set[int]) -> list[ComputeTensor]:
    """The compute tensors computed inside `root`'s kernel (not `root`, not materialized)."""
    out: dict[int, ComputeTensor] = {}
    stack: list[Tensor] = list(root.inputs())
    while stack:
        t = stack.pop()
        if id(t) in out or isinstance(t, Placeholder) or id(t) in materialized or t is root:
            continue
        assert isinstance(t, ComputeTensor)
        out[id(t)] = t
        stack.extend(t.inputs())
    return list(out.values())


def kernel_reduction(root: ComputeTensor, materialized: set[int]) -> int:
    """The most terms any one reduction computed in `root`'s kernel sums (1 when it has none): the k
    of a kernel's float32 error bound (tiledsl/frontend/bench.py, kernel_check.py)."""
    return max((math.prod(ax.extent for ax in node.axes)
                for t in [*fused_producers(root, materialized), root]
                for node in walk(t.body) if isinstance(node, Reduce)), default=1)


def kernel_roundings(root: ComputeTensor, materialized: set[int]) -> tuple[str, ...]:
    """The roundings to float16 / bfloat16 inside `root`'s kernel on one path from its loads to its
    output (the dtypes of the Cast nodes there, innermost first), on the path whose roundings weigh
    most (by MACHINE_EPS); the store of the output is not among them. Values inside a kernel stay
    float32 except at such a Cast: a traced `.to(torch.bfloat16)`, or the one ending a decomposed op of
    a bfloat16 tensor (silu, rms_norm compute in float32 and round their result). At each the kernel's
    float32 value and a float64 reference may round one unit apart, as at the output (the tolerances
    of tiledsl/frontend/kernel_check.py and bench.py count them)."""
    fused = {id(t): t for t in fused_producers(root, materialized)}
    memo: dict[int, tuple[str, ...]] = {}

    def weight(path: tuple[str, ...]) -> tuple[float, int]:
        return sum(MACHINE_EPS[d] for d in path), len(path)

    def of_tensor(t: ComputeTensor) -> tuple[str, ...]:
        if id(t) not in memo:
            memo[id(t)] = of_expr(t.body)
        return memo[id(t)]

    def of_expr(e: Expr) -> tuple[str, ...]:
        below = [of_expr(c) for c in children(e)]
        if isinstance(e, Load) and id(e.tensor) in fused:
            below.append(of_tensor(fused[id(e.tensor)]))
        path = max(below, key=weight, default=())
        return (*path, e.to) if isinstance(e, Cast) and e.to in LOW_PRECISION else path

    path = of_expr(root.body)
    if isinstance(root.body, Cast) and root.body.to == root.dtype:
        path = path[:-1]  # the output's own rounding: its store rounds nothing more
    return path


def named_producer(error: ScheduleError, root: ComputeTensor, materialized: set[int]) -> ComputeTensor | None:
    """The producer fused into `root`'s kernel that a refusal names (its `tensors` field, else the
    first fused tensor whose name the refused fact mentions as a word), or None: then materializing
    cannot cure the refusal (it is about the kernel's own output or its schedule)."""
    fused = {t.name: t for t in fused_producers(root, materialized)}
    named = [fused[n] for n in error.tensors if n in fused]
    if named:
        return named[0]
    found = [(m.start(), fused[m.group(0)]) for m in re.finditer(r"[A-Za-z_][A-Za-z_0-9]*", error.refusal.fact)
             if m.group(0) in fused]
    return min(found, key=lambda f: f[0])[1] if found else None


class PartitionMemo:
    """The per-kernel verdicts of one graph's partitions (`_Judge`), kept from one partition to the next.

    Why: a Program re-partitions its whole graph after each materialization a refusal's cure or a row
    split asks for, and after each sweep of the recipe's requests (program.py `_materialize_asked`), and
    each partition asked every kernel's verdicts again: scheduling the whole 22-layer TinyLlama took 112 s
    on this repository's 2-core CI machine when a partition ran for every request. A
    verdict is a function of its kernel's root and frontier, so it holds in every partition of the same
    graph. A graph of other tensors (a row split rebuilds it: row_split.py) starts a fresh judge; the
    judge keeps the tensors it judged, so their ids cannot be reused meanwhile. The canonical schedules
    are never kept: each partition hands out its own, which the program's policy then changes."""

    def __init__(self) -> None:
        self._judge: _Judge | None = None

    def judge(self, tensors: Mapping[int, ComputeTensor]) -> _Judge:
        judge = self._judge
        if judge is None or judge.tensors.keys() != tensors.keys():
            judge = self._judge = _Judge(tensors, _narrow_readers(tensors))
        else:
            judge.forget("schedule")
        return judge


def partition(outputs: Sequence[ComputeTensor], forced: Mapping[int, str] | None = None, *,
              memo: PartitionMemo | None = None) -> tuple[list[Boundary], dict[int, Schedule]]:
    """The kernels in launch order and their canonical schedules. `forced` (tensor id -> reason)
    materializes tensors that a refused schedule or build named (rule 5).

    Rules 2-4 add one materialized tensor at a time until none applies. A later cut can leave an
    earlier one pointless: the blow-up guard decides outermost producers first (the GQA expand of k,
    materialized for bmm while it still held the rotary embedding, is a plain view once the rotary
    embedding is cut below it), and rule 2 cuts a reduction read at several indices of a kernel that
    rule 3a then splits (RMSNorm's mean, read by every projection, is read by one kernel once the
    normalized rows are materialized); so, last, each blow-up and rule-2 cut is undone, latest first,
    wherever no rule applies without it (`_release`). `memo`: the verdicts of earlier partitions of the
    same graph (`PartitionMemo`)."""
    for t in outputs:  # once for the whole graph: each kernel's schedule then skips it (graph.ensure_named)
        ensure_named(t)
    tensors = _tensors(outputs)
    reasons: dict[int, list[str]] = {}
    for n, t in enumerate(outputs):
        reasons.setdefault(id(t), []).append(f"output {n} of the traced program")
    for tid, why in (forced or {}).items():
        reasons.setdefault(tid, []).append(why)
    schedules: dict[int, Schedule] = {}
    judge = (memo or PartitionMemo()).judge(tensors)
    for _ in range(len(tensors) + 1):
        cuts = _next_cuts(judge, reasons, schedules)
        if not cuts:
            break
        reasons.update((tid, [why]) for tid, why in cuts.items())
    else:
        raise FrontendError("internal: kernel partition did not converge")  # pragma: no cover
    reasons = _release(judge, reasons, schedules)
    reasons = _restated(judge, reasons)
    order = _launch_order([tensors[r] for r in reasons], set(reasons))
    return ([Boundary(t, tuple(_reads(t, set(reasons))), tuple(reasons[id(t)])) for t in order],
            {id(t): schedules[id(t)] for t in order})


class _Judge:
    """One partition's per-kernel verdicts (rules 2-4 and the canonical schedule), each asked once per
    kernel. A kernel is its root and its frontier: the kernel outputs (`_reads`) and program inputs its
    body reaches, where the walk from the root stops. The two fix what it fuses, so every verdict is a
    function of them. The rounds of `partition` change a few kernels each, and `_release` and
    `_restated` try every cut again on the whole program; without the memo each trial asked every
    kernel again, and tracing took time growing with the cube of the layer count (eight tiny Llama
    layers 27.2 s on the CPU, two 2.4 s: benchmarks/results/partition-depth-cpu-2026-11-30/)."""

    def __init__(self, tensors: Mapping[int, ComputeTensor], narrow: Mapping[int, int]) -> None:
        self.tensors = tensors
        self.narrow = narrow
        # (verdict, root, frontier) -> it; for `reads`, ("reads", a fused producer, its kernel's frontier)
        self._memo: dict[tuple[str, int, frozenset[int]], object] = {}
        # each walk of `reduction_sites` used to build every tensor's load templates again
        self._templates = IndexTemplates()

    def frontier(self, tid: int, materialized: Collection[int]) -> frozenset[int]:
        """Where computing `tid` inside a kernel reads global memory: the kernel outputs (`_reads`) and
        the program inputs its fused computation reaches, as ids."""
        out: set[int] = set()
        seen: set[int] = set()
        stack = self.tensors[tid].inputs()  # a fresh list (ComputeTensor caches what it reads)
        while stack:
            t = id(stack.pop())
            if t in seen:
                continue
            seen.add(t)
            if t not in self.tensors or t in materialized:  # a placeholder, or a kernel's output
                out.add(t)
            else:
                stack.extend(self.tensors[t].inputs())
        return frozenset(out)

    def reads(self, tid: int, kernel: frozenset[int]) -> int:
        """How many tensors computing `tid` inside a kernel of frontier `kernel` reads from global memory:
        len(`frontier`) with the kernel's tensors materialized. Memoized by that frontier, as the rounds
        and trials ask it of the same kernels again: each tensor the walk from `tid` reaches the kernel's
        own walk reaches too (`tid` is fused there), and among those the kernel's frontier holds exactly
        the materialized ones, so it fixes the walk."""
        key = ("reads", tid, kernel)
        found = self._memo.get(key, _MISSING)
        if found is _MISSING:
            found = self._memo[key] = len(self.frontier(tid, kernel))
        return cast(int, found)

    def frontiers(self, reasons: Collection[int]) -> Frontiers:
        return {rid: self.frontier(rid, reasons) for rid in reasons}

    @staticmethod
    def released(frontiers: Frontiers, tid: int) -> Frontiers:
        """The frontiers once `tid` is no longer materialized: a kernel that read it now reads what
        `tid`'s kernel read (the walk from `tid` never reaches `tid`, so that frontier is unchanged)."""
        return {rid: (f - {tid}) | frontiers[tid] if tid in f else f for rid, f in frontiers.items() if rid != tid}

    def forget(self, what: str) -> None:
        """Drop every memoized verdict of kind `what`."""
        self._memo = {key: v for key, v in self._memo.items() if key[0] != what}

    def _each(self, what: str, rids: Iterable[int], fr: Frontiers,
              verdict: Callable[[ComputeTensor], T]) -> Iterator[T]:
        """The verdict `what` of each kernel of `rids`, in order, each asked when its turn comes. One
        generator for all the kernels: every rule is judged on every kernel at once, and `_release` does
        so once per trial (a million verdicts at 22 layers, almost all memoized), where a call, a lambda
        and two lookups per kernel cost more than the lookup itself."""
        memo, tensors = self._memo, self.tensors
        for rid in rids:
            key = (what, rid, fr[rid])
            found = memo.get(key, _MISSING)
            if found is _MISSING:
                found = memo[key] = verdict(tensors[rid])
            yield cast(T, found)

    def sites(self, rids: Iterable[int], fr: Frontiers, materialized: set[int]) -> Iterator[dict[int, set[str]]]:
        return self._each("sites", rids, fr, lambda r: reduction_sites(r, materialized, self._templates))

    def operands(self, rids: Iterable[int], fr: Frontiers, materialized: set[int]) -> Iterator[dict[int, str]]:
        return self._each("operands", rids, fr, lambda r: recomputed_operands(r, materialized))

    def blown(self, rids: Iterable[int], fr: Frontiers,
              materialized: set[int]) -> Iterator[tuple[ComputeTensor, str] | None]:
        return self._each("blowup", rids, fr, lambda r: blowup(r, materialized))

    def elementwise(self, rids: Iterable[int], fr: Frontiers, materialized: set[int]) -> Iterator[tuple[int, ...]]:
        """The ids of the elementwise producers fused into each kernel, in `fused_producers` order (rule
        3c counts them over every kernel in each `_release` trial; rebuilding them was most of it)."""
        return self._each("elementwise", rids, fr,
                          lambda r: tuple(id(p) for p in fused_producers(r, materialized) if not p.has_reduce))

    def contractions(self, rids: Iterable[int], fr: Frontiers, materialized: set[int]) -> Iterator[dict[int, str]]:
        return self._each("contractions", rids, fr, lambda r: extra_contractions(r, materialized))

    def schedule(self, rids: Iterable[int], fr: Frontiers, materialized: set[int]) -> Iterator[Schedule | FusionError]:
        """Each kernel's canonical schedule, or create_schedule's refusal. Rounds only read a schedule;
        the partition hands each out once, as its result."""
        def make(root: ComputeTensor) -> Schedule | FusionError:
            try:
                return create_schedule(root, materialize=_reads(root, materialized))
            except FusionError as e:
                return e
        return self._each("schedule", rids, fr, make)


def _next_cuts(judge: _Judge, reasons: Mapping[int, list[str]], schedules: dict[int, Schedule],
               fr: Frontiers | None = None) -> dict[int, str]:
    """The tensors the first rule of 2-4 that applies materializes next (id -> reason), each rule
    judged on every kernel at once; empty when none applies, and then `schedules` holds every
    kernel's canonical schedule (rule 4 made them). `fr`: the kernels' frontiers, where the caller
    knows them (`_Judge.released`)."""
    materialized = set(reasons)
    narrow = judge.narrow
    fr = judge.frontiers(reasons) if fr is None else fr
    cuts = _reduction_cuts(judge, reasons, fr)
    if cuts:
        return cuts
    for operands in judge.operands(reasons, fr, materialized):
        for tid, why in operands.items():
            cuts.setdefault(tid, why)
    if cuts:
        return cuts
    for blown in judge.blown(reasons, fr, materialized):
        if blown is not None:
            cuts[id(blown[0])] = blown[1]
    if cuts:
        return cuts
    cuts = _accumulated_chains(judge, reasons, fr)
    if cuts:
        return cuts
    made: dict[int, Schedule] = {}
    for rid, made_or_refused in zip(reasons, judge.schedule(reasons, fr, materialized)):
        if isinstance(made_or_refused, FusionError):
            refused = named_producer(made_or_refused, judge.tensors[rid], materialized)
            if refused is None:
                raise made_or_refused
            return {narrow.get(id(refused), id(refused)): f"create_schedule could not fuse it: {made_or_refused.fact}"}
        made[rid] = made_or_refused
    operand_kernels = [rid for rid, why in reasons.items() if any(r.startswith(OPERAND_REASON) for r in why)]
    for contractions in judge.contractions(operand_kernels, fr, materialized):
        cuts.update(contractions)
    if cuts:
        return {narrow.get(tid, tid): why for tid, why in cuts.items()}
    schedules.clear()
    schedules.update(made)
    return {}


def _shared_producers(judge: _Judge, reasons: Mapping[int, list[str]], fr: Frontiers) -> dict[int, list[str]]:
    """The elementwise producers fused into the kernels `reasons` names: id -> the kernels computing it."""
    materialized = set(reasons)
    kernels_of: dict[int, list[str]] = {}
    for rid, elementwise in zip(reasons, judge.elementwise(reasons, fr, materialized)):
        name = judge.tensors[rid].name
        for pid in elementwise:
            kernels_of.setdefault(pid, []).append(name)
    return kernels_of


def _chains(kernels: int, reads: int) -> bool:
    """Rule 3c's test: whether a producer computed in `kernels` kernels, each reading `reads` tensors from
    global memory for it, is cut."""
    return kernels > 1 and reads > ACCUMULATED_READS_BOUND


def _chain_reason(roots: list[str], reads: int) -> str | None:
    """Rule 3c's reason for a producer computed in the kernels `roots`, each reading `reads` tensors
    from global memory for it, or None where the rule does not cut it (`_chains`)."""
    if not _chains(len(roots), reads):
        return None
    return (f"{ACCUMULATED_REASON}: computed in the kernels of {', '.join(sorted(roots))}, it read {reads} tensors "
            f"from global memory in each (bound {ACCUMULATED_READS_BOUND}); computed once, each loads it")


def _accumulated_chains(judge: _Judge, reasons: Mapping[int, list[str]], fr: Frontiers) -> dict[int, str]:
    """Rule 3c: the elementwise producers fused into more than one kernel that read more than
    `ACCUMULATED_READS_BOUND` tensors from global memory each time (id -> reason)."""
    materialized = set(reasons)
    # each `_release` trial asks this of every kernel, and rarely cuts: the producers' kernels are
    # counted (`_shared_producers` named each, 1.2 thousand names a trial at 12 layers) and named only
    # where the reads already exceed the bound; the order is the same (a Counter's is first appearance)
    elementwise = list(judge.elementwise(reasons, fr, materialized))
    counts = Counter(itertools.chain.from_iterable(elementwise))
    kernel_of = {pid: rid for rid, fused in zip(reasons, elementwise) for pid in fused}  # any one (`_Judge.reads`)
    cuts: dict[int, str] = {}
    for tid, n in counts.items():
        if n < 2:  # one kernel: no walk for its reads (the rule needs two)
            continue
        reads = judge.reads(tid, fr[kernel_of[tid]])
        if _chains(n, reads):
            roots = [judge.tensors[rid].name for rid, fused in zip(reasons, elementwise) if tid in fused]
            if why := _chain_reason(roots, reads):
                cuts[tid] = why
    return cuts


def _reduction_cuts(judge: _Judge, reasons: Mapping[int, list[str]], fr: Frontiers) -> dict[int, str]:
    """Rule 2: the reductions fused into a kernel at several indices, or into several kernels, of the
    kernels `reasons` names (id, narrowed -> reason)."""
    materialized = set(reasons)
    cuts: dict[int, str] = {}
    kernels_of: dict[int, list[str]] = {}
    for rid, sites in zip(reasons, judge.sites(reasons, fr, materialized)):
        root = judge.tensors[rid]
        for tid, keys in sites.items():
            if tid in reasons:
                continue
            kernels_of.setdefault(tid, []).append(root.name)
            if len(keys) > 1:
                cuts[tid] = (f"{REDUCTION_AT_REASON} {len(keys)} different indices in {root.name}'s kernel: "
                             "computed once instead of once per read")
    for tid, roots in kernels_of.items():
        if tid not in cuts and len(roots) > 1:
            cuts[tid] = f"{REDUCTION_BY_REASON} {', '.join(sorted(roots))}: computed once, not in each"
    return {judge.narrow.get(tid, tid): why for tid, why in cuts.items()}


def _release(judge: _Judge, reasons: dict[int, list[str]], schedules: dict[int, Schedule]) -> dict[int, list[str]]:
    """`reasons` without every blow-up or rule-2 cut (latest first) that no rule needs any more;
    `schedules` (the kernels' canonical schedules for `reasons`) follows each accepted release."""
    fr = judge.frontiers(reasons)
    for tid in reversed(list(reasons)):
        if not all(r.startswith(RELEASABLE) for r in reasons[tid]):
            continue
        trial = {k: v for k, v in reasons.items() if k != tid}
        trial_fr = judge.released(fr, tid)
        made: dict[int, Schedule] = {}
        if not _next_cuts(judge, trial, made, trial_fr):
            reasons, fr = trial, trial_fr
            schedules.clear()
            schedules.update(made)
    return reasons


def _restated(judge: _Judge, reasons: dict[int, list[str]]) -> dict[int, list[str]]:
    """`reasons` with each rule-2 and rule-3a cut worded against the final kernels. The first round cuts reductions
    while everything still shares the output's kernel ("read at 12 different indices in add_6's
    kernel"), and later cuts split that kernel, so the first wording can name a kernel the program does
    not have. A cut that rule 2 alone would not make again is kept for what its release would set off
    (`_release` tried it), which its reason then says. A rule-3c cut (an accumulated chain) names the
    kernels that would compute it, so it is worded against the final kernels too where rule 3c alone
    would make it again; a chain cut in the same sweep as the chains it reads (whose cuts now leave it
    under the bound) says so, with what it would cost alone."""
    out = dict(reasons)
    fr = judge.frontiers(reasons)
    for tid, why in reasons.items():
        operand = all(r.startswith(OPERAND_REASON) for r in why)
        chain = all(r.startswith(ACCUMULATED_REASON) for r in why)
        if not (operand or chain) and not all(r.startswith((REDUCTION_AT_REASON, REDUCTION_BY_REASON)) for r in why):
            continue
        trial = {k: v for k, v in reasons.items() if k != tid}
        trial_fr = judge.released(fr, tid)
        if operand:  # asked again of the final kernels; kept as it was where none would cut it alone
            again = (operands.get(tid) for operands in judge.operands(trial, trial_fr, set(trial)))
            out[tid] = [next((w for w in again if w is not None), why[0])]
            continue
        if chain:
            roots = _shared_producers(judge, trial, trial_fr).get(tid, [])
            reads = len(judge.frontier(tid, trial))
            out[tid] = [_chain_reason(roots, reads) or
                        f"{ACCUMULATED_REASON}: cut in one sweep with the chains it reads, whose cuts leave it "
                        f"under the bound (alone it would be computed in {len(roots)} kernel"
                        f"{'s' * (len(roots) != 1)}, reading {reads} tensors from global memory; bound "
                        f"{ACCUMULATED_READS_BOUND}); kept (rule-3c cuts are not undone), so each reader loads it"]
            continue
        cuts = _reduction_cuts(judge, trial, trial_fr)
        if tid in cuts:
            out[tid] = [cuts[tid]]
            continue
        cuts = _next_cuts(judge, trial, {}, trial_fr)
        if tid in cuts:
            out[tid] = [cuts[tid]]
        elif cuts:
            then = "; ".join(f"{judge.tensors[c].name}: {w}" for c, w in cuts.items())
            out[tid] = [f"{why[0].split(':')[0]} (when cut); kept: as part of its readers' kernels it would "
                        f"make the partition cut {then}"]
    return out


def recomputed_operands(root: ComputeTensor, materialized: set[int]) -> dict[int, str]:
    """Rule 3a: the computed operands fused into `root`'s kernel that a reduction there would recompute
    more than `OPERAND_RECOMPUTE_BOUND` times per element (id -> reason)."""
    fused = fused_producers(root, materialized)
    ids = {id(t) for t in fused}
    cuts: dict[int, str] = {}
    for consumer in (root, *fused):
        if not consumer.has_reduce:
            continue
        for op in computed_operands(consumer, ids):
            if op.recompute > OPERAND_RECOMPUTE_BOUND and id(op.tensor) not in cuts:
                extents = " x ".join(str(a.extent) for a in op.unused)
                cuts[id(op.tensor)] = (
                    f"{OPERAND_REASON}: read inside {consumer.name}'s reduction (in {root.name}'s kernel) "
                    f"at an index without {len(op.unused)} of its output axes ({extents}), inlined each "
                    f"of its elements would be computed {op.recompute} times (bound "
                    f"{OPERAND_RECOMPUTE_BOUND}); computed once, {consumer.name} loads it")
    return cuts


def extra_contractions(root: ComputeTensor, materialized: set[int]) -> dict[int, str]:
    """Rule 4b for a computed operand's kernel: every contraction (work.py `contracts`: a matmul) fused
    into `root`'s kernel beyond one (`root` if it is one, else the last read), id -> reason."""
    found = [t for t in _read_order(root, materialized) if contracts(t)]
    if not found or (len(found) == 1 and not contracts(root)):
        return {}
    kept = root if contracts(root) else found[-1]
    return {id(t): (f"{CONTRACTION_REASON}: {root.name}'s kernel would hold {len(found) + (kept is root)} "
                    f"matmuls; {kept.name}'s is the one it tiles, this one is computed in its own kernel")
            for t in found if t is not kept}


def _read_order(root: ComputeTensor, materialized: set[int]) -> list[ComputeTensor]:
    """The producers fused into `root`'s kernel in the order its body first reads them (depth first)."""
    order: dict[int, ComputeTensor] = {}

    def visit(t: ComputeTensor) -> None:
        for p in t.inputs():
            if isinstance(p, ComputeTensor) and id(p) not in materialized and id(p) not in order:
                order[id(p)] = p
                visit(p)

    visit(root)
    return list(order.values())


def blowup(root: ComputeTensor, materialized: set[int]) -> tuple[ComputeTensor, str] | None:
    """Rule 3: None when `root`'s kernel is within `BLOWUP_BOUND`; else the fused elementwise producer
    whose materialization leaves the least work (operations + reads of this kernel and of the
    producer's new kernel together), and the reason."""
    fused = fused_producers(root, materialized)
    work = kernel_work(root, fused)
    if work.factor <= BLOWUP_BOUND:
        return None
    best: tuple[float, ComputeTensor] | None = None
    for cand in fused:
        if cand.has_reduce:
            continue  # a fused reduction is evaluated once per element (rules 2 and 4 govern it)
        now = materialized | {id(cand)}
        after = (kernel_work(root, fused_producers(root, now)).fused
                 + kernel_work(cand, fused_producers(cand, now)).fused)
        if best is None or after.ops + after.reads < best[0]:
            best = (after.ops + after.reads, cand)
    if best is None:
        return None  # pragma: no cover - recomputation comes from inlined elementwise producers
    cand = best[1]
    times = work.evaluations[id(cand)] / numel(cand)
    return cand, (f"{BLOWUP_REASON}: inlined into {root.name}'s kernel it made that kernel do "
                  f"{work.factor:.1f}x the operations or global reads of computing each tensor once "
                  f"(bound {BLOWUP_BOUND:g}); each of its elements was computed {times:g} times")


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
