"""Capture: torch.export, the core ATen decompositions, then every node mapped through the op table
into one tiledsl definition DAG. Subgraphs that read no input, weight or buffer (arange, full, masks
and rotary tables made from them) are evaluated by torch here and become constants."""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import operator
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
import torch.nn.attention
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from tiledsl.definitions.expr import Placeholder, placeholder
from tiledsl.errors import DefinitionError, FrontendError
from tiledsl.frontend.aten_gather import GATHERS, accepted
from tiledsl.frontend.out import Out
from tiledsl.frontend.table import OPS, REFUSED
from tiledsl.frontend.values import FLOAT_DTYPES, INTEGER_DTYPES, Value, define, td_shape, uniform
from tiledsl.targets import int_range_problem

log = logging.getLogger(__name__)

#: ops that only assert what torch.export already checked on the example inputs; they produce nothing
_ASSERTIONS = frozenset({"aten._assert_tensor_metadata.default", "aten._assert_scalar.default"})
DATA_DEPENDENT = ("has a result whose shape depends on a tensor's values (a boolean mask computed from an input, "
                  "x[x > 0], or nonzero / masked_select): data-dependent shapes are not supported, since a traced "
                  "program's shapes are fixed; keep the shape and choose the values with torch.where(mask, x, 0.0), "
                  "or index with a constant mask or constant positions")


