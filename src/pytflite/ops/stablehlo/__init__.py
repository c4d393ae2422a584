"""The StableHLO builtins LiteRT's BuiltinOpResolver registers (models exported from JAX or PyTorch
through StableHLO carry them): elementwise arithmetic (elementwise.py), PAD (pad.py), GATHER (gather.py),
SCATTER (scatter.py), REDUCE_WINDOW (reduce_window.py), RNG_BIT_GENERATOR (rng_bit_generator.py), and
COMPOSITE and CASE, which call subgraphs (calls.py)."""

from . import calls, elementwise, gather, pad, reduce_window, rng_bit_generator, scatter  # noqa: F401  (importing registers the kernels)
