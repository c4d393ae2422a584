"""Fuzz cases: hostile models made from the public corpus and from random graphs, one per case number.

`make_case(seed, number)` is deterministic, so any reported case can be rebuilt and replayed. Kinds:

- byte-level mutations of corpus models: random byte flips, truncation, chunk splicing, insertion and
  deletion (which shifts every offset behind it);
- field-aware mutations of corpus models: a tensor index, dimension, type, buffer index, opcode index,
  option field or vector length, located through the schema, overwritten with an edge value
  (-1, 0, a count, 2**31-1, ...);
- random graphs written with ModelBuilder: random builtin ops with random arity, tensor types, shapes,
  constants, options and control-flow subgraphs, half of them then broken at the builder level
  (indices, dimensions, types, operator order, subgraph references that recurse).

Every generator takes a `random.Random`, so hypothesis can drive the same code (`st.randoms()`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import random
import struct
from pathlib import Path

import numpy as np
from tflite.Model import Model

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.arity import OPERATOR_ARITY
from pytflite.model.builder import ModelBuilder
from pytflite.model.options import options_class_for_operator
from pytflite.ops.registry import kernel_infos

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "public"

INTERESTING = (0, 1, -1, 2, 3, -2, 4, 7, 8, 15, 16, 255, 256, 1023, 65535, 2**31 - 1, -(2**31), 2**24)


# --- corpus seeds and their field positions ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SeedModel:
    name: str
    data: bytes
    fields: tuple[tuple[int, int], ...]  # (position in the file, width in bytes) of mutable scalars


@functools.lru_cache(maxsize=1)
def corpus_seeds(corpus: Path = CORPUS) -> tuple[SeedModel, ...]:
    """The corpus models (plus one built here, so the fuzzer runs without the corpus)."""
    models = {p.stem: p.read_bytes() for p in sorted(corpus.glob("*.tflite"))} if corpus.is_dir() else {}
    models["builder_mlp"] = _mlp_seed()
    return tuple(SeedModel(name, data, tuple(field_positions(data))) for name, data in models.items())


def _mlp_seed() -> bytes:
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 4], shape_signature=[-1, 4])
    w = b.add_constant("w", np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    h = b.add_tensor("h", T.FLOAT32, [1, 3])
    b.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [h], {"fused_activation_function": "RELU"})
    y = b.add_tensor("y", T.FLOAT32, [1, 3])
    b.add_operator(Op.SOFTMAX, [h], [y], {"beta": 1.0})
    b.add_output(y)
    b.add_signature("serving_default", {"x": x}, {"y": y})
    return b.build()


def _field(table, slot: int, width: int, out: list) -> None:
    offset = table.Offset(4 + 2 * slot)
    if offset:
        out.append((table.Pos + offset, width))


def _vector(table, slot: int, out: list) -> None:
    """Each int32 element of a vector field, and its length word."""
    offset = table.Offset(4 + 2 * slot)
    if offset:
        start = table.Vector(offset)
        out.append((start - 4, 4))
        out.extend((start + 4 * i, 4) for i in range(min(table.VectorLen(offset), 64)))


def field_positions(data: bytes) -> list[tuple[int, int]]:
    """Where the schema's index-, shape- and type-like scalars sit in a well-formed model."""
    model, out = Model.GetRootAs(data, 0), []
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        _vector(subgraph._tab, 1, out)  # inputs
        _vector(subgraph._tab, 2, out)  # outputs
        for t in range(subgraph.TensorsLength()):
            tab = subgraph.Tensors(t)._tab
            _vector(tab, 0, out)  # shape
            _field(tab, 1, 1, out)  # type
            _field(tab, 2, 4, out)  # buffer
            _field(tab, 5, 1, out)  # is_variable
            _vector(tab, 7, out)  # shape_signature
        for o in range(subgraph.OperatorsLength()):
            op = subgraph.Operators(o)
            tab = op._tab
            _field(tab, 0, 4, out)  # opcode_index
            _vector(tab, 1, out)  # inputs
            _vector(tab, 2, out)  # outputs
            _field(tab, 3, 1, out)  # builtin_options_type
            options = op.BuiltinOptions()
            if options is not None:  # every scalar of the options table, as 1 or 4 bytes
                vtable = options.Pos - struct.unpack_from("<i", data, options.Pos)[0]
                for slot in range(4, struct.unpack_from("<H", data, vtable)[0], 2):
                    field = struct.unpack_from("<H", data, vtable + slot)[0]
                    if field:
                        out.append((options.Pos + field, 4 if (options.Pos + field) % 4 == 0 else 1))
    for c in range(model.OperatorCodesLength()):
        tab = model.OperatorCodes(c)._tab
        _field(tab, 0, 1, out)  # deprecated_builtin_code
        _field(tab, 2, 4, out)  # version
        _field(tab, 3, 4, out)  # builtin_code
    for b in range(model.BuffersLength()):
        tab = model.Buffers(b)._tab
        offset = tab.Offset(4)
        if offset:
            out.append((tab.Vector(offset) - 4, 4))  # the data vector's length
    for g in range(model.SignatureDefsLength()):
        signature = model.SignatureDefs(g)
        _field(signature._tab, 3, 4, out)  # subgraph_index
        for i in range(signature.InputsLength()):
            _field(signature.Inputs(i)._tab, 1, 4, out)
        for i in range(signature.OutputsLength()):
            _field(signature.Outputs(i)._tab, 1, 4, out)
    return [(p, w) for p, w in out if 0 <= p <= len(data) - w]


