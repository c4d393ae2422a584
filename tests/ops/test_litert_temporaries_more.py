"""get_tensor_details() lists, as LiteRT 2.3 does, the temporaries of the remaining kernels that add
some: ADD_N's per-thread accumulator, RFFT2D's FFT working areas (sized by Eval when fft_length is
computed), STABLEHLO_REDUCE_WINDOW's dilated and padded input, TFLite_Detection_PostProcess's decoded
boxes and scores, and the bidirectional LSTM and RNN kernels' gate scratch and hybrid buffers; the
audio front ends add none. Each after allocate_tensors and after an invoke, under all three resolvers.
No model of the public corpus holds these ops."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.ops.test_audio import RATE, SPEECH, USUAL_MFCC, speech_features_model, waveform
from tests.ops.test_detection import (
    ANCHOR_Q,
    BOX_Q,
    SCORE_Q,
    SSD_OPTIONS,
    postprocess_model,
    quantize,
    ssd_inputs,
)
from tests.ops.test_recurrent import F32, _bidirectional_lstm_inputs, _bidirectional_rnn, _model
from tests.ops.test_stablehlo import _WINDOWING, reduce_window_model
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert

pytestmark = requires_litert


def assert_listed_before_and_after_invoke(model: bytes, feeds, resolver: str, num_threads=None) -> None:
    assert_listed_as_litert(model, resolver, num_threads)
    assert_listed_as_litert(model, resolver, num_threads, inputs=feeds)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("threads", [None, 2, 4])
@pytest.mark.parametrize("count", [2, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_add_n_accumulator_per_thread(dtype, count, threads, resolver):
    """One copy of an input per thread, a thread for every two inputs at most."""
    x = np.arange(24, dtype=dtype).reshape(2, 3, 4)
    model, feeds = SingleOpModel(
        Op.ADD_N,
        [Operand(x + k, constant=k == 0) for k in range(count)],
        [T.FLOAT32 if dtype == np.float32 else T.INT32],
    ).build()
    assert_listed_before_and_after_invoke(model, feeds, resolver, threads)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("constant", [True, False], ids=["constant-length", "computed-length"])
@pytest.mark.parametrize(
    ("shape", "length"), [((4, 8), (4, 8)), ((2, 3, 16, 8), (16, 4)), ((3, 32), (2, 32))]
)
def test_rfft2d_working_areas(shape, length, constant, resolver):
    """Sized at prepare from a constant fft_length; from a computed one only once Eval ran."""
    x = np.random.default_rng(0).random(shape, np.float32)
    model, feeds = SingleOpModel(
        Op.RFFT2D, [Operand(x), Operand(np.array(length, np.int32), constant=constant)], [T.COMPLEX64]
    ).build()
    assert_listed_before_and_after_invoke(model, feeds, resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
@pytest.mark.parametrize("windowing", range(len(_WINDOWING)))
def test_stablehlo_reduce_window_dilated_and_padded_input(windowing, dtype, resolver):
    x = np.random.default_rng(1).random((2, 7, 9, 4)).astype(dtype)
    body = Op.STABLEHLO_ADD if dtype == np.float32 else Op.MINIMUM
    model = reduce_window_model(x, 0, [body], **_WINDOWING[windowing])
    assert_listed_before_and_after_invoke(model, [x], resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "uint8"])
@pytest.mark.parametrize("regular", [False, True], ids=["fast-nms", "regular-nms"])
def test_detection_postprocess_boxes_and_scores(regular, quantized, resolver):
    boxes, scores, anchors = ssd_inputs(50, 11, 0)
    if quantized:
        boxes, scores, anchors = (
            quantize(boxes, BOX_Q),
            quantize(scores, SCORE_Q),
            quantize(anchors, ANCHOR_Q),
        )
    model = postprocess_model(
        boxes, scores, anchors, {**SSD_OPTIONS, "num_classes": 10, "use_regular_nms": regular}
    )
    assert_listed_before_and_after_invoke(model, [boxes, scores], resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_init_temporaries_come_before_those_of_earlier_prepares(resolver):
    """LiteRT's Init adds ADD_N's accumulator as the node is built, before SUM's first prepare adds
    its four: the accumulator takes the first index after the model's tensors."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, (2, 3))
    axis = builder.add_constant("axis", np.array([1], np.int32))
    total = builder.add_tensor("total", T.FLOAT32, (2, 1))
    out = builder.add_tensor("out", T.FLOAT32, (2, 1))
    builder.add_operator(Op.SUM, [x, axis], [total], {"keep_dims": True})
    builder.add_operator(Op.ADD_N, [total, total, total], [out])
    builder.add_output(out)
    feeds = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    listed = assert_listed_as_litert(builder.build(), resolver, inputs=feeds)
    assert (4, "", (2,), "float32") in listed


def bidirectional_rnn(hybrid: bool, aux: str, time_major: bool):
    return _bidirectional_rnn(np.random.default_rng(0), time_major, aux, False, hybrid, True)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    ("hybrid", "aux", "time_major"),
    [
        (False, "cross-links", True),
        (True, "none", True),
        (True, "backward-input", False),
        (True, "cross-links-deeper", True),
        (True, "cross-links", False),
    ],
)
def test_bidirectional_rnn_hybrid_buffers(hybrid, aux, time_major, resolver):
    model, feeds = bidirectional_rnn(hybrid, aux, time_major)
    assert_listed_before_and_after_invoke(model, feeds, resolver)


def bidirectional_lstm(hybrid: bool, aux: str, time_major: bool, cifg_projection: bool, merge: bool = False):
    rng = np.random.default_rng(0)
    cell = dict.fromkeys(("cifg", "peephole", "projection", "projection_bias"), cifg_projection)
    n_output = 3 if cifg_projection else 5
    inputs = _bidirectional_lstm_inputs(rng, 4, 5, n_output, 2, 3, time_major, aux, hybrid, **cell)
    options = {
        "fused_activation_function": "TANH",
        "merge_outputs": merge,
        "time_major": time_major,
        "asymmetric_quantize_inputs": hybrid and cifg_projection,
    }
    outputs = [(F32, None)] * (1 if merge else 2)
    return _model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs, options, 2 if hybrid else 1)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    ("hybrid", "aux", "time_major", "cifg_projection"),
    [
        (False, "none", True, False),
        (False, "cross-links", False, True),
        (True, "none", True, False),
        (True, "none", False, True),
        (True, "backward-input", True, True),
        (True, "cross-links", True, False),
        (True, "cross-links", False, True),
    ],
)
def test_bidirectional_lstm_scratch_and_hybrid_buffers(hybrid, aux, time_major, cifg_projection, resolver):
    model, feeds = bidirectional_lstm(hybrid, aux, time_major, cifg_projection)
    assert_listed_before_and_after_invoke(model, feeds, resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_audio_front_ends_add_none(resolver):
    model = speech_features_model(RATE, SPEECH, USUAL_MFCC)
    listed = assert_listed_as_litert(model, resolver, inputs=[waveform()])
    assert len(listed) == 4
