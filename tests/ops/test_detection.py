"""TFLite_Detection_PostProcess and NON_MAX_SUPPRESSION_V4/V5 against LiteRT, bit for bit.

Detection post-processing at SSD sizes (1917 anchors x 90 classes + background, 500 anchors x 10
classes), float32 and UINT8 inputs, fast and regular NMS, every option of the flexbuffer map, ties
(quantized scores) and thresholds; NMS V4/V5 on 1000 boxes, hard and soft, constant and run-time
max_output_size, ties, and TFLite's quirks (a selected box is re-selected when iou_threshold > 1).
LiteRT leaves part of the post-processing outputs unwritten (garbage); those entries are not compared
(ours are zero, which one test checks).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.ops.detection.postprocess import half_extents
from pytflite.ops.quant.lut import c_double_function
from tests.oracle import litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

NAME = "TFLite_Detection_PostProcess"
SSD_OPTIONS = {
    "max_detections": 10,
    "max_classes_per_detection": 1,
    "detections_per_class": 100,
    "use_regular_nms": False,
    "nms_score_threshold": 1e-8,
    "nms_iou_threshold": 0.6,
    "num_classes": 90,
    "y_scale": 10.0,
    "x_scale": 10.0,
    "h_scale": 5.0,
    "w_scale": 5.0,
}
# UINT8 quantization (scale, zero point) of box encodings, class predictions and anchors.
BOX_Q, SCORE_Q, ANCHOR_Q = (0.05, 128), (1 / 256, 0), (1 / 256, 0)


def ssd_inputs(anchors: int, columns: int, seed: int):
    """Box encodings [1, anchors, 4], sigmoid class predictions [1, anchors, columns], anchors."""
    rng = np.random.default_rng(seed)
    boxes = (rng.standard_normal((1, anchors, 4)) * [3, 3, 1, 1]).astype(np.float32)
    scores = 1 / (1 + np.exp(-(rng.standard_normal((1, anchors, columns)) * 2 - 4)))
    centers = rng.random((anchors, 2))
    sizes = rng.random((anchors, 2)) * 0.4 + 0.02
    return boxes, scores.astype(np.float32), np.concatenate([centers, sizes], 1).astype(np.float32)


def quantize(values: np.ndarray, quantization: tuple[float, int]) -> np.ndarray:
    scale, zero_point = quantization
    return np.clip(np.round(values / scale) + zero_point, 0, 255).astype(np.uint8)


def postprocess_model(boxes, scores, anchors, options, anchor_quantization=ANCHOR_Q) -> bytes:
    """One TFLite_Detection_PostProcess node; UINT8 inputs carry BOX_Q / SCORE_Q / anchor_quantization."""
    builder = ModelBuilder()

    def quantization(value, params):
        return params if value.dtype == np.uint8 else None

    def tensor_type(value):
        return T.UINT8 if value.dtype == np.uint8 else T.FLOAT32

    inputs = [
        builder.add_input("boxes", tensor_type(boxes), boxes.shape, quantization=quantization(boxes, BOX_Q)),
        builder.add_input(
            "scores", tensor_type(scores), scores.shape, quantization=quantization(scores, SCORE_Q)
        ),
        builder.add_tensor(
            "anchors",
            tensor_type(anchors),
            anchors.shape,
            data=anchors,
            quantization=quantization(anchors, anchor_quantization),
        ),
    ]
    outputs = [builder.add_tensor(name, T.FLOAT32, []) for name in ("boxes", "classes", "scores", "count")]
    for output in outputs:
        builder.add_output(output)
    builder.add_operator(NAME, inputs, outputs, custom_options=options)
    return builder.build()


def check_postprocess(boxes, scores, anchors, options, **kwargs) -> list[np.ndarray]:
    """Assert pytflite's outputs equal LiteRT's wherever LiteRT writes them; returns ours."""
    model = postprocess_model(boxes, scores, anchors, options, **kwargs)
    reference = run(litert_interpreter(model), [boxes, scores])
    ours = run(pytflite.Interpreter(model_content=model), [boxes, scores])
    for a, b in zip(ours, reference):
        assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(ours[3], reference[3], err_msg="num_detections")
    rows, width, columns = written(options, int(reference[3][0]))
    for i, (a, b) in enumerate(zip(ours[:3], reference[:3])):
        a, b = (x.reshape(-1, width, *x.shape[2:])[:rows, :columns] for x in (a, b))
        np.testing.assert_array_equal(a, b, err_msg=f"output {i}")
    return ours


def written(options, count) -> tuple[int, int, int]:
    """What LiteRT writes of the outputs, as (rows, entries per row, entries written per row): regular
    NMS max_detections rows of one; fast NMS a row of max_classes_per_detection per detection."""
    if options.get("use_regular_nms"):
        return options["max_detections"], 1, 1
    per_row = options["max_classes_per_detection"]
    return count, per_row, min(per_row, options["num_classes"])


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "uint8"])
def test_ssd_mobilenet_sizes(regular, quantized):
    boxes, scores, anchors = ssd_inputs(1917, 91, seed=1)
    if quantized:
        boxes, scores, anchors = (
            quantize(boxes, BOX_Q),
            quantize(scores, SCORE_Q),
            quantize(anchors, ANCHOR_Q),
        )
    ours = check_postprocess(boxes, scores, anchors, {**SSD_OPTIONS, "use_regular_nms": regular})
    assert ours[3][0] == 10


def test_box_sizes_decode_with_the_c_librarys_exp():
    """NumPy's exp stands in for the C library's only where it provably gives the same float32."""
    c_exp = c_double_function("exp")
    rng = np.random.default_rng(5)
    exponents = np.concatenate(
        [
            rng.standard_normal(100_000) * 4,
            [709.78, 709.79, 710.0, -745.2, -800.0, np.inf, -np.inf, np.nan, 0.0],
        ]
    )
    sizes = np.concatenate([rng.random(100_000) * 0.5, [1.0, 3e-308, 2.0, 1e300, 1.0, 1.0, 1.0, 1.0, -1.0]])
    with np.errstate(all="ignore"):  # (as in invoke: overflow to infinity is a result)
        expected = (0.5 * c_exp(exponents) * sizes).astype(np.float32)
        ours = half_extents(exponents, sizes)
    assert ours.view(np.uint32).tolist() == expected.view(np.uint32).tolist()


@pytest.mark.parametrize(
    "changes",
    [
        {"max_detections": 100, "max_classes_per_detection": 3, "nms_score_threshold": 0.3},
        {
            "max_detections": 100,
            "use_regular_nms": True,
            "detections_per_class": 20,
            "nms_score_threshold": 0.3,
        },
        {
            "max_detections": 25,
            "max_classes_per_detection": 2,
            "use_regular_nms": True,
            "nms_iou_threshold": 0.3,
        },
        {"max_classes_per_detection": 12, "nms_iou_threshold": 1.0},  # more classes per box than there are
        {"y_scale": 1.0, "x_scale": 2.0, "h_scale": 0.5, "w_scale": 3.0, "nms_iou_threshold": 0.2},
        {"nms_score_threshold": 0.95},  # fewer detections than max_detections
        {"nms_score_threshold": 2.0},  # none
    ],
)
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "uint8"])
def test_options_at_500_anchors(changes, quantized):
    boxes, scores, anchors = ssd_inputs(500, 10, seed=2)  # no background column: num_classes 10
    if quantized:
        boxes, scores, anchors = (
            quantize(boxes, BOX_Q),
            quantize(scores, SCORE_Q),
            quantize(anchors, ANCHOR_Q),
        )
    check_postprocess(boxes, scores, anchors, {**SSD_OPTIONS, "num_classes": 10, **changes})


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_ties(regular):
    # Four score levels: equal scores everywhere, ordered by stable sorts, the class-by-class merge and
    # (fast NMS, several classes per box) std::partial_sort's heap.
    boxes, scores, anchors = ssd_inputs(400, 13, seed=3)
    scores = (np.floor(scores * 4 * 8) / 8 * 64).astype(np.uint8)
    boxes = np.round(boxes * 2) / 2  # identical decoded boxes too
    options = {**SSD_OPTIONS, "num_classes": 12, "max_detections": 60, "nms_score_threshold": 0.0}
    options |= {"use_regular_nms": regular, "max_classes_per_detection": 5, "detections_per_class": 30}
    check_postprocess(boxes, scores, anchors, options)


@pytest.mark.parametrize("seed", [21, 22])
@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_random_ssd_heads_with_100_detections(regular, seed):
    # UINT8 scores tie often: the lazy class-by-class merge (regular) and the per-anchor top classes
    # (fast: sorted where the best scores differ, the heap replayed where they tie) at full size.
    boxes, scores, anchors = ssd_inputs(1917, 91, seed=seed)
    options = {**SSD_OPTIONS, "max_detections": 100, "max_classes_per_detection": 3}
    options |= {"use_regular_nms": regular, "detections_per_class": 25, "nms_iou_threshold": 0.5}
    ours = check_postprocess(
        quantize(boxes, BOX_Q), quantize(scores, SCORE_Q), quantize(anchors, ANCHOR_Q), options
    )
    assert ours[3][0] == 100


def test_thresholds_are_inclusive_for_scores_exclusive_for_overlap():
    # Two identical boxes scoring exactly the score threshold: both pass it (>=); with an IoU threshold
    # of 1.0 neither suppresses the other (suppression needs IoU > threshold).
    boxes = np.zeros((1, 3, 4), np.float32)
    scores = np.array([[[0, 0.5], [0, 0.5], [0, 0.25]]], np.float32)
    anchors = np.array([[0.5, 0.5, 0.2, 0.2]] * 3, np.float32)
    options = {**SSD_OPTIONS, "num_classes": 1, "nms_score_threshold": 0.5, "nms_iou_threshold": 1.0}
    ours = check_postprocess(boxes, scores, anchors, options)
    assert ours[3][0] == 2
    ours = check_postprocess(boxes, scores, anchors, {**options, "nms_iou_threshold": 0.99})
    assert ours[3][0] == 1


def test_option_defaults_and_number_kinds():
    # detections_per_class and use_regular_nms absent (100, fast); whole-number scales given as ints,
    # a float max_detections truncated as flexbuffers' AsInt32 does.
    boxes, scores, anchors = ssd_inputs(300, 6, seed=4)
    options = {k: v for k, v in SSD_OPTIONS.items() if k not in ("detections_per_class", "use_regular_nms")}
    options |= {
        "num_classes": 5,
        "y_scale": 10,
        "x_scale": 10,
        "h_scale": 5,
        "w_scale": 5,
        "max_detections": 7.9,
    }
    ours = check_postprocess(boxes, scores, anchors, options)
    assert ours[0].shape == (1, 7, 4)


def test_keypoint_encodings_are_ignored_past_four():
    boxes, scores, anchors = ssd_inputs(200, 4, seed=5)
    keypoints = np.random.default_rng(5).standard_normal((1, 200, 6)).astype(np.float32)
    with_keypoints = np.concatenate([boxes, keypoints], axis=2)
    for encodings in (with_keypoints, quantize(with_keypoints, BOX_Q)):
        anchors_of = anchors if encodings.dtype == np.float32 else quantize(anchors, ANCHOR_Q)
        check_postprocess(encodings, scores, anchors_of, {**SSD_OPTIONS, "num_classes": 3})


def test_uint8_boxes_read_float_anchors_as_bytes():
    # LiteRT reads the anchors of UINT8 box encodings as UINT8 with the anchors' quantization (scale 0
    # for a float tensor): every decoded box collapses to the origin.
    boxes, scores, anchors = ssd_inputs(100, 5, seed=6)
    ours = check_postprocess(quantize(boxes, BOX_Q), scores, anchors, {**SSD_OPTIONS, "num_classes": 4})
    assert not ours[0].any()


def test_unwritten_entries_are_zero():
    boxes, scores, anchors = ssd_inputs(100, 3, seed=7)
    options = {**SSD_OPTIONS, "num_classes": 3, "max_classes_per_detection": 5, "nms_score_threshold": 0.4}
    ours = check_postprocess(boxes, scores, anchors, options)
    count = int(ours[3][0])
    assert 0 < count < 10
    grid = ours[2].reshape(10, 5)
    assert not grid[count:].any() and not grid[:, 3:].any() and grid[:count, :3].all()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_detections": -1}, "max_detections must be non-negative"),
        ({"max_classes_per_detection": -2}, "max_classes_per_detection must be non-negative"),
        ({"detections_per_class": -1}, "detections_per_class must be non-negative"),
        ({"num_classes": 0}, "num_classes must be positive"),
        ({"max_detections": 2**30, "max_classes_per_detection": 4}, "overflows int32"),
        ({"max_classes_per_detection": 0}, r"\(max_categories_per_anchor > 0\) was not true"),
        ({"use_regular_nms": True, "detections_per_class": 0}, "num_detections_per_class > 0 was not true"),
        ({"nms_iou_threshold": 0.0}, r"\(intersection_over_union_threshold > 0.0f\)"),
        ({"nms_iou_threshold": 1.5}, r"\(intersection_over_union_threshold <= 1.0f\) was not true"),
        ({"num_classes": 2}, r"\(num_classes_with_background - num_classes <= 1\) was not true"),
        ({"num_classes": 5}, r"\(num_classes_with_background >= num_classes\) was not true"),
    ],
)
def test_option_errors(changes, message):
    boxes, scores, anchors = ssd_inputs(20, 4, seed=8)
    fails(postprocess_model(boxes, scores, anchors, {**SSD_OPTIONS, "num_classes": 3, **changes}), message)


def test_input_errors():
    boxes, scores, anchors = ssd_inputs(20, 4, seed=9)
    options = {**SSD_OPTIONS, "num_classes": 3}
    fails(postprocess_model(boxes[0], scores, anchors, options), r"NumDimensions\(input_box_encodings\) != 3")
    fails(
        postprocess_model(boxes[..., :3], scores, anchors, options),
        "box encodings dimension 2 must be at least 4",
    )
    fails(
        postprocess_model(np.concatenate([boxes] * 2), scores, anchors, options),
        "dims->data\\[0\\] != kBatchSize",
    )
    fails(
        postprocess_model(boxes, scores[:, :10], anchors, options),
        r"dims->data\[1\] != num_boxes \(10 != 20\)",
    )
    fails(
        postprocess_model(boxes, scores, anchors[:10], options),
        "anchors .* are fewer than the 20 box encodings",
    )
    fails(
        postprocess_model(boxes, scores, anchors.astype(np.uint8), options),
        "input_anchors->type != kTfLiteFloat32",
    )
    flipped = anchors * [1, 1, -1, 1]  # a negative height decodes to ymin > ymax
    fails(postprocess_model(boxes, scores, flipped.astype(np.float32), options), "ValidateBoxes")
    # LiteRT has no INT8 variant (its invoke fails without a message); we name the problem.
    model = ModelBuilder()
    inputs = [
        model.add_input("boxes", T.INT8, boxes.shape, quantization=(0.1, 0)),
        model.add_input("scores", T.FLOAT32, scores.shape),
        model.add_tensor("anchors", T.FLOAT32, anchors.shape, data=anchors),
    ]
    outputs = [model.add_tensor(f"out{i}", T.FLOAT32, []) for i in range(4)]
    for output in outputs:
        model.add_output(output)
    model.add_operator(NAME, inputs, outputs, custom_options=options)
    fails(model.build(), "box encodings of type INT8 are not supported")


def test_options_must_be_a_map():
    boxes, scores, anchors = ssd_inputs(20, 4, seed=10)
    with pytest.raises(ValueError, match="options are not a flexbuffer map"):
        pytflite.Interpreter(model_content=postprocess_model(boxes, scores, anchors, b"\x00\x04\x01"))


def fails(model: bytes, message: str) -> None:
    interpreter = pytflite.Interpreter(model_content=model)
    with pytest.raises(RuntimeError, match=message):
        interpreter.allocate_tensors()
        interpreter.invoke()


# --- NON_MAX_SUPPRESSION_V4 / V5 --------------------------------------------------------------------


def nms_boxes(count: int, seed: int) -> np.ndarray:
    """Boxes of all sizes in [0, 1]; a third give their corners the other way round."""
    rng = np.random.default_rng(seed)
    centers, sizes = rng.random((count, 2)), rng.random((count, 2)) * 0.3
    boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], 1)
    flipped = rng.random(count) < 0.3
    boxes[flipped] = boxes[flipped][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


def nms_model(boxes, scores, max_output_size, iou, score_threshold, sigma=None, constant=True):
    scalars = [Operand(np.float32(v), constant=True) for v in (iou, score_threshold)]
    if sigma is not None:
        scalars.append(Operand(np.float32(sigma), constant=True))
    return SingleOpModel(
        Op.NON_MAX_SUPPRESSION_V4 if sigma is None else Op.NON_MAX_SUPPRESSION_V5,
        [Operand(boxes), Operand(scores), Operand(np.int32(max_output_size), constant=constant), *scalars],
        [T.INT32, T.FLOAT32, T.INT32] if sigma is not None else [T.INT32, T.INT32],
    )


@pytest.mark.parametrize("tied", [False, True], ids=["distinct", "tied"])
@pytest.mark.parametrize(
    "max_output_size, iou, score_threshold, sigma",
    [
        (100, 0.5, 0.1, None),
        (300, 0.7, 0.0, None),
        (100, 0.5, 0.1, 0.0),
        (100, 0.5, 0.1, 0.5),
        (200, 0.6, 0.3, 0.2),
        (200, 1.5, 0.2, None),  # no hard suppression: TFLite selects each box again after itself
        (200, 1.5, 0.2, 0.3),
        (0, 0.5, 0.1, 0.5),
        (2000, 0.4, -1.0, None),  # more than there are boxes
    ],
)
def test_nms_1000_boxes(tied, max_output_size, iou, score_threshold, sigma):
    scores = np.random.default_rng(11).random(1000).astype(np.float32)
    if tied:  # 16 levels: the priority queue's heap orders equal scores
        scores = (np.round(scores * 16) / 16).astype(np.float32)
    model = nms_model(nms_boxes(1000, 11), scores, max_output_size, iou, score_threshold, sigma)
    model.check(rtol=0)


@pytest.mark.parametrize("sigma", [None, 0.4])
def test_nms_runtime_max_output_size_gives_dynamic_outputs(sigma):
    boxes, scores = nms_boxes(300, 12), np.random.default_rng(12).random(300).astype(np.float32)
    outputs = nms_model(boxes, scores, 200, 0.3, 0.5, sigma, constant=False).check(rtol=0)
    assert outputs[0].shape == (200,) and 0 < int(outputs[-1]) < 200


@pytest.mark.parametrize("sigma", [None, 0.0, 0.5])
def test_nms_degenerate_boxes_never_overlap(sigma):
    # Box 1 repeats box 0 (IoU 1: dropped). The zero-area box 2 overlaps nothing, itself included, so
    # TFLite selects it again each time it returns to the queue, until 4 (the candidates) are selected.
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0.5, 0.5, 0.5, 0.9], [0.6, 0.6, 0.7, 0.9]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    outputs = nms_model(boxes, scores, 10, 0.5, 0.0, sigma).check(rtol=0)
    assert outputs[0].tolist() == [0, 2, 2, 2, 0, 0, 0, 0, 0, 0] and outputs[-1] == 4


def test_hard_nms_on_huge_and_non_finite_boxes():
    """Boxes whose IoU with themselves is not 1 (an area whose double overflows, inf or NaN corners)
    come back after their selection, as in TFLite's queue."""
    boxes = np.array(
        [[0, 0, 3e19, 3e19], [0, 0, 1, 1], [0, 0, np.inf, 1], [np.nan, 0, 1, 1], [0.5, 0.5, 2, 2]], np.float32
    )
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5], np.float32)
    for sigma in (None, 0.0):
        nms_model(boxes, scores, 8, 0.5, 0.0, sigma).check(rtol=0)
        nms_model(boxes[1:], scores[1:], 8, 0.5, 0.0, sigma).check(rtol=0)