# --- byte and field mutations -----------------------------------------------------------------------


def _interesting(rng: random.Random, width: int) -> int:
    value = rng.choice(INTERESTING) if rng.random() < 0.8 else rng.randrange(-(2**31), 2**31)
    return value % 256 if width == 1 else value % 2**32


def mutate_fields(rng: random.Random, seed: SeedModel) -> bytes:
    data = bytearray(seed.data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        position, width = rng.choice(seed.fields)
        value = _interesting(rng, width)
        data[position : position + width] = value.to_bytes(width, "little")
    return bytes(data)


def mutate_bytes(rng: random.Random, seed: SeedModel) -> bytes:
    data = bytearray(seed.data)
    kind = rng.choice(("flip", "flip", "truncate", "splice", "insert", "delete"))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(data))
            data[position] = (
                rng.randrange(256) if rng.random() < 0.5 else data[position] ^ (1 << rng.randrange(8))
            )
    elif kind == "truncate":
        cut = rng.randrange(len(data)) if rng.random() < 0.5 else len(data) - rng.randint(1, 64)
        data = data[: max(cut, 0)]
    elif kind == "splice":
        length = rng.randint(1, 32)
        source, target = rng.randrange(len(data)), rng.randrange(len(data))
        data[target : target + length] = data[source : source + length]
    elif kind == "insert":
        position = rng.randrange(len(data))
        data[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        position = rng.randrange(len(data))
        del data[position : position + rng.randint(1, 16)]
    return bytes(data)


# --- random graphs ----------------------------------------------------------------------------------

_VERSIONS = {int(info.op): info.versions for info in kernel_infos()}
_OPS = sorted(_VERSIONS)
_TYPES = [T.FLOAT32] * 8 + [T.INT32] * 3 + [T.INT8, T.UINT8, T.BOOL, T.INT64, T.INT16, T.FLOAT16]


def _shape(rng: random.Random) -> list[int]:
    return [rng.choice((1, 1, 2, 3, 4, 0, 5)) for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4)))]


def _constant(rng: random.Random, tensor_type: T, shape: list[int]) -> np.ndarray:
    count = int(np.prod(shape))
    if tensor_type == T.BOOL:
        return np.array([rng.random() < 0.5 for _ in range(count)], bool).reshape(shape)
    if tensor_type in (T.FLOAT32, T.FLOAT16):
        return np.array([rng.uniform(-3, 3) for _ in range(count)], np.float32).reshape(shape)
    return np.array([rng.randint(-1, 4) for _ in range(count)], np.int64).reshape(shape)


