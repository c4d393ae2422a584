"""`pytflite compare`: run a model twice on the same inputs and name the first tensor whose values
diverge beyond tolerance.

    pytflite compare model.tflite --delegate my_delegate.py:MyDelegate   # delegated vs CPU kernels
    pytflite compare model.tflite --litert                               # pytflite vs ai-edge-litert

Every node's outputs are recorded right after the node runs (a Recorder on `context.profiler`, so no
`preserve_all_tensors` and no change to the delegate's partitioning); LiteRT keeps all its tensors with
experimental_preserve_all_tensors. Tensors are compared in the reference's execution order, so the first
divergence is the earliest one the two runs both expose (tensors inside a delegate partition are not
visible; the partition's outputs are). A tensor diverges when some |a - b| > atol + rtol * max|reference|.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.node import OPTIONAL_TENSOR
from ..core.profiling import ProfilerHooks
from ..debug import shape_text, tensor_value
from .inputs import parse_range, resolve_inputs
from .loading import ToolError, build_interpreter, delegate_from_args
from .session import Session, run_reference

if TYPE_CHECKING:
    from ..core.delegate import Delegate
    from ..core.delegation import DelegatePartition


class Recorder(ProfilerHooks):
    """A profiler that copies every node's outputs in one subgraph as soon as the node has run."""

    force_delegate_node_profiling = True  # a delegate node's outputs are what the graph exposes

    def __init__(self, interpreter: Any, subgraph_index: int = 0):
        self.interpreter = interpreter
        self.subgraph_index = subgraph_index
        self.values: dict[int, np.ndarray] = {}
        self.producers: dict[int, int] = {}  # tensor -> node index that wrote it
        self.order: list[int] = []  # tensors in the order they were produced
        self._open: list[tuple[int, int]] = []

    def begin_event(self, tag: str, event_type: int, metadata1: int = 0, metadata2: int = 0) -> int:
        self._open.append((metadata1, metadata2))
        return len(self._open) - 1

    def end_event(self, handle: int) -> None:
        node_index, subgraph_index = self._open[handle]
        if subgraph_index != self.subgraph_index:
            return
        subgraph = self.interpreter.subgraphs[subgraph_index]
        node, _ = subgraph.nodes[node_index]
        for t in node.outputs:
            if t == OPTIONAL_TENSOR:
                continue
            value = tensor_value(subgraph, t)
            if value is None:
                continue
            if t not in self.values:
                self.order.append(t)
            self.values[t] = np.array(value, copy=True)
            self.producers[t] = node_index


@dataclasses.dataclass
class Divergence:
    tensor: int
    max_diff: float
    tolerance: float
    where: tuple[int, ...]
    ours: Any
    reference: Any
    differing: int
    size: int


def divergence(
    ours: np.ndarray, reference: np.ndarray, atol: float, rtol: float, tensor: int
) -> Divergence | None:
    """None when the two agree within tolerance; NaNs agree with NaNs. Shape or type changes diverge."""
    if ours.shape != reference.shape:
        return Divergence(
            tensor, float("inf"), 0.0, (), f"shape {ours.shape}", f"shape {reference.shape}", 1, 1
        )
    if ours.size == 0:
        return None
    if ours.dtype.kind in "OSU" or reference.dtype.kind in "OSU":
        same = np.array(ours == reference).reshape(ours.shape)
        if same.all():
            return None
        where = tuple(int(i) for i in np.argwhere(~same)[0])
        return Divergence(
            tensor, float("inf"), 0.0, where, ours[where], reference[where], int((~same).sum()), ours.size
        )
    a = ours.astype(np.complex128 if ours.dtype.kind == "c" else np.float64)
    b = reference.astype(a.dtype)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN on one side only
    finite = np.abs(b[np.isfinite(b)])
    tolerance = atol + rtol * (float(finite.max()) if finite.size else 0.0)
    bad = diff > tolerance
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    return Divergence(
        tensor, float(diff[where]), tolerance, where, ours[where], reference[where], int(bad.sum()), ours.size
    )


def _record(interpreter: Any, session: Session, values: list[np.ndarray]) -> Recorder:
    session.set_inputs(values)
    recorder = Recorder(interpreter, session.subgraph_index)
    try:
        with recorder.attached(recorder.interpreter):
            session.invoke()
    except RuntimeError as error:
        raise ToolError(f"invoke failed: {str(error).strip()}") from None
    return recorder


def _litert_tensors(
    args: Any, session: Session, values: list[np.ndarray]
) -> tuple[list[int], dict[int, np.ndarray]]:
    """LiteRT's value of every tensor of the subgraph, after one invoke on `values`."""
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        raise ToolError("--litert needs ai-edge-litert (pip install ai-edge-litert)") from None
    if args.custom_ops:
        raise ToolError("--litert cannot run models with Python custom ops")
    try:
        other = litert.Interpreter(
            model_content=Path(args.model).read_bytes(),
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
            experimental_preserve_all_tensors=True,
        )
        run_reference(other, session, values)
    except Exception as error:
        raise ToolError(f"ai-edge-litert failed: {str(error).strip().splitlines()[0]}") from None
    result = {}
    for t in range(
        len(session.interpreter.model.subgraphs[session.subgraph_index].tensors)
    ):  # not temporaries
        with contextlib.suppress(Exception):  # resource and variant tensors have no readable value
            result[t] = other.get_tensor(t, session.subgraph_index)
    return [], result