@pytest.mark.parametrize("seed", [31, 32])
def test_soft_nms_random_2000_boxes(seed):
    rng = np.random.default_rng(seed)
    model = nms_model(nms_boxes(2000, seed), rng.random(2000).astype(np.float32), 400, 0.6, 0.05, 0.5)
    model.check(rtol=0)


def test_soft_nms_decayed_score_meeting_an_equal_one():
    # Distinct scores, until box 1's score, decayed by box 0, equals box 10's: from then on the heap
    # orders the two (box 10 comes out first).
    boxes = np.array(
        [[0, 0, 1, 1], [0, 0.5, 1, 1.5]] + [[2 + i, 0, 2.5 + i, 1] for i in range(9)], np.float32
    )
    scores = np.array([0.9, 0.8, *np.linspace(0.7, 0.1, 8), 0.0], np.float32)
    outputs = nms_model(boxes[:10], scores[:10], 10, 2.0, 0.05, 0.5).check(rtol=0)
    scores[10] = outputs[1][outputs[0].tolist().index(1)]  # box 1's decayed score
    outputs = nms_model(boxes, scores, 11, 2.0, 0.05, 0.5).check(rtol=0)
    assert outputs[0][:3].tolist() == [0, 10, 1]


def test_nms_errors():
    boxes, scores = nms_boxes(10, 13), np.random.default_rng(13).random(10).astype(np.float32)
    nms_model(boxes, scores, -1, 0.5, 0.0).fails(r"\(max_output_size_value >= 0\) was not true")
    nms_model(boxes, scores, -1, 0.5, 0.0, constant=False).fails(
        r"\(max_output_size_value >= 0\) was not true"
    )
    nms_model(boxes, scores, 5, 0.5, 0.0, sigma=-1.0).fails("Invalid sigma value for soft NMS: -1.000000")
    nms_model(boxes[:, :3], scores, 5, 0.5, 0.0).fails(r"SizeOfDimension\(input_boxes, 1\) != 4 \(3 != 4\)")
    nms_model(boxes, scores[:9], 5, 0.5, 0.0).fails(
        r"num_boxes != SizeOfDimension\(input_scores, 0\) \(10 != 9\)"
    )
    nms_model(boxes.astype(np.int32), scores, 5, 0.5, 0.0).fails(r"input_boxes->type != kTfLiteFloat32")
    model = nms_model(boxes, scores, 5, 0.5, 0.0)
    model.inputs = model.inputs[:4]
    model.fails("Found NMS op with invalid num inputs: 4")
    model = nms_model(boxes, scores, 5, 0.5, 0.0)
    model.output_types = [T.INT32, T.INT32, T.INT32]
    model.fails(r"NumOutputs\(node\) != 2")


# --- equal scores: libstdc++'s heap order ---------------------------------------------------------


def test_equal_scores_come_out_in_heap_order():
    # Neither index order nor its reverse: what libstdc++'s heaps (LiteRT's priority queue and
    # std::partial_sort) make of equal keys, which is why no sort can stand in for them.
    boxes = np.array([[i, 0, i + 0.5, 1] for i in range(6)], np.float32)  # disjoint
    outputs = nms_model(boxes, np.full(6, 0.5, np.float32), 6, 0.5, 0.1).check(rtol=0)
    assert outputs[0].tolist() == [0, 2, 5, 4, 1, 3]
    scores = np.array([[[0.1, 0.9, 0.5, 0.9, 0.2]]], np.float32)
    options = {**SSD_OPTIONS, "num_classes": 5, "max_detections": 1, "max_classes_per_detection": 3}
    outputs = check_postprocess(np.zeros((1, 1, 4), np.float32), scores, np.ones((1, 4), np.float32), options)
    assert outputs[1].tolist() == [[3, 1, 2]]
