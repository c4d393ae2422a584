"""How many inputs and outputs each builtin operator can take, over all its versions.

The verifier rejects an operator whose tensor counts no version of the op accepts, before any kernel
or delegate looks at the node. The ranges are deliberately loose (every optional input counted), so a
model LiteRT runs is never refused; each kernel's prepare still checks its exact form, with TFLite's
message. Ops missing here (custom ops, the recurrent family, rarely used builtins) are left to their
kernels.
"""

from __future__ import annotations

from ..core.types import BuiltinOperator as Op

Range = tuple[int, int | None]  # (fewest, most); None: no upper bound

_UNARY = (
    "ABS CEIL COS EXP FLOOR LOG LOGISTIC NEG RELU RELU6 RELU_0_TO_1 RELU_N1_TO_1 ROUND RSQRT SIN SQRT "
    "SQUARE TANH ELU HARD_SWISH GELU LEAKY_RELU LOG_SOFTMAX SOFTMAX L2_NORMALIZATION "
    "LOCAL_RESPONSE_NORMALIZATION LOGICAL_NOT SIGN ZEROS_LIKE DEQUANTIZE QUANTIZE CAST RANK SHAPE "
    "AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D DEPTH_TO_SPACE SPACE_TO_DEPTH COMPLEX_ABS REAL IMAG DENSIFY "
    "MATRIX_DIAG WHERE SQUEEZE BUCKETIZE READ_VARIABLE HASHTABLE_SIZE"
).split()
_BINARY = (
    "ADD SUB MUL DIV FLOOR_DIV FLOOR_MOD POW MAXIMUM MINIMUM SQUARED_DIFFERENCE EQUAL NOT_EQUAL LESS "
    "LESS_EQUAL GREATER GREATER_EQUAL LOGICAL_AND LOGICAL_OR PRELU ATAN2 RIGHT_SHIFT BITWISE_XOR ARG_MAX "
    "ARG_MIN BROADCAST_ARGS BROADCAST_TO EXPAND_DIMS FILL GATHER GATHER_ND MEAN SUM REDUCE_PROD REDUCE_MAX "
    "REDUCE_MIN REDUCE_ANY REDUCE_ALL TILE TRANSPOSE REVERSE_V2 RFFT2D MATRIX_SET_DIAG EMBEDDING_LOOKUP "
    "SEGMENT_SUM RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR CUMSUM BATCH_MATMUL MIRROR_PAD REVERSE_SEQUENCE"
).split()
_TERNARY = (
    "SELECT SELECT_V2 SLICE SCATTER_ND RANGE DYNAMIC_UPDATE_SLICE UNSORTED_SEGMENT_MAX "
    "UNSORTED_SEGMENT_MIN UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_SUM SPACE_TO_BATCH_ND BATCH_TO_SPACE_ND "
    "HASHTABLE_FIND"
).split()

OPERATOR_ARITY: dict[int, tuple[Range, Range]] = {
    **{int(Op[name]): ((1, 1), (1, 1)) for name in _UNARY},
    **{int(Op[name]): ((2, 2), (1, 1)) for name in _BINARY},
    **{int(Op[name]): ((3, 3), (1, 1)) for name in _TERNARY},
    int(Op.RESHAPE): ((1, 2), (1, 1)),
    int(Op.PAD): ((2, 3), (1, 1)),
    int(Op.PADV2): ((2, 3), (1, 1)),
    int(Op.STRIDED_SLICE): ((4, 4), (1, 1)),
    int(Op.ONE_HOT): ((4, 4), (1, 1)),
    int(Op.CONV_2D): ((2, 3), (1, 1)),
    int(Op.DEPTHWISE_CONV_2D): ((2, 3), (1, 1)),
    int(Op.CONV_3D): ((2, 3), (1, 1)),
    int(Op.TRANSPOSE_CONV): ((3, 4), (1, 1)),
    int(Op.CONV_3D_TRANSPOSE): ((3, 4), (1, 1)),
    int(Op.FULLY_CONNECTED): ((2, 3), (1, 2)),
    int(Op.CONCATENATION): ((1, None), (1, 1)),
    int(Op.PACK): ((1, None), (1, 1)),
    int(Op.ADD_N): ((1, None), (1, 1)),
    int(Op.UNPACK): ((1, 1), (0, None)),
    int(Op.SPLIT): ((2, 2), (1, None)),
    int(Op.SPLIT_V): ((3, 3), (1, None)),
    int(Op.TOPK_V2): ((2, 2), (2, 2)),
    int(Op.UNIQUE): ((1, 1), (2, 2)),
    int(Op.CALL_ONCE): ((0, 0), (0, 0)),
    int(Op.IF): ((1, None), (0, None)),
    int(Op.VAR_HANDLE): ((0, 0), (1, 1)),
    int(Op.ASSIGN_VARIABLE): ((2, 2), (0, 0)),
    int(Op.HASHTABLE): ((0, 0), (1, 1)),
    int(Op.HASHTABLE_IMPORT): ((3, 3), (0, 0)),
}
