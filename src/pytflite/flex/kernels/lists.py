"""TF's TensorList ops (tf.TensorArray, Keras recurrent layers converted with their lists unlowered).

A list travels in a VARIANT tensor as a TensorList value (flex/tensor_list.py); each op that changes a
list returns a new one. Element shapes follow TF: a shape tensor with -1 for an unknown dimension, a
scalar -1 for an unknown rank; an element never set reads as zeros of the list's element shape, which
must then be fully known. Errors carry TF's texts.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..node_def import TfNode
from ..registry import register
from ..tensor_list import TensorList
from .common import shape_text


def _list_of(handle: np.ndarray) -> TensorList:
    value = handle[()] if isinstance(handle, np.ndarray) and handle.ndim == 0 else handle
    if not isinstance(value, TensorList):
        raise ValueError("Input handle is not a list. Saw: '" + type(value).__name__ + "'")
    return value


def _shape_of(shape: np.ndarray) -> tuple[int, ...] | None:
    """A shape tensor as a partial shape: a scalar -1 is an unknown rank."""
    if shape.ndim == 0:
        if int(shape) != -1:
            raise ValueError(
                f"The only valid scalar shape tensor is the fully unknown shape specified as -1. Got {shape}"
            )
        return None
    return tuple(int(d) for d in shape)


def _merge(first: tuple[int, ...] | None, second: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The partial shape both describe (TF's MergeWith); refuses incompatible ones."""
    if first is None:
        return second
    if second is None:
        return first
    if len(first) != len(second):
        raise ValueError(f"Incompatible shapes during merge: {list(first)} vs. {list(second)}")
    merged = []
    for a, b in zip(first, second, strict=True):
        if a != -1 and b != -1 and a != b:
            raise ValueError(f"Incompatible shapes during merge: {list(first)} vs. {list(second)}")
        merged.append(a if a != -1 else b)
    return tuple(merged)


def _fully_defined(shape: tuple[int, ...] | None) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


def _check_element(tensors: TensorList, item: np.ndarray) -> None:
    if item.dtype != tensors.element_dtype.numpy:
        given = BY_NAME.get("string" if item.dtype == object else item.dtype.name)
        raise ValueError(
            f"Invalid data types; op elements {given.type_string if given else item.dtype} but list elements "
            f"{tensors.element_dtype.type_string}"
        )
    try:
        _merge(tensors.element_shape, item.shape)
    except ValueError:
        raise ValueError(
            f"Tried to set a tensor with incompatible shape at a list index. Item element shape: "
            f"{list(item.shape)} list shape: {shape_text(tensors.element_shape)}"
        ) from None


def _item(tensors: TensorList, index: int, element_shape: tuple[int, ...] | None) -> np.ndarray:
    """Element `index`, zeros of the known element shape when it was never set."""
    item = tensors.items[index]
    if item is not None:
        return item
    shape = _merge(tensors.element_shape, element_shape)
    if not _fully_defined(shape):
        raise ValueError(
            "Trying to read an uninitialized tensor but element_shape is not fully defined: "
            f"{shape_text(shape)} and no list element is set."
        )
    return np.zeros(shape, tensors.element_dtype.numpy)


def _stacked(tensors: TensorList, indices, element_shape: tuple[int, ...] | None) -> np.ndarray:
    shape = _merge(tensors.element_shape, element_shape)
    known = [item for item in tensors.items if item is not None]
    if known:
        shape = _merge(shape, known[0].shape)
    if not known and not _fully_defined(shape) and len(tensors):
        raise ValueError(
            "Tried to stack list which only contains uninitialized tensors and has a non-fully-defined "
            f"element_shape: {shape_text(shape)}"
        )
    items = [_item(TensorList(tensors.element_dtype, shape, tensors.items), i, None) for i in indices]
    if items:
        return np.stack(items).astype(tensors.element_dtype.numpy, copy=False)
    if not _fully_defined(shape):
        raise ValueError(
            f"Tried to stack elements of an empty list with non-fully-defined element_shape: {shape_text(shape)}"
        )
    return np.zeros((0, *shape), tensors.element_dtype.numpy)


