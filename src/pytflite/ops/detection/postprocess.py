"""TFLite_Detection_PostProcess: SSD box decoding and multi-class NMS, a custom op LiteRT's
BuiltinOpResolver registers by default.

Inputs: box encodings [1, anchors, >= 4] (y, x, h, w relative to the anchor, scaled by y_scale...;
extra columns such as keypoints are ignored), class predictions [1, anchors, classes (+1 background)],
anchors [anchors, 4] (y, x, h, w). Outputs, all float32: boxes [1, n, 4] (ymin, xmin, ymax, xmax),
classes [1, n], scores [1, n], num_detections [1], with n = max_detections * max_classes_per_detection.

Options (the op's flexbuffer map, read as LiteRT reads it: a missing key is 0, detections_per_class
defaults to 100 and use_regular_nms to false): max_detections, max_classes_per_detection,
detections_per_class, use_regular_nms, nms_score_threshold, nms_iou_threshold, num_classes, y_scale,
x_scale, h_scale, w_scale.

- Decoding is TFLite's: center and half size in double precision from float32 values, rounded to
  float32, then corners in float32.
- Fast NMS (the default) ranks each anchor by its best class, runs single-class NMS on those scores,
  and reports each kept anchor's top max_classes_per_detection classes (equal scores in
  std::partial_sort's order, heap_order.py). Regular NMS runs single-class NMS per class (at most
  min(detections_per_class, max_detections) boxes each) and keeps the best max_detections overall,
  equal scores in class order.
- Single-class NMS keeps scores >= nms_score_threshold, sorts them (stable, best first) and drops each
  box whose IoU with a kept better box is > nms_iou_threshold.
- Quantized inputs: UINT8 box encodings (then the anchors' bytes are read as UINT8 with the anchors'
  quantization, as LiteRT does) and UINT8 class predictions are dequantized to float32. LiteRT has no
  INT8 variant (its kernel fails at invoke); neither do we.
- Output entries LiteRT leaves unwritten (past num_detections in fast NMS, past max_detections in
  regular NMS) are zero here; in LiteRT they hold whatever the arena held.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

import numpy as np

from ...core.types import INT32_MAX, TensorType, bytes_required
from ...errors import KernelError, ensure, ensure_condition_eq
from ...model.custom_options import decode_custom_options
from ..common import input_tensor, output_tensor
from ..quant.lut import c_double_function
from ..registry import register_custom
from .common import box_areas, overlaps
from .heap_order import partial_sort_descending

_NAME = "TFLite_Detection_PostProcess"
_INPUT_TYPES = (TensorType.FLOAT32, TensorType.UINT8)
_exp = c_double_function("exp")  # the C library's, as LiteRT's std::exp(double)
# NumPy's and the C library's exp(double) are each within a few ulps of the exact value, so the C
# library's lies within this factor of NumPy's either way (2**-44 is 256 ulps).
_EXP_SLACK_DOWN, _EXP_SLACK_UP = 1 - 2.0**-44, 1 + 2.0**-44


@dataclass(frozen=True)
class PostProcessOptions:
    """The flexbuffer options, converted as LiteRT's AsInt32 / AsFloat / AsBool convert them."""

    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    use_regular_nms: bool
    score_threshold: float  # float32 values
    iou_threshold: float
    num_classes: int
    scales: tuple[float, float, float, float]  # y, x, h, w

    @classmethod
    def decode(cls, buffer: bytes) -> PostProcessOptions:
        options = decode_custom_options(buffer)
        if not isinstance(options, dict):
            raise KernelError(f"{_NAME} options are not a flexbuffer map")

        def number(key: str, default: float = 0):
            value = options.get(key)
            if value is None:  # absent, or a flexbuffer null
                return default
            if not isinstance(value, (bool, int, float)) or not np.isfinite(value):
                raise KernelError(f"{_NAME} option {key} is {value!r}, not a finite number")
            return value

        def int32(key: str, default: int = 0) -> int:  # AsInt32: truncated, wrapped to 32 bits
            return (int(number(key, default)) + 2**31) % 2**32 - 2**31

        def float32(key: str) -> float:
            return float(np.float32(number(key)))

        return cls(
            max_detections=int32("max_detections"),
            max_classes_per_detection=int32("max_classes_per_detection"),
            detections_per_class=int32("detections_per_class", 100),
            use_regular_nms=int(number("use_regular_nms")) != 0,
            score_threshold=float32("nms_score_threshold"),
            iou_threshold=float32("nms_iou_threshold"),
            num_classes=int32("num_classes"),
            scales=tuple(float32(f"{axis}_scale") for axis in "yxhw"),
        )


