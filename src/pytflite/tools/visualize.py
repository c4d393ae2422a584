"""`pytflite visualize`: one self-contained HTML page (inline SVG and JavaScript, nothing fetched) that
draws each subgraph: operators as boxes, graph inputs and outputs as pills, tensors on the edges with
their shapes, and delegate partitions as coloured macro nodes listing the ops they run.

Python collects the graph (from the interpreter's execution plan, so delegation shows; from the model
file alone when the runtime cannot load it) and embeds it as JSON; the page lays it out in layers
(longest path, barycentre ordering) and draws it when opened. `data-drawn-nodes` on <body> counts the
boxes and pills drawn, which is what the browser test checks.
"""

from __future__ import annotations

import contextlib
import html
import json
from pathlib import Path
from typing import Any

from ..core.node import OPTIONAL_TENSOR, DelegateParams
from ..core.types import AllocationType
from ..model.reader import ModelDescription, read_model
from .analyze import op_name
from .loading import ToolError, build_interpreter, delegate_from_args

_CONSTANT = (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO)


def _tensor_entry(name: str, shape, dtype: str, kind: str) -> dict[str, Any]:
    return {"name": name, "shape": [int(d) for d in shape], "dtype": dtype, "kind": kind}


def graph_from_interpreter(interpreter: Any) -> list[dict[str, Any]]:
    """Each subgraph's execution plan (after delegation) and the tensors it touches."""
    result = []
    for index, subgraph in enumerate(interpreter.subgraphs):
        tensors: dict[int, dict[str, Any]] = {}

        def note(t: int, subgraph=subgraph, tensors=tensors) -> None:
            if t == OPTIONAL_TENSOR or t in tensors:
                return
            tensor = subgraph.tensors[t]
            kind = (
                "const" if tensor.allocation_type in _CONSTANT else "var" if tensor.is_variable else "value"
            )
            dtype = tensor.type.name.lower() if tensor.type is not None else "notype"
            tensors[t] = _tensor_entry(tensor.name, tensor.shape, dtype, kind)

        nodes = []
        for node_index in subgraph.execution_plan:
            node, registration = subgraph.nodes[node_index]
            entry: dict[str, Any] = {
                "id": node_index,
                "op": registration.op_name,
                "inputs": [t for t in node.inputs if t != OPTIONAL_TENSOR],
                "outputs": [t for t in node.outputs if t != OPTIONAL_TENSOR],
            }
            if node.delegate is not None and isinstance(node.builtin_data, DelegateParams):
                entry["delegate"] = registration.op_name
                entry["inner"] = [
                    {"id": i, "op": subgraph.nodes[i][1].op_name} for i in node.builtin_data.nodes_to_replace
                ]
            for t in (*entry["inputs"], *entry["outputs"]):
                note(t)
            nodes.append(entry)
        for t in (*subgraph.inputs, *subgraph.outputs):
            note(t)
        result.append(
            {
                "index": index,
                "name": subgraph.name,
                "inputs": [t for t in subgraph.inputs if t != OPTIONAL_TENSOR],
                "outputs": [t for t in subgraph.outputs if t != OPTIONAL_TENSOR],
                "nodes": nodes,
                "tensors": {str(k): v for k, v in tensors.items()},
            }
        )
    return result


def graph_from_model(model: ModelDescription) -> list[dict[str, Any]]:
    """The operators in file order, when the runtime cannot build the model."""
    result = []
    for index, subgraph in enumerate(model.subgraphs):
        tensors = {}
        for t, tensor in enumerate(subgraph.tensors):
            kind = "const" if tensor.data is not None else "var" if tensor.is_variable else "value"
            tensors[str(t)] = _tensor_entry(tensor.name, tensor.shape, tensor.type.name.lower(), kind)
        nodes = [
            {
                "id": j,
                "op": op_name(model, op.opcode_index),
                "inputs": [t for t in op.inputs if t != OPTIONAL_TENSOR],
                "outputs": [t for t in op.outputs if t != OPTIONAL_TENSOR],
            }
            for j, op in enumerate(subgraph.operators)
        ]
        result.append(
            {
                "index": index,
                "name": subgraph.name,
                "inputs": list(subgraph.inputs),
                "outputs": list(subgraph.outputs),
                "nodes": nodes,
                "tensors": tensors,
            }
        )
    return result