def _describe(session: Session, tensor: int, producer: int | None) -> str:
    subgraph = session.subgraph
    t = subgraph.tensors[tensor]
    dtype = t.type.name.lower() if t.type is not None else "notype"
    text = f"T#{tensor} '{t.name}' {dtype}{shape_text(t.shape)}"
    if producer is not None:
        text += f", output of node #{producer} {subgraph.nodes[producer][1].op_name}"
    return text


def _reference(
    args: Any,
    delegates: list[Delegate],
    candidate: Any,
    session: Session,
    values: list[np.ndarray],
    ours: Recorder,
) -> tuple[str, dict[int, Any], list[int], dict[int, int]]:
    """The run to compare against: (its label, its tensor values, the tensors in its execution order and
    their producers). LiteRT gives no node order, so the order is pytflite's on CPU kernels."""
    if not args.litert:
        cpu = build_interpreter(args.model, custom_ops=args.custom_ops, num_threads=args.num_threads)
        cpu_session = Session(cpu, args.signature)
        cpu_session.allocate()
        reference = _record(cpu, cpu_session, values)
        return "pytflite without delegates", reference.values, reference.order, reference.producers
    _, reference_values = _litert_tensors(args, session, values)
    cpu = build_interpreter(args.model, custom_ops=args.custom_ops) if delegates else candidate
    cpu_session = Session(cpu, args.signature) if delegates else session
    if delegates:
        cpu_session.allocate()
        order_source = _record(cpu, cpu_session, values)
    else:
        order_source = ours
    return "ai-edge-litert (builtin kernels)", reference_values, order_source.order, order_source.producers


def _divergences(
    args: Any, session: Session, ours: Recorder, reference_values: dict[int, Any], order: list[int]
) -> tuple[int, list[Divergence]]:
    """Compare the tensors both runs expose, in the reference's order, then the graph outputs: (how many
    were compared, those that diverge)."""
    compared, divergences = 0, []
    outputs = [t for t in session.output_indices if t not in order]
    for t in [*order, *outputs]:
        if t not in ours.values or t not in reference_values:
            continue
        compared += 1
        found = divergence(ours.values[t], np.asarray(reference_values[t]), args.atol, args.rtol, t)
        if found is not None:
            divergences.append(found)
    return compared, divergences


def _print_divergence(
    label: str,
    found: Divergence,
    session: Session,
    producers: dict[int, int],
    ours: Recorder,
    partitions: dict[int, DelegatePartition],
) -> None:
    """One divergence: the tensor, the node (or delegate partition) that wrote it, and how it differs."""
    print(f"{label}: {_describe(session, found.tensor, producers.get(found.tensor))}")
    written_by = ours.producers.get(found.tensor)
    if written_by in partitions:
        partition = partitions[written_by]
        print(
            f"  computed in delegate partition node #{written_by} {partition.delegate_name} "
            f"(nodes {', '.join(f'#{n} {o}' for n, o in zip(partition.nodes, partition.op_names))})"
        )
    if found.where == () and found.max_diff == float("inf") and found.size == 1 and found.differing == 1:
        print(f"  {found.ours} vs {found.reference}")
        return
    print(
        f"  max |diff| {found.max_diff:.6g} at {list(found.where)}: {found.ours} vs {found.reference} "
        f"(tolerance {found.tolerance:.3g}); {found.differing} of {found.size} elements differ"
    )


def command(args: Any) -> int:
    delegates = delegate_from_args(args)
    if not delegates and not args.litert:
        raise ToolError(
            "compare needs --delegate SPEC (delegated vs CPU) or --litert (pytflite vs ai-edge-litert)"
        )
    candidate = build_interpreter(
        args.model, custom_ops=args.custom_ops, delegates=delegates, num_threads=args.num_threads
    )
    session = Session(candidate, args.signature)
    session.allocate()
    values = resolve_inputs(
        args.input, session.input_details, session.input_names, parse_range(args.image_range), args.seed
    )
    ours = _record(candidate, session, values)
    partitions = {p.node_index: p for p in candidate.delegate_partitions(session.subgraph_index)}
    reference_label, reference_values, order, producers = _reference(
        args, delegates, candidate, session, values, ours
    )

    candidate_label = "pytflite" + (f" with {', '.join(args.delegate)}" if delegates else "")
    print(f"compare: {candidate_label} against {reference_label}")
    print(
        f"model: {args.model}; inputs: "
        + ", ".join(f"{n}{shape_text(np.shape(v))}" for n, v in zip(session.input_names, values))
    )
    print(f"tolerance: |a - b| <= {args.atol:g} + {args.rtol:g} * max|reference| per tensor")

    compared, divergences = _divergences(args, session, ours, reference_values, order)
    hidden = sum(1 for t in order if t not in ours.values)
    print(
        f"compared {compared} tensors"
        + (f" ({hidden} produced inside delegate partitions are not visible)" if hidden else "")
    )
    if not divergences:
        print("no divergence: every compared tensor is within tolerance")
        return 0
    shown = divergences if args.all else divergences[:1]
    for number, found in enumerate(shown):
        label = "first divergence" if number == 0 else "divergence"
        _print_divergence(label, found, session, producers, ours, partitions)
    if not args.all and len(divergences) > 1:
        print(f"{len(divergences) - 1} later tensor(s) diverge too (--all lists them)")
    return 1
