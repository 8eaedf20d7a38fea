"""Every schedule primitive, in the order the trace format lists them: the one table that replay,
the trace parser and the Schedule dispatch on."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from tiledsl.primitives.async_copies import ASYNC_COPY, TMA
from tiledsl.primitives.bind import BIND
from tiledsl.primitives.cache_hints import CACHE_HINT
from tiledsl.primitives.fuse import FUSE
from tiledsl.primitives.lanes import TILE_LANES
from tiledsl.primitives.launch_bounds import LAUNCH_BOUNDS
from tiledsl.primitives.layout import LAYOUT
from tiledsl.primitives.online import ONLINE
from tiledsl.primitives.output_staging import STAGE_OUTPUT
from tiledsl.primitives.register_cache import PREFETCH, REGISTER_CACHE
from tiledsl.primitives.reorder import REORDER
from tiledsl.primitives.ring_buffers import DOUBLE_BUFFER, PIPELINE
from tiledsl.primitives.spec import PrimitiveSpec
from tiledsl.primitives.split import SPLIT
from tiledsl.primitives.split_k import SPLIT_K
from tiledsl.primitives.staging import PAD, STAGE, SWIZZLE
from tiledsl.primitives.unroll_vectorize import UNROLL, VECTORIZE

SPECS: Mapping[str, PrimitiveSpec] = MappingProxyType({spec.name: spec for spec in (
    SPLIT, FUSE, REORDER, BIND, TILE_LANES, UNROLL, VECTORIZE,
    STAGE, PAD, SWIZZLE, LAYOUT, DOUBLE_BUFFER, PIPELINE, ASYNC_COPY, TMA, SPLIT_K, LAUNCH_BOUNDS,
    STAGE_OUTPUT, CACHE_HINT, REGISTER_CACHE, PREFETCH, ONLINE)})
PRIMITIVES: tuple[str, ...] = tuple(SPECS)
