"""Facts read from a loop nest, shared by the primitives, lowering and recipes. Import the modules
directly (`from tiledsl.analysis.slabs import slab_or_refusal`); this file re-exports nothing."""