@dataclass(frozen=True)
class PostProcessData:
    options: PostProcessOptions
    label_offset: int = 0  # 1 when the class predictions have a background column first


def postprocess_init(context, buffer, length):
    return PostProcessData(PostProcessOptions.decode(buffer))


def postprocess_prepare(context, node):
    options = node.user_data.options
    ensure_condition_eq(len(node.inputs), 3, "NumInputs(node) != 3")
    boxes, predictions, anchors = (input_tensor(context, node, i) for i in range(3))
    ensure_condition_eq(len(boxes.shape), 3, "NumDimensions(input_box_encodings) != 3")
    ensure_condition_eq(len(predictions.shape), 3, "NumDimensions(input_class_predictions) != 3")
    ensure_condition_eq(len(anchors.shape), 2, "NumDimensions(input_anchors) != 2")
    ensure(boxes.shape[2] >= 4, "box encodings dimension 2 must be at least 4")
    _check_options(options)
    ensure_condition_eq(len(node.outputs), 4, "NumOutputs(node) != 4")
    # LiteRT checks the rest at invoke; all of it follows from shapes, types and options.
    num_boxes, num_with_background = boxes.shape[1], predictions.shape[2]
    ensure_condition_eq(boxes.shape[0], 1, "input_box_encodings->dims->data[0] != kBatchSize")
    if boxes.type == TensorType.FLOAT32:
        ensure_condition_eq(anchors.type.name, "FLOAT32", "input_anchors->type != kTfLiteFloat32")
    anchor_items = math.prod(anchors.shape)
    if boxes.type == TensorType.UINT8:  # LiteRT then reads the anchors' bytes as UINT8
        anchor_items = bytes_required(anchors.type, anchors.shape)
    ensure(
        anchor_items >= 4 * num_boxes,
        f"{_NAME}: anchors {list(anchors.shape)} are fewer than the {num_boxes} box encodings",
    )
    ensure_condition_eq(predictions.shape[0], 1, "input_class_predictions->dims->data[0] != kBatchSize")
    ensure_condition_eq(
        predictions.shape[1], num_boxes, "input_class_predictions->dims->data[1] != num_boxes"
    )
    ensure(
        num_with_background - options.num_classes <= 1,
        "(num_classes_with_background - num_classes <= 1) was not true.",
    )
    ensure(
        num_with_background >= options.num_classes,
        "(num_classes_with_background >= num_classes) was not true.",
    )
    for tensor, what in ((boxes, "box encodings"), (predictions, "class predictions")):
        ensure(
            tensor.type in _INPUT_TYPES,
            f"{_NAME} {what} of type {tensor.type.name} are not supported (FLOAT32 or UINT8)",
        )
    _check_nms_options(options)

    detected = options.max_detections * options.max_classes_per_detection
    shapes = ((1, detected, 4), (1, detected), (1, detected), (1,))
    for i, shape in enumerate(shapes):
        output = output_tensor(context, node, i)
        output.type = TensorType.FLOAT32
        context.resize_tensor(output, shape)
    node.user_data = dataclasses.replace(
        node.user_data, label_offset=num_with_background - options.num_classes
    )


def _check_options(options: PostProcessOptions) -> None:
    """The option checks of LiteRT's Prepare."""
    ensure(options.max_detections >= 0, "max_detections must be non-negative")
    ensure(options.max_classes_per_detection >= 0, "max_classes_per_detection must be non-negative")
    ensure(options.detections_per_class >= 0, "detections_per_class must be non-negative")
    ensure(options.num_classes > 0, "num_classes must be positive")
    ensure(2 * options.max_detections <= INT32_MAX, "2 * max_detections overflows int32")
    ensure(
        options.max_detections * options.max_classes_per_detection <= INT32_MAX,
        "max_detections * max_classes_per_detection overflows int32",
    )


