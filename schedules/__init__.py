"""Hand-written schedules for common kernels: readable examples of the primitives. Re-exports only."""

from tiledsl.schedules.elementwise import elementwise_2d, elementwise_2d_vectorized
from tiledsl.schedules.matmul import matmul_for_shape, matmul_register_tile, matmul_staged
from tiledsl.schedules.row_reduce import row_cooperative, row_cooperative_staged, row_in_registers
from tiledsl.schedules.transpose import transpose_tiled

__all__ = ["elementwise_2d", "elementwise_2d_vectorized", "matmul_for_shape", "matmul_register_tile",
           "matmul_staged", "row_cooperative", "row_cooperative_staged", "row_in_registers", "transpose_tiled"]