def _random_value(rng: random.Random, field: dataclasses.Field, subgraphs: int, own: int):
    if field.name.endswith("subgraph_index"):  # mostly a later subgraph, which cannot recurse
        later = range(own + 1, subgraphs)
        return rng.choice(later) if later and rng.random() < 0.9 else rng.choice((-1, own, subgraphs, 99))
    kind = field.type
    if isinstance(kind, type) and issubclass(kind, enum.IntEnum):
        return rng.choice(list(kind))
    if kind is bool:
        return rng.random() < 0.5
    if kind is int:
        return rng.choice((0, 1, 1, 2, 3, -1, 4, 7))
    if kind is float:
        return rng.choice((0.0, 1.0, 0.5, -1.0, 1e-3, 6.0))
    if kind is tuple:
        return tuple(rng.choice((-1, 0, 1, 2, 3)) for _ in range(rng.randint(0, 4)))
    return field.default


def random_options(rng: random.Random, op: int, subgraphs: int, own: int = 0):
    options_class = options_class_for_operator(op)
    if options_class is None:
        return None
    values = {}
    for field in dataclasses.fields(options_class):
        if field.name.endswith("subgraph_index") or rng.random() < 0.6:
            values[field.name] = _random_value(rng, field, subgraphs, own)
    return options_class(**values)


def _arity(rng: random.Random, op: int) -> tuple[int, int]:
    (low_in, high_in), (low_out, high_out) = OPERATOR_ARITY.get(op, ((1, 3), (1, 1)))
    return (
        rng.randint(low_in, min(high_in if high_in is not None else low_in + 3, low_in + 3)),
        rng.randint(low_out, min(high_out if high_out is not None else low_out + 2, low_out + 2)),
    )


def _fill_subgraph(rng: random.Random, subgraph, subgraphs: int, own: int) -> None:
    available = [
        subgraph.add_input(f"in{i}", rng.choice(_TYPES), _shape(rng)) for i in range(rng.randint(1, 3))
    ]
    produced = []
    for o in range(rng.randint(1, 5)):
        op = rng.choice(_OPS)
        inputs_count, outputs_count = _arity(rng, op)
        first_type = subgraph.tensors[available[0]].type
        inputs = []
        for i in range(inputs_count):
            if available and rng.random() < 0.6:
                inputs.append(rng.choice(available))
            else:
                tensor_type = first_type if rng.random() < 0.5 else rng.choice(_TYPES)
                shape = _shape(rng)
                inputs.append(
                    subgraph.add_constant(
                        f"c{o}_{i}", _constant(rng, tensor_type, shape), tensor_type=tensor_type
                    )
                )
        outputs = []
        for i in range(outputs_count):
            tensor_type = first_type if rng.random() < 0.7 else rng.choice(_TYPES)
            shape = list(subgraph.tensors[inputs[0]].shape) if inputs and rng.random() < 0.5 else _shape(rng)
            outputs.append(subgraph.add_tensor(f"t{o}_{i}", tensor_type, shape))
        version = rng.randint(*_VERSIONS[op])
        subgraph.add_operator(
            Op(op), inputs, outputs, random_options(rng, op, subgraphs, own), version=version
        )
        available += outputs
        produced += outputs
    for t in rng.sample(produced, k=min(len(produced), rng.randint(1, 2))) if produced else available[:1]:
        subgraph.add_output(t)


