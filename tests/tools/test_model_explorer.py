"""Per-op times as Model Explorer node data: the documented JSON shape, and graph and node ids that are the
ones Model Explorer's TFLite adapter gives the same .tflite."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.delegates.replay import ReplayDelegate
from pytflite.model.builder import ModelBuilder
from pytflite.tools.model_explorer import graph_id, node_data
from pytflite.tools.profiler import ProfileSummary, profile_interpreter
from tests.oracle import CORPUS
from tests.tools.conftest import classifier_model

# Model Explorer's node data, as its node_data_builder.py documents it (ModelNodeData: graph id ->
# GraphNodeData; GraphNodeData: `results` node id -> NodeDataResult, and optional display settings)
COLORS = {"type": "string"}
NODE_DATA_SCHEMA = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["results"],
        "additionalProperties": False,
        "properties": {
            "results": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["value"],
                    "additionalProperties": False,
                    "properties": {
                        "value": {"type": ["number", "string"]},
                        "bgColor": COLORS,
                        "textColor": COLORS,
                    },
                },
            },
            "name": {"type": "string"},
            "thresholds": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["value", "bgColor"],
                    "additionalProperties": False,
                    "properties": {"value": {"type": "number"}, "bgColor": COLORS, "textColor": COLORS},
                },
            },
            "gradient": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["stop"],
                    "additionalProperties": False,
                    "properties": {
                        "stop": {"type": "number", "minimum": 0, "maximum": 1},
                        "bgColor": COLORS,
                        "textColor": COLORS,
                    },
                },
            },
            "hideInAggregatedStatsTable": {"type": "boolean"},
            "hideInChildrenStatsTable": {"type": "boolean"},
            "hideAggregatedStats": {"type": "array", "items": {"enum": ["min", "max", "sum", "avg"]}},
            "showExpandedSummaryOnGroupNode": {"type": "boolean"},
            "showLabelCountColumnsInChildrenStatsTable": {"type": "boolean"},
        },
    },
}


def test_profile_writes_node_data_for_every_op(cli, workdir):
    out = cli("profile", "classifier.tflite", "--num_runs", "2", "--model-explorer", "nodes.json").stdout
    assert "model-explorer classifier.tflite --node_data_paths=nodes.json,nodes.percent.json" in out
    ms = json.loads((workdir / "nodes.json").read_text())
    percent = json.loads((workdir / "nodes.percent.json").read_text())
    for data in (ms, percent):
        jsonschema.validate(data, NODE_DATA_SCHEMA)
        assert list(data) == ["main"]
        operators = len(pytflite.Interpreter(model_content=classifier_model()).model.subgraphs[0].operators)
        assert set(data["main"]["results"]) == {str(i) for i in range(operators)}
    assert all(r["value"] > 0 for r in ms["main"]["results"].values())
    assert 0 < sum(r["value"] for r in percent["main"]["results"].values()) <= 100.001


@pytest.mark.parametrize("flags", [0, 4], ids=["whole", "per-op"])
def test_a_delegate_node_is_not_a_model_node(flags):
    """A DELEGATE node has no node in Model Explorer's graph; a delegate reporting its ops fills them in."""
    interpreter = pytflite.Interpreter(
        model_content=classifier_model(),
        experimental_delegates=[ReplayDelegate(ops=[Op.CONV_2D], flags=flags)],
    )
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.ones([1, 8, 8, 3], np.float32))
    results = node_data(profile_interpreter(interpreter, runs=1), interpreter.model)["main"]["results"]
    convolutions = {"0", "2"}
    assert set(results) == {"1", "3", "4", "5"} | (convolutions if flags else set())


def test_graph_ids_are_model_explorers():
    """Subgraph name, else the signature key, else main / subgraph_N: what ai-edge-model-explorer-adapter
    0.2.1 gave this model."""
    builder = ModelBuilder()
    for name in ("", "named", "", ""):
        subgraph = builder.add_subgraph(name)
        x = subgraph.add_input("x", T.FLOAT32, [2])
        y = subgraph.add_tensor("y", T.FLOAT32, [2])
        subgraph.add_operator(Op.RELU, [x], [y])
        subgraph.add_output(y)
    builder.add_signature("serve", {"x": 0}, {"y": 1}, subgraph_index=2)
    model = pytflite.Interpreter(model_content=builder.build()).model
    assert [graph_id(model, i) for i in range(4)] == ["main", "named", "serve", "subgraph_3"]


# what ai-edge-model-explorer-adapter 0.2.1 names the graphs of these corpus models
CORPUS_GRAPH_IDS = {
    "control_flow": [
        "main",
        "cond_false_90",
        "cond_true_80",
        "while_cond_false_490",
        "while_cond_true_480",
        "while_cond",
        "while_body",
    ],
    "multi_signature": ["decode", "encode"],
    "stateful": ["main", "NoOp"],
}


@pytest.mark.parametrize("name", sorted(CORPUS_GRAPH_IDS))
def test_corpus_graph_ids_are_model_explorers(name):
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"public corpus not found at {CORPUS}")
    model = pytflite.Interpreter(model_path=str(path)).model
    assert [graph_id(model, i) for i in range(len(model.subgraphs))] == CORPUS_GRAPH_IDS[name]


def test_unknown_value_kind_is_refused():
    interpreter = pytflite.Interpreter(model_content=classifier_model())
    with pytest.raises(ValueError, match="value must be one of ms, percent"):
        node_data(ProfileSummary(interpreter), interpreter.model, value="us")
