"""The option-table description in model/options.py against the schema's generated `tflite` readers."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import re

import flatbuffers
import numpy as np
import pytest

from pytflite.core.types import BuiltinOperator
from pytflite.model import options
from pytflite.model.flatbuffer_bounds import FlatBuffer, Table

TABLES = sorted(options._TABLES)


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _generated_class(table: str):
    try:
        module = importlib.import_module(f"tflite.{table}")
    except ImportError:
        return None  # newer than the installed tflite package
    return getattr(module, table)


def _random_value(field: dataclasses.Field, schema_type: str, rng: np.random.Generator):
    kind = field.type
    if isinstance(kind, type) and issubclass(kind, enum.IntEnum):
        return list(kind)[rng.integers(len(kind))]
    if kind is bool:
        return bool(rng.integers(2))
    if kind is float:
        return float(np.float32(rng.standard_normal()))
    if kind is str:
        return "name_" + str(rng.integers(1000))
    if kind is bytes:
        return bytes(rng.integers(0, 256, size=int(rng.integers(0, 5)), dtype=np.uint8))
    low = 0 if schema_type.lstrip("[").startswith("u") else -100
    if kind is tuple:
        if schema_type == "[bool]":
            return tuple(bool(v) for v in rng.integers(0, 2, size=int(rng.integers(0, 4))))
        return tuple(int(v) for v in rng.integers(max(low, -5), 50, size=int(rng.integers(0, 4))))
    return int(rng.integers(low, 100))


def _round_trip(value):
    builder = flatbuffers.Builder(64)
    union, union_type, offset = options.write_options(builder, value)
    builder.Finish(offset)
    buf = builder.Output()
    root = flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0)
    return buf, root, options.read_options(union, union_type, Table(FlatBuffer(buf), root, "options"))


@pytest.mark.parametrize("table", TABLES)
def test_defaults_and_random_values_round_trip_and_agree_with_the_generated_reader(table):
    cls = options.options_class(table)
    generated = _generated_class(table)
    rng = np.random.default_rng(sum(map(ord, table)))
    schema_types = {f.name: f.schema_type for f in options._TABLES[table].fields}

    def random_options():
        return cls(**{f.name: _random_value(f, schema_types[f.name], rng) for f in dataclasses.fields(cls)})

    for value in [cls()] + [random_options() for _ in range(3)]:
        if table == "StablehloCustomCallOptions":  # backend_config is a string there
            value = dataclasses.replace(value, backend_config="cfg")
        buf, root, decoded = _round_trip(value)
        assert decoded == value
        if generated is None:
            continue
        reader = generated()
        reader.Init(buf, root)
        for field in dataclasses.fields(cls):
            accessor = getattr(reader, _camel(field.name), None)
            if accessor is None:
                continue  # a field the installed package predates
            expected = getattr(value, field.name)
            if field.type is tuple:
                got = tuple(getattr(reader, _camel(field.name) + "AsNumpy")().tolist()) if expected else ()
            elif field.type is bytes:
                got = getattr(reader, _camel(field.name) + "AsNumpy")().tobytes() if expected else b""
            elif field.type is str:
                got = (accessor() or b"").decode()
            else:
                got = accessor()
            assert got == expected, (table, field.name, got, expected)


def test_every_table_of_the_installed_schema_package_is_described():
    import tflite

    generated = {
        name
        for name in dir(tflite)
        if re.fullmatch(r"\w+Options", name) and isinstance(getattr(tflite, name), type)
    }
    missing = generated - set(TABLES) - {"BuiltinOptions", "CustomOptionsFormat"}
    assert not missing, missing


@pytest.mark.parametrize(
    ("op", "table"),
    [
        (BuiltinOperator.CONV_2D, "Conv2DOptions"),
        (BuiltinOperator.MAX_POOL_2D, "Pool2DOptions"),
        (BuiltinOperator.MEAN, "ReducerOptions"),
        (BuiltinOperator.MAXIMUM, "MaximumMinimumOptions"),
        (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, "SequenceRNNOptions"),
        (BuiltinOperator.STABLEHLO_COMPOSITE, "StableHLOCompositeOptions"),
        (BuiltinOperator.CONV_3D_TRANSPOSE, "Conv3DOptions"),
    ],
)
def test_operators_map_to_their_options_table(op, table):
    assert options.options_class_for_operator(op).__name__ == table


def test_operators_without_options_have_none():
    assert options.options_class_for_operator(BuiltinOperator.RELU) is None
    assert options.options_class_for_operator(BuiltinOperator.LOGISTIC) is None


def test_schema_defaults_are_applied():
    assert options.Conv2DOptions().dilation_w_factor == 1
    assert options.AddOptions().pot_scale_int16 is True
    assert options.BidirectionalSequenceLSTMOptions().time_major is True
    assert options.UniqueOptions().idx_out_type.name == "INT32"


def test_invalid_enum_value_names_table_and_field():
    builder = flatbuffers.Builder(64)
    builder.StartObject(7)
    builder.PrependInt8Slot(0, 9, 0)  # padding = 9: not a Padding value
    offset = builder.EndObject()
    builder.Finish(offset)
    buf = builder.Output()
    root = flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0)
    with pytest.raises(ValueError, match=r"Conv2DOptions\.padding has invalid Padding value 9"):
        options.read_options(1, 1, Table(FlatBuffer(buf), root, "options"))


def test_options_are_frozen_and_typed():
    conv = options.Conv2DOptions(padding=options.Padding.VALID, stride_w=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        conv.stride_w = 3
    assert {f.name: f.type for f in dataclasses.fields(conv)}["padding"] is options.Padding
