"""TF's non-max suppression ops: NonMaxSuppression (V1 to V5, float16 boxes included),
NonMaxSuppressionWithOverlaps and CombinedNonMaxSuppression (the converter lowers float32
NonMaxSuppressionV4 / V5 to TFLite builtins; the rest stay Flex).

Greedy selection as TF's CPU kernels run it: candidates above score_threshold, best score first (equal
scores: lower index first), each kept unless its IoU (computed in float32) with a kept box exceeds
iou_threshold. Soft-NMS (V5, soft_nms_sigma > 0) instead scales a candidate's score by
exp(-0.5 * iou^2 / sigma) for each kept box, in the boxes' type, and requeues it. Combined NMS runs
that per batch and class, then keeps the best max_total_size boxes of each batch.
"""

from __future__ import annotations

import heapq

import numpy as np

from ...ops.quant.lut import c_float_function
from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_F32 = np.float32
_EXPF = c_float_function("expf")  # TF's soft-NMS weight calls the C library's expf
_BOX_TYPES = {"float16", "float32"}


def _scalar(value: np.ndarray, name: str, rank_note: bool = False) -> np.ndarray:
    if value.ndim != 0:
        note = f" (Shape must be rank 0 but is rank {value.ndim})" if rank_note else ""
        raise ValueError(f"{name} must be 0-D, got shape {shape_text(value.shape)}{note}")
    return value


def _check_boxes(boxes: np.ndarray, scores: np.ndarray) -> None:
    if boxes.ndim != 2:
        raise ValueError(
            f"boxes must be 2-D{shape_text(boxes.shape)} (Shape must be rank 2 but is rank {boxes.ndim})"
        )
    if boxes.shape[1] != 4:
        raise ValueError(f"boxes must have 4 columns (Dimension must be 4 but is {boxes.shape[1]})")
    _check_scores(boxes.shape[0], scores)


def _check_scores(count: int, scores: np.ndarray) -> None:
    if scores.ndim != 1:
        raise ValueError(
            f"scores must be 1-D{shape_text(scores.shape)} (Shape must be rank 1 but is rank {scores.ndim})"
        )
    if scores.shape[0] != count:
        raise ValueError(
            f"scores has incompatible shape (Dimensions must be equal, but are {count} and {scores.shape[0]})"
        )


def _iou_function(boxes: np.ndarray):
    """IoU of box i with boxes `others` (an index array), in float32 as TF computes it: corners sorted,
    0 where either box has no area."""
    corners = boxes.astype(_F32).reshape(-1, 4)
    low = np.minimum(corners[:, :2], corners[:, 2:])
    high = np.maximum(corners[:, :2], corners[:, 2:])
    areas = (high[:, 0] - low[:, 0]) * (high[:, 1] - low[:, 1])

    def iou(i: int, others: np.ndarray) -> np.ndarray:
        top_left = np.maximum(low[i], low[others])
        bottom_right = np.minimum(high[i], high[others])
        extent = np.maximum(bottom_right - top_left, _F32(0))
        overlap = extent[:, 0] * extent[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = overlap / ((areas[i] + areas[others]) - overlap)
        return np.where((areas[i] <= 0) | (areas[others] <= 0), _F32(0), ratio)

    return iou


def _greedy(similarity, scores, max_output, iou_threshold, score_threshold, sigma=0.0):
    """TF's selection loop: (indices, their final scores). Values are of the scores' type T: float32
    or float16, whose products NumPy rounds as TF's Eigen::half does."""
    t = scores.dtype.type
    output_size = int(max_output)
    if output_size < 0:
        raise ValueError("output size must be non-negative")
    iou_threshold, score_threshold = t(iou_threshold), t(score_threshold)
    soft = t(sigma) > 0
    scale = t(-0.5) / t(sigma) if soft else t(0)
    queue = [(-float(s), i, s, 0) for i, s in enumerate(scores) if s > score_threshold]
    heapq.heapify(queue)
    selected, kept_scores = [], []
    while len(selected) < output_size and queue:
        _, index, score, begin = heapq.heappop(queue)
        original = score
        similarities = similarity(index, np.array(selected[begin:], np.int64)).astype(t)[::-1]
        if not soft and not np.isnan(similarities).any():  # no weights but 1: kept unless one overlaps
            if not np.any(similarities > iou_threshold):
                selected.append(index)
                kept_scores.append(score)
            continue
        suppressed = False
        for sim in similarities:
            weight = t(_EXPF(np.array(scale * sim * sim, _F32))) if soft or sim <= iou_threshold else t(0)
            score = t(score * weight)
            if not soft and sim > iou_threshold:
                suppressed = True
                break
            if score <= score_threshold:
                break
        if suppressed:
            continue
        if score == original:
            selected.append(index)
            kept_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-float(score), index, score, len(selected)))
    return np.array(selected, np.int32), np.array(kept_scores, scores.dtype)


