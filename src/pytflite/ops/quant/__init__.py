"""Integer arithmetic that makes quantized kernels bit-exact with TFLite (gemmlowp fixed point)."""