def drawn_node_count(graph: list[dict[str, Any]]) -> int:
    """Boxes plus pills the page draws: every plan node, every graph input and output."""
    return sum(len(s["nodes"]) + len(set(s["inputs"])) + len(set(s["outputs"])) for s in graph)


def render_html(graph: list[dict[str, Any]], title: str, note: str = "") -> str:
    payload = json.dumps({"title": title, "note": note, "subgraphs": graph}, separators=(",", ":"))
    payload = payload.replace("</", "<\\/")  # keep the JSON from closing its <script> element
    return (
        _PAGE.replace("__TITLE__", html.escape(title))
        .replace("__DATA__", payload)
        .replace("__STYLE__", _STYLE)
        .replace("__SCRIPT__", _SCRIPT)
    )


def command(args: Any) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise ToolError(f"no such model file: {args.model}")
    note = ""
    delegates = delegate_from_args(args)
    try:
        interpreter = build_interpreter(args.model, custom_ops=args.custom_ops, delegates=delegates)
        with contextlib.suppress(RuntimeError):  # allocating resolves the shapes computed at prepare
            interpreter.allocate_tensors()
        graph = graph_from_interpreter(interpreter)
    except ToolError as error:
        if delegates:
            raise
        note = f"drawn from the model file: pytflite cannot load it ({str(error).splitlines()[0]})"
        graph = graph_from_model(read_model(path.read_bytes()))
    title = path.name + (f" with {', '.join(args.delegate)}" if args.delegate else "")
    Path(args.output).write_text(render_html(graph, title, note), encoding="utf-8")
    partitions = sum(1 for s in graph for n in s["nodes"] if "delegate" in n)
    print(
        f"wrote {args.output}: {len(graph)} subgraph(s), {sum(len(s['nodes']) for s in graph)} nodes"
        + (f", {partitions} delegate partition(s)" if args.delegate else "")
        + f", {drawn_node_count(graph)} boxes drawn"
    )
    if note:
        print(note)
    return 0


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<style>__STYLE__</style>
</head>
<body>
<header><h1>__TITLE__</h1><div id="legend"></div>
<div id="controls"><button id="zoom-out">&minus;</button><button id="zoom-reset">100%</button><button id="zoom-in">+</button></div>
</header>
<p id="note"></p>
<main><div id="graphs"></div><aside id="details"><p>Click a node to see its tensors.</p></aside></main>
<script type="application/json" id="graph-data">__DATA__</script>
<script>__SCRIPT__</script>
</body>
</html>
"""

_STYLE = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { display: flex; align-items: center; gap: 16px; padding: 8px 16px; background: #fff;
  border-bottom: 1px solid #ddd; position: sticky; top: 0; z-index: 2; }
h1 { font-size: 16px; margin: 0; }
h2 { font-size: 14px; margin: 12px 0 4px; }
#legend span { display: inline-block; margin-right: 12px; }
#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px;
  border: 1px solid #555; }
#note { margin: 4px 16px; color: #a33; }
main { display: flex; align-items: flex-start; }
#graphs { flex: 1; overflow: auto; padding: 0 16px 16px; }
#details { width: 320px; min-height: 200px; position: sticky; top: 56px; margin: 12px; padding: 8px 12px;
  background: #fff; border: 1px solid #ddd; font-size: 12px; overflow-wrap: anywhere; }
svg { background: #fff; border: 1px solid #e3e3e3; }
.node rect { stroke: #555; stroke-width: 1; }
.node.op rect { fill: #e8f0fe; }
.node.io rect { fill: #f1f3f4; }
.node.selected rect { stroke: #d93025; stroke-width: 2.5; }
.node text { font-size: 12px; pointer-events: none; }
.node .inner { font-size: 10.5px; fill: #333; }
.node { cursor: pointer; }
.edge path { fill: none; stroke: #888; stroke-width: 1.2; }
.edge text { font-size: 10px; fill: #555; }
button { font-size: 13px; min-width: 32px; }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#fbbc04", "#34a853", "#ff6d01", "#a142f4", "#24c1e0", "#f06292", "#9e9d24"];
  const delegateColour = {};
  let zoom = 1;
  const svgs = [];

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function text(parent, x, y, content, cls, anchor) {
    const t = el("text", { x: x, y: y, "text-anchor": anchor || "middle" }, parent);
    if (cls) t.setAttribute("class", cls);
    t.textContent = content;
    return t;
  }
  function shapeText(tensor) {
    return tensor ? "[" + tensor.shape.join("\u00d7") + "]" : "";
  }
  function colourFor(name) {
    if (!(name in delegateColour)) {
      delegateColour[name] = PALETTE[Object.keys(delegateColour).length % PALETTE.length];
    }
    return delegateColour[name];
  }

  function buildGraph(sg) {
    const items = [];
    const producer = {};
    const T = sg.tensors;
    const seenIn = new Set();
    sg.inputs.forEach(function (t) {
      if (seenIn.has(t)) return;
      seenIn.add(t);
      const item = { key: "in" + t, kind: "io", label: (T[t] ? T[t].name : "T#" + t), sub: "input " + shapeText(T[t]),
        tensor: t, preds: [], succs: [] };
      items.push(item);
      producer[t] = item;
    });
    sg.nodes.forEach(function (n) {
      const item = { key: "op" + n.id, kind: "op", node: n, label: n.op + "  #" + n.id, preds: [], succs: [] };
      if (n.delegate) item.delegate = n.delegate;
      items.push(item);
      n.outputs.forEach(function (t) { producer[t] = item; });
    });
    const edges = [];
    function connect(from, to, t) {
      edges.push({ from: from, to: to, tensor: t });
      from.succs.push(to);
      to.preds.push(from);
    }
    items.forEach(function (item) {
      if (item.kind !== "op") return;
      item.node.inputs.forEach(function (t) {
        const from = producer[t];
        if (from && from !== item) connect(from, item, t);
      });
    });
    const seenOut = new Set();
    sg.outputs.forEach(function (t) {
      if (seenOut.has(t)) return;
      seenOut.add(t);
      const item = { key: "out" + t, kind: "io", label: (T[t] ? T[t].name : "T#" + t), sub: "output " + shapeText(T[t]),
        tensor: t, preds: [], succs: [] };
      items.push(item);
      if (producer[t]) connect(producer[t], item, t);
    });
    return { items: items, edges: edges };
  }

  function measure(item) {
    const lines = [item.label];
    if (item.sub) lines.push(item.sub);
    if (item.delegate) {
      const inner = item.node.inner.map(function (i) { return i.op + " #" + i.id; });
      const shown = inner.slice(0, 8);
      if (inner.length > shown.length) shown.push("\u2026 " + (inner.length - shown.length) + " more");
      item.innerLines = ["runs " + inner.length + " nodes:"].concat(shown);
      lines.push.apply(lines, item.innerLines);
    }
    const widest = Math.max.apply(null, lines.map(function (l) { return l.length; }));
    item.w = Math.max(90, Math.min(360, widest * 7 + 24));
    item.h = 22 + (item.sub ? 14 : 0) + (item.innerLines ? item.innerLines.length * 13 + 4 : 0);
  }

  function layout(graph) {
    const items = graph.items;
    // ranks: longest path from the sources (items are in a topological order already)
    items.forEach(function (item) {
      item.rank = 0;
      item.preds.forEach(function (p) { item.rank = Math.max(item.rank, p.rank + 1); });
    });
    const maxRank = Math.max.apply(null, items.map(function (i) { return i.rank; }).concat([0]));
    items.forEach(function (item) {  // outputs on the bottom row
      if (item.key.startsWith("out")) item.rank = maxRank;
    });
    const layers = [];
    for (let r = 0; r <= maxRank; r++) layers.push([]);
    items.forEach(function (item) { item.up = []; item.down = []; layers[item.rank].push(item); });
    // an edge across several layers runs through one thin placeholder per layer it crosses
    graph.edges.forEach(function (e) {
      e.chain = [e.from];
      for (let r = e.from.rank + 1; r < e.to.rank; r++) {
        const dummy = { key: "via", kind: "dummy", rank: r, w: 14, h: 0, up: [], down: [] };
        layers[r].push(dummy);
        e.chain.push(dummy);
      }
      e.chain.push(e.to);
      for (let i = 1; i < e.chain.length; i++) {
        e.chain[i - 1].down.push(e.chain[i]);
        e.chain[i].up.push(e.chain[i - 1]);
      }
    });
    layers.forEach(function (layer) { layer.forEach(function (item, i) { item.order = i; }); });
    function sweep(down) {
      for (let k = 0; k < layers.length; k++) {
        const layer = layers[down ? k : layers.length - 1 - k];
        layer.forEach(function (item) {
          const near = down ? item.up : item.down;
          item.bary = near.length ? near.reduce(function (s, n) { return s + n.order; }, 0) / near.length : item.order;
        });
        layer.sort(function (a, b) { return a.bary - b.bary || a.order - b.order; });
        layer.forEach(function (item, i) { item.order = i; });
      }
    }
    for (let pass = 0; pass < 6; pass++) { sweep(true); sweep(false); }
    items.forEach(measure);
    const GAP_X = 28, GAP_Y = 56, MARGIN = 24;
    let y = MARGIN, width = 0;
    layers.forEach(function (layer) {
      const total = layer.reduce(function (s, i) { return s + i.w; }, 0) + GAP_X * Math.max(0, layer.length - 1);
      width = Math.max(width, total);
      layer.height = Math.max.apply(null, layer.map(function (i) { return i.h; }).concat([0]));
      layer.total = total;
      layer.y = y;
      y += layer.height + GAP_Y;
    });
    layers.forEach(function (layer) {
      let x = MARGIN + (width - layer.total) / 2;
      layer.forEach(function (item) {
        item.x = x;
        item.y = layer.y;
        if (item.kind === "dummy") item.h = layer.height;
        x += item.w + GAP_X;
      });
    });
    return { width: width + 2 * MARGIN, height: y - GAP_Y + MARGIN };
  }

  function edgePath(chain) {
    // vertical-tangent curves between layers, straight down through each placeholder
    let d = "";
    for (let i = 0; i < chain.length - 1; i++) {
      const a = chain[i], b = chain[i + 1];
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
      const bend = Math.max(12, (y2 - y1) / 2);
      if (i === 0) d += "M" + x1 + "," + y1;
      else d += " L" + x1 + "," + y1;
      d += " C" + x1 + "," + (y1 + bend) + " " + x2 + "," + (y2 - bend) + " " + x2 + "," + y2;
    }
    return d;
  }

  function showDetails(sg, item, group) {
    document.querySelectorAll(".node.selected").forEach(function (n) { n.classList.remove("selected"); });
    group.classList.add("selected");
    const panel = document.getElementById("details");
    panel.textContent = "";
    function line(tag, content) {
      const node = document.createElement(tag);
      node.textContent = content;
      panel.appendChild(node);
      return node;
    }
    function tensorLine(t) {
      const tensor = sg.tensors[t];
      if (!tensor) return line("div", "T#" + t);
      return line("div", "T#" + t + " " + tensor.name + "  " + tensor.dtype + shapeText(tensor) +
        (tensor.kind === "const" ? "  (constant)" : tensor.kind === "var" ? "  (variable)" : ""));
    }
    if (item.kind === "io") {
      line("h3", (item.key.startsWith("in") ? "Input " : "Output ") + "of subgraph " + sg.index);
      tensorLine(item.tensor);
      return;
    }
    const n = item.node;
    line("h3", n.op + " (node " + n.id + ", subgraph " + sg.index + ")");
    line("b", "inputs");
    n.inputs.forEach(tensorLine);
    line("b", "outputs");
    n.outputs.forEach(tensorLine);
    if (n.inner) {
      line("b", "delegated nodes");
      n.inner.forEach(function (i) { line("div", "#" + i.id + " " + i.op); });
    }
  }

  function draw(sg, container) {
    const graph = buildGraph(sg);
    const size = layout(graph);
    const heading = document.createElement("h2");
    heading.textContent = "Subgraph " + sg.index + (sg.name ? " \u2014 " + sg.name : "") + ": " + sg.nodes.length + " nodes";
    container.appendChild(heading);
    const svg = el("svg", { width: size.width, height: size.height, viewBox: "0 0 " + size.width + " " + size.height,
      "data-subgraph": sg.index });
    svg.dataset.width = size.width;
    svg.dataset.height = size.height;
    container.appendChild(svg);
    svgs.push(svg);
    const edgeLayer = el("g", { class: "edges" }, svg);
    const nodeLayer = el("g", { class: "nodes" }, svg);
    graph.edges.forEach(function (e) {
      const g = el("g", { class: "edge" }, edgeLayer);
      el("path", { d: edgePath(e.chain), "marker-end": "url(#arrow)" }, g);
      const a = e.chain[0], b = e.chain[1];
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
      const tensor = sg.tensors[e.tensor];
      const label = text(g, (x1 + x2) / 2 + 4, (y1 + y2) / 2 + 4, shapeText(tensor), null, "start");
      const title = el("title", {}, g);
      title.textContent = "T#" + e.tensor + " " + (tensor ? tensor.name + " " + tensor.dtype + shapeText(tensor) : "");
      label.setAttribute("data-tensor", e.tensor);
    });
    graph.items.forEach(function (item) {
      const g = el("g", { class: "node " + item.kind, transform: "translate(" + item.x + "," + item.y + ")",
        "data-key": item.key }, nodeLayer);
      const rect = el("rect", { width: item.w, height: item.h, rx: item.kind === "io" ? item.h / 2 : 4 }, g);
      if (item.delegate) {
        rect.setAttribute("style", "fill:" + colourFor(item.delegate));
        g.classList.add("delegate");
      }
      text(g, item.w / 2, 15, item.label);
      let y = 15;
      if (item.sub) { y += 14; text(g, item.w / 2, y, item.sub, "inner"); }
      (item.innerLines || []).forEach(function (l) { y += 13; text(g, item.w / 2, y, l, "inner"); });
      const title = el("title", {}, g);
      title.textContent = item.label;
      g.addEventListener("click", function () { showDetails(sg, item, g); });
    });
    const defs = el("defs", {}, svg);
    const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#888" }, marker);
    return graph.items.length;
  }

  function applyZoom() {
    svgs.forEach(function (svg) {
      svg.setAttribute("width", svg.dataset.width * zoom);
      svg.setAttribute("height", svg.dataset.height * zoom);
    });
    document.getElementById("zoom-reset").textContent = Math.round(zoom * 100) + "%";
  }
  document.getElementById("zoom-in").addEventListener("click", function () { zoom *= 1.25; applyZoom(); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom /= 1.25; applyZoom(); });
  document.getElementById("zoom-reset").addEventListener("click", function () { zoom = 1; applyZoom(); });

  const container = document.getElementById("graphs");
  let drawn = 0;
  data.subgraphs.forEach(function (sg) { drawn += draw(sg, container); });
  document.getElementById("note").textContent = data.note || "";
  const legend = document.getElementById("legend");
  Object.keys(delegateColour).forEach(function (name) {
    const span = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = delegateColour[name];
    span.appendChild(swatch);
    span.appendChild(document.createTextNode(name + " partition"));
    legend.appendChild(span);
  });
  document.body.setAttribute("data-drawn-nodes", String(drawn));
  document.body.setAttribute("data-delegate-partitions", String(document.querySelectorAll(".node.delegate").length));
})();
"""
