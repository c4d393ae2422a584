"""Per-op times as Model Explorer node data (`ai-edge-model-explorer`'s overlay on a model's graph).

Model Explorer reads a node-data JSON file (its `ModelNodeData`): for each graph id, the graph's node
data, whose `results` map node ids to `{"value": number}`, optionally with a `gradient` that colours nodes
from the smallest value to the largest. Its TFLite adapter (the flatbuffer one, the default for
.tflite) names the graph of subgraph i by the subgraph's name, else the key of the first signature
naming that subgraph, else "main" (i = 0) or "subgraph_i", and the node of operator j "j", the operator's
index in its subgraph. So:

    summary = profile_interpreter(interpreter, runs=20)
    write_node_data(summary, interpreter.model, "nodes.json")   # and nodes.percent.json
    # model-explorer model.tflite --node_data_paths=nodes.json,nodes.percent.json

Each file holds one value per node (Model Explorer shows one number per file): the average ms per call,
and the percentage of the subgraph's total time. Nodes that are not operators of the model (the DELEGATE
node of a delegate that does not report its ops one by one) have no node in Model Explorer's graph and
are left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..model.reader import ModelDescription
from .profiler import ProfileSummary

# fastest -> slowest
GRADIENT = [
    {"stop": 0, "bgColor": "#c8e6c9"},
    {"stop": 0.5, "bgColor": "#fff59d"},
    {"stop": 1, "bgColor": "#ef9a9a"},
]

VALUES = {"ms": "pytflite avg ms", "percent": "pytflite % of total"}


def graph_id(model: ModelDescription, subgraph_index: int) -> str:
    """The id Model Explorer's TFLite adapter gives the graph of a subgraph."""
    name = model.subgraphs[subgraph_index].name
    if name:
        return name
    for signature in model.signatures:
        if signature.subgraph_index == subgraph_index:
            if signature.key:
                return signature.key
            break
    return "main" if subgraph_index == 0 else f"subgraph_{subgraph_index}"


def node_data(summary: ProfileSummary, model: ModelDescription, value: str = "ms") -> dict[str, Any]:
    """The ModelNodeData of a profile: per graph, each operator's average ms per call (`value="ms"`) or
    its share of the subgraph's time in percent (`value="percent"`)."""
    if value not in VALUES:
        raise ValueError(f"value must be one of {', '.join(VALUES)}, not {value!r}")
    graphs = {}
    for index, table in sorted(summary.subgraphs.items()):
        if not 0 <= index < len(model.subgraphs):
            continue
        operators = len(model.subgraphs[index].operators)
        total_us = table.run_total_us.sum or 1.0
        results = {}
        for detail in table.by_run_order():
            if detail.node_index is None or not 0 <= detail.node_index < operators:
                continue
            number = (
                detail.elapsed_us.avg / 1e3 if value == "ms" else detail.elapsed_us.sum * 100.0 / total_us
            )
            results[str(detail.node_index)] = {"value": round(number, 6)}
        if results:
            graphs[graph_id(model, index)] = {"name": VALUES[value], "results": results, "gradient": GRADIENT}
    return graphs


def write_node_data(summary: ProfileSummary, model: ModelDescription, path: str | Path) -> list[Path]:
    """Write the average ms to `path` and the percentages beside it (`nodes.json` -> `nodes.percent.json`)."""
    path = Path(path)
    written = []
    for value, target in (("ms", path), ("percent", path.with_suffix(".percent" + (path.suffix or ".json")))):
        target.write_text(json.dumps(node_data(summary, model, value), indent=1) + "\n")
        written.append(target)
    return written
