"""Recurrent ops: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, RNN,
UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF.

The state of a recurrent op lives in variable input tensors (LSTM's output and cell state, inputs 18
and 19; an RNN's hidden state; SVDF's activation memory): invoke reads and updates them in place, so
they carry over from one invoke to the next until `reset_all_variables()` zeroes them.

Float kernels follow TFLite's lstm_eval / kernel_utils / svdf operation order, whole batches at a time:
- the input (and auxiliary input) contributions of every time step are one matmul of the whole sequence
  against the four gates' stacked, transposed weights, made in prepare when the weights are constant;
  each time step then costs one recurrent matmul and a handful of elementwise ufuncs. The gate sums
  are formed in TFLite's order (bias + input + aux + recurrent, peephole, layer norm, activation).
- the gates' sigmoid is Eigen's logistic, e / (1 + e) with e = exp(min(x, 16.6355324)); tanh is tanh.
- layer normalization sums sequentially in float32, as TFLite's MeanStddevNormalization does.
- a batch-major sequence is run as the same time steps over all batch rows at once: TFLite steps one row
  at a time, which gives the same numbers.
- with no fused activation (NONE), TFLite's ApplyActivationToVector writes nothing: the cell gate keeps
  whatever its scratch buffer holds (the finished sum, or a partial one where TFLite's buffer swapping
  left the sum in its other buffer) and the output multiplies the output gate by that cell gate instead
  of by the cell state. Reproduced as such.

Hybrid kernels (float activations, int8 weights; uint8 weights read as int8 as TFLite does) quantize
the float vectors row by row as TFLite's x86 build does (quant/hybrid_inputs.py: NEON-on-SSE block
rounding, symmetric or asymmetric_quantize_inputs), multiply exactly in integers (a float BLAS matmul of
int8 values, exact below 2**24 / 2**53) and accumulate sum * (row scale * weight scale) in float32. On x86
hosts, as LiteRT's SSE MatrixBatchVectorMultiplyAccumulate does, a weight of -128 meeting a negative input
in a 16-value block is summed with the wrong sign, and the weight row sums of asymmetric inputs wrap in
int16 lanes (ARM's NEON kernels are exact: so is this, there). On every host the row sums are computed on
the first invoke after prepare only (stale if runtime weights change).
Sigmoid and tanh of hybrid LSTMs are Eigen's exact float functions (their results are requantized).

Integer kernels: the 8x8->16 integer LSTM (int8 input and weights, int16 cell state; LSTM and
UNIDIRECTIONAL_SEQUENCE_LSTM), LSTM's basic kernel in 8 bits (uint8 activations, int16 state, gemmlowp
fixed point) and int8 SVDF (int16 state), bit-exact with LiteRT.

Modules: lstm.py (LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM), rnn.py (RNN and both
sequence RNNs) and svdf.py register the kernels; lstm_float.py runs the float and hybrid LSTM time steps,
lstm_integer.py the integer LSTM, lstm_basic.py LSTM's basic kernel; lstm_common.py holds the LSTM
tensor slots, checks and packed weights; hybrid.py the hybrid products; activations.py Eigen's tanh and
logistic and the fused activations; common.py the shared constants and sequence views.
"""

from . import lstm, rnn, svdf  # noqa: F401  (importing them registers their kernels)
