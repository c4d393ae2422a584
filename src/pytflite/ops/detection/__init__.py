"""Object-detection post-processing: box decoding and non-max suppression.

TFLite_Detection_PostProcess   SSD decoding + fast or regular multi-class NMS (a default custom op)
NON_MAX_SUPPRESSION_V4, _V5    single-class greedy NMS over corner boxes; V5 adds soft NMS

Selection is inherently sequential (each kept box suppresses later ones); the kernels vectorise each
step (one box against all remaining candidates) and reproduce LiteRT's order exactly, equal scores
included: stable sorts where TFLite sorts stably, libstdc++'s heap order where it uses a heap.

Modules: postprocess.py and non_max_suppression.py register the kernels; common.py holds the float32
IoU and check messages they share, heap_order.py the replay of libstdc++'s heap algorithms (and a
faster queue for while all scores differ).
"""

from . import non_max_suppression, postprocess  # noqa: F401  (importing them registers their kernels)
