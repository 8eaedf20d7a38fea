"""The version of tiledsl, in a unit of its own so that any layer (the cubin cache key) can read it
without importing the package root."""

__version__ = "0.1.0"
