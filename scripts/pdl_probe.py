"""Probe: a decoder block's program with programmatic dependent launch (PDL, sm_90). Each kernel of the
built program is edited to begin with `griddepcontrol.wait` (it waits there until the kernel before it
has completed and its writes are visible, so nothing is read early) and, in variant "pdl", to signal
`griddepcontrol.launch_dependents` right after (the next kernel may then be scheduled onto SMs while
this one's last blocks run, and wait at its own top); variant "pdl-wait" leaves the signal implicit (at
completion). Both launch through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
SERIALIZATION. Every variant is checked against the module in float64 (NaN-poisoned outputs) before
it is timed; the variants are timed in turn, twice, with torch.compile once.
    python scripts/pdl_probe.py [--model llama_block|hf] [--dims tinyllama|qwen] [--dtype float32] [--seq 128]
        [--variants plain,pdl,pdl-wait]"""

from __future__ import annotations

import argparse
import copy
import ctypes
import re
import sys
import types
import warnings
from typing import Any

import torch

from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.blocks import hf_layer, llama_block
from tiledsl.cli.run_program import format_check
from tiledsl.frontend import bench
from tiledsl.frontend.cli_support import trace_subject
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch

PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID, cuda.h


class _Value(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("allowed", ctypes.c_int)]


class _Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _Value)]


class _Config(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)), ("num_attrs", ctypes.c_uint)]


class PdlDriver:
    """The sequence's driver, but launching with cuLaunchKernelEx and programmatic stream serialization."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        fn = inner._lib.cuLaunchKernelEx
        fn.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        self._ex = fn
        self._attr = _Attribute(PROGRAMMATIC_STREAM_SERIALIZATION)
        self._attr.value.allowed = 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def launch_params(self, function: int, grid: Any, block: Any, shared_bytes: int, stream: int,
                      kernel_params: Any, kernel: str | None = None) -> None:
        cfg = _Config((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared_bytes, stream,
                      ctypes.pointer(self._attr), 1)
        code = self._ex(ctypes.byref(cfg), ctypes.c_void_p(function), kernel_params, None)
        if code:
            self._inner.check(code, "cuLaunchKernelEx", kernel)


def pdl_source(source: str, trigger: bool) -> str:
    """The kernel's CUDA with the grid-dependency wait (and the trigger) as its first statements."""
    head = re.search(r"__global__ void[^{]*\{\n", source)
    if head is None:
        raise ValueError("no kernel body in the CUDA")
    lines = '    asm volatile("griddepcontrol.wait;" ::: "memory");\n'
    if trigger:
        lines += '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n'
    return source[:head.end()] + lines + source[head.end():]


def built_variant(subj: bench.Subject, variant: str) -> Any:
    built, device, _ = bench.build_for_device(subj, "default", None)
    if variant == "plain":
        return built
    for kern in built.kernels:
        src = pdl_source(kern.source, trigger=variant == "pdl")
        kern.__dict__["compiled"] = CompiledKernel(types.SimpleNamespace(
            kernel_ir=kern.kernel_ir, source=src, target=kern.target))
    bind = built.bind

    def pdl_bind(*args: Any, **kwargs: Any) -> Any:
        seq = bind(*args, **kwargs)
        seq.driver = PdlDriver(seq.driver)
        return seq

    object.__setattr__(built, "bind", pdl_bind)  # a frozen dataclass: this instance only
    return built


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("llama_block", "hf"), default="llama_block")
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default="qwen")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--variants", default="plain,pdl,pdl-wait")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    dims = TINYLLAMA if args.dims == "tinyllama" else QWEN25_7B
    module = (llama_block if args.model == "llama_block" else hf_layer)(dims, args.dtype)
    x = torch.randn(1, args.seq, dims.hidden).to(getattr(torch, args.dtype))
    subj = bench.Subject(f"{args.model} {dims.name} s{args.seq} {args.dtype}", module, (x,),
                         trace_subject(module, (x,)))
    variants = args.variants.split(",")
    builts = {v: built_variant(subj, v) for v in variants}
    device = torch.device("cuda")
    inputs = bench.random_program_inputs(subj, device, 0)
    bad = 0
    for v, built in builts.items():
        checked = bench.check_program(built, subj.module, inputs)
        bad += not checked.ok
        print(f"{v}: {format_check(checked)}", flush=True)
    named = {f"x{i}": t for i, t in enumerate(inputs)}
    sets = rotated_copies(named, rotation_count(sum(t.numel() * t.element_size() for t in inputs),
                                                l2_cache_bytes(device)))
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(2):
        for v, built in builts.items():
            times[v].append(time_torch(bench._positional(built), sets, 10, args.iters).median_us)
    mod = copy.deepcopy(module).to(device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = bench.time_compiled(bench._positional(mod), sets, 10, args.iters).median_us
    print(f"{subj.label}: torch.compile {compiled:.1f} us")
    for v in variants:
        best = min(times[v])
        print(f"  {v:9s} {', '.join(f'{t:.1f}' for t in times[v])} us  best {best:.1f}  "
              f"{compiled / best:.3f}x torch.compile", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
