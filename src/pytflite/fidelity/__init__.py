"""Where LiteRT's results depend on the machine: the host's description and the emulations that use it.

`host` describes the CPU as LiteRT sees it (HostProfile), `cpuid` reads it, and each other module
reproduces one host-dependent behaviour of LiteRT's kernels: `eigen_order` Eigen's float summation
order and cache blocking, `ruy` which requantization a quantized matrix product rounds with, `depthwise` which kernel (and so
which rounding) a uint8 DEPTHWISE_CONV_2D runs, `sse` the
x86-only quirks of LiteRT's SSE hybrid kernels. Kernels stay plain math and ask this layer, through
`context.host`, for what depends on the host.
"""