def _padded(values: np.ndarray, size: int, pad: bool) -> np.ndarray:
    return np.concatenate((values, np.zeros(size - len(values), values.dtype))) if pad else values


@register("NonMaxSuppression")
def _nms_v1(node: TfNode, boxes, scores, max_output_size):
    """NonMaxSuppression: greedy IoU suppression, the threshold an attr; float32."""
    _scalar(max_output_size, "max_output_size")
    threshold = node.attr("iou_threshold", 0.5)
    if not 0 <= threshold <= 1:
        raise ValueError("iou_threshold must be in [0, 1]")
    _check_boxes(boxes, scores)
    lowest = np.finfo(_F32).min
    return _greedy(_iou_function(boxes), scores.astype(_F32), max_output_size, threshold, lowest)[0]


def _threshold(value: np.ndarray, name: str, dtype: np.dtype, rank_note: bool = False):
    return dtype.type(_scalar(value, name, rank_note))


def _iou_checked(value: np.ndarray, dtype: np.dtype, rank_note: bool = False):
    threshold = _threshold(value, "iou_threshold", dtype, rank_note)
    if not (threshold >= 0 and threshold <= 1):
        raise ValueError("iou_threshold must be in [0, 1]")
    return threshold


@register("NonMaxSuppressionV2", types={"T": _BOX_TYPES, "T_threshold": _BOX_TYPES})
def _nms_v2(node: TfNode, boxes, scores, max_output_size, iou_threshold):
    """NonMaxSuppressionV2: NonMaxSuppression with the IoU threshold an input."""
    _scalar(max_output_size, "max_output_size")
    threshold = _iou_checked(iou_threshold, scores.dtype)
    _check_boxes(boxes, scores)
    lowest = np.finfo(scores.dtype).min
    return _greedy(_iou_function(boxes), scores, max_output_size, threshold, lowest)[0]


@register("NonMaxSuppressionV3", types={"T": _BOX_TYPES, "T_threshold": _BOX_TYPES})
def _nms_v3(node: TfNode, boxes, scores, max_output_size, iou_threshold, score_threshold):
    """NonMaxSuppressionV3: with a score threshold too."""
    _scalar(max_output_size, "max_output_size", rank_note=True)
    threshold = _iou_checked(iou_threshold, scores.dtype, rank_note=True)
    floor = _threshold(score_threshold, "score_threshold", scores.dtype)
    _check_boxes(boxes, scores)
    return _greedy(_iou_function(boxes), scores, max_output_size, threshold, floor)[0]


@register("NonMaxSuppressionV4", types={"T": _BOX_TYPES, "T_threshold": _BOX_TYPES})
def _nms_v4(node: TfNode, boxes, scores, max_output_size, iou_threshold, score_threshold):
    """NonMaxSuppressionV4: V3 that also counts its selections, and can pad to max_output_size."""
    _scalar(max_output_size, "max_output_size")
    threshold = _iou_checked(iou_threshold, scores.dtype)
    floor = _threshold(score_threshold, "score_threshold", scores.dtype)
    _check_boxes(boxes, scores)
    indices, _ = _greedy(_iou_function(boxes), scores, max_output_size, threshold, floor)
    pad = node.attr("pad_to_max_output_size", False)
    return _padded(indices, int(max_output_size), pad), np.array(len(indices), np.int32)


@register("NonMaxSuppressionV5", types={"T": _BOX_TYPES})
def _nms_v5(node: TfNode, boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma):
    """NonMaxSuppressionV5: V4 with the selected scores, and Soft-NMS when soft_nms_sigma > 0."""
    _scalar(max_output_size, "max_output_size")
    threshold = _iou_checked(iou_threshold, scores.dtype)
    floor = _threshold(score_threshold, "score_threshold", scores.dtype)
    sigma = _threshold(soft_nms_sigma, "soft_nms_sigma", scores.dtype)
    if not sigma >= 0:
        raise ValueError("soft_nms_sigma_val must be >= 0")
    _check_boxes(boxes, scores)
    indices, kept = _greedy(_iou_function(boxes), scores, max_output_size, threshold, floor, sigma)
    pad, size = node.attr("pad_to_max_output_size", False), int(max_output_size)
    return _padded(indices, size, pad), _padded(kept, size, pad), np.array(len(indices), np.int32)


