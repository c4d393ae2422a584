"""TensorFlow's NodeDef and the messages it holds, and those of its V1 checkpoints, as protobuf message
classes built here.

A Flex node's custom options carry a serialized `tensorflow.NodeDef` (node_def.proto), whose attrs are
`AttrValue`s (attr_value.proto) holding types (types.proto), shapes (tensor_shape.proto) and tensors
(tensor.proto). The descriptors are written below field for field as TensorFlow defines them, so that
decoding needs only the `protobuf` package (its pure-Python build included: Pyodide), not TensorFlow.
The checkpoint messages are saved_tensor_slice.proto's (with tensor_slice.proto's TensorSliceProto and
versions.proto's VersionDef), what tf.raw_ops.Save writes (flex/checkpoint.py), and tensor_bundle.proto's
BundleHeaderProto and BundleEntryProto, what SaveV2 writes (flex/bundle.py).
They live in a private descriptor pool: a process that also imports TensorFlow keeps its own classes.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_Field = descriptor_pb2.FieldDescriptorProto

# tensorflow.DataType (types.proto): the values TF's ops name in their type attrs.
DATA_TYPES = {
    "DT_INVALID": 0,
    "DT_FLOAT": 1,
    "DT_DOUBLE": 2,
    "DT_INT32": 3,
    "DT_UINT8": 4,
    "DT_INT16": 5,
    "DT_INT8": 6,
    "DT_STRING": 7,
    "DT_COMPLEX64": 8,
    "DT_INT64": 9,
    "DT_BOOL": 10,
    "DT_QINT8": 11,
    "DT_QUINT8": 12,
    "DT_QINT32": 13,
    "DT_BFLOAT16": 14,
    "DT_QINT16": 15,
    "DT_QUINT16": 16,
    "DT_UINT16": 17,
    "DT_COMPLEX128": 18,
    "DT_HALF": 19,
    "DT_RESOURCE": 20,
    "DT_VARIANT": 21,
    "DT_UINT32": 22,
    "DT_UINT64": 23,
}

# (message, fields): each field (name, number, type, label, message or enum type name, packed).
_OPTIONAL, _REPEATED = _Field.LABEL_OPTIONAL, _Field.LABEL_REPEATED
_MESSAGES = {
    "TensorShapeProto.Dim": [
        ("size", 1, _Field.TYPE_INT64, _OPTIONAL, None, False),
        ("name", 2, _Field.TYPE_STRING, _OPTIONAL, None, False),
    ],
    "TensorShapeProto": [
        ("dim", 2, _Field.TYPE_MESSAGE, _REPEATED, "TensorShapeProto.Dim", False),
        ("unknown_rank", 3, _Field.TYPE_BOOL, _OPTIONAL, None, False),
    ],
    "TensorProto": [
        ("dtype", 1, _Field.TYPE_ENUM, _OPTIONAL, "DataType", False),
        ("tensor_shape", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorShapeProto", False),
        ("version_number", 3, _Field.TYPE_INT32, _OPTIONAL, None, False),
        ("tensor_content", 4, _Field.TYPE_BYTES, _OPTIONAL, None, False),
        ("float_val", 5, _Field.TYPE_FLOAT, _REPEATED, None, True),
        ("double_val", 6, _Field.TYPE_DOUBLE, _REPEATED, None, True),
        ("int_val", 7, _Field.TYPE_INT32, _REPEATED, None, True),
        ("string_val", 8, _Field.TYPE_BYTES, _REPEATED, None, False),
        ("scomplex_val", 9, _Field.TYPE_FLOAT, _REPEATED, None, True),
        ("int64_val", 10, _Field.TYPE_INT64, _REPEATED, None, True),
        ("bool_val", 11, _Field.TYPE_BOOL, _REPEATED, None, True),
        ("dcomplex_val", 12, _Field.TYPE_DOUBLE, _REPEATED, None, True),
        ("half_val", 13, _Field.TYPE_INT32, _REPEATED, None, True),
        ("uint32_val", 16, _Field.TYPE_UINT32, _REPEATED, None, True),
        ("uint64_val", 17, _Field.TYPE_UINT64, _REPEATED, None, True),
    ],
    "AttrValue.ListValue": [
        ("s", 2, _Field.TYPE_BYTES, _REPEATED, None, False),
        ("i", 3, _Field.TYPE_INT64, _REPEATED, None, True),
        ("f", 4, _Field.TYPE_FLOAT, _REPEATED, None, True),
        ("b", 5, _Field.TYPE_BOOL, _REPEATED, None, True),
        ("type", 6, _Field.TYPE_ENUM, _REPEATED, "DataType", True),
        ("shape", 7, _Field.TYPE_MESSAGE, _REPEATED, "TensorShapeProto", False),
        ("tensor", 8, _Field.TYPE_MESSAGE, _REPEATED, "TensorProto", False),
        ("func", 9, _Field.TYPE_MESSAGE, _REPEATED, "NameAttrList", False),
    ],
    "AttrValue": [  # the oneof `value`
        ("list", 1, _Field.TYPE_MESSAGE, _OPTIONAL, "AttrValue.ListValue", False),
        ("s", 2, _Field.TYPE_BYTES, _OPTIONAL, None, False),
        ("i", 3, _Field.TYPE_INT64, _OPTIONAL, None, False),
        ("f", 4, _Field.TYPE_FLOAT, _OPTIONAL, None, False),
        ("b", 5, _Field.TYPE_BOOL, _OPTIONAL, None, False),
        ("type", 6, _Field.TYPE_ENUM, _OPTIONAL, "DataType", False),
        ("shape", 7, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorShapeProto", False),
        ("tensor", 8, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorProto", False),
        ("placeholder", 9, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("func", 10, _Field.TYPE_MESSAGE, _OPTIONAL, "NameAttrList", False),
    ],
    "NameAttrList": [
        ("name", 1, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("attr", 2, _Field.TYPE_MESSAGE, _REPEATED, "NameAttrList.AttrEntry", False),
    ],
    "NodeDef": [
        ("name", 1, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("op", 2, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("input", 3, _Field.TYPE_STRING, _REPEATED, None, False),
        ("device", 4, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("attr", 5, _Field.TYPE_MESSAGE, _REPEATED, "NodeDef.AttrEntry", False),
    ],
    "TensorSliceProto.Extent": [
        ("start", 1, _Field.TYPE_INT64, _OPTIONAL, None, False),
        ("length", 2, _Field.TYPE_INT64, _OPTIONAL, None, False),  # in the oneof has_length
    ],
    "TensorSliceProto": [("extent", 1, _Field.TYPE_MESSAGE, _REPEATED, "TensorSliceProto.Extent", False)],
    "VersionDef": [
        ("producer", 1, _Field.TYPE_INT32, _OPTIONAL, None, False),
        ("min_consumer", 2, _Field.TYPE_INT32, _OPTIONAL, None, False),
        ("bad_consumers", 3, _Field.TYPE_INT32, _REPEATED, None, True),
    ],
    "SavedSliceMeta": [
        ("name", 1, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("shape", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorShapeProto", False),
        ("type", 3, _Field.TYPE_ENUM, _OPTIONAL, "DataType", False),
        ("slice", 4, _Field.TYPE_MESSAGE, _REPEATED, "TensorSliceProto", False),
    ],
    "SavedTensorSliceMeta": [
        ("tensor", 1, _Field.TYPE_MESSAGE, _REPEATED, "SavedSliceMeta", False),
        ("versions", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "VersionDef", False),
    ],
    "SavedSlice": [
        ("name", 1, _Field.TYPE_STRING, _OPTIONAL, None, False),
        ("slice", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorSliceProto", False),
        ("data", 3, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorProto", False),
    ],
    "BundleHeaderProto": [
        ("num_shards", 1, _Field.TYPE_INT32, _OPTIONAL, None, False),
        ("endianness", 2, _Field.TYPE_INT32, _OPTIONAL, None, False),  # an enum: LITTLE = 0, BIG = 1
        ("version", 3, _Field.TYPE_MESSAGE, _OPTIONAL, "VersionDef", False),
    ],
    "BundleEntryProto": [
        ("dtype", 1, _Field.TYPE_ENUM, _OPTIONAL, "DataType", False),
        ("shape", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "TensorShapeProto", False),
        ("shard_id", 3, _Field.TYPE_INT32, _OPTIONAL, None, False),
        ("offset", 4, _Field.TYPE_INT64, _OPTIONAL, None, False),
        ("size", 5, _Field.TYPE_INT64, _OPTIONAL, None, False),
        ("crc32c", 6, _Field.TYPE_FIXED32, _OPTIONAL, None, False),
        ("slices", 7, _Field.TYPE_MESSAGE, _REPEATED, "TensorSliceProto", False),
    ],
    "SavedTensorSlices": [
        ("meta", 1, _Field.TYPE_MESSAGE, _OPTIONAL, "SavedTensorSliceMeta", False),
        ("data", 2, _Field.TYPE_MESSAGE, _OPTIONAL, "SavedSlice", False),
    ],
}
_ONEOF_MEMBERS = {
    "AttrValue": "value",
    "TensorSliceProto.Extent": "has_length",
}  # every field of AttrValue is in this oneof
_MAPS = ("NameAttrList", "NodeDef")  # each has `map<string, AttrValue> attr`


def _add_fields(message: descriptor_pb2.DescriptorProto, fields: list, oneof: str | None) -> None:
    """The fields; with `oneof`, every field of AttrValue, or the last field (Extent's length), is in it."""
    if oneof is not None:
        message.oneof_decl.add(name=oneof)
    for position, (name, number, kind, label, type_name, packed) in enumerate(fields):
        field = message.field.add(name=name, number=number, type=kind, label=label)
        if type_name is not None:
            field.type_name = f".tensorflow.{type_name}"
        if packed:
            field.options.packed = True
        if oneof is not None and (oneof == "value" or position == len(fields) - 1):
            field.oneof_index = 0


def _file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="pytflite/tensorflow_node_def.proto", package="tensorflow")
    file.syntax = "proto3"
    enum = file.enum_type.add(name="DataType")
    for name, number in DATA_TYPES.items():
        enum.value.add(name=name, number=number)
    outer: dict[str, descriptor_pb2.DescriptorProto] = {}
    for qualified in sorted(_MESSAGES, key=len):  # a nested message after the one holding it
        parent, _, nested = qualified.rpartition(".")
        messages = outer[parent].nested_type if parent else file.message_type
        outer[qualified] = messages.add(name=nested)
    for qualified, fields in _MESSAGES.items():
        _add_fields(outer[qualified], fields, _ONEOF_MEMBERS.get(qualified))
    for name in _MAPS:
        entry = outer[name].nested_type.add(name="AttrEntry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_Field.TYPE_STRING, label=_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=_Field.TYPE_MESSAGE,
            label=_OPTIONAL,
            type_name=".tensorflow.AttrValue",
        )
    return file


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
NodeDef = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.NodeDef"))
AttrValue = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.AttrValue"))
TensorProto = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.TensorProto"))
TensorShapeProto = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.TensorShapeProto"))
SavedTensorSlices = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("tensorflow.SavedTensorSlices")
)
BundleHeaderProto = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("tensorflow.BundleHeaderProto")
)
BundleEntryProto = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.BundleEntryProto"))