def _break(rng: random.Random, builder: ModelBuilder) -> None:
    """One builder-level corruption: what a hostile or buggy converter could write."""
    subgraph = rng.choice(builder.subgraphs)
    count = len(subgraph.tensors)
    bad_index = rng.choice((-1, -2, count, count + 1, 2**31 - 1, rng.randrange(max(count, 1))))
    kind = rng.randrange(11)
    if kind == 0 and subgraph.operators:
        op = rng.choice(subgraph.operators)
        if op.inputs:
            inputs = list(op.inputs)
            inputs[rng.randrange(len(inputs))] = bad_index
            op.inputs = tuple(inputs)
    elif kind == 1 and subgraph.operators:
        op = rng.choice(subgraph.operators)
        op.outputs = (*op.outputs, rng.choice((*op.outputs, *op.inputs, bad_index)))
    elif kind == 2:
        tensor = rng.choice(subgraph.tensors)
        tensor.shape = tuple(rng.choice((-1, -5, 0, 2**31 - 1, 65536, 3)) for _ in range(rng.randint(1, 4)))
    elif kind == 3:
        rng.choice(subgraph.tensors).type = rng.randrange(0, 30)
    elif kind == 4:
        rng.choice(subgraph.tensors).buffer = rng.choice((1, 2, len(builder._buffers), 2**31 - 1))
    elif kind == 5 and len(subgraph.operators) > 1:
        i, j = rng.sample(range(len(subgraph.operators)), 2)
        subgraph.operators[i], subgraph.operators[j] = subgraph.operators[j], subgraph.operators[i]
    elif kind == 6 and subgraph.operators:
        rng.choice(subgraph.operators).opcode_index = rng.choice((len(builder._opcodes), 2**31 - 1, 0))
    elif kind == 7:
        target = rng.choice((subgraph.inputs, subgraph.outputs))
        if target:
            target[rng.randrange(len(target))] = bad_index
    elif kind == 8 and subgraph.operators:  # re-point control flow, often back at its own subgraph
        op = rng.choice(subgraph.operators)
        if op.options is not None and dataclasses.is_dataclass(op.options):
            names = [f.name for f in dataclasses.fields(op.options) if f.name.endswith("subgraph_index")]
            if names:
                index = rng.choice((builder.subgraphs.index(subgraph), 0, len(builder.subgraphs)))
                op.options = dataclasses.replace(op.options, **{rng.choice(names): index})
    elif kind == 9:
        tensor = rng.choice(subgraph.tensors)
        tensor.shape_signature = tuple(rng.choice((-1, -2, 1, 3)) for _ in range(rng.randint(0, 3)))
    else:
        rng.choice(subgraph.tensors).is_variable = True


def random_graph(rng: random.Random, broken: bool | None = None) -> bytes:
    """A random model: 1-3 subgraphs of random ops; broken at the builder level when `broken`."""
    for _ in range(8):  # a draw the builder itself cannot serialize is replaced by the next one
        builder = ModelBuilder()
        subgraphs = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        for index in range(subgraphs):
            subgraph = builder.main if index == 0 else builder.add_subgraph(f"s{index}")
            _fill_subgraph(rng, subgraph, subgraphs, index)
        if broken if broken is not None else rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                _break(rng, builder)
        try:
            return builder.build()
        except (struct.error, ValueError, TypeError, OverflowError):
            continue
    return _mlp_seed()


# --- one case -----------------------------------------------------------------------------------------


def _seed_weight(seed: SeedModel) -> float:
    return 1.0 / max(len(seed.data), 4096) ** 0.5  # small models are cheap: run them more often


def make_case(seed: int, number: int) -> tuple[str, bytes]:
    """Case `number` of run `seed`: (a label naming its kind and source, the model bytes)."""
    rng = random.Random(f"{seed}:{number}")
    roll = rng.random()
    if roll < 0.45:
        return "graph", random_graph(rng)
    seeds = corpus_seeds()
    source = rng.choices(seeds, weights=[_seed_weight(s) for s in seeds])[0]
    if roll < 0.75 and source.fields:
        return f"fields:{source.name}", mutate_fields(rng, source)
    return f"bytes:{source.name}", mutate_bytes(rng, source)