@register("NonMaxSuppressionWithOverlaps")
def _nms_overlaps(node: TfNode, overlaps, scores, max_output_size, overlap_threshold, score_threshold):
    """NonMaxSuppressionWithOverlaps: greedy suppression by a given [n, n] overlap matrix."""
    _scalar(max_output_size, "max_output_size")
    threshold = _threshold(overlap_threshold, "overlap_threshold", np.dtype(_F32))
    floor = _threshold(score_threshold, "score_threshold", np.dtype(_F32))
    if overlaps.ndim != 2:
        raise ValueError(f"overlaps must be 2-D{shape_text(overlaps.shape)}")
    if overlaps.shape[1] != overlaps.shape[0]:
        raise ValueError(f"overlaps must be square{shape_text(overlaps.shape)}")
    _check_scores(overlaps.shape[0], scores)
    return _greedy(lambda i, others: overlaps[i, others], scores, max_output_size, threshold, floor)[0]


# CombinedNonMaxSuppression orders candidates by score alone: its per-class queue is a
# std::priority_queue and its final ranking a std::sort, so which of two equal scores comes first is up
# to libstdc++'s algorithms, repeated here move for move (on lists, with `less` as the comparator).


def _sift_up(items: list, hole: int, top: int, value, less, base: int = 0) -> None:
    """libstdc++'s __push_heap on the heap at items[base:]: move `value` up from `hole` towards `top`."""
    parent = (hole - 1) // 2
    while hole > top and less(items[base + parent], value):
        items[base + hole] = items[base + parent]
        hole, parent = parent, (parent - 1) // 2
    items[base + hole] = value


