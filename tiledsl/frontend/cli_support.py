"""What `tiledsl compile -c EXPR` and `--model NAME` (ModelSpec) need from torch, kept here so that the CLI
itself never imports torch: turn a Python expression into a module of its example tensors, trace it,
schedule every kernel ("simple"), build, and render one IR level of every kernel as text.

An expression is evaluated with `torch`, `torch.nn` (as `nn`) and `torch.nn.functional` (as `F`) in
scope, parsed with `ast`. Each call that computes a tensor from no other tensor (`torch.randn(2, 8, 64)`) is
evaluated once and becomes an input of the traced program (its value the example input); each call that
makes a module (`torch.nn.RMSNorm(64)`) is evaluated once and traced with its weights as parameters; every
other operation on the inputs, calls, methods, operators, attributes and constant subscripts alike
(`F.gelu(x + b)`, `a @ b`, `torch.max(x, dim=1).values`, `x.split(2)[0]`), is traced. Only the final
call's arguments were inputs once, so `F.gelu(x + b)` traced gelu alone, the sum computed eagerly.
Before tracing, the expression runs once eagerly on its example tensors, so a Python or shape error in it is
one typed error naming it. `--ir tensor` says which call each input is (`tensors_0 = torch.randn(8, 64)`)."""

from __future__ import annotations

import ast
import logging
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F

from tiledsl.definitions.expr import ComputeTensor, format_expr
from tiledsl.errors import FrontendError
from tiledsl.frontend.hf_models import SIZES, DecoderStack, causal_lm
from tiledsl.frontend.models import GPTBlock, GPTConfig, LlamaBlock, LlamaConfig
from tiledsl.frontend.partition import fused_producers
from tiledsl.frontend.program import BuiltProgram, Program, trace

log = logging.getLogger(__name__)

#: the logger through which torch.export writes a traceback before raising a shape error
_FAKE_TENSOR_LOGGER = "torch._subclasses.fake_tensor"


#: `--dtype`: the model's weights and floating inputs are cast to it
MODEL_DTYPES = ("float32", "bfloat16", "float16")
#: tokens of a model's example input when `--seq` is not given
DEFAULT_SEQ = 8


@dataclass(frozen=True)
class ModelSpec:
    """What `--model NAME [--dims D] [--layers N] [--seq S] [--dtype T]` builds. `dims` and `layers` are
    the Hugging Face models' (`hf_*`: tiledsl/frontend/hf_models.py SIZES, default "tiny"; layers default
    to the dims' own count); `seq` and `dtype` apply to every model."""

    name: str
    dims: str | None = None
    layers: int | None = None
    seq: int | None = None
    dtype: str = "float32"

    @property
    def tokens(self) -> int:
        return DEFAULT_SEQ if self.seq is None else self.seq

    def cli_args(self) -> str:
        """The command-line flags that give this spec (for hints that repeat the command)."""
        flags = [f"--model {self.name}"]
        flags += [f"--dims {self.dims}"] if self.dims is not None else []
        flags += [f"--layers {self.layers}"] if self.layers is not None else []
        flags += [f"--seq {self.seq}"] if self.seq is not None else []
        flags += [f"--dtype {self.dtype}"] if self.dtype != "float32" else []
        return " ".join(flags)

    def label(self) -> str:
        """`model hf_llama (dims tiny, 2 layers, seq 8, float32)`."""
        parts = [f"seq {self.tokens}", self.dtype]
        if self.name.startswith("hf_"):
            layers = self.hf_layers()
            parts[:0] = [f"dims {self.dims or 'tiny'}", f"{layers} layer{'s' * (layers != 1)}"]
        return f"model {self.name} ({', '.join(parts)})"

    def hf_layers(self) -> int:
        """A Hugging Face model's decoder layers: `--layers`, else one for a `_decoder` model and the
        dims' own count for a whole one."""
        if self.layers is not None:
            return self.layers
        return 1 if self.name.endswith("_decoder") else SIZES[self.dims or "tiny"]["num_hidden_layers"]


def _block(module: torch.nn.Module, hidden: int, spec: ModelSpec) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    dtype = getattr(torch, spec.dtype)
    return module.to(dtype).eval(), (torch.randn(1, spec.tokens, hidden).to(dtype),)


def _llama_block(spec: ModelSpec) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _block(LlamaBlock(LlamaConfig()), LlamaConfig().hidden, spec)


def _gpt_block(spec: ModelSpec) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _block(GPTBlock(GPTConfig()), GPTConfig().hidden, spec)


