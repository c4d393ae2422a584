"""Seeded random ops: RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL.

LiteRT draws from TensorFlow's Philox-4x32-10 generator, one stream per node: `philox` holds the
generator and how the op's seed/seed2 options start it, `uniform_normal` and `multinomial` the kernels
(LiteRT's normals go through the host C library's logf/sinf/cosf, reached as quant/lut.py reaches it). Same seeds give LiteRT's
streams bit for bit; seed = seed2 = 0 asks for a non-deterministic stream, as in LiteRT.
"""

from . import multinomial, uniform_normal  # noqa: F401  (each registers its kernels)
