"""Where LiteRT's results depend on the machine, and its arithmetic where that is not plain math: the
host's description and the emulations that use it.

`host` describes the CPU as LiteRT sees it (HostProfile), `cpuid` reads it. Host-dependent: `arithmetic`
(HostArithmetic: float-to-int32 conversions, and `sse`'s x86-only quirks of LiteRT's SSE hybrid kernels),
`ruy` (which requantization a quantized matrix product rounds with), `depthwise` (which kernel, and so
which rounding, a uint8 DEPTHWISE_CONV_2D runs), `neon_pairs` (the int16 pair sums of ARM's int8 matrix
kernels, which wrap on two -128 x -128 products), `eigen_order` (Eigen's float summation order and cache
blocking). The same on every host: `neon` (NEON lane operations as TFLite's NEON code and its SSE
translation compute them) and `simd_paths` (which elements an elementwise kernel's SIMD blocks compute).
Kernels stay plain math and ask this layer, through `context.host`, for what depends on the host.
"""
