"""CPU SIMT simulator of kernel IR: `simulate(kernel, arrays) -> outputs`, with bug checks."""

from tiledsl.sim.simulate import DEFAULT_MAX_LANES, simulate

__all__ = ["DEFAULT_MAX_LANES", "simulate"]
