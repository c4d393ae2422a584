"""The profiler hooks, the summary tables, and the small helpers behind the commands (in process)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite.core.delegate import DelegateFlags
from pytflite.core.profiling import EventType
from pytflite.debug import DebugTracer
from pytflite.delegates.replay import ReplayDelegate
from pytflite.tools.chart import bar_chart_png
from pytflite.tools.compare import divergence
from pytflite.tools.inputs import image_value, parse_shapes, random_value, resolve_inputs
from pytflite.tools.loading import ToolError, load_delegate, parse_options
from pytflite.tools.png import decode_png, encode_png
from pytflite.tools.profiler import Profiler, ProfileSummary, profile_interpreter

from .conftest import classifier_model

OPS = ["CONV_2D", "ADD", "CONV_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"]


def _ready(delegates=()) -> pytflite.Interpreter:
    interpreter = pytflite.Interpreter(
        model_content=classifier_model(), experimental_delegates=list(delegates)
    )
    interpreter.allocate_tensors()
    image = np.random.default_rng(0).standard_normal([1, 8, 8, 3]).astype(np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    return interpreter


def test_profiler_times_every_node_and_leaves_the_fast_path_alone(monkeypatch):
    interpreter = _ready()
    subgraph = interpreter.subgraphs[0]
    careful = []
    runner = type(subgraph._runner)
    original = runner._invoke_careful
    monkeypatch.setattr(runner, "_invoke_careful", lambda self: careful.append(1) or original(self))
    interpreter.invoke()
    assert careful == []  # no profiler: the precomputed fast steps ran

    profiler = Profiler()
    profiler.attach(interpreter)
    with profiler.run():
        interpreter.invoke()
    assert careful == [1]
    (events,) = profiler.runs
    assert [e.tag for e in events] == OPS
    assert [e.metadata1 for e in events] == list(range(6))
    assert all(e.event_type == EventType.OPERATOR_INVOKE_EVENT and e.end_ns >= e.begin_ns for e in events)

    profiler.detach(interpreter)
    interpreter.invoke()
    assert careful == [1] and len(profiler.runs) == 1


def test_summary_tables_follow_benchmark_model():
    summary = profile_interpreter(_ready(), runs=3)
    text = summary.text()
    header = (
        "\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]"
        "\t[times called]\t[Name]"
    )
    assert text.count(header) == 2
    run_order = text.split("Top by Computation Time")[0].splitlines()[2:8]
    assert [line.split("\t")[1].strip() for line in run_order] == OPS
    assert run_order[-1].endswith("\t[probabilities]:5")
    assert "Number of nodes executed: 6" in text
    assert (
        "\t             [Node type]\t  [count]\t  [avg ms]\t    [avg %]\t    [cdf %]\t  [mem KB]\t[times called]"
        in text
    )
    assert "Timings (microseconds): count=3 " in text and "6 nodes observed" in text
    rows = summary.by_node_type()
    assert {r.type: r.count for r in rows} == {
        "CONV_2D": 2,
        "ADD": 1,
        "MEAN": 1,
        "FULLY_CONNECTED": 1,
        "SOFTMAX": 1,
    }
    assert rows[-1].cdf_percent == pytest.approx(100.0, abs=0.01)
    assert [r.avg_ms for r in rows] == sorted((r.avg_ms for r in rows), reverse=True)
    csv = summary.csv()
    assert "node type, count, avg_ms, avg %, cdf %, mem KB, times called" in csv
    assert "\nCONV_2D, 2, " in csv


def test_profiling_string_extends_the_node_type():
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    builtin = resolver.find_builtin(Op.SOFTMAX, 1)
    import dataclasses

    resolver.add_builtin(
        Op.SOFTMAX, dataclasses.replace(builtin, profiling_string=lambda context, node: "float")
    )
    interpreter = pytflite.Interpreter(model_content=classifier_model(), op_resolver=resolver)
    interpreter.allocate_tensors()
    summary = profile_interpreter(interpreter, runs=1)
    assert "SOFTMAX/float" in {r.type for r in summary.by_node_type()}


@pytest.mark.parametrize("per_op", [False, True])
def test_delegate_nodes_profiled_whole_or_per_op(per_op):
    flags = DelegateFlags.PER_OPERATOR_PROFILING if per_op else DelegateFlags.NONE
    interpreter = _ready([ReplayDelegate(ops=[Op.CONV_2D, Op.MEAN], flags=flags)])
    profiler = Profiler()
    profiler.attach(interpreter)
    with profiler.run():
        interpreter.invoke()
    events = profiler.runs[0]
    if per_op:
        assert [(e.tag, e.event_type) for e in events if e.tag != "ADD" and e.metadata1 < 6][:3] == [
            ("CONV_2D", EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT),
            ("CONV_2D", EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT),
            ("MEAN", EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT),
        ]
        assert "ReplayDelegate" not in [e.tag for e in events]
        text = ProfileSummary.from_profiler(profiler, interpreter).text()
        assert "Delegate/MEAN:3" in text
    else:
        assert [e.tag for e in events] == [
            "ReplayDelegate",
            "ADD",
            "ReplayDelegate",
            "FULLY_CONNECTED",
            "SOFTMAX",
        ]

    profiler.force_delegate_node_profiling = True
    with profiler.run():
        interpreter.invoke()
    assert [e.tag for e in profiler.runs[1] if e.event_type == EventType.OPERATOR_INVOKE_EVENT].count(
        "ReplayDelegate"
    ) == 2


def test_debug_tracer_prints_each_node():
    interpreter = _ready()
    stream = io.StringIO()
    tracer = DebugTracer(interpreter, level=2, stream=stream).attach()
    interpreter.invoke()
    tracer.detach()
    text = stream.getvalue()
    assert [line.split()[1] for line in text.splitlines() if line.startswith("#")] == OPS
    assert "in  T#0" in text and "probabilities" in text
    assert interpreter.subgraphs[0].context.profiler is None


def _png_with_filters(image: np.ndarray) -> bytes:
    """A PNG whose rows use filters 1-4 in turn (encode_png writes only filter 0)."""
    height, width, channels = image.shape
    rows = image.reshape(height, width * channels).astype(np.int32)
    raw = bytearray()
    previous = np.zeros(width * channels, np.int32)
    for y in range(height):
        kind = 1 + y % 4
        row = rows[y]
        left = np.concatenate([np.zeros(channels, np.int32), row[:-channels]])
        upper_left = np.concatenate([np.zeros(channels, np.int32), previous[:-channels]])
        if kind == 1:
            predictor = left
        elif kind == 2:
            predictor = previous
        elif kind == 3:
            predictor = (left + previous) // 2
        else:
            p = left + previous - upper_left
            pa, pb, pc = abs(p - left), abs(p - previous), abs(p - upper_left)
            predictor = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, previous, upper_left))
        raw += bytes([kind]) + bytes(((row - predictor) & 0xFF).astype(np.uint8))
        previous = row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6 if channels == 4 else 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw)))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("channels", [3, 4])
def test_png_round_trips_and_filters(channels):
    image = np.random.default_rng(channels).integers(0, 256, [9, 7, channels], dtype=np.uint8)
    if channels == 3:
        np.testing.assert_array_equal(decode_png(encode_png(image)), image)
    np.testing.assert_array_equal(decode_png(_png_with_filters(image)), image)


def test_bar_chart_is_a_png_with_one_bar_per_label():
    png = bar_chart_png(["CONV_2D", "ADD"], [2.0, 1.0], title="time by node type")
    image = decode_png(png)
    bar = (image == [66, 133, 244]).all(axis=2)
    rows_with_bar = np.flatnonzero(bar.any(axis=1))
    assert len(np.split(rows_with_bar, np.flatnonzero(np.diff(rows_with_bar) > 1) + 1)) == 2
    widths = [bar[r].sum() for r in (rows_with_bar[0], rows_with_bar[-1])]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.02)


def test_inputs_images_random_and_shapes():
    detail = {
        "name": "image",
        "shape": np.array([1, 4, 4, 3]),
        "dtype": np.int8,
        "quantization": (1 / 255, -128),
    }
    picture = np.full([8, 8, 3], 255, np.uint8)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "white.png"
        path.write_bytes(encode_png(picture))
        assert (image_value(str(path), detail, None) == 127).all()
        detail["dtype"], detail["quantization"] = np.float32, (0.0, 0)
        assert (image_value(str(path), detail, (-1.0, 1.0)) == 1.0).all()
    value = random_value([1000], np.uint8, np.random.default_rng(0))
    assert value.min() == 0 and value.max() == 255
    assert parse_shapes("1,224,224,3:1,10") == [[1, 224, 224, 3], [1, 10]]
    details = [{"name": "a", "shape": np.array([2]), "dtype": np.float32}]
    (zeros,) = resolve_inputs(["a=zeros"], details)
    assert zeros.tolist() == [0.0, 0.0]
    with pytest.raises(ToolError, match="no input 'b'"):
        resolve_inputs(["b=zeros"], details)


def test_delegate_specs():
    delegate = load_delegate("replay:conv_2d,MEAN", {"max_delegated_partitions": 1})
    assert isinstance(delegate, ReplayDelegate) and delegate.ops == {Op.CONV_2D, Op.MEAN}
    assert delegate.max_delegated_partitions == 1
    delegate = load_delegate("pytflite.delegates.replay:ReplayDelegate", parse_options(["ops=[3]"]))
    assert delegate.ops == {Op.CONV_2D}
    for spec, message in (
        ("nocolon", "is not module:Factory"),
        ("replay:NOT_AN_OP", "unknown builtin operator"),
        ("pytflite.delegates.replay:Missing", "has no attribute Missing"),
        ("no_such_module_xyz:Factory", "cannot import module"),
    ):
        with pytest.raises(ToolError, match=message):
            load_delegate(spec)


def test_divergence_rules():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    assert divergence(a, a.copy(), 0.0, 0.0, 0) is None  # NaN agrees with NaN
    found = divergence(a, np.array([1.0, 2.0, 3.0], np.float32), 1e-6, 1e-5, 7)
    assert found is not None and found.where == (1,) and found.differing == 1
    assert divergence(np.array([1, 2]), np.array([1, 3]), 0.5, 0.0, 0).max_diff == 1.0
    assert divergence(np.zeros([2]), np.zeros([3]), 1, 1, 0) is not None
