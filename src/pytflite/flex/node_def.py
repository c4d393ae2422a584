"""A Flex node's TensorFlow NodeDef, decoded: the op, its name and its attrs as Python values.

The converter stores, in a Flex node's custom options, a flexbuffer vector of two strings: the TF op's
name and the serialized NodeDef. Attr values become: `s` bytes, `i` int, `f` float, `b` bool, `type` a
DType, `shape` a tuple with -1 for an unknown dimension (None for an unknown rank), `tensor` a NumPy
array, `list` a list of those, `func` a (name, attrs) pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from .dtypes import BY_NAME, DType, dtype_of_code
from .protos import AttrValue, NodeDef, TensorProto

_MISSING = object()


class TfNode:
    """One TF node: `op` (e.g. "AddV2"), `name`, `attrs` (name -> value) and `inputs` (its input
    names in the TF graph, empty strings once converted)."""

    __slots__ = ("op", "name", "attrs", "inputs")

    def __init__(self, op: str, name: str, attrs: dict[str, Any], inputs: tuple[str, ...] = ()):
        self.op, self.name, self.attrs, self.inputs = op, name, attrs, inputs

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """The value of attr `name`; without a default, a NodeDef lacking it is refused by name."""
        value = self.attrs.get(name, default)
        if value is _MISSING:
            raise ValueError(f"{self.op}'s NodeDef has no attr '{name}'")
        return value

    def text(self, name: str, default: Any = _MISSING) -> str:
        """A string attr as text (TF's string attrs are bytes)."""
        value = self.attr(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def __repr__(self) -> str:
        return f"TfNode({self.op}, {self.attrs})"


def decode_flex_options(buffer: bytes) -> TfNode:
    """The TfNode of a Flex node's custom options; ValueError naming what is malformed."""
    try:
        vector = flexbuffers.GetRoot(bytes(buffer)).AsVector
        op, ref = vector[0].AsString, vector[1]
        serialized = ref.AsBlob if ref.IsBlob else ref.AsStringBytes  # TF's converter writes a string
    except Exception as error:  # flexbuffers raises assorted errors on garbage
        raise ValueError(f"Flex custom options are not a [op, NodeDef] flexbuffer vector ({error})") from None
    try:
        node_def = NodeDef.FromString(serialized)
    except Exception as error:
        raise ValueError(f"Flex op {op}: its NodeDef does not parse ({error})") from None
    if node_def.op and node_def.op != op:
        raise ValueError(f"Flex op {op}: its NodeDef names op {node_def.op}")
    attrs = {key: attr_value(value) for key, value in node_def.attr.items()}
    return TfNode(op, node_def.name, attrs, tuple(node_def.input))


def attr_value(value) -> Any:
    """The Python value of one AttrValue message."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "list":
        return _list_value(value.list)
    return _single(kind, getattr(value, kind))


def _list_value(listed) -> list:
    for kind in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(listed, kind)
        if len(items):
            return [_single(kind, item) for item in items]
    return []


def _single(kind: str, value: Any) -> Any:
    if kind == "type":
        return dtype_of_code(value)
    if kind == "shape":
        return shape_value(value)
    if kind == "tensor":
        return tensor_value(value)
    if kind == "func":
        return value.name, {key: attr_value(item) for key, item in value.attr.items()}
    if kind == "f":
        return float(np.float32(value))
    return value


def shape_value(shape) -> tuple[int, ...] | None:
    """A TensorShapeProto as a tuple (-1: unknown dimension), None for an unknown rank."""
    if shape.unknown_rank:
        return None
    return tuple(int(dim.size) for dim in shape.dim)


# TensorProto's typed value field per dtype name, and how many of its values make one element (the
# field TF's Save writes a tensor's values in, too: flex/checkpoint.py).
VALUE_FIELDS = {
    "float32": ("float_val", 1),
    "float64": ("double_val", 1),
    "int32": ("int_val", 1),
    "int16": ("int_val", 1),
    "int8": ("int_val", 1),
    "uint8": ("int_val", 1),
    "uint16": ("int_val", 1),
    "float16": ("half_val", 1),
    "bfloat16": ("half_val", 1),
    "int64": ("int64_val", 1),
    "bool": ("bool_val", 1),
    "string": ("string_val", 1),
    "complex64": ("scomplex_val", 2),
    "complex128": ("dcomplex_val", 2),
    "uint32": ("uint32_val", 1),
    "uint64": ("uint64_val", 1),
}


def tensor_value(proto) -> np.ndarray:
    """A TensorProto as a NumPy array. As TF reads one: `tensor_content` holds the elements' bytes;
    otherwise the typed field holds them, and fewer values than elements repeat the last one."""
    dtype: DType = dtype_of_code(proto.dtype)
    shape = shape_value(proto.tensor_shape) or ()
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.name in ("resource", "variant"):
        raise ValueError(f"a constant tensor of type {dtype.name} is not supported")
    if proto.tensor_content and dtype.name != "string":
        flat = np.frombuffer(proto.tensor_content, dtype=dtype.numpy.newbyteorder("<"))
        if flat.size != count:
            raise ValueError(f"a TensorProto of shape {list(shape)} holds {flat.size} elements")
        return flat.astype(dtype.numpy).reshape(shape)
    field, width = VALUE_FIELDS[dtype.name]
    values = list(getattr(proto, field))
    if dtype.name == "string":
        flat = np.empty(len(values), dtype=object)
        flat[:] = [bytes(v) for v in values]
    elif width == 2:
        pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        flat = (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype.numpy)
    elif field == "half_val":
        flat = np.asarray(values, dtype=np.uint16).view(dtype.numpy)
    else:
        flat = np.asarray(values).astype(dtype.numpy)
    if flat.size == count:
        return flat.reshape(shape)
    if flat.size > count:
        raise ValueError(f"a TensorProto of shape {list(shape)} holds {flat.size} values")
    if flat.size == 0:  # no values: zeros (empty strings)
        return np.full(shape, b"", object) if dtype.name == "string" else np.zeros(shape, dtype.numpy)
    filled = np.empty(count, dtype=flat.dtype)
    filled[: flat.size] = flat
    filled[flat.size :] = flat[-1]
    return filled.reshape(shape)


def encode_flex_options(op: str, attrs: dict[str, Any], name: str = "") -> bytes:
    """A Flex node's custom options for TF op `op` with `attrs` (DType, bool, int, float, str or
    bytes, an array for a tensor attr, or a list of one of those), for models built without TF's
    converter (ModelBuilder)."""
    node_def = NodeDef(name=name or op, op=op)
    for key, value in attrs.items():
        node_def.attr[key].CopyFrom(_attr_message(value))
    builder = flexbuffers.Builder()
    with builder.Vector():
        builder.String(op)
        builder.Blob(node_def.SerializeToString())
    return bytes(builder.Finish())


def _attr_message(value: Any):
    message = AttrValue()
    if isinstance(value, list):
        for item in value:
            kind, converted = _attr_field(item)
            getattr(message.list, kind).append(converted)
        if not value:
            message.list.SetInParent()
        return message
    kind, converted = _attr_field(value)
    if kind == "tensor":
        message.tensor.CopyFrom(converted)
    else:
        setattr(message, kind, converted)
    return message


def _attr_field(value: Any) -> tuple[str, Any]:
    if isinstance(value, DType):
        return "type", value.code
    if isinstance(value, bool):
        return "b", value
    if isinstance(value, int):
        return "i", value
    if isinstance(value, float):
        return "f", value
    if isinstance(value, str):
        return "s", value.encode()
    if isinstance(value, bytes):
        return "s", value
    if isinstance(value, np.ndarray):
        return "tensor", tensor_proto(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as a TF attr value")


def tensor_proto(array: np.ndarray):
    """A TensorProto holding `array` (strings in string_val, other types as tensor_content)."""
    dtype = BY_NAME.get("string" if array.dtype.kind in "OSU" else array.dtype.name)
    if dtype is None:
        raise TypeError(f"no TF dtype for a {array.dtype} array")
    proto = TensorProto(dtype=dtype.code)
    for size in array.shape:
        proto.tensor_shape.dim.add(size=int(size))
    if dtype.name == "string":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in array.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(array, dtype=dtype.numpy.newbyteorder("<")).tobytes()
    return proto