def _check_nms_options(options: PostProcessOptions) -> None:
    """The option checks LiteRT makes when its NMS starts."""
    if options.use_regular_nms:
        per_class = min(options.detections_per_class, options.max_detections)
        ensure(per_class > 0, "num_detections_per_class > 0 was not true.")
        # LiteRT writes max_detections rows into outputs sized max_detections * max_classes_per_detection.
        ensure(
            options.max_classes_per_detection > 0,
            f"{_NAME}: regular NMS needs max_classes_per_detection >= 1 for its max_detections rows",
        )
    else:
        ensure(options.max_classes_per_detection > 0, "(max_categories_per_anchor > 0) was not true.")
    ensure(
        0 < options.iou_threshold <= 1,
        "(intersection_over_union_threshold > 0.0f) && (intersection_over_union_threshold <= 1.0f) "
        "was not true.",
    )


def postprocess_invoke(context, node):
    data = node.user_data
    options = data.options
    tensors = context.tensors
    boxes, predictions, anchors = (tensors[i] for i in node.inputs)
    corners = _decode(boxes, anchors, options.scales)
    ensure(
        not (np.any(corners[0] > corners[2]) or np.any(corners[1] > corners[3])),
        "ValidateBoxes(decoded_boxes, num_boxes) was not true.",
    )
    scores = _dequantize(predictions)[0, :, data.label_offset :]
    nms = _regular_nms if options.use_regular_nms else _fast_nms
    anchor_rows, classes, class_scores = nms(corners, box_areas(corners), scores, options)

    out_boxes, out_classes, out_scores, out_count = (tensors[i].data for i in node.outputs)
    for out in (out_boxes, out_classes, out_scores):
        out.fill(0)
    # Fast NMS writes row r's j-th class at r * max_classes_per_detection + j; regular NMS one per row.
    width = 1 if options.use_regular_nms else options.max_classes_per_detection
    rows, per_row = classes.shape
    out_boxes.reshape(-1, width, 4)[:rows, :per_row] = corners[:, anchor_rows].T[:, None]
    out_classes.reshape(-1, width)[:rows, :per_row] = classes
    out_scores.reshape(-1, width)[:rows, :per_row] = class_scores
    out_count[0] = rows


def _dequantize(tensor) -> np.ndarray:
    """float32 values of a FLOAT32 or UINT8 input: (q - zero_point) * scale, in float32."""
    if tensor.type == TensorType.FLOAT32:
        return tensor.data
    params = tensor.params
    return (tensor.data.astype(np.float32) - np.float32(params.zero_point)) * np.float32(params.scale)


def _decode(boxes, anchors, scales) -> np.ndarray:
    """[4, n] float32 corners (rows ymin, xmin, ymax, xmax) of the center-size encodings."""
    num_boxes = boxes.shape[1]
    encodings = _dequantize(boxes)[0, :, :4].astype(np.float64)
    if boxes.type == TensorType.UINT8:  # LiteRT reads the anchors as UINT8 whatever their type
        raw = anchors.data.reshape(-1).view(np.uint8)[: 4 * num_boxes].reshape(num_boxes, 4)
        params = anchors.params
        anchor = (raw.astype(np.float32) - np.float32(params.zero_point)) * np.float32(params.scale)
    else:
        anchor = anchors.data.reshape(-1)[: 4 * num_boxes].reshape(num_boxes, 4)
    anchor = anchor.astype(np.float64)
    y_scale, x_scale, h_scale, w_scale = (np.float64(s) for s in scales)
    with np.errstate(all="ignore"):
        center_y = (encodings[:, 0] / y_scale * anchor[:, 2] + anchor[:, 0]).astype(np.float32)
        center_x = (encodings[:, 1] / x_scale * anchor[:, 3] + anchor[:, 1]).astype(np.float32)
        half_h = half_extents(encodings[:, 2] / h_scale, anchor[:, 2])
        half_w = half_extents(encodings[:, 3] / w_scale, anchor[:, 3])
        return np.stack([center_y - half_h, center_x - half_w, center_y + half_h, center_x + half_w])