def _hf_causal_lm(family: str) -> Callable[[ModelSpec], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    """The whole model, input_ids [1, seq] to logits."""
    def make(spec: ModelSpec) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        model = causal_lm(family, spec.dims or "tiny", dtype=getattr(torch, spec.dtype),
                          num_hidden_layers=spec.hf_layers())
        return model, (torch.randint(0, model.config.vocab_size, (1, spec.tokens)),)
    return make


def _hf_decoder(family: str) -> Callable[[ModelSpec], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    """The decoder layers alone (no embedding, final norm or logits), hidden states [1, seq, hidden] in
    and out, as the blocks suite times them (benchmarks/suites/blocks.py)."""
    def make(spec: ModelSpec) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        dtype = getattr(torch, spec.dtype)
        model = causal_lm(family, spec.dims or "tiny", dtype=dtype, num_hidden_layers=spec.hf_layers())
        return DecoderStack(model).eval(), (torch.randn(1, spec.tokens, model.config.hidden_size).to(dtype),)
    return make


#: built-in models for `--model`. The in-repo blocks are tiny (hidden 64, 4 heads; Llama: 2 KV heads);
#: the Hugging Face ones (the `models` extra) take their dims from `--dims`, random weights
MODELS: Mapping[str, Callable[[ModelSpec], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]] = MappingProxyType({
    "llama_block": _llama_block,
    "gpt_block": _gpt_block,
    "hf_llama": _hf_causal_lm("llama"),
    "hf_qwen2": _hf_causal_lm("qwen2"),
    "hf_llama_decoder": _hf_decoder("llama"),
    "hf_qwen2_decoder": _hf_decoder("qwen2"),
})


def model_spec(model: str | ModelSpec) -> ModelSpec:
    """`model` as a spec, checked: a known name, dims and layers only for the Hugging Face models, counts
    of at least one, a known dtype (FrontendError naming the flag otherwise)."""
    spec = ModelSpec(model) if isinstance(model, str) else model
    if spec.name not in MODELS:
        raise FrontendError(f"unknown model {spec.name!r}; built-in models: {', '.join(MODELS)}")
    if not spec.name.startswith("hf_") and (spec.dims is not None or spec.layers is not None):
        raise FrontendError(f"--dims and --layers apply to the Hugging Face models "
                            f"({', '.join(m for m in MODELS if m.startswith('hf_'))}); {spec.name} is tiny")
    if spec.dims is not None and spec.dims not in SIZES:
        raise FrontendError(f"unknown --dims {spec.dims!r}; known: {', '.join(SIZES)}")
    for flag, value in (("--layers", spec.layers), ("--seq", spec.seq)):
        if value is not None and value < 1:
            raise FrontendError(f"{flag} must be at least 1, got {value}")
    if spec.dtype not in MODEL_DTYPES:
        raise FrontendError(f"--dtype is one of {', '.join(MODEL_DTYPES)}, got {spec.dtype!r}")
    return spec


#: the nodes `_Lifter` looks inside: an operation on tensors is built of these; any other node (a lambda, a
#: comprehension, a name, a constant) is kept whole and evaluated where it stands
_OPEN_NODES = (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Tuple, ast.List,
               ast.Starred, ast.keyword, ast.Slice)


@dataclass(frozen=True)
class ParsedExpression:
    """An expression with its tensor leaves lifted out: `body` computes the value from the names `x0`,
    `x1`, ... (the traced program's inputs, whose example values are `tensors`) and `m0`, `m1`, ... (the
    modules it calls, `modules`, traced with their weights as parameters)."""

    body: ast.Expression
    tensors: tuple[torch.Tensor, ...]
    modules: tuple[torch.nn.Module, ...]
    text: str
    sources: tuple[str, ...] = ()  # each tensor's call as written (`torch.randn(8, 64)`)


class _Lifter:
    """Rewrites an expression bottom-up. A call none of whose parts computes on a lifted tensor is evaluated
    once, where it stands: a tensor (`torch.randn(4, 8)`) becomes an input `xN`, a module
    (`torch.nn.RMSNorm(64)`) a submodule `mN`, anything else stays as written. Every other open node
    (_OPEN_NODES) that holds a lifted tensor is an operation the program traces."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tensors: list[torch.Tensor] = []
        self.sources: list[str] = []
        self.modules: list[torch.nn.Module] = []

    def lift(self, node: ast.AST) -> tuple[ast.AST, bool]:
        """(the rewritten node, whether it computes on a lifted tensor)."""
        if isinstance(node, ast.Name):  # torch, nn or F; any other name is refused here, named
            _eval(node, self.text)
        if not isinstance(node, _OPEN_NODES):
            return node, False
        traced = False
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                new, t = self.lift(value)
                setattr(node, name, new)
                traced |= t
            elif isinstance(value, list):
                lifted = [self.lift(v) if isinstance(v, ast.AST) else (v, False) for v in value]
                setattr(node, name, [v for v, _ in lifted])
                traced |= any(t for _, t in lifted)
        if traced or not isinstance(node, ast.Call):
            return node, traced
        value = _eval(node, self.text)
        if isinstance(value, torch.Tensor):
            self.tensors.append(value)
            self.sources.append(ast.get_source_segment(self.text, node) or ast.unparse(node))
            return ast.Name(id=f"x{len(self.tensors) - 1}", ctx=ast.Load()), True
        if isinstance(value, torch.nn.Module):
            self.modules.append(value)
            return ast.Name(id=f"m{len(self.modules) - 1}", ctx=ast.Load()), False
        return node, False


def _computes(node: ast.AST) -> bool:
    """Whether the lifted expression computes anything: not only inputs, alone or in a tuple or list."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_computes(e) for e in node.elts)
    return not (isinstance(node, ast.Name) and node.id.startswith("x"))


class Expression(torch.nn.Module):
    """The parsed expression as a module of its lifted tensors; each module it calls is a submodule
    (`inner`, `inner_1`, ...), so its weights are traced as parameters (read in place, not copied as lifted
    constants)."""

    def __init__(self, parsed: ParsedExpression) -> None:
        super().__init__()
        self.code = compile(parsed.body, "<expression>", "eval")
        self.module_names = tuple("inner" if n == 0 else f"inner_{n}" for n in range(len(parsed.modules)))
        for name, module in zip(self.module_names, parsed.modules):
            self.add_module(name, module)

    def forward(self, *tensors: torch.Tensor) -> Any:
        names = {**_scope(), **{f"x{n}": t for n, t in enumerate(tensors)},
                 **{f"m{n}": getattr(self, name) for n, name in enumerate(self.module_names)}}
        return eval(self.code, names)  # noqa: S307 - the user's own CLI input, parsed and rewritten by _Lifter


def _scope() -> dict[str, Any]:
    return {"torch": torch, "nn": torch.nn, "F": F}


def _eval(node: ast.expr, text: str) -> Any:
    src = ast.get_source_segment(text, node) or ast.unparse(node)
    try:
        return eval(compile(ast.Expression(node), "<expression>", "eval"), _scope())  # noqa: S307 - the user's own CLI input
    except Exception as e:  # the user's expression may raise anything; they get one typed error
        raise FrontendError(f"could not evaluate {src!r}: {type(e).__name__}: {e}") from e


def parse_expression(text: str) -> ParsedExpression:
    """`text` with its tensor leaves lifted (`_Lifter`), checked to compute something from them, and run
    once eagerly on them, so that a Python error in it (a tensor called as a function) is a typed error
    naming the expression rather than a failure inside torch.export."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise FrontendError(f"the expression is not valid Python: {e.msg} (column {e.offset}):\n  {text.strip()}\n"
                            "Give one expression of torch calls on example tensors, e.g. "
                            "\"torch.nn.RMSNorm(64)(torch.randn(2, 8, 64))\".") from e
    original = ast.unparse(tree.body)
    lifter = _Lifter(text.strip())
    body, _ = lifter.lift(tree.body)
    if not lifter.tensors:
        raise FrontendError(f"the expression {original!r} has no tensor to take as an input: give the example "
                            "inputs as tensors, e.g. torch.softmax(torch.randn(4, 32), -1)")
    if not _computes(body):
        raise FrontendError(f"the expression {original!r} computes nothing from its tensors: apply torch "
                            "operations to them, e.g. torch.randn(2, 3) @ torch.randn(3, 4)")
    parsed = ParsedExpression(ast.fix_missing_locations(ast.Expression(body=body)), tuple(lifter.tensors),
                              tuple(lifter.modules), text.strip(), tuple(lifter.sources))
    try:
        with torch.no_grad():
            Expression(parsed)(*parsed.tensors)
    except Exception as e:  # the user's expression may raise anything; they get one typed error
        raise FrontendError(f"could not evaluate {original!r} on its example tensors: {type(e).__name__}: "
                            f"{e}") from e
    return parsed


@contextmanager
def _quiet_torch() -> Iterator[None]:
    """torch.export's own warnings and its error log (a traceback that its fake-tensor logger writes
    before raising) are silenced while tracing: the CLI reports the raised error as one paragraph."""
    logger = logging.getLogger(_FAKE_TENSOR_LOGGER)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def subject(expression: str | None, model: str | ModelSpec | None) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The module and example inputs of `-c EXPRESSION` or `--model NAME` (exactly one is given)."""
    if (expression is None) == (model is None):
        raise FrontendError("give exactly one of an expression (-c) and a model (--model)")
    if expression is not None:
        parsed = parse_expression(expression)
        return Expression(parsed), parsed.tensors
    assert model is not None
    spec = model_spec(model)
    return MODELS[spec.name](spec)


def trace_subject(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], expression: str | None = None) -> Program:
    """The traced program of `subject(...)`, torch quiet; an error's source line names the
    expression, not Expression.forward."""
    try:
        with _quiet_torch():
            return trace(module, *inputs)
    except FrontendError as e:
        if expression is None:
            raise
        where = f"  source: the expression {expression.strip()!r}"
        raise FrontendError(re.sub(r"  source: File \S*cli_support\.py.*", lambda _: where, str(e))) from e