def _adjust_heap(items: list, hole: int, length: int, value, less, base: int = 0) -> None:
    """libstdc++'s __adjust_heap on the heap items[base : base + length]: fill `hole` from below, then
    place `value`."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(items[base + child], items[base + child - 1]):
            child -= 1
        items[base + hole], hole = items[base + child], child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        items[base + hole], hole = items[base + child - 1], child - 1
    _sift_up(items, hole, top, value, less, base)


def _heap_push(items: list, value, less) -> None:
    items.append(value)
    _sift_up(items, len(items) - 1, 0, value, less)


def _heap_pop(items: list, less):
    best, last = items[0], items.pop()
    if items:
        _adjust_heap(items, 0, len(items), last, less)
    return best


def _std_sort(items: list, less) -> None:
    """libstdc++'s std::sort: introsort (median-of-three quicksort, heapsort past 2 log2 n levels)
    down to runs of 16, then insertion sort."""
    if len(items) > 1:
        _introsort(items, 0, len(items), 2 * (len(items).bit_length() - 1), less)
        _insertion_sort(items, 0, min(len(items), 16), less)
        for i in range(16, len(items)):
            _linear_insert(items, i, less)


def _introsort(items: list, first: int, last: int, depth: int, less) -> None:
    while last - first > 16:
        if depth == 0:
            _heap_sort(items, first, last, less)
            return
        depth -= 1
        middle = first + (last - first) // 2
        a, b, c = first + 1, middle, last - 1
        if less(items[a], items[b]):
            pivot = b if less(items[b], items[c]) else (c if less(items[a], items[c]) else a)
        else:
            pivot = a if less(items[a], items[c]) else (c if less(items[b], items[c]) else b)
        items[first], items[pivot] = items[pivot], items[first]
        low, high = first + 1, last
        while True:
            while less(items[low], items[first]):
                low += 1
            high -= 1
            while less(items[first], items[high]):
                high -= 1
            if low >= high:
                break
            items[low], items[high] = items[high], items[low]
            low += 1
        _introsort(items, low, last, depth, less)
        last = low


def _heap_sort(items: list, first: int, last: int, less) -> None:
    length = last - first
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(items, parent, length, items[first + parent], less, first)
    for end in range(last - 1, first, -1):
        value, items[end] = items[end], items[first]
        _adjust_heap(items, 0, end - first, value, less, first)


def _insertion_sort(items: list, first: int, last: int, less) -> None:
    for i in range(first + 1, last):
        if less(items[i], items[first]):
            items[first : i + 1] = [items[i], *items[first:i]]
        else:
            _linear_insert(items, i, less)


def _linear_insert(items: list, i: int, less) -> None:
    value = items[i]
    while less(value, items[i - 1]):
        items[i] = items[i - 1]
        i -= 1
    items[i] = value


def _score_below(a, b) -> bool:
    return a[0] < b[0]


def _score_above(a, b) -> bool:
    return b[0] < a[0]


def _per_class(boxes, scores, size_per_class, iou_threshold, score_threshold) -> list[tuple[float, int]]:
    """One batch's, one class's kept (score, box) pairs in selection order."""
    queue: list = []
    for index, score in enumerate(scores):
        if score > score_threshold:
            _heap_push(queue, (float(score), index), _score_below)
    iou, kept = _iou_function(boxes), []
    while len(kept) < size_per_class and queue:
        score, index = _heap_pop(queue, _score_below)
        if not np.any(iou(index, np.array([k for _, k in kept], np.int64)) > iou_threshold):
            kept.append((score, index))
    return kept


@register("CombinedNonMaxSuppression")
def _combined_nms(
    node: TfNode, boxes, scores, max_output_size_per_class, max_total_size, iou_threshold, score_threshold
):
    """CombinedNonMaxSuppression: per batch, NMS per class, then the best max_total_size boxes.

    Boxes are clipped to [0, 1] with clip_boxes; the outputs are padded with zeros."""
    if boxes.ndim != 4:
        raise ValueError(f"boxes must be 4-D [batch, num_boxes, q, 4], got shape {shape_text(boxes.shape)}")
    if scores.ndim != 3:
        raise ValueError(
            f"scores must be 3-D [batch, num_boxes, num_classes], got shape {shape_text(scores.shape)}"
        )
    batch, count, q, _ = boxes.shape
    classes = scores.shape[2]
    if q not in (1, classes):
        raise ValueError("third dimension of boxes must be either 1 or num classes")
    if boxes.shape[3] != 4:
        raise ValueError("boxes must have 4 columns")
    if scores.shape[1] != count:
        raise ValueError("scores has incompatible shape")
    if scores.shape[0] != batch:
        raise ValueError("boxes and scores must have same batch size")
    per_class = int(_scalar(max_output_size_per_class, "max_size_per_class"))
    if per_class <= 0:
        raise ValueError("max_size_per_class must be positive")
    total = int(_scalar(max_total_size, "max_total_size"))
    if total <= 0:
        raise ValueError("max_total_size must be > 0")
    iou_limit = _F32(_scalar(iou_threshold, "iou_threshold"))
    floor = _F32(_scalar(score_threshold, "score_threshold"))
    if not 0 <= iou_limit <= 1:
        raise ValueError("iou_threshold must be in [0, 1]")
    pad_per_class, clip = node.attr("pad_per_class", False), node.attr("clip_boxes", True)
    size = min(total, per_class * classes) if pad_per_class else total
    out_boxes = np.zeros((batch, size, 4), _F32)
    out_scores, out_classes = np.zeros((batch, size), _F32), np.zeros((batch, size), _F32)
    valid = np.zeros(batch, np.int32)
    size_per_class = min(per_class, count)
    for b in range(batch):
        # TF's candidate list: size_per_class slots per class, unfilled ones scored -inf.
        slots = [(-np.inf, -1, None)] * (size_per_class * classes)
        for c in range(classes):
            class_boxes = boxes[b, :, c if q > 1 else 0]
            kept = _per_class(class_boxes, scores[b, :, c], size_per_class, iou_limit, floor)
            for k, (score, index) in enumerate(kept):
                slots[c * size_per_class + k] = (score, c, class_boxes[index])
        _std_sort(slots, _score_above)
        found = [slot for slot in slots if slot[2] is not None][:size]
        valid[b] = len(found)
        for rank, (score, c, box) in enumerate(found):
            out_boxes[b, rank] = np.clip(box, 0, 1) if clip else box
            out_scores[b, rank], out_classes[b, rank] = score, c
    return out_boxes, out_scores, out_classes, valid