def half_extents(exponents: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """float32(0.5 * exp(exponents) * sizes) in double, with the C library's exp, as LiteRT decodes.

    A C call per value is slow, so NumPy's exp stands in wherever it provably gives the same float32:
    the result is monotonic in exp's value, so where NumPy's exp nudged down and up by more than both
    libraries' errors gives one float32, the C library's gives it too. Elsewhere (about one value in
    a million, and at overflow or NaN) the C library's exp is called."""
    approximate = np.exp(exponents)
    low = (0.5 * (approximate * _EXP_SLACK_DOWN) * sizes).astype(np.float32)
    high = (0.5 * (approximate * _EXP_SLACK_UP) * sizes).astype(np.float32)
    unsure = np.flatnonzero(low != high)
    if unsure.size:
        low[unsure] = (0.5 * _exp(exponents[unsure]) * sizes[unsure]).astype(np.float32)
    return low


def _candidates(scores, options) -> np.ndarray:
    """The scores single-class NMS considers (>= nms_score_threshold), -inf for the others."""
    return np.where(scores >= np.float32(options.score_threshold), scores, np.float32(-np.inf))


def _single_class_nms(corners, areas, candidates, options) -> Iterator[int]:
    """Anchor indices LiteRT's NonMaxSuppressionSingleClassHelper selects, best first, one at a time:
    callers take only as many as they need. `candidates` (from _candidates) is overwritten.

    LiteRT walks the candidates in stable descending order, each selection dropping the later ones
    whose IoU with it is > nms_iou_threshold: the next selection is the first best candidate left, so
    each costs one vectorised IoU row and an argmax, and no sort is needed."""
    threshold = np.float32(options.iou_threshold)
    while candidates.size:
        best = int(np.argmax(candidates))  # the first of equal maxima: the stable order
        if candidates[best] == -np.inf:  # none left (kept scores are >= a finite threshold)
            return
        yield best
        candidates[overlaps(corners[:, best], areas[best], corners, areas) > threshold] = -np.inf
        candidates[best] = -np.inf


def _fast_nms(corners, areas, scores, options):
    """NMS on each anchor's best class score; each kept anchor reports its top classes."""
    per_anchor = min(options.max_classes_per_detection, options.num_classes)
    candidates = _candidates(scores.max(axis=1), options)
    selections = _single_class_nms(corners, areas, candidates, options)
    anchors = np.fromiter(islice(selections, options.max_detections), np.intp)
    if per_anchor == 1:  # LiteRT's ArgMaxVector: the first of equal maxima
        classes = np.argmax(scores[anchors], axis=1)[:, None]
    else:
        classes = _top_classes(scores[anchors], per_anchor)
    return anchors, classes, scores[anchors[:, None], classes]


def _top_classes(rows: np.ndarray, count: int) -> np.ndarray:
    """Each row's `count` best classes in std::partial_sort's order. A row whose count + 1 best scores
    (count when that is all) are all different has one answer, which any sort gives; rows with ties
    replay the heap. (The rows hold no NaN: their anchors were selected, so their max passed the
    score threshold.)"""
    order = np.argsort(-rows, axis=1, kind="stable")
    best = np.take_along_axis(rows, order[:, : count + 1], axis=1)
    classes = order[:, :count]
    for row in np.flatnonzero(~(best[:, :-1] > best[:, 1:]).all(axis=1)):
        classes[row] = partial_sort_descending(rows[row].tolist(), count)
    return classes


def _regular_nms(corners, areas, scores, options):
    """NMS per class; the best max_detections of all classes' selections (a stable merge: equal
    scores in class order, then selection order)."""
    per_class = min(options.detections_per_class, options.max_detections)
    candidates = np.ascontiguousarray(_candidates(scores, options).T)

    def selections(column: int):
        chosen = _single_class_nms(corners, areas, candidates[column], options)
        for anchor in islice(chosen, per_class):
            yield float(scores[anchor, column]), anchor, column

    # heapq.merge is stable and lazy: a class's next selection is computed only once its previous one
    # has been merged, so the classes that cannot make the best max_detections cost one argmax each.
    merged = heapq.merge(*map(selections, range(options.num_classes)), key=lambda item: -item[0])
    best = list(islice(merged, options.max_detections))
    anchors = np.array([anchor for _, anchor, _ in best], np.intp)
    classes = np.array([column for _, _, column in best], np.intp)
    return anchors, classes[:, None], scores[anchors, classes][:, None]


register_custom(
    _NAME,
    (1, 1),
    types=_INPUT_TYPES,
    op_data=PostProcessData,
    init=postprocess_init,
    prepare=postprocess_prepare,
    invoke=postprocess_invoke,
)
