"""NON_MAX_SUPPRESSION_V4 and V5: greedy single-class NMS over [n, 4] boxes, and V5's soft NMS.

Both ops share one kernel, which (as in TFLite) goes by the input count, not the op: 5 inputs (boxes,
scores, max_output_size, iou_threshold, score_threshold) give outputs (selected_indices,
num_selected); a 6th, sigma, gives (selected_indices, selected_scores, num_selected), where each
overlap with an already selected box decays a candidate's score by exp(-0.5 * iou^2 / sigma).

TFLite's loop is followed step for step, because its details show in the outputs:
- candidates (score > score_threshold) wait in a std::priority_queue, whose libstdc++ heap decides the
  order of equal scores (heap_order.py);
- a popped candidate is compared with the boxes selected since it was last compared, newest first;
  an IoU >= iou_threshold drops it; with sigma > 0 each smaller IoU decays its score (float32, in that
  order), and a score that falls to the threshold stops the comparisons;
- an undecayed candidate is selected, and (unlike TensorFlow) pushed back too while its score is above
  the threshold: it meets itself next time, and an IoU of 1 drops it, unless iou_threshold > 1 or the
  box has no area, in which case TFLite selects it again.
Hard NMS over distinct scores and ordinary boxes is the textbook greedy selection, run as one
vectorised IoU row per selected box. Otherwise the loop runs as TFLite's: the IoUs of one candidate in
one vectorised step, the queue Python's heapq while the scores in it all differ, and the replay of
libstdc++'s heap (rerun from the start) once two are equal.

The outputs hold max_output_size entries, those past num_selected zero; a max_output_size computed at
run time makes them dynamic, sized at invoke. (LiteRT 2.3, the oracle, does so; later LiteRT sources
shrink dynamic outputs to num_selected.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import KernelError, ensure, ensure_condition_eq
from ..common import input_tensor, output_tensor
from ..quant.lut import expf
from ..registry import register_builtin
from .common import box_areas, overlaps
from .heap_order import DistinctKeyQueue, EqualKeys, PriorityQueue

_F32 = TensorType.FLOAT32


@dataclass(frozen=True)
class NmsData:
    soft: bool  # six inputs: sigma, and a selected_scores output
    max_output_size: int | None  # None: a run-time input; the outputs are dynamic


def _ensure_scalar(tensor, name: str, tensor_type: TensorType, type_text: str) -> None:
    ensure_condition_eq(tensor.type.name, tensor_type.name, f"input_{name}->type != {type_text}")
    ensure_condition_eq(len(tensor.shape), 0, f"NumDimensions(input_{name}) != 0")


def nms_prepare(context, node):
    num_inputs = len(node.inputs)
    if num_inputs not in (5, 6):
        raise KernelError(f"Found NMS op with invalid num inputs: {num_inputs}")
    soft = num_inputs == 6
    boxes, scores, max_output_size = (input_tensor(context, node, i) for i in range(3))
    ensure_condition_eq(boxes.type.name, _F32.name, "input_boxes->type != kTfLiteFloat32")
    ensure_condition_eq(len(boxes.shape), 2, "NumDimensions(input_boxes) != 2")
    ensure_condition_eq(boxes.shape[1], 4, "SizeOfDimension(input_boxes, 1) != 4")
    ensure_condition_eq(scores.type.name, _F32.name, "input_scores->type != kTfLiteFloat32")
    ensure_condition_eq(len(scores.shape), 1, "NumDimensions(input_scores) != 1")
    ensure_condition_eq(boxes.shape[0], scores.shape[0], "num_boxes != SizeOfDimension(input_scores, 0)")
    _ensure_scalar(max_output_size, "max_output_size", TensorType.INT32, "kTfLiteInt32")
    size = None
    if max_output_size.is_constant_or_persistent:
        size = int(max_output_size.data.reshape(()))
        ensure(size >= 0, "(max_output_size_value >= 0) was not true.")
    _ensure_scalar(input_tensor(context, node, 3), "iou_threshold", _F32, "kTfLiteFloat32")
    _ensure_scalar(input_tensor(context, node, 4), "score_threshold", _F32, "kTfLiteFloat32")
    if soft:
        _ensure_scalar(input_tensor(context, node, 5), "sigma", _F32, "kTfLiteFloat32")
    ensure_condition_eq(len(node.outputs), 3 if soft else 2, f"NumOutputs(node) != {3 if soft else 2}")
    outputs = [output_tensor(context, node, i) for i in range(len(node.outputs))]
    types = (TensorType.INT32, _F32, TensorType.INT32) if soft else (TensorType.INT32, TensorType.INT32)
    for output, tensor_type in zip(outputs, types):
        output.type = tensor_type
    context.resize_tensor(outputs[-1], ())
    for output in outputs[:-1]:
        if size is None:
            context.set_tensor_to_dynamic(output)
        else:
            context.resize_tensor(output, (size,))
    node.user_data = NmsData(soft, size)


def nms_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    boxes = tensors[node.inputs[0]].data
    scores = tensors[node.inputs[1]].data
    size = int(tensors[node.inputs[2]].data.reshape(()))
    ensure(size >= 0, "(max_output_size_value >= 0) was not true.")
    iou_threshold, score_threshold = (tensors[node.inputs[i]].data.reshape(()) for i in (3, 4))
    sigma = np.float32(0)
    if data.soft:
        sigma = tensors[node.inputs[5]].data.reshape(())
        ensure(not sigma < 0, f"Invalid sigma value for soft NMS: {float(sigma):f}")
    selected, selected_scores = _suppress(boxes, scores, size, iou_threshold, score_threshold, sigma)
    outputs = [tensors[i] for i in node.outputs]
    results = (selected, selected_scores) if data.soft else (selected,)
    for output, result in zip(outputs, results):
        if data.max_output_size is None:
            context.resize_tensor(output, (size,))
        output.data[:] = 0
        output.data[: len(result)] = result
    outputs[-1].data[...] = len(selected)


def _suppress(boxes, scores, max_output_size, iou_threshold, score_threshold, sigma):
    """TFLite's reference NonMaxSuppression: the selected indices and their (decayed) scores. The
    queue's order only shows when equal scores meet in it: until then Python's heapq runs it."""
    candidates = np.flatnonzero(scores > score_threshold)
    corners = _corners(boxes)
    areas = box_areas(corners)
    ranking = None if sigma > 0 else _greedy_order(candidates, scores, areas, iou_threshold)
    if ranking is not None:
        return _greedy(candidates, ranking, scores, corners, areas, max_output_size, iou_threshold)
    entries = list(zip(scores[candidates].tolist(), candidates.tolist()))
    args = (corners, areas, entries, max_output_size, iou_threshold, score_threshold, sigma)
    try:
        return _select(DistinctKeyQueue(), *args)
    except EqualKeys:
        return _select(PriorityQueue(lambda a, b: a[0] < b[0]), *args)


def _corners(boxes: np.ndarray) -> np.ndarray:
    """[4, n] corners in (ymin, xmin, ymax, xmax) order, whichever way round each box gives them."""
    return np.concatenate(
        [np.minimum(boxes[:, :2], boxes[:, 2:]), np.maximum(boxes[:, :2], boxes[:, 2:])], 1
    ).T


# Twice an area below this stays finite, so a box's IoU with itself is exactly 1.
_HALF_FLOAT_MAX = np.float32(np.finfo(np.float32).max / 2)
_ZERO = np.array(0, np.float32)


def _greedy_order(candidates, scores, areas, iou_threshold) -> np.ndarray | None:
    """The candidates' positions in descending score order where TFLite's hard NMS reduces to the
    textbook greedy one, else None: the scores are distinct (so the queue pops them in that order,
    and a selected box, pushed back, comes out again at once) and every candidate's IoU with itself
    is exactly 1 (an area > 0 whose double is finite), which then drops it, as iou_threshold <= 1.
    Otherwise the queue runs (and replays libstdc++'s heap on ties): boxes come back, selected again."""
    chosen = areas[candidates]
    if not (iou_threshold <= 1 and ((chosen > 0) & (chosen < _HALF_FLOAT_MAX)).all()):
        return None
    ranking = np.argsort(-scores[candidates])
    ordered = scores[candidates[ranking]]
    return None if (ordered[1:] == ordered[:-1]).any() else ranking


def _greedy(candidates, ranking, scores, corners, areas, max_output_size, iou_threshold):
    """Hard NMS in descending score order: each box still standing is selected and removes the later
    ones it overlaps (IoU >= threshold), until enough are selected. TFLite's float32 IoU is symmetric
    in its two boxes, so one vectorised row per selected box gives what the queue's one-by-one
    comparisons give."""
    order = candidates[ranking]
    ymin, xmin, ymax, xmax = corners[:, order]
    areas = areas[order]
    standing = np.ones(order.size, bool)
    wanted = min(order.size, max_output_size)
    chosen: list[int] = []
    position = 0
    while len(chosen) < wanted and position < order.size:
        position += int(standing[position:].argmax())
        if not standing[position]:
            break
        chosen.append(position)
        at, position = position, position + 1
        # TFLite's IoU (common.overlaps) without its zero-area case, which no candidate here has
        intersection = np.minimum(ymax[at], ymax[position:])
        intersection -= np.maximum(ymin[at], ymin[position:])
        np.maximum(intersection, _ZERO, out=intersection)
        width = np.minimum(xmax[at], xmax[position:])
        width -= np.maximum(xmin[at], xmin[position:])
        np.maximum(width, _ZERO, out=width)
        intersection *= width
        union = areas[at] + areas[position:]
        union -= intersection
        intersection /= union
        standing[position:] &= intersection < iou_threshold
    return order[chosen].astype(np.int32), scores[order[chosen]]


def _select(queue, corners, areas, entries, max_output_size, iou_threshold, score_threshold, sigma):
    """TFLite's selection loop over `queue`, filled with the candidates' (score, index) in index order."""
    for score, index in entries:
        queue.push((score, index, 0))  # (score, index, first selection to compare with)
    wanted = min(len(queue), max_output_size)
    if wanted == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    # The selected boxes' corners and areas, newest last, for the vectorised comparisons.
    chosen_corners, chosen_areas = np.empty((4, wanted), np.float32), np.empty(wanted, np.float32)
    selected: list[int] = []
    selected_scores: list[float] = []
    scale = np.float32(-0.5 / np.float64(sigma)) if sigma > 0 else np.float32(0)
    while len(selected) < wanted and len(queue):
        score, index, begin = queue.pop()
        original = score
        end = len(selected)
        if begin < end:
            ious = overlaps(
                corners[:, index], areas[index], chosen_corners[:, begin:end], chosen_areas[begin:end]
            )[::-1]
            dropped, score = _compare(ious, score, iou_threshold, score_threshold, scale, sigma > 0)
            if dropped:
                continue
        if score == original:
            chosen_corners[:, end], chosen_areas[end] = corners[:, index], areas[index]
            selected.append(index)
            selected_scores.append(score)
        if score > score_threshold:
            queue.push((score, index, end))
    return np.array(selected, np.int32), np.array(selected_scores, np.float32)


def _compare(ious, score, iou_threshold, score_threshold, scale, soft):
    """Walk a candidate's IoUs with the selected boxes (newest first) as TFLite's inner loop does:
    (hard-suppressed, its score afterwards)."""
    if not soft:
        return bool((ious >= iou_threshold).any()), score
    hard = np.flatnonzero(ious >= iou_threshold)
    if hard.size:
        ious = ious[: hard[0]]
    if not ious.any():  # no decay: the score stays above the threshold
        return hard.size > 0, score
    # Each comparison before the first hard hit multiplies the score by expf(scale * iou * iou), in
    # float32, and stops once the score <= threshold. expf is the C library's, as LiteRT calls it
    # (rounding exp to float32 differs from glibc's expf in the last bit now and then); it is called
    # only where boxes overlap: expf(0) is 1.
    factors = np.ones(len(ious), np.float32)
    overlapping = np.flatnonzero(ious)
    factors[overlapping] = expf((scale * ious[overlapping]) * ious[overlapping])
    decayed = np.multiply.accumulate(np.concatenate([np.float32([score]), factors]))[1:]
    low = np.flatnonzero(decayed <= score_threshold)
    if low.size:  # the score fell to the threshold before any hard hit
        return False, float(decayed[low[0]])
    if hard.size:
        return True, score
    return False, float(decayed[-1])


for _op in (BuiltinOperator.NON_MAX_SUPPRESSION_V4, BuiltinOperator.NON_MAX_SUPPRESSION_V5):
    register_builtin(_op, (1, 1), types=(_F32,), op_data=NmsData, prepare=nms_prepare, invoke=nms_invoke)
