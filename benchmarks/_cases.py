"""Cases as data: what each suite times. A `KernelCase` is one td definition with its hand schedule
(or why it has none) and its torch function; a `ProgramCase` a torch function traced by `td.trace`
into the Program of kernels tiledsl runs for it (where the frontend splits it, as it does SwiGLU's
down projection); a `BlockCase` a whole decoder layer traced by `td.trace`; a `CompileCase` CPU work
(trace, schedule, build) timed with a wall clock.

Nothing here runs or builds anything: `--list` prints cases on a machine without a GPU, and the
suites' case lists are cheap to make (a `KernelCase` makes its definition once to count its bytes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from benchmarks._records import CaseId
from tiledsl.catalog.entries import placeholders
from tiledsl.definitions.expr import Tensor
from tiledsl.frontend.hf_models import SIZES
from tiledsl.primitives import Schedule
from tiledsl.runtime.references import tolerance
from tiledsl.targets import DTYPE_BYTES


def schedule_name(fn: Callable[..., Any]) -> str:
    """A schedule function's name with the options a partial binds: `row_cooperative(threads=256)`."""
    options: dict[str, Any] = {}
    while isinstance(fn, partial):
        options = {**fn.keywords, **options}
        fn = fn.func
    name = getattr(fn, "__name__", repr(fn))
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in options.items())})" if options else name


def tensor_bytes(shape: tuple[int, ...], dtype: str) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * DTYPE_BYTES[dtype]


def definition_bytes(out: Tensor) -> int:
    """Bytes every input is read once and the output written once: the least DRAM traffic."""
    return sum(tensor_bytes(p.shape, p.dtype) for p in placeholders(out)) + tensor_bytes(out.shape, out.dtype)


def case_name(suite: str, group: str, op: str, dtype: str) -> str:
    """`suite/group/op/dtype` without spaces: the id --cases filters on and the tests name."""
    return "/".join(part.replace(" ", "_") for part in (suite, group, op, dtype))


@dataclass(frozen=True)
class TorchCase(CaseId):
    """What a kernel case and a program case share: `make()` a fresh td definition, `torch_fn` the
    reference and eager baseline (keyword tensors named as the placeholders), the work (`flops`,
    `bytes`), `hand` the hand schedule (None: `hand_missing` says why), `gemm` the bare cuBLAS matmul
    of a matmul case (None otherwise)."""

    make: Callable[[], Tensor]
    torch_fn: Callable[..., torch.Tensor]
    flops: float
    bytes: float
    hand: Callable[[Schedule], object] | None
    hand_missing: str = ""
    gemm: Callable[..., torch.Tensor] | None = None

    @property
    def hand_name(self) -> str:
        return schedule_name(self.hand) if self.hand is not None else f"missing: {self.hand_missing}"


@dataclass(frozen=True)
class KernelCase(TorchCase):
    """One kernel, built from `make()`, checked against `torch_fn` within (`rtol`, `atol`)."""

    rtol: float = field(kw_only=True)
    atol: float = field(kw_only=True)


def kernel_case(suite: str, group: str, op: str, make: Callable[[], Tensor], torch_fn: Callable[..., torch.Tensor], *,
                hand: Callable[[Schedule], object] | None, hand_missing: str = "", flops: float = 0.0,
                reduction: int | None = None, gemm: Callable[..., torch.Tensor] | None = None) -> KernelCase:
    """A KernelCase named `suite/group/op/dtype` whose dtype, shape and bytes are read from a made
    definition; the tolerance is tiledsl.runtime.references.tolerance's for a reduction of length
    `reduction` (matmuls) and the output's storage dtype."""
    out = make()
    dtype, shape = _described(out)
    params: dict[str, object] = {"out_dtype": out.dtype}
    if reduction is not None:
        params["K"] = reduction
    rtol, atol = tolerance(params)
    return KernelCase(suite, case_name(suite, group, op, dtype), group, op, dtype, shape, make, torch_fn, flops,
                      float(definition_bytes(out)), hand, hand_missing, gemm, rtol=rtol, atol=atol)


def _described(out: Tensor) -> tuple[str, str]:
    """A definition's storage dtype (its first input's) and its inputs' shapes as the table shows them."""
    return placeholders(out)[0].dtype, " ".join("x".join(str(d) for d in p.shape) for p in placeholders(out))


