"""TF's pads and block rearrangements, for any dtype (the converter leaves them as Flex ops on float64,
complex, strings and the other types TFLite's builtins lack): Pad / PadV2 / MirrorPad extend each
dimension at its borders; SpaceToDepth / DepthToSpace move blocks of an NHWC image between its spatial
and depth dimensions; SpaceToBatchND / BatchToSpaceND (and their 2-D forms SpaceToBatch /
BatchToSpace) move blocks between the spatial dimensions and the batch, padding or cropping the
spatial ones. All move elements only (a pad, a reshape, a transpose), so NumPy gives TF's values.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NUMBERS
from ..node_def import TfNode
from ..registry import register
from .common import ints, shape_text, zeros


def _paddings(x: np.ndarray, paddings: np.ndarray, mirror: bool = False) -> list[tuple[int, int]]:
    """paddings as (before, after) pairs, one per dimension (MirrorPad words two refusals apart)."""
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise ValueError(f"paddings must be a matrix with 2 columns: {shape_text(paddings.shape)}")
    if paddings.shape[0] != x.ndim:
        raise ValueError(
            "The first dimension of paddings must be the rank of inputs"
            f"{shape_text(paddings.shape)}{',' if mirror else ''} {shape_text(x.shape)}"
        )
    pairs = [(int(a), int(b)) for a, b in paddings.reshape(-1, 2)]
    for before, after in pairs:
        if before < 0 or after < 0:
            raise ValueError(f"{'p' if mirror else 'P'}addings must be non-negative: {before} {after}")
    return pairs


@register("Pad")
def _pad(node: TfNode, x, paddings):
    """Pad: paddings[i] = (before, after) zeros (False, empty strings) around dimension i."""
    pairs = _paddings(x, paddings)
    return np.pad(x, pairs, constant_values=zeros((), x.dtype)[()]) if x.ndim else x


@register("PadV2")
def _pad_v2(node: TfNode, x, paddings, constant_values):
    """PadV2: Pad with the value of its third input."""
    if constant_values.ndim:
        raise ValueError(f"constant_values must be a scalar. Found: {shape_text(constant_values.shape)}")
    pairs = _paddings(x, paddings)
    return np.pad(x, pairs, constant_values=constant_values[()]) if x.ndim else x


@register("MirrorPad")
def _mirror_pad(node: TfNode, x, paddings):
    """MirrorPad: padding mirrored from the edge (REFLECT leaves the edge out, SYMMETRIC repeats it)."""
    pairs, reflect = _paddings(x, paddings, mirror=True), node.text("mode") == "REFLECT"
    for d, (before, after) in enumerate(pairs):
        limit = x.shape[d] - (1 if reflect else 0)
        if before > limit or after > limit:
            relation = ("less than", "not less than") if reflect else ("no greater than", "greater than")
            raise ValueError(
                f"paddings must be {relation[0]} the dimension size: {before}, {after} {relation[1]} {x.shape[d]}"
            )
    return np.pad(x, pairs, mode="reflect" if reflect else "symmetric") if x.ndim else x


def _image(node: TfNode, x: np.ndarray) -> int:
    """The block size of an NHWC image op (TF's CPU kernels take no other layout)."""
    if node.text("data_format", "NHWC") != "NHWC":
        raise ValueError(f"{node.op} on the CPU takes NHWC data only, not {node.text('data_format')}")
    if x.ndim != 4:
        raise ValueError(f"Input rank should be 4 instead of {x.ndim}")
    return node.attr("block_size")


@register("SpaceToDepth")
def _space_to_depth(node: TfNode, x):
    """SpaceToDepth: each block_size x block_size patch of an NHWC image becomes one deeper pixel.

    The patch's rows and columns are the outer part of the new depth index."""
    block = _image(node, x)
    batch, height, width, depth = x.shape
    if height % block or width % block:
        raise ValueError(
            f"Image width {width} and height {height} should be divisible by block_size: {block}"
        )
    patches = x.reshape(batch, height // block, block, width // block, block, depth)
    return patches.transpose(0, 1, 3, 2, 4, 5).reshape(batch, height // block, width // block, -1)


@register("DepthToSpace")
def _depth_to_space(node: TfNode, x):
    """DepthToSpace: SpaceToDepth undone."""
    block = _image(node, x)
    batch, height, width, depth = x.shape
    if depth % (block * block):
        raise ValueError(f"Input depth dimension {depth} should be divisible by: {block * block}")
    patches = x.reshape(batch, height, width, block, block, depth // (block * block))
    return patches.transpose(0, 1, 3, 2, 4, 5).reshape(batch, height * block, width * block, -1)


def _blocks(x: np.ndarray, block_shape: np.ndarray, pairs: np.ndarray, what: str):
    """The block sizes and (before, after) pairs of the M spatial dimensions after the batch one."""
    if block_shape.ndim != 1:
        raise ValueError(f"block_shape must be one-dimensional: {shape_text(block_shape.shape)}")
    blocks = ints(block_shape)
    if pairs.shape != (len(blocks), 2):
        raise ValueError(f"{what} should have shape [{len(blocks)}, 2] instead of {shape_text(pairs.shape)}")
    if x.ndim < 1 + len(blocks):
        raise ValueError(f"input rank should be >= {1 + len(blocks)} instead of {x.ndim}")
    for i, b in enumerate(blocks):
        if b < 1:
            raise ValueError(f"All values in block_shape must be positive, got value, {b} at index {i}.")
    edges = [(int(a), int(b)) for a, b in pairs]
    if any(a < 0 or b < 0 for a, b in edges):
        raise ValueError(f"{what.capitalize()} must be non-negative")
    return blocks, edges


def _space_to_batch(x: np.ndarray, blocks: list[int], paddings: list[tuple[int, int]]) -> np.ndarray:
    count = len(blocks)
    padded = np.pad(
        x, [(0, 0), *paddings] + [(0, 0)] * (x.ndim - 1 - count), constant_values=zeros((), x.dtype)[()]
    )
    split = [padded.shape[0]]
    for i, b in enumerate(blocks):
        size = padded.shape[1 + i]
        if size % b:
            raise ValueError(f"padded_shape[{i}]={size} is not divisible by block_shape[{i}]={b}")
        split += [size // b, b]
    rest = padded.shape[1 + count :]
    tiles = padded.reshape(*split, *rest)
    # [batch, d1, b1, ..., dM, bM, rest] -> [b1, ..., bM, batch, d1, ..., dM, rest]
    order = [2 + 2 * i for i in range(count)] + [0] + [1 + 2 * i for i in range(count)]
    order += list(range(1 + 2 * count, tiles.ndim))
    return tiles.transpose(order).reshape(-1, *split[1::2], *rest)


def _batch_to_space(x: np.ndarray, blocks: list[int], crops: list[tuple[int, int]]) -> np.ndarray:
    count, product = len(blocks), int(np.prod(blocks))
    if x.shape[0] % product:
        raise ValueError(
            f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes ({product})"
        )
    for i, (b, (start, end)) in enumerate(zip(blocks, crops)):
        size = x.shape[1 + i] * b - start - end
        if size < 0:
            raise ValueError(f"cropped_shape[{i}]={size} must be non-negative")
    spatial, rest = x.shape[1 : 1 + count], x.shape[1 + count :]
    tiles = x.reshape(*blocks, x.shape[0] // product, *spatial, *rest)
    # [b1, ..., bM, batch, d1, ..., dM, rest] -> [batch, d1, b1, ..., dM, bM, rest]
    order = [count]
    for i in range(count):
        order += [count + 1 + i, i]
    order += list(range(2 * count + 1, tiles.ndim))
    whole = tiles.transpose(order).reshape(
        x.shape[0] // product, *(d * b for d, b in zip(spatial, blocks)), *rest
    )
    return whole[(slice(None), *(slice(a, whole.shape[1 + i] - b) for i, (a, b) in enumerate(crops)))]


@register("SpaceToBatchND", types={"T": NUMBERS})
def _space_to_batch_nd(node: TfNode, x, block_shape, paddings):
    """SpaceToBatchND: the spatial dimensions padded and cut in blocks, block positions moved to the batch.

    The M dimensions after the batch are spatial; a block's position becomes the outer part of the
    batch index."""
    blocks, edges = _blocks(x, block_shape, paddings, "paddings")
    return _space_to_batch(x, blocks, edges)


@register("BatchToSpaceND", types={"T": NUMBERS})
def _batch_to_space_nd(node: TfNode, x, block_shape, crops):
    """BatchToSpaceND: SpaceToBatchND undone, then cropped."""
    blocks, edges = _blocks(x, block_shape, crops, "crops")
    return _batch_to_space(x, blocks, edges)


@register("SpaceToBatch", types={"T": NUMBERS})
def _space_to_batch_v1(node: TfNode, x, paddings):
    """SpaceToBatch: SpaceToBatchND of a 4-D input with square blocks of block_size."""
    block = node.attr("block_size")
    blocks, edges = _blocks(x, np.asarray([block, block]), paddings, "paddings")
    return _space_to_batch(x, blocks, edges)


@register("BatchToSpace", types={"T": NUMBERS})
def _batch_to_space_v1(node: TfNode, x, crops):
    """BatchToSpace: BatchToSpaceND of a 4-D input with square blocks of block_size."""
    block = node.attr("block_size")
    blocks, edges = _blocks(x, np.asarray([block, block]), crops, "crops")
    return _batch_to_space(x, blocks, edges)
