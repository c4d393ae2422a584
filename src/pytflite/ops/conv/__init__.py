"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and CONV_3D_TRANSPOSE.

They share one geometry: TFLite's output size and leading padding per spatial dimension. Everything
derivable from shapes is planned in prepare; invoke makes a handful of NumPy calls whatever the size:
- CONV_2D / CONV_3D: the input is copied into a zero-bordered scratch when the windows reach padding
  (Staging), then a single copy moves every window (a strided view of it) into an im2col scratch, and
  one matrix product per group does the rest; a constant bias rides in the product as a column of ones.
  A 1x1, stride-1 convolution usually skips im2col: the [N*H*W, C] view of the input is the left operand.
- DEPTHWISE_CONV_2D: one np.einsum over a strided view of every tap of a padded copy of the input.
- TRANSPOSE_CONV / CONV_3D_TRANSPOSE multiply every input pixel by the whole filter matrix at once, then
  sum the products landing on each output: gathered with precomputed row indices, or scatter-added per
  tap (a *tap plan*: per kernel tap, the output positions it reaches and the inputs they read).
Constant filters are laid out for the matrix product once, in prepare (constants never change). The
temporaries are arena tensors, shared with other nodes: every invoke writes what it reads of them. With
a constant filter, an invoke is a list of NumPy calls (staging, im2col, product, bias, activation, and the
float64 requantization) over views of the tensors' arrays, which the kernels return as their
Registration.calls: the plan binds them once per allocation, since on small layers the views and the
Python between the calls cost as much as they.

With context.exact_float_summation (the Interpreter sets it in subgraphs with hybrid ops, where a 1e-7
difference can become a quantization step downstream), the float CONV_2D and DEPTHWISE_CONV_2D sum in
LiteRT's own order, bit for bit: im2col goes [K, pixels] and an order-preserving einsum (or products and an
ordered reduction) replaces the matrix product, following the Eigen kernels LiteRT's CONV_2D picks by shape
and the host's cache sizes (fidelity/eigen_order.py);
DEPTHWISE_CONV_2D sums its bias and taps' products in order. Slower, so off by default (see below).

Quantized variants (CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV with uint8, int8 and int16x8
activations) run the same plans on integer values held in floats: the staged input, im2col and weights
are float32 or float64 arrays of integers, so the products and sums are exact as long as every partial
sum stays below 2**24 (float32) or 2**53 (float64) in magnitude. Prepare bounds the sums (the largest
input magnitude times the largest sum of |weights| of one output channel) and picks float32 only when
the bound is below 2**24; a CONV_2D whose bound needs float64 (deep windows, 3x3x256 and up) takes
float32 products over ranges of the depth that each stay below it, summed in float64
(common.exact_depth_chunks): exact still, at about twice float64's speed. The input zero point is not
subtracted from the input: the padding holds it and the bias absorbs zero_point * sum(weights), exactly
as gemmlowp/ruy do. The exact int32 accumulators then go through the fixed-point requantization
LiteRT's kernel applies (Requant, requant.py).

Hybrid variants (float32 input, int8 weights: CONV_2D and DEPTHWISE_CONV_2D) quantize each batch of the
input as TFLite does (quant/hybrid_inputs.py), accumulate exactly the same way, and scale back to float32.
Where LiteRT's x86 kernels are not exact, they are reproduced on x86 hosts (the host's HostArithmetic,
fidelity/arithmetic.py): the per-tensor CONV_2D's SSE dot product (output channels not a multiple of 4)
turns weight -128 times a negative input into -128 * |input|, and the per-channel CONV_2D's weight row
sums (for the input zero point) add in int16 lanes that wrap. ARM's ruy / gemmlowp products add product
pairs in int16, which wrap on two -128 x -128 products (fidelity/neon_pairs.py). On every host the row sums are taken on the first
invoke after prepare only (stale when a runtime filter changes).

Modules: conv2d.py, depthwise.py, transpose.py and conv3d.py (CONV_3D, CONV_3D_TRANSPOSE) register the
kernels, conv2d_hybrid.py holds the hybrid CONV_2D; im2col.py plans and runs the CONV_2D / CONV_3D matrix
products, depthwise_sums.py the depthwise staging and sums; requant.py holds Requant;
rows.py applies per-channel values (bias, scales, requantization) without NumPy's per-call buffers;
common.py the shared types, checks and quantization parameters.
"""

from . import conv2d, conv3d, depthwise, transpose  # noqa: F401  (importing them registers their kernels)