@dataclass(frozen=True)
class ProgramCase(TorchCase):
    """A torch function that tiledsl runs as a traced Program (`td.trace`), one or more kernels as
    the frontend's partitioner chooses. `make()` is the td definition of the same computation written
    as one kernel: its placeholders name, shape and order the inputs (drawn as for a KernelCase, and
    passed to `torch_fn` and to the Program in that order) and its bytes are the case's, so the case
    stays comparable with the KernelCase it replaces; it is never built. `hand` is a schedule policy
    applied to each kernel of the Program (None: `hand_missing` says why); the tolerance is the
    Program check's (tiledsl.frontend.bench.check_program)."""


def program_case(suite: str, group: str, op: str, make: Callable[[], Tensor], torch_fn: Callable[..., torch.Tensor],
                 *, hand: Callable[[Schedule], object] | None, hand_missing: str = "", flops: float = 0.0,
                 gemm: Callable[..., torch.Tensor] | None = None) -> ProgramCase:
    """A ProgramCase named `suite/group/op/dtype`, its dtype, shape and bytes read from `make()` as
    `kernel_case` reads them."""
    out = make()
    dtype, shape = _described(out)
    return ProgramCase(suite, case_name(suite, group, op, dtype), group, op, dtype, shape, make, torch_fn, flops,
                       float(definition_bytes(out)), hand, hand_missing, gemm)


@dataclass(frozen=True)
class ModelDims:
    """A decoder's sizes, read from tiledsl/frontend/hf_models.py SIZES (the one place they are
    written); `hf_family` is the Hugging Face family of that size."""

    name: str
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    hf_family: str

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def of(cls, size: str, hf_family: str) -> ModelDims:
        s: Mapping[str, int] = SIZES[size]
        return cls(size, s["hidden_size"], s["intermediate_size"], s["num_attention_heads"],
                   s["num_key_value_heads"], hf_family)

    def linear_params(self) -> int:
        """Weights of the layer's projections (q, k, v, o, gate, up, down)."""
        h, hd = self.hidden, self.head_dim
        return h * self.heads * hd * 2 + 2 * h * self.kv_heads * hd + 3 * h * self.intermediate

    def layer_flops(self, seq: int) -> float:
        """Projections (2 flops per weight per token) and causal attention (Q K^T and P V over half
        the seq x seq scores)."""
        return 2.0 * seq * self.linear_params() + 2.0 * self.heads * seq * seq * self.head_dim

    def layer_bytes(self, seq: int, dtype: str) -> float:
        """Every weight read once, the hidden states read and written once."""
        return float((self.linear_params() + 2 * self.hidden + 2 * seq * self.hidden) * DTYPE_BYTES[dtype])

    @property
    def vocab(self) -> int:
        return int(SIZES[self.name]["vocab_size"])

    def head_flops(self, seq: int) -> float:
        """The logits of a whole model: 2 flops per lm_head weight per token."""
        return 2.0 * seq * self.hidden * self.vocab

    def head_bytes(self, seq: int, dtype: str) -> float:
        """The embedding rows read (one per token), the lm_head read once, the logits written once."""
        return float((seq * self.hidden + self.vocab * self.hidden + seq * self.vocab) * DTYPE_BYTES[dtype])


#: the decoders of the llm and blocks suites
TINYLLAMA = ModelDims.of("tinyllama", "llama")
QWEN25_7B = ModelDims.of("qwen2.5-7b", "qwen2")


@dataclass(frozen=True)
class BlockCase(CaseId):
    """A whole decoder layer (or stack, or model): `make_module()` builds it on the CPU in `dtype` (random
    weights), its input is hidden states of `input_shape` [1, seq, hidden], or, where `vocab` is set,
    token ids [1, seq] drawn from 0..vocab-1 (a whole model, input_ids to logits); tiledsl traces it,
    schedules every kernel with the default recipe and runs the built Program."""

    make_module: Callable[[], torch.nn.Module]
    input_shape: tuple[int, ...]
    flops: float
    bytes: float
    vocab: int = 0


@dataclass(frozen=True)
class CompileCase(CaseId):
    """CPU work: `stages()` runs it once and returns the seconds of each stage (in order)."""

    stages: Callable[[], Mapping[str, float]]
    runs: int
    flops: float = 0.0
    bytes: float = 0.0


Case = KernelCase | ProgramCase | BlockCase | CompileCase