def _index(index: np.ndarray, length: int, verb: str) -> int:
    position = int(index)
    if not 0 <= position < length:
        raise ValueError(f"Trying to {verb} element {position} in a list with {length} elements.")
    return position


@register("TensorListReserve")
def _reserve(node: TfNode, element_shape, num_elements):
    """TensorListReserve: a list of num_elements unset elements."""
    count = int(num_elements)
    if count < 0:
        raise ValueError(f"The num_elements to reserve must be a non negative number, but got {count}")
    return TensorList(node.attr("element_dtype"), _shape_of(element_shape), (None,) * count)


@register("EmptyTensorList")
def _empty(node: TfNode, element_shape, max_num_elements):
    """EmptyTensorList: a list of no elements."""
    return TensorList(node.attr("element_dtype"), _shape_of(element_shape), ())


@register("TensorListFromTensor")
def _from_tensor(node: TfNode, tensor, element_shape):
    """TensorListFromTensor: the rows of a tensor as a list."""
    if tensor.ndim < 1:
        raise ValueError("Tensor must be at least a vector, but saw shape: []")
    shape = _merge(_shape_of(element_shape), tensor.shape[1:])
    return TensorList(node.attr("element_dtype"), shape, tuple(row.copy() for row in tensor))


@register("TensorListSetItem")
def _set_item(node: TfNode, handle, index, item):
    """TensorListSetItem: a new list with element `index` replaced."""
    tensors = _list_of(handle)
    _check_element(tensors, item)
    position = int(index)
    items = list(tensors.items)
    if node.attr("resize_if_index_out_of_bounds", False) and position >= len(items):
        items += [None] * (position + 1 - len(items))
    position = _index(index, len(items), "modify")
    items[position] = item.copy()
    return TensorList(tensors.element_dtype, tensors.element_shape, tuple(items))


@register("TensorListGetItem")
def _get_item(node: TfNode, handle, index, element_shape):
    """TensorListGetItem: element `index` (zeros if never set)."""
    tensors = _list_of(handle)
    return _item(tensors, _index(index, len(tensors), "access"), _shape_of(element_shape)).copy()


@register("TensorListStack")
def _stack(node: TfNode, handle, element_shape):
    """TensorListStack: every element stacked on a new first axis."""
    tensors = _list_of(handle)
    expected = node.attr("num_elements", -1)
    if expected != -1 and expected != len(tensors):
        raise ValueError(
            f"Operation expected a list with {expected} elements but got a list with {len(tensors)} elements."
        )
    return _stacked(tensors, range(len(tensors)), _shape_of(element_shape))


@register("TensorListGather")
def _gather(node: TfNode, handle, indices, element_shape):
    """TensorListGather: the elements at `indices`, stacked."""
    tensors = _list_of(handle)
    positions = [_index(i, len(tensors), "access") for i in np.asarray(indices).reshape(-1)]
    return _stacked(tensors, positions, _shape_of(element_shape))


@register("TensorListConcatV2")
def _concat(node: TfNode, handle, element_shape, leading_dims):
    """TensorListConcatV2: the elements joined along their first axis, and each one's length."""
    tensors = _list_of(handle)
    shape = _merge(tensors.element_shape, _shape_of(element_shape))
    items = []
    for i in range(len(tensors)):
        item = tensors.items[i]
        if item is None:
            if shape is None or any(d < 0 for d in shape[1:]) or not shape:
                raise ValueError("Concat saw an uninitialized element whose shape is not fully defined")
            leading = shape[0] if shape[0] >= 0 else int(leading_dims[i])
            item = np.zeros((leading, *shape[1:]), tensors.element_dtype.numpy)
        if item.ndim < 1:
            raise ValueError("Concat requires elements to be at least vectors, found scalars instead.")
        items.append(item)
    lengths = np.array([item.shape[0] for item in items], np.int64)
    if not items:
        if shape is None or any(d < 0 for d in shape[1:]):
            raise ValueError(
                "All except the first dimension must be fully defined when concating an empty tensor list."
            )
        return np.zeros((0, *shape[1:]), tensors.element_dtype.numpy), lengths
    return np.concatenate(items).astype(tensors.element_dtype.numpy, copy=False), lengths


