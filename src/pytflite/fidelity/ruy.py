"""Which requantization LiteRT's quantized matrix products round with on a host.

TFLite sends the int8 / uint8 / int16x8 products of FULLY_CONNECTED and CONV_2D (its optimized kernels)
to cpu_backend_gemm, which picks, by shape and by host:
- TFLite's custom GEMV for a single column (batch 1, or one output pixel) with at least 4 output rows and
  a depth of at least 8 (8-bit inputs only): its SIMD code (NEON, through an SSE translation on x86)
  rounds like ruy's SIMD kernels;
- gemmlowp where the build runs no ruy for the product: uint8 on an x86 CPU without AVX (as ruy's CPU
  detection sees it), and every 8-bit product of the TFLite for 32-bit ARM (tflite-runtime 2.14.0, the
  last TFLite for 32-bit Raspberry Pi OS, is built without ruy): TFLite's scalar
  MultiplyByQuantizedMultiplier ("scalar");
- ruy otherwise, whose kernel depends on the instruction set (HostProfile.ruy_path): its AVX-512,
  AVX2+FMA and AVX kernels (AVX has no int8 x int16 kernel and falls back to portable C++ there) round
  the high half and then the right shift, both halves up ("simd"); its NEON kernels (8-bit inputs only:
  ruy has no NEON int16 kernel) shift left, truncate the high half (vqdmulh) and round a right shift of
  at least one bit half up, which is one rounding but for the left shift's wrap in int32 ("neon"); its
  portable C++ kernel rounds once, half up, with the left shift inside the 64-bit shift ("single").
Verified against ai-edge-litert 2.3.0 under each RUY_PATHS value (tests/fidelity/test_ruy_paths.py), its
aarch64 build and tflite-runtime 2.14.0's armv7l one under emulation (tests/fidelity/test_arm.py).
The rounding names are those of ops/conv/requant.py's Requant.
"""

from __future__ import annotations

from .host import HostProfile

_X86_SIMD_PATHS = ("avx512", "avx2_fma")


def gemm_rounding(
    host: HostProfile, *, int16: bool, uint8: bool, one_column: bool, rows: int, depth: int
) -> str:
    """ "simd", "neon", "single" or "scalar" for an [rows, depth] x [depth, columns] product with 8-bit
    (or, with `int16`, 16-bit) inputs; `one_column`: a single output column (batch x pixels == 1)."""
    if not int16 and one_column and rows >= 4 and depth >= 8:
        return "simd"  # TFLite's custom GEMV
    if (uint8 and host.x86 and "avx" not in host.features) or (host.arch == "arm" and not int16):
        return "scalar"  # gemmlowp
    path = host.ruy_path
    if path in ("neon", "neon_dotprod") and not int16:
        return "neon"
    if path in _X86_SIMD_PATHS or (path == "avx" and not int16):
        return "simd"
    return "single"
