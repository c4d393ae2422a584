"""Matrix products: FULLY_CONNECTED and BATCH_MATMUL, float32, quantized and hybrid.

FULLY_CONNECTED: y = x @ W^T + b with a fused activation. The input is flattened to [batch, depth] where
depth is the weights' second dimension; the output is [batch, units], or the input's leading dimensions
plus [units] with keep_num_dims. A weights tensor with a zero depth gives zeros.

- float32: one BLAS matmul into the output, bias added, clamped. Sparse float32 weights (the sparsity
  layouts TFLite's optimized kernel accepts: random CSR rows or 1x4 blocks; any layout in BUILTIN_REF)
  are densified once in prepare.
- quantized (uint8, int8, int16 activations; uint8/int8/int4/int2/int16 weights): exact integer
  accumulators (quant/integer_gemm.py: a float BLAS matmul of integer values, exact below 2**24 or
  2**53) of (x - input_zero_point) * (w - weights_zero_point) plus the int32/int64 bias, wrapping in
  int32 where TFLite sums in int32, then requantized. LiteRT's optimized kernels (ruy's x86 kernels,
  and the NEON custom GEMV through the SSE translation) round both fixed-point steps half up; the
  reference kernels (BUILTIN_REF, and the optimized build's int16 kernel when a zero point is not 0 or
  the bias is int64) compute round(double(acc) * scale) half away from zero; the 16x16 kernel uses the
  int64 fixed-point multiply. int8 weights stored sparse in 1x16 blocks (int8 output) go through
  TFLite's scalar fixed-point multiply (half away from zero, twice).
- hybrid (float32 activations; int8 weights, uint8 ones read as int8 bits as TFLite does, int2, int4):
  each input row is quantized to int8 on the fly (quant/hybrid_inputs.py: symmetric, or
  asymmetric_quantize_inputs, with TFLite's NEON block rounding), the exact integer products scaled by
  the row's scale times the weights' (per-tensor or per-channel) scale, the bias added, and any fused
  activation (TANH and SIGN_BIT included) applied. On x86 hosts, as LiteRT's SSE kernel does, a weight
  of -128 meeting a negative input in a 16-value block is summed with the wrong sign and row sums
  (asymmetric inputs) wrap in int16 lanes (exact elsewhere: ARM's NEON kernels); on every host the row
  sums are computed on the first invoke after prepare only. Constant
  int4 weights of >= 4 units and an even depth >= 32 take TFLite's 4-bit kernel, whose input
  quantization is its own (symmetric, plain std::round; weights of -8 refused, TFLite garbles them).

BATCH_MATMUL: lhs @ rhs over the last two dimensions (each optionally transposed by adj_x / adj_y),
with the leading (batch) dimensions broadcast; ranks 2 to 5. float32 is one np.matmul into the output.
TFLite's builtin kernel is its reference kernel: int8 x int8 -> int8 requantizes an int32 accumulator
with the scalar double-rounding multiply, int8 x int8 -> int32 returns the raw products (zero points
ignored), int16 x int16 / int16 x int8 requantize an int64 accumulator with the int64 multiply. Hybrid
(float32 lhs, int8 rhs) quantizes each lhs row like FULLY_CONNECTED; as in TFLite, with more than one
batch dimension the row scales (and zero points, row sums) are looked up with TFLite's batch strides.

Modules: fully_connected.py (FULLY_CONNECTED's checks, op data, registration and float path) with
quantized.py, hybrid.py and sparse.py (its quantized, hybrid and sparse-weight kernels);
batch_matmul.py (BATCH_MATMUL); common.py what they share.
"""

from . import batch_matmul, fully_connected  # noqa: F401  (importing them registers their kernels)