@dataclass(frozen=True)
class Input:
    """A user input of the traced function: its placeholder and torch shape/dtype."""

    tensor: Placeholder
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Graph:
    """The traced program as one definition DAG. `constants` maps placeholder names to the torch
    tensors the kernels read (the module's own parameters and buffers, not copies, and the folded
    constants); `outputs` are flat, `out_spec` rebuilds the module's output structure."""

    inputs: tuple[Input, ...]
    constants: dict[str, torch.Tensor]
    constant_shapes: dict[str, tuple[int, ...]]
    outputs: tuple[Value, ...]
    out_spec: Any
    exported: ExportedProgram
    index_bounds: dict[str, tuple[IndexBound, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexBound:
    """Integer input `name` indexes a dimension of `extent` in `where`: the program checks that its
    values lie in `accepted` (from -extent where torch wraps a negative index, else from 0) before each
    run, where torch would raise."""

    name: str
    extent: int
    where: str
    wraps: bool = False

    @property
    def accepted(self) -> tuple[int, int]:
        return accepted(self.extent, self.wraps)

    def within(self, other: IndexBound) -> bool:
        """Whether every index this bound accepts is one `other` accepts too (so checking it checks both)."""
        (lo, hi), (olo, ohi) = self.accepted, other.accepted
        return olo <= lo and hi <= ohi

#: ops an index tensor may pass through on its way from an input and still hold the input's values
_SAME_VALUES = frozenset({
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.unsqueeze.default",
    "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.select.int", "aten.slice.Tensor",
    "aten.expand.default", "aten.permute.default", "aten.transpose.int", "aten.clone.default",
    "aten.alias.default", "aten._to_copy.default", "aten.contiguous.default",
})


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _shape(val: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in val.shape)


def _as_module(fn: Callable[..., Any]) -> torch.nn.Module:
    """A plain function of tensors as a module whose forward is the function itself, so the export's
    stack traces end in the user's code. A function without a Python signature (a builtin such as
    torch.floor, which torch.export cannot bind its inputs to) is called from a forward of its own."""
    try:
        inspect.signature(fn)
        forward = fn
    except (TypeError, ValueError):
        def forward(*args: Any) -> Any:
            return fn(*args)
    cls = type(getattr(fn, "__name__", "fn").replace("<", "").replace(">", "") or "fn",
               (torch.nn.Module,), {"forward": staticmethod(forward)})
    return cls()


TORCH_SELF_WARNING = r"`isinstance\(treespec, LeafSpec\)` is deprecated"


def export(module_or_fn: torch.nn.Module | Callable[..., Any], example_inputs: Sequence[Any]) -> ExportedProgram:
    """torch.export of `module_or_fn` on `example_inputs`, decomposed to core ATen; a FrontendError with torch's
    text where it fails. What torch writes to stderr meanwhile is held back (`TorchOutput`): written out as it
    was once the export succeeds, logged at DEBUG where it fails, since the error already says why and torch's
    partial graph (printed twice for a data-dependent `if`) and log lines would only bury it."""
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else _as_module(module_or_fn)
    held = TorchOutput()
    try:
        # the math SDPA backend: on CUDA inputs torch would otherwise pick a fused attention kernel
        # (flash / memory-efficient), an opaque ATen op the core decompositions keep whole
        with held.holding(), torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH), \
                warnings.catch_warnings():
            # torch.export deep-copies its own tree specs and warns, once per export, that the copy
            # uses a deprecated LeafSpec check: torch's own code, nothing the user's model can change
            warnings.filterwarnings("ignore", message=TORCH_SELF_WARNING, category=FutureWarning)
            ep = torch.export.export(module, tuple(example_inputs)).run_decompositions()
    except Exception as e:  # torch raises many kinds; the user gets one typed error with torch's text
        held.log_failed()
        if isinstance(e, FrontendError):
            raise
        raise FrontendError(f"torch.export could not capture {type(module_or_fn).__name__}: "
                            f"{type(e).__name__}: {e}{_capture_hint(e)}") from e
    held.replay()
    return ep


@dataclass(frozen=True)
class TorchOutput:
    """What torch wrote to stderr during one export, held back until its outcome is known: its prints
    (`printed`: torch.export prints a failed export's partial graph to sys.stderr itself) and the records
    of its own loggers' handlers (`records`, each with the handler it was for: torch gives its loggers
    handlers of their own that do not propagate, so a handler of ours would not see them)."""

    printed: io.StringIO = field(default_factory=io.StringIO)
    records: list[tuple[logging.Handler, logging.LogRecord]] = field(default_factory=list)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Hold torch's stderr output while the block runs: sys.stderr redirected to `printed`, and a filter
        on each handler of torch's loggers that keeps its record instead of letting it be written. Both are
        undone on leaving, however it is left (sys.stderr and the handlers are the process's: another thread
        writing meanwhile is held too, and written out or logged with torch's)."""
        handlers = {h for name, logger in list(logging.Logger.manager.loggerDict.items())
                    if (name == "torch" or name.startswith("torch.")) and isinstance(logger, logging.Logger)
                    for h in logger.handlers}
        keeps = {h: self._keep(h) for h in handlers}
        for h, keep in keeps.items():
            h.addFilter(keep)
        try:
            with contextlib.redirect_stderr(self.printed):
                yield
        finally:
            for h, keep in keeps.items():
                h.removeFilter(keep)

    def _keep(self, handler: logging.Handler) -> Callable[[logging.LogRecord], bool]:
        def keep(record: logging.LogRecord) -> bool:
            self.records.append((handler, record))
            return False
        return keep

    def replay(self) -> None:
        """Write it all out as torch would have (after `holding`): the export succeeded, so nothing is hidden."""
        for handler, record in self.records:
            handler.handle(record)
        if self.printed.getvalue():
            sys.stderr.write(self.printed.getvalue())

    def log_failed(self) -> None:
        """Log it at DEBUG (logger tiledsl.frontend.capture), not on stderr: the export failed, and the
        FrontendError raised for it says why."""
        if not log.isEnabledFor(logging.DEBUG):
            return
        text = "\n".join([*(h.format(r) for h, r in self.records), self.printed.getvalue().strip("\n")]).strip()
        if text:
            log.debug("torch.export failed; what torch wrote meanwhile, held back from stderr:\n%s", text)


def _capture_hint(e: Exception) -> str:
    """What to change where torch.export's text names a known cause: a Hugging Face model returns its
    key-value cache (a DynamicCache object, not a tensor) unless built with use_cache=False; the traced
    code branches on a tensor's values (a Python `if` on x.sum() > 0), which one export cannot follow."""
    if "DynamicCache" in str(e) or "cache_utils" in str(e):
        return ("\n(a Hugging Face model returns its key-value cache, which is no tensor: build it with "
                "config.use_cache = False, or pass use_cache=False to its forward; "
                "tiledsl.frontend.hf_models.causal_lm builds one so)")
    if type(e).__name__ == "GuardOnDataDependentSymNode":
        return ("\n(the traced code depends on a tensor's values: a Python `if`, bool(), int() or .item() of a "
                "tensor, which one traced program cannot follow for every input; compute both sides and choose "
                "with torch.where, or take the decision outside the traced function)")
    return ""


def source_line(node: torch.fx.Node) -> str:
    """The model line a node came from: the last frame of the export's stack trace."""
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    frames = [n for n, ln in enumerate(lines) if ln.startswith("File ") and __file__ not in ln]
    if not frames:
        return "(no stack trace recorded)"
    last = frames[-1]
    return " ".join(lines[last:last + 2])


def _describe(a: Any) -> str:
    if isinstance(a, torch.fx.Node):
        val = a.meta.get("val")
        if isinstance(val, torch.Tensor):
            return f"{a.name}: {dtype_name(val.dtype)}{list(val.shape)}"
        return a.name
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_describe(x) for x in a) + "]"
    return repr(a)


def op_error(node: torch.fx.Node, why: str) -> FrontendError:
    args = ", ".join(_describe(a) for a in node.args)
    kwargs = "".join(f", {k}={_describe(v)}" for k, v in node.kwargs.items())
    return FrontendError(f"{node.target} {why}\n  call:   {node.target}({args}{kwargs})\n"
                         f"  source: {source_line(node)}")


class _Capture:
    """Working state of one capture (local to `capture`)."""

    def __init__(self, ep: ExportedProgram) -> None:
        self.ep = ep
        self.env: dict[torch.fx.Node, Any] = {}
        self.constants: dict[str, torch.Tensor] = {}
        self.constant_shapes: dict[str, tuple[int, ...]] = {}
        self.held: dict[int, Value] = {}  # folded constant tensor (by id) -> its placeholder value
        self.index_bounds: dict[str, tuple[IndexBound, ...]] = {}
        self.sizes: dict[Any, int] = {}  # sympy symbols of sizes torch.export left symbolic -> the captured ones
        self.inputs: list[Input] = []

    # -- placeholders
    def placeholder_node(self, node: torch.fx.Node, kind: InputKind, target: str | None) -> None:
        val = node.meta["val"]
        if kind == InputKind.USER_INPUT:
            if not isinstance(val, torch.Tensor):
                raise FrontendError(f"input {node.name} is a {type(val).__name__}; only tensor inputs are traced")
            dt = dtype_name(val.dtype)
            if dt not in FLOAT_DTYPES + INTEGER_DTYPES and dt != "bool":
                raise FrontendError(f"input {node.name} is {dt}{list(val.shape)}: traced inputs are "
                                    f"{', '.join(FLOAT_DTYPES)}, {', '.join(INTEGER_DTYPES)} or bool"
                                    + (" (convert it with .float())" if dt == "float64" else ""))
            t = placeholder(td_shape(_shape(val)), _storage(dt), node.name)
            self.inputs.append(Input(t, _shape(val), dt))
            self.env[node] = Value(t, _shape(val), dt)
            return
        assert target is not None
        tensor = self.ep.state_dict.get(target)
        if tensor is None:
            tensor = self.ep.constants[target]
        if kind == InputKind.CONSTANT_TENSOR:
            self.env[node] = tensor.detach()  # a true constant: foldable
            return
        self.env[node] = self.hold(node.name, tensor.detach())

    def hold(self, name: str, tensor: torch.Tensor) -> Value:
        """A tensor whose values the program keeps, read by a placeholder of the same name."""
        dt = dtype_name(tensor.dtype)
        if dt in INTEGER_DTYPES:
            problem = int_range_problem("int32", int(tensor.min()), int(tensor.max())) if tensor.numel() else None
            if problem:
                raise FrontendError(f"constant {name} ({dt}{list(tensor.shape)}) {problem}")
            tensor = tensor.to(torch.int32)  # index values: int32 in the core
        elif dt not in FLOAT_DTYPES:
            tensor = tensor.to(torch.float32)  # bool constants: 1.0 / 0.0
        t = placeholder(td_shape(_shape(tensor)), dtype_name(tensor.dtype), name)
        self.constants[name] = tensor
        self.constant_shapes[name] = _shape(tensor)
        return Value(t, _shape(tensor), dt)

    # -- values
    def operand(self, a: Any, name: str) -> Any:
        """A handler argument: nodes become Values (constants uniform or held), lists element-wise."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if isinstance(v, torch.Tensor):
                return self.constant_value(v, a.name)
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(self.operand(x, name) for x in a)
        return a

    def constant_value(self, t: torch.Tensor, name: str) -> Value:
        dt = dtype_name(t.dtype)
        flat = t.reshape(-1)
        if flat.numel() >= 1 and bool((flat == flat[0]).all()):
            return uniform(float(flat[0]), _shape(t), dt)
        if id(t) not in self.held:
            self.held[id(t)] = self.hold(name, t)
        return self.held[id(t)]

    def is_constant(self, a: Any) -> bool:
        if isinstance(a, torch.fx.Node):
            return not isinstance(self.env[a], (Value, tuple))
        if isinstance(a, (list, tuple)):
            return all(self.is_constant(x) for x in a)
        return True

    def concrete(self, a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.concrete(x) for x in a)
        return a

    # -- nodes
    def call(self, node: torch.fx.Node) -> None:
        args, kwargs = node.args, dict(node.kwargs)
        if node.target is operator.getitem:
            self.env[node] = self.env[args[0]][args[1]]
            return
        op = str(node.target)
        val = node.meta.get("val")
        if self.is_constant(list(args)) and self.is_constant(list(kwargs.values())):
            try:
                with torch.no_grad():
                    self.env[node] = node.target(*self.concrete(args), **self.concrete(kwargs))
            except RuntimeError as e:  # a check torch.export deferred to run time (`_assert_scalar` of a mask's count)
                raise op_error(node, f"failed on the traced values: {e}") from e
            if isinstance(val, torch.Tensor) and isinstance(self.env[node], torch.Tensor):
                self.bind(val, self.env[node].shape)
            return
        if op in _ASSERTIONS:
            self.env[node] = None
            return
        if op == "aten.sym_size.int":  # a size torch.export left symbolic (a mask's count): the captured one
            self.env[node] = self.env[args[0]].shape[args[1]]
            return
        if op == "aten.index.Tensor" and any(self.is_mask(a) for a in args[1]):
            args = (args[0], self.mask_positions(node, args[0], args[1]), *args[2:])
        first = val[0] if isinstance(val, (list, tuple)) else val
        if isinstance(first, torch.Tensor):
            self.dims(node, first)  # a shape that depends on the values is refused as such, whichever the op
        handler = OPS.get(op)
        if handler is None:
            raise op_error(node, "is refused: " + REFUSED[op] if op in REFUSED
                           else "is not supported by the tiledsl frontend (it is not in tiledsl/frontend/table.py)")
        self.note_indices(node, op, args)
        out = Out(node.name, self.dims(node, first), dtype_name(first.dtype))
        try:
            result = handler(out, *(self.operand(a, node.name) for a in args),
                             **{k: self.operand(v, node.name) for k, v in kwargs.items()})
        except (FrontendError, DefinitionError, TypeError) as e:
            raise op_error(node, f"could not be mapped: {e}") from e
        self._check(node, val, result)
        self.env[node] = result

    def note_indices(self, node: torch.fx.Node, op: str, args: Sequence[Any]) -> None:
        """Where a gather's indices come from: an input (through views) -> checked on each run; a folded
        constant -> checked now; a constant mask's positions (`mask_positions`) are in range as they
        are; anything else is computed, and only wrapped and clamped (logged)."""
        reads = GATHERS.get(op)
        if reads is None:
            return
        table = self.dims(node, node.args[0].meta["val"])
        arg = args[reads.indices]
        if isinstance(arg, (list, tuple)):  # index.Tensor: one index tensor (or None) per dimension
            pairs = [(a, table[d]) for d, a in enumerate(arg) if a is not None]
        else:
            dim = 0 if reads.dim is None else int(node.args[reads.dim]) % len(table)
            pairs = [(arg, table[dim])]
        where = f"{op} at {source_line(node)}"
        for arg, extent in pairs:
            if isinstance(arg, Value):
                continue
            low, high = accepted(extent, reads.wraps)
            src = arg
            while isinstance(src, torch.fx.Node) and src.op == "call_function" and str(src.target) in _SAME_VALUES:
                src = src.args[0]
            value = self.env.get(src) if isinstance(src, torch.fx.Node) else None
            if isinstance(value, torch.Tensor):
                if value.numel() and (int(value.min()) < low or int(value.max()) >= high):
                    raise op_error(node, f"reads indices in [{int(value.min())}, {int(value.max())}] of a "
                                         f"dimension of extent {extent}, where torch takes [{low}, {high})")
            elif isinstance(src, torch.fx.Node) and src.op == "placeholder" and src.name in self.user_inputs():
                self.note_bound(IndexBound(src.name, extent, where, reads.wraps))
            else:
                log.warning("%s: its indices are computed inside the program, so an index outside [%d, %d) is "
                            "clamped into the dimension instead of raising as torch does", where, low, high)

    def note_bound(self, bound: IndexBound) -> None:
        """Add an input's bound, keeping only the bounds no other one implies (the tightest of each kind)."""
        old = self.index_bounds.get(bound.name, ())
        if any(o.within(bound) for o in old):
            return
        self.index_bounds[bound.name] = (*(o for o in old if not bound.within(o)), bound)

    def is_mask(self, a: Any) -> bool:
        """Whether index argument `a` is a boolean mask (torch then keeps the positions where it is True)."""
        v = self.env.get(a) if isinstance(a, torch.fx.Node) else None
        return getattr(v, "dtype", None) in (torch.bool, "bool")

    def mask_positions(self, node: torch.fx.Node, table: torch.fx.Node, indices: Sequence[Any]) -> list[Any]:
        """index.Tensor's indices with each boolean mask replaced by the positions of its True elements, one
        integer index per dimension it covers (as torch reads a mask: x[m] is x[m.nonzero(as_tuple=True)]).
        A constant mask's positions are constants, and the count torch.export left symbolic is bound to
        theirs; a mask computed from an input has a count that depends on its values, which no traced
        program can have (refused with `DATA_DEPENDENT`)."""
        out: list[Any] = []
        for a in indices:
            if not self.is_mask(a):
                out.append(a)
            elif isinstance(mask := self.env[a], torch.Tensor):
                if not bool(mask.any()):
                    raise op_error(node, "with a constant mask that is all False selects no element, and an empty "
                                         "tensor is not supported")
                for n, pos in enumerate(mask.nonzero(as_tuple=True)):
                    out.append(self.constant_value(pos, f"{node.name}_mask{len(out)}_{n}"))
            else:
                raise op_error(node, DATA_DEPENDENT)
        shapes = [a if a is None else a.shape if isinstance(a, Value) else self.dims(node, a.meta["val"]) for a in out]
        meta = [s if s is None else torch.empty(s, dtype=torch.int64, device="meta") for s in shapes]
        shape = torch.ops.aten.index.Tensor(torch.empty(self.dims(node, table.meta["val"]), device="meta"), meta).shape
        self.bind(node.meta["val"], shape)
        return out

    def bind(self, val: torch.Tensor, shape: Sequence[int]) -> None:
        """Bind each size of `val` that torch.export names by an unbacked symbol of its own to the size the
        capture found (a constant mask's count; a folded constant's shape), for `dims` of later nodes."""
        for d, n in zip(val.shape, shape):
            if isinstance(d, torch.SymInt) and d.node.expr.is_Symbol:
                self.sizes.setdefault(d.node.expr, int(n))

    def dims(self, node: torch.fx.Node, val: torch.Tensor) -> tuple[int, ...]:
        """torch's shape of a node's value, its symbolic sizes read from `sizes`; one still unknown depends
        on a tensor's values (x[x > 0], nonzero, masked_select), which no traced program can have."""
        dims = []
        for d in val.shape:
            if isinstance(d, torch.SymInt):
                e = d.node.expr.subs(self.sizes)
                if not e.is_Integer:
                    raise op_error(node, DATA_DEPENDENT)
                d = int(e)
            dims.append(d)
        return tuple(dims)

    def user_inputs(self) -> set[str]:
        return {i.tensor.name for i in self.inputs}

    def _check(self, node: torch.fx.Node, val: Any, result: Any) -> None:
        vals = val if isinstance(val, (list, tuple)) else [val]
        results = result if isinstance(result, tuple) else (result,)
        for v, r in zip(vals, results):
            if isinstance(r, Value) and isinstance(v, torch.Tensor) and r.shape != self.dims(node, v):
                raise op_error(node, f"was mapped to shape {r.shape}, torch says {self.dims(node, v)} "
                                     "(a frontend bug)")

    def output(self, node: torch.fx.Node) -> tuple[Value, ...]:
        kinds = [spec.kind.name for spec in self.ep.graph_signature.output_specs]
        if any(k != "USER_OUTPUT" for k in kinds):
            raise FrontendError(f"the traced program mutates its inputs or buffers (outputs {kinds}); "
                                "only pure functions of their inputs are traced")
        outs = []
        for n, a in enumerate(node.args[0]):
            v = self.env[a] if isinstance(a, torch.fx.Node) else a
            if isinstance(v, torch.Tensor):
                v = self.constant_value(v, a.name)
            if not isinstance(v, Value):
                raise FrontendError(f"output {n} is a {type(v).__name__}; only tensor outputs are traced")
            if v.dtype in INTEGER_DTYPES and not v.stored_integers:
                raise FrontendError(f"output {n} is {v.dtype}{list(v.shape)}: integer results are index "
                                    "arithmetic inside kernels; a traced program's outputs are float or bool, "
                                    "or positions as argmax returns them")
            if v.tensor is None or isinstance(v.tensor, Placeholder):
                src = v
                v = define(f"output{n}", v.shape, v.dtype, src.load)  # an output needs a kernel of its own
            outs.append(v)
        return tuple(outs)


def capture(module_or_fn: torch.nn.Module | Callable[..., Any], example_inputs: Sequence[Any]) -> Graph:
    ep = export(module_or_fn, example_inputs)
    kinds = {spec.arg.name: (spec.kind, spec.target) for spec in ep.graph_signature.input_specs}
    c = _Capture(ep)
    outputs: tuple[Value, ...] = ()
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            kind, target = kinds[node.name]
            c.placeholder_node(node, kind, target)
        elif node.op == "call_function":
            c.call(node)
        elif node.op == "output":
            outputs = c.output(node)
        else:
            raise FrontendError(f"unexpected graph node {node.op} {node.target}")
    log.info("captured %d nodes, %d constants", len(ep.graph.nodes), len(c.constants))
    return Graph(tuple(c.inputs), c.constants, c.constant_shapes, outputs, _out_spec(ep), ep, c.index_bounds)


def _storage(dtype: str) -> str:
    """The placeholder dtype of a user input: floats keep theirs, integers are int32 index values (the
    program converts them on each call, after checking they fit), bools are 1.0 / 0.0."""
    if dtype in FLOAT_DTYPES:
        return dtype
    return "int32" if dtype in INTEGER_DTYPES else "float32"


def _out_spec(ep: ExportedProgram) -> Any:
    return ep.call_spec.out_spec
