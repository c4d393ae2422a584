"""The StableHLO builtins LiteRT's BuiltinOpResolver registers (models exported from JAX or PyTorch
through StableHLO carry them): elementwise arithmetic (elementwise.py), PAD (pad.py), GATHER (gather.py), and COMPOSITE and
CASE, which call subgraphs (calls.py)."""

from . import calls, elementwise, gather, pad  # noqa: F401  (importing registers the kernels)
