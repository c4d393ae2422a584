"""The C structs a native delegate sees, as ctypes layouts for 64-bit Linux (x86_64 and aarch64).

Field order and types follow TFLite's `common.h` (the layout LiteRT 2.x builds with; fields are only ever
appended there). Sizes, which tests/delegates/native checks against a compiled C++ program:
TfLiteTensor 112, TfLiteNode 80, TfLiteRegistration 88, TfLiteContext 200, TfLiteDelegate 56,
TfLiteDelegateParams 32 bytes. Other platforms are refused by `check_platform`: Windows adds fields to
TfLiteContext, and Apple's arm64 passes variadic arguments on the stack (see printf.py).

Also here: TfLiteType codes (which differ from the schema's TensorType: FLOAT32 is 1, not 0) and the
integer arrays (TfLiteIntArray: an int count followed by that many ints) the structs point to, owned by
Python or, where a delegate may free or replace them, by libc's heap.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from collections.abc import Sequence

from ...core.types import TFLITE_TYPE_NUMBER, TensorType

c_int_p = ctypes.POINTER(ctypes.c_int)

# Integer (and pointer) arguments of a call that travel in registers after (context, format): the
# variadic ones ReportError can read (printf.py). 6 argument registers on x86_64, 8 on aarch64.
_REGISTER_INTS = {"x86_64": 4, "amd64": 4, "aarch64": 6, "arm64": 6}
REGISTER_DOUBLES = 8  # xmm0-7 on x86_64, v0-v7 on aarch64
STACK_SLOTS = 16  # 8-byte stack slots after the register arguments that ReportError reads


def check_platform() -> str | None:
    """None where native delegates can run here, else why not (a sentence)."""
    machine = platform.machine().lower()
    if (
        not sys.platform.startswith("linux")
        or machine not in _REGISTER_INTS
        or ctypes.sizeof(ctypes.c_void_p) != 8
    ):
        return (
            f"native delegates run on 64-bit Linux (x86_64, aarch64) only; this is {sys.platform} "
            f"{platform.machine()} (TfLiteContext's layout and the variadic calling convention differ)"
        )
    return None


def register_ints() -> int:
    return _REGISTER_INTS.get(platform.machine().lower(), 4)


# --- TfLiteType <-> TensorType -----------------------------------------------------------------------

NO_TYPE = 0  # kTfLiteNoType: a tensor without a type yet
_TFLITE_TYPE = TFLITE_TYPE_NUMBER  # core/types.py holds TfLiteType's numbering
_TENSOR_TYPE = {code: tensor_type for tensor_type, code in _TFLITE_TYPE.items()}


def tflite_type(tensor_type: TensorType | None) -> int:
    """The TfLiteType code of a schema TensorType (None: kTfLiteNoType)."""
    return NO_TYPE if tensor_type is None else _TFLITE_TYPE[TensorType(tensor_type)]


def tensor_type(code: int) -> TensorType | None:
    """The schema TensorType of a TfLiteType code (kTfLiteNoType: None)."""
    if code == NO_TYPE:
        return None
    if code not in _TENSOR_TYPE:
        raise ValueError(f"{code} is not a TfLiteType")
    return _TENSOR_TYPE[code]


# --- structs -----------------------------------------------------------------------------------------


class TfLiteIntArray(ctypes.Structure):
    """Only the count; the ints follow it in memory (a flexible array member)."""

    _fields_ = [("size", ctypes.c_int)]


class TfLiteQuantizationParams(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("zero_point", ctypes.c_int32)]


class TfLiteAffineQuantization(ctypes.Structure):
    _fields_ = [
        ("scale", ctypes.c_void_p),  # TfLiteFloatArray*: int count, then floats
        ("zero_point", ctypes.c_void_p),  # TfLiteIntArray*
        ("quantized_dimension", ctypes.c_int32),
    ]


NO_QUANTIZATION, AFFINE_QUANTIZATION = 0, 1


class TfLiteQuantization(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("params", ctypes.c_void_p)]


class TfLiteTensor(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("data", ctypes.c_void_p),  # TfLitePtrUnion: every member is a pointer
        ("dims", ctypes.c_void_p),  # TfLiteIntArray*
        ("params", TfLiteQuantizationParams),
        ("allocation_type", ctypes.c_int),
        ("bytes", ctypes.c_size_t),
        ("allocation", ctypes.c_void_p),
        ("name", ctypes.c_void_p),  # const char*
        ("delegate", ctypes.c_void_p),  # TfLiteDelegate*
        ("buffer_handle", ctypes.c_int),
        ("data_is_stale", ctypes.c_bool),
        ("is_variable", ctypes.c_bool),
        ("quantization", TfLiteQuantization),
        ("sparsity", ctypes.c_void_p),
        ("dims_signature", ctypes.c_void_p),  # const TfLiteIntArray*
    ]


class TfLiteNode(ctypes.Structure):
    _fields_ = [
        ("inputs", ctypes.c_void_p),  # TfLiteIntArray*
        ("outputs", ctypes.c_void_p),
        ("intermediates", ctypes.c_void_p),
        ("temporaries", ctypes.c_void_p),
        ("user_data", ctypes.c_void_p),
        ("builtin_data", ctypes.c_void_p),
        ("custom_initial_data", ctypes.c_void_p),
        ("custom_initial_data_size", ctypes.c_int),
        ("delegate", ctypes.c_void_p),
        ("might_have_side_effect", ctypes.c_bool),
    ]


# The kernel functions of a TfLiteRegistration; pointers (c_void_p) in the struct, typed at call time.
STATUS = ctypes.c_int
InitFn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
FreeFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
KernelFn = ctypes.CFUNCTYPE(STATUS, ctypes.c_void_p, ctypes.c_void_p)  # prepare, invoke
ProfilingStringFn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
INIT_FAILED = ctypes.c_void_p(-1).value  # TfLiteKernelInitFailed(): (void*)-1


class TfLiteRegistration(ctypes.Structure):
    _fields_ = [
        ("init", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
        ("prepare", ctypes.c_void_p),
        ("invoke", ctypes.c_void_p),
        ("profiling_string", ctypes.c_void_p),
        ("builtin_code", ctypes.c_int32),
        ("custom_name", ctypes.c_void_p),  # const char*
        ("version", ctypes.c_int),
        ("registration_external", ctypes.c_void_p),
        ("async_kernel", ctypes.c_void_p),
        ("inplace_operator", ctypes.c_uint64),
    ]


class TfLiteDelegateParams(ctypes.Structure):
    _fields_ = [
        ("delegate", ctypes.c_void_p),
        ("nodes_to_replace", ctypes.c_void_p),  # TfLiteIntArray*
        ("input_tensors", ctypes.c_void_p),
        ("output_tensors", ctypes.c_void_p),
    ]


class TfLiteDelegate(ctypes.Structure):
    _fields_ = [
        ("data_", ctypes.c_void_p),
        ("Prepare", ctypes.c_void_p),
        ("CopyFromBufferHandle", ctypes.c_void_p),
        ("CopyToBufferHandle", ctypes.c_void_p),
        ("FreeBufferHandle", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("opaque_delegate_builder", ctypes.c_void_p),
    ]


DelegatePrepareFn = ctypes.CFUNCTYPE(STATUS, ctypes.c_void_p, ctypes.c_void_p)
CopyBufferHandleFn = ctypes.CFUNCTYPE(STATUS, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
FreeBufferHandleFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, c_int_p)


class TfLiteContext(ctypes.Structure):
    _fields_ = [
        ("tensors_size", ctypes.c_size_t),
        ("GetExecutionPlan", ctypes.c_void_p),
        ("tensors", ctypes.c_void_p),  # TfLiteTensor*
        ("impl_", ctypes.c_void_p),
        ("ResizeTensor", ctypes.c_void_p),
        ("ReportError", ctypes.c_void_p),
        ("AddTensors", ctypes.c_void_p),
        ("GetNodeAndRegistration", ctypes.c_void_p),
        ("ReplaceNodeSubsetsWithDelegateKernels", ctypes.c_void_p),
        ("recommended_num_threads", ctypes.c_int),
        ("GetExternalContext", ctypes.c_void_p),
        ("SetExternalContext", ctypes.c_void_p),
        ("allow_fp32_relax_to_fp16", ctypes.c_bool),
        ("profiler", ctypes.c_void_p),
        ("AllocatePersistentBuffer", ctypes.c_void_p),
        ("AllocateBufferForEval", ctypes.c_void_p),
        ("RequestScratchBufferInArena", ctypes.c_void_p),
        ("GetScratchBuffer", ctypes.c_void_p),
        ("ResizeTensorExplicit", ctypes.c_void_p),
        ("PreviewDelegatePartitioning", ctypes.c_void_p),
        ("GetTensor", ctypes.c_void_p),
        ("GetEvalTensor", ctypes.c_void_p),
        ("GetModelMetadata", ctypes.c_void_p),
        ("AcquireSubgraphContext", ctypes.c_void_p),
        ("ReleaseSubgraphContext", ctypes.c_void_p),
    ]


# --- arrays ------------------------------------------------------------------------------------------


def int_array(values: Sequence[int]) -> ctypes.Array:
    """A TfLiteIntArray owned by Python: keep the returned buffer alive while C may read it."""
    return (ctypes.c_int * (1 + len(values)))(len(values), *values)


def float_array(values: Sequence[float]) -> ctypes.Array:
    """A TfLiteFloatArray (an int count, then floats) owned by Python."""
    buffer = (ctypes.c_int32 * (1 + len(values)))(len(values))
    (ctypes.c_float * len(values)).from_buffer(buffer, ctypes.sizeof(ctypes.c_int32))[:] = list(values)
    return buffer


def read_int_array(address: int | None) -> tuple[int, ...]:
    """The ints of a TfLiteIntArray at `address` (NULL: empty)."""
    if not address:
        return ()
    size = ctypes.c_int.from_address(address).value
    if size < 0:
        raise ValueError(f"TfLiteIntArray at {address:#x} has negative size {size}")
    return tuple((ctypes.c_int * size).from_address(address + ctypes.sizeof(ctypes.c_int)))


# --- arrays on the C heap: ones a delegate may free or replace (TfLiteIntArrayFree is free) -----------

_libc = ctypes.CDLL(None)
_libc.malloc.argtypes, _libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
_libc.free.argtypes, _libc.free.restype = [ctypes.c_void_p], None


def malloc_int_array(values: Sequence[int]) -> int:
    """A TfLiteIntArray from libc's malloc (the caller frees it with `free`, unless C code took it)."""
    address = _libc.malloc(ctypes.sizeof(ctypes.c_int) * (1 + len(values)))
    if not address:
        raise MemoryError("malloc failed for a TfLiteIntArray")
    (ctypes.c_int * (1 + len(values))).from_address(address)[:] = [len(values), *values]
    return address


def free(address: int | None) -> None:
    """libc's free (NULL is ignored)."""
    if address:
        _libc.free(address)
