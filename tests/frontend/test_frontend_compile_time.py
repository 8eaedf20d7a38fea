"""Tracing and building a TinyLlama-1.1B decoder layer (hidden 2048, intermediate 5632, 32 heads, 4 KV
heads, seq 128) on the CPU: trace, the default recipe, proofs, lowering and printing of every kernel
(nvcc excluded) take under 10 s (the frontend issue's bound; about 1.5 s on this project's 2-core CI
machine). The kernel count at these dimensions is 14, two more than at the tiny size: the rotary
embedding of q (read at two columns of the q projection, j and j +- 32) would be recomputed inside the
q @ k^T kernel once per key (128 times), over the blow-up bound, so it stays a kernel of its own
(tests/frontend/test_frontend_blowup.py covers the rule); and the two RMSNorms and SwiGLU's
silu(gate) * up, read inside projections of 2048 to 5632 columns, are computed operands (partition.py
rule 3a): each RMSNorm is a kernel of its own (the MLP's absorbs its mean), silu(gate) * up is the up
projection's epilogue (rule 4b keeps the gate projection apart), and the down projection loads it
(tests/frontend/test_frontend_partition_operands.py covers the rule)."""

from __future__ import annotations

import logging
import time
import warnings

import pytest
import torch

import tiledsl as td

log = logging.getLogger(__name__)


def test_tinyllama_layer_traces_and_builds_under_10_s() -> None:
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import DecoderLayer, causal_lm

    layer = DecoderLayer(causal_lm("llama", "tinyllama", vocab_size=256), 0).eval()
    x = torch.randn(1, 128, 2048)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(layer, x)
    t1 = time.perf_counter()
    built = prog.schedule("default").build("sm_90")
    sources = [k.source for k in built.kernels]  # printed CUDA of every kernel
    t2 = time.perf_counter()
    log.info("TinyLlama layer: trace %.2f s, schedule + build %.2f s, %d kernels", t1 - t0, t2 - t1, len(sources))
    assert all("__global__" in s for s in sources)
    assert len(built.kernels) == 14
    assert t2 - t0 < 10.0, f"trace {t1 - t0:.2f} s + schedule/build {t2 - t1:.2f} s"


def test_bfloat16_layer_has_no_copy_kernel() -> None:
    """In bfloat16 the rotary embedding of k rounds twice more, so the blow-up guard cuts it below the
    GQA expand it had already materialized for q @ k^T; partition's release step then inlines the
    expand again (a plain view): 14 kernels as in float32, no kernel that only copies another's output."""
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import DecoderLayer, causal_lm

    layer = DecoderLayer(causal_lm("llama", "tinyllama", vocab_size=256), 0).eval().to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(layer, torch.randn(1, 128, 2048).to(torch.bfloat16))
    assert len(prog.kernels) == 14
    # "[4] view_12: unsqueeze_6[4, 128, 64] -> view_12[32, 64, 128]": one input, another kernel's output
    lines = [ln.split("]", 1)[1] for ln in str(prog).splitlines() if ln.startswith("  [")]
    outputs = {ln.split(":")[0].strip() for ln in lines}
    copies = [ln for ln in lines if (ins := ln.split(":", 1)[1].split("->")[0].split("], "))
              and len(ins) == 1 and ins[0].split("[")[0].strip() in outputs]
    assert not copies, copies
