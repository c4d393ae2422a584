"""TF's lookup tables as resources shared across signatures (tests/fixtures/flex/make_tables.py, TF
2.18.1): the signature calls TF's interpreter made, replayed in order, give its outputs; and TF's
checks on table ops, in its words (recorded from its eager ops)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.core.resources import Resources
from pytflite.flex import TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flex" / "tables"


def _calls(recorded) -> list[tuple[str, dict, dict]]:
    calls: dict[int, tuple[str, dict, dict]] = {}
    for key in recorded.files:
        number, signature, kind = re.fullmatch(r"call_(\d+)__(\w+?)__(input|output)_\w+", key).groups()
        name = key.split(f"__{kind}_", 1)[1]
        entry = calls.setdefault(int(number), (signature, {}, {}))
        entry[1 if kind == "input" else 2][name] = recorded[key]
    return [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize("name", sorted(path.stem for path in FIXTURES.glob("*.tflite")))
def test_signature_calls_give_tensorflows_outputs(name):
    interpreter = pytflite.Interpreter(model_path=str(FIXTURES / f"{name}.tflite"))
    for signature, inputs, expected in _calls(np.load(FIXTURES / f"{name}.npz", allow_pickle=True)):
        outputs = interpreter.get_signature_runner(signature)(**inputs)
        assert set(outputs) == set(expected)
        for key, value in expected.items():
            np.testing.assert_array_equal(outputs[key], value, err_msg=f"{signature} {key}")


def _op(op: str, *inputs, resources: Resources, **attrs):
    return kernel_for(op).compute(TfNode(op, op, attrs), *inputs, resources=resources)


def _table(resources: Resources, op="MutableHashTableV2", key="string", value="int64", **attrs):
    attrs = {"key_dtype": BY_NAME[key], "value_dtype": BY_NAME[value], "shared_name": "t", **attrs}
    return _op(op, resources=resources, **attrs)


def _words(*items: str) -> np.ndarray:
    return np.array([w.encode() for w in items], dtype=object)


def test_tables_are_shared_by_name_and_refuse_as_tf_does():
    resources = Resources()
    table = _table(resources)
    assert _table(resources) == table  # the same shared_name: the same table
    _op("LookupTableInsertV2", table, _words("a", "b", "a"), np.array([1, 2, 3]), resources=resources)
    found = _op("LookupTableFindV2", table, _words("a", "z"), np.array(-1), resources=resources)
    np.testing.assert_array_equal(found, [3, -1])
    with pytest.raises(
        ValueError, match=re.escape("Signature mismatch, have: resource, int64, int64->int64")
    ):
        _op("LookupTableFindV2", table, np.array([1]), np.array(-1), resources=resources)
    with pytest.raises(ValueError, match=re.escape("Expected shape [2] for value, got [1]")):
        _op("LookupTableInsertV2", table, _words("a", "b"), np.array([1]), resources=resources)


def test_a_static_table_is_initialized_once():
    resources = Resources()
    table = _table(resources, "HashTableV2", "int64", "string")
    keys, values = np.array([1, 2]), _words("p", "q")
    with pytest.raises(ValueError, match="Table not initialized."):
        _op("LookupTableFindV2", table, keys, np.array(b"?", dtype=object), resources=resources)
    _op("InitializeTableV2", table, keys, values, resources=resources)
    _op("LookupTableImportV2", table, keys, values, resources=resources)  # the same data again: no-op
    with pytest.raises(ValueError, match="Table was already initialized with different data."):
        _op("InitializeTableV2", table, np.array([7]), _words("r"), resources=resources)
    with pytest.raises(ValueError, match="Insert not supported by InitializableLookupTable implementations"):
        _op("LookupTableInsertV2", table, np.array([7]), _words("r"), resources=resources)
    other = _table(resources, "HashTableV2", "int64", "string", shared_name="u")
    with pytest.raises(
        ValueError, match="HashTable has different value for same key. Key 7 has r and trying to add value s"
    ):
        _op("InitializeTableV2", other, np.array([7, 7]), _words("r", "s"), resources=resources)


def test_tables_of_tensors_check_the_default_value_shape():
    resources = Resources()
    table = _table(resources, "MutableHashTableOfTensorsV2", "int64", "float32", value_shape=[2])
    _op("LookupTableInsertV2", table, np.array([3, 4]), np.float32([[1, 2], [3, 4]]), resources=resources)
    found = _op("LookupTableFindV2", table, np.array([4, 9]), np.float32([-1, -2]), resources=resources)
    np.testing.assert_array_equal(found, [[3, 4], [-1, -2]])
    with pytest.raises(ValueError, match=re.escape("Expected shape [2] or [2,2] for default value, got []")):
        _op("LookupTableFindV2", table, np.array([4, 9]), np.float32(-1), resources=resources)
    keys, values = _op("LookupTableExportV2", table, resources=resources)
    np.testing.assert_array_equal(keys, [3, 4])
    np.testing.assert_array_equal(values, [[1, 2], [3, 4]])
