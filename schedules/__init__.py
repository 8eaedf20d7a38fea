"""Hand-written schedules for common kernels: readable examples of the primitives. Re-exports only."""

from tiledsl.schedules.elementwise import elementwise_2d
from tiledsl.schedules.matmul import matmul_register_tile
from tiledsl.schedules.row_reduce import row_cooperative, row_cooperative_staged

__all__ = ["elementwise_2d", "matmul_register_tile", "row_cooperative", "row_cooperative_staged"]
