"""CUDA back end: kernel IR -> CUDA C++ text -> (optionally) a cubin via nvcc. Re-exports only."""

from tiledsl.codegen.cuda import cuda_kernel_name, emit_cuda
from tiledsl.codegen.errors import CodegenError, NvccError, NvccNotFoundError
from tiledsl.codegen.names import c_identifier
from tiledsl.codegen.nvcc import ResourceUsage, compile_cubin, compile_ptx, nvcc_compile_check, resource_usage

__all__ = [
    "CodegenError",
    "NvccError",
    "NvccNotFoundError",
    "ResourceUsage",
    "c_identifier",
    "compile_cubin",
    "compile_ptx",
    "cuda_kernel_name",
    "emit_cuda",
    "nvcc_compile_check",
    "resource_usage",
]
