"""Which kernel LiteRT's optimized uint8 DEPTHWISE_CONV_2D runs on a host, for the rounding it applies.

TFLite's general kernel (every host) requantizes with vqrdmulh and a right shift rounding half away from
zero, as the scalar MultiplyByQuantizedMultiplier does. Its aarch64 build (only: the kernel is assembly)
also has a 3x3 kernel, taken when TFLite's Fast3x3FilterKernelSupported accepts the shape, which rounds
the right shift half up (its kUpward variant, the one the uint8 path instantiates): ties below zero
then go up. LiteRT-aarch64 recorded under qemu (tests/fidelity/test_arm.py) shows it on 3 to 4 of every
1000 outputs. (The int8 per-channel 3x3 kernel rounds as the general int8 kernel's NEON blocks do.)
"""

from __future__ import annotations

from .host import HostProfile


def fast_3x3_kernel(
    host: HostProfile,
    *,
    input_shape: tuple[int, ...],
    kernel_hw: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads_before: tuple[int, int],
    depth_multiplier: int,
    output_hw: tuple[int, int],
    shift: int,
) -> bool:
    """Whether LiteRT runs its 3x3 kernel for a DEPTHWISE_CONV_2D of an NHWC input, with TFLite's
    padding offsets (top, left) and the output exponent `shift` (TFLite's, > 0 shifts left)."""
    if host.arch != "aarch64":
        return False
    _, height, width, depth = input_shape
    pad_h, pad_w = pads_before
    supported = (
        kernel_hw == (3, 3)
        and depth_multiplier == 1
        and strides[0] == strides[1]
        and strides[0] in (1, 2)
        and pad_h == pad_w
        and pad_h in (0, 1)
        and depth % 8 == 0
        and shift <= 0
        and dilation == (1, 1)
    )
    if not supported:
        return False
    # the last window must end inside the input (one past it with a padding of 1)
    last_row = (output_hw[0] - 1) * strides[0] - pad_h + 3
    last_column = (output_hw[1] - 1) * strides[1] - pad_w + 3
    if last_row > height + pad_h or last_column > width + pad_w:
        return False
    return (width != 1 and height != 1) or width == height