@register("TensorListSplit")
def _split(node: TfNode, tensor, element_shape, lengths):
    """TensorListSplit: a tensor cut along its first axis into elements of the given lengths."""
    lengths = [int(n) for n in lengths]
    if sum(lengths) != tensor.shape[0] or any(n < 0 for n in lengths):
        raise ValueError(
            f"Unaligned lengths: they sum to {sum(lengths)}, the tensor has {tensor.shape[0]} rows."
        )
    bounds = np.cumsum([0, *lengths])
    items = tuple(tensor[bounds[i] : bounds[i + 1]].copy() for i in range(len(lengths)))
    shape = _merge(_shape_of(element_shape), (-1, *tensor.shape[1:]))
    return TensorList(node.attr("element_dtype"), shape, items)


@register("TensorListLength")
def _length(node: TfNode, handle):
    """TensorListLength: the number of elements (int32)."""
    return np.asarray(len(_list_of(handle)), np.int32)


@register("TensorListElementShape")
def _element_shape(node: TfNode, handle):
    """TensorListElementShape: the list's element shape (-1 unknown dims, scalar -1 unknown rank)."""
    shape = _list_of(handle).element_shape
    dtype = node.attr("shape_type").numpy
    return np.asarray(-1 if shape is None else shape, dtype)


@register("TensorListPushBack")
def _push_back(node: TfNode, handle, item):
    """TensorListPushBack: a new list with `item` appended."""
    tensors = _list_of(handle)
    _check_element(tensors, item)
    return TensorList(tensors.element_dtype, tensors.element_shape, (*tensors.items, item.copy()))


@register("TensorListPopBack")
def _pop_back(node: TfNode, handle, element_shape):
    """TensorListPopBack: the list without its last element, and that element."""
    tensors = _list_of(handle)
    if not len(tensors):
        raise ValueError("Trying to pop from an empty list.")
    last = _item(tensors, len(tensors) - 1, _shape_of(element_shape))
    return TensorList(tensors.element_dtype, tensors.element_shape, tensors.items[:-1]), last.copy()


@register("TensorListResize")
def _resize(node: TfNode, handle, size):
    """TensorListResize: the list cut or padded with unset elements to `size`."""
    tensors = _list_of(handle)
    count = int(size)
    if count < 0:
        raise ValueError(f"TensorListSlice expects size to be non-negative. Got: {count}")
    items = tensors.items[:count] + (None,) * max(0, count - len(tensors))
    return TensorList(tensors.element_dtype, tensors.element_shape, items)


@register("TensorListScatterIntoExistingList")
def _scatter_into(node: TfNode, handle, tensor, indices):
    """TensorListScatterIntoExistingList: rows of `tensor` written at `indices`, the list grown to fit."""
    tensors = _list_of(handle)
    return _scattered(tensors, tensor, indices)


@register("TensorListScatterV2")
def _scatter(node: TfNode, tensor, indices, element_shape, num_elements):
    """TensorListScatterV2: a new list with rows of `tensor` at `indices`."""
    positions = np.asarray(indices).reshape(-1)
    count = max(int(num_elements), int(positions.max()) + 1 if positions.size else 0)
    shape = _merge(_shape_of(element_shape), tensor.shape[1:])
    return _scattered(TensorList(node.attr("element_dtype"), shape, (None,) * count), tensor, indices)


def _scattered(tensors: TensorList, tensor: np.ndarray, indices: np.ndarray) -> TensorList:
    positions = [int(i) for i in np.asarray(indices).reshape(-1)]
    if len(positions) != tensor.shape[0]:
        raise ValueError(
            f"Specified a list with shape {list(tensor.shape)} from a tensor with {len(positions)} indices"
        )
    items = list(tensors.items)
    for row, position in zip(tensor, positions, strict=True):
        if position < 0:
            raise ValueError(f"Indices in TensorListScatter must all be non-negative. Found: {position}")
        if position >= len(items):
            items += [None] * (position + 1 - len(items))
        _check_element(tensors, row)
        items[position] = row.copy()
    return TensorList(tensors.element_dtype, tensors.element_shape, tuple(items))