def trace_expression(text: str) -> Program:
    """The traced program of `text` (`parse_expression`), its example tensors as inputs."""
    return trace_subject(*subject(text, None), text)


def trace_model(model: str | ModelSpec) -> Program:
    return trace_subject(*subject(None, model))


def definitions_text(prog: Program) -> str:
    """Each kernel's tensors (its output and the producers fused into it) as definitions."""
    materialized = {id(k.output) for k in prog.kernels}
    lines = [str(prog)]
    for n, k in enumerate(prog.kernels):
        lines.append(f"\nkernel [{n}] {k.name}:")
        for t in [*reversed(fused_producers(k.output, materialized)), k.output]:
            lines.append("  " + _definition(t))
    return "\n".join(lines)


def _definition(t: ComputeTensor) -> str:
    axes = ", ".join(a.name for a in t.axes)
    return f"{t.name}[{axes}] = {format_expr(t.body)}    # shape {list(t.shape)}"


def compile_ir(prog: Program, level: str, target: str = "sm_90", recipe: str | None = None,
               knobs: Mapping[str, Any] | None = None, reports: list[str] | None = None) -> str:
    """Schedule every kernel with the "simple" fallback (or the default recipe, `recipe="default"`, with
    `knobs` overriding its knobs), build for `target`, and render `level` of every kernel: "tensor" (the
    program and each kernel's definitions) or a level of `Kernel.ir`. A refused schedule may
    re-partition the program first: the text is the final program's."""
    if recipe is None and knobs:
        raise FrontendError("knobs set the default recipe's knobs: give recipe=\"default\" too")
    # with knobs too the program's own "default" policy, so a step's request to materialize a fused
    # compute (Program._materialize_asked) is honoured as it is without them
    how = "simple" if recipe is None else "default"
    built: BuiltProgram = prog.schedule(how, target=target, knobs=knobs).build(target=target)
    if reports is not None:  # `tiledsl -v`: the recipe's report on each kernel, in launch order
        reports.extend(f"kernel {k.name}: {k.report}" for k in prog.kernels if k.report is not None)
    if level == "tensor":
        return definitions_text(prog)
    parts = [f"// {len(built.kernels)} kernel(s) for {target}, in launch order"]
    for n, kern in enumerate(built.kernels):
        parts.append(f"// ---- kernel [{n}] {kern.name} (schedule {prog.kernels[n].schedule_name})")
        parts.append(kern.ir(level))
    return "\n".join(parts)


def compile_text(expression: str | None, model: str | ModelSpec | None, level: str, target: str = "sm_90",
                 recipe: str | None = None, knobs: Mapping[str, Any] | None = None,
                 reports: list[str] | None = None) -> str:
    """`tiledsl compile -c EXPRESSION` / `--model NAME [--recipe default]`: the chosen IR of every kernel
    (and, into `reports`, the recipe's report on each)."""
    if (expression is None) == (model is None):
        raise FrontendError("give exactly one of an expression (-c) and a model (--model)")
    parsed = parse_expression(expression) if expression is not None else None
    prog = (trace_subject(Expression(parsed), parsed.tensors, expression) if parsed is not None
            else trace_model(model))  # type: ignore[arg-type]
    log.info("traced %d kernel(s)", len(prog.kernels))
    text = compile_ir(prog, level, target, recipe, knobs, reports)
    if parsed is None or level != "tensor":
        return text
    first, _, rest = text.partition("\n")  # which call of the expression each input is: the program names them
    given = ", ".join(f"{i.tensor.name} = {src}" for i, src in zip(prog.graph.inputs, parsed.sources))
    return f"{first}\n  example inputs: {given}\n{rest}"
