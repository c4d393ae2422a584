"""NativeContext: a C-ABI `TfLiteContext` over one pytflite subgraph, for native delegates.

`context->tensors` is an array of TfLiteTensor structs whose `data` points at the tensors' own NumPy
memory (the arena, the mapped model, dynamic arrays): nothing is copied, a delegate kernel reads its
inputs and writes its outputs in place. The structs are written again (`sync`) whenever pytflite may
have moved memory: before every call into the delegate, and for a kernel's own tensors at each invoke.
What C code may write into them (a temporary's type and allocation type, buffer handles, data_is_stale)
is read back after the call (`read_back`).

The callbacks are pytflite's Context methods behind C function pointers. The function pointers are
made once per process (module-level thunks) and find their NativeContext by the struct's address, so a
delegate holding a pointer can never call freed code. A Python exception inside a callback is reported
into the interpreter's error text and becomes kTfLiteError; it never unwinds through C. The
delegate-only services (execution plan, nodes, replacement, partition preview) work only while a
delegate's Prepare runs, as pytflite's Python Context enforces.

`context->profiler` is NULL while the pytflite context has no profiler, else a tflite::Profiler object
forwarding to it (profiler.py); `sync` writes it too, and a kernel's bare invoke step (run only when there
is no profiler) clears one left from a profiled invoke.

String, resource and variant tensors have `data` NULL (their NumPy arrays hold Python objects), and
`sparsity` is always NULL. Not provided (NULL): AllocateBufferForEval, RequestScratchBufferInArena /
GetScratchBuffer (TFLite Micro's), GetEvalTensor, AcquireSubgraphContext / ReleaseSubgraphContext.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ...core.node import DelegateParams, Node, Registration
from ...core.quantization import AffineQuantization
from ...core.tensor import NULL_BUFFER_HANDLE
from ...core.types import NON_POD_TYPES, AllocationType, BuiltinOperator, Status
from ...errors import InterpreterError, KernelError
from . import abi
from .builtin_data import c_builtin_data
from .printf import ReportErrorFn, format_printf, split_arguments
from .profiler import NativeProfiler

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.tensor import Tensor

_TENSOR_SIZE = ctypes.sizeof(abi.TfLiteTensor)
_ERROR = int(Status.ERROR)


def tensor_address(data: Any) -> int | None:
    """Where a tensor's NumPy array keeps its elements (None: nothing C can read as a flat buffer)."""
    if data is None or not data.flags.c_contiguous:
        return None
    return data.__array_interface__["data"][0]


class _TensorView:
    """What one TfLiteTensor struct was last written from, and the C buffers it points to: each of
    `dims`, `name`, `quantization`, `signature` is (what the buffer was made from, the buffer(s)) and is
    kept while that stays the same, so a pointer C code read from the struct (tensor->dims, as TFLite
    keeps it until a resize) stays valid when only other fields change."""

    __slots__ = ("data", "key", "dims", "name", "quantization", "signature")

    def __init__(self) -> None:
        self.data: Any = None
        self.key: tuple = ()
        self.dims: tuple | None = None
        self.name: tuple | None = None
        self.quantization: tuple | None = None
        self.signature: tuple | None = None


class _NodeView:
    """The TfLiteNode and TfLiteRegistration structs GetNodeAndRegistration hands out for one node."""

    __slots__ = ("key", "node", "registration", "buffers")

    def __init__(self) -> None:
        self.key: tuple = ()
        self.node = abi.TfLiteNode()
        self.registration = abi.TfLiteRegistration()
        self.buffers: list[Any] = []


class NativeContext:
    """The TfLiteContext of one subgraph (see the module docstring)."""

    def __init__(self, context: Context):
        self._context = weakref.ref(context)
        self.struct = abi.TfLiteContext()
        self.address = ctypes.addressof(self.struct)
        self._tensors: ctypes.Array = (abi.TfLiteTensor * 0)()
        self._tensor_views: list[_TensorView] = []
        self._node_views: dict[int, _NodeView] = {}
        self._plan: ctypes.Array | None = None
        self._preview: list[Any] = []  # PreviewDelegatePartitioning's arrays, until the next call
        self._external_contexts: dict[int, int] = {}
        self._persistent: list[Any] = []  # AllocatePersistentBuffer's buffers: the context's lifetime
        self._metadata: dict[bytes, Any] = {}
        self._profiler: NativeProfiler | None = None  # made when a profiler is first set
        _CONTEXTS[self.address] = self
        struct = self.struct
        for name, thunk in _THUNKS.items():
            setattr(struct, name, ctypes.cast(thunk, ctypes.c_void_p).value)
        struct.recommended_num_threads = context.recommended_num_threads
        struct.allow_fp32_relax_to_fp16 = bool(context.allow_fp32_relax_to_fp16)
        self.sync()

    @property
    def context(self) -> Context:
        context = self._context()
        if context is None:
            raise RuntimeError("the subgraph of this TfLiteContext is gone")
        return context

    # --- tensors -------------------------------------------------------------------------------------

    def sync(self, indices: Iterable[int] | None = None) -> None:
        """Write the TfLiteTensor structs of `indices` (all when None) from the pytflite tensors, and
        `context->profiler`."""
        context = self.context
        self._sync_profiler(context)
        tensors = context.tensors
        if len(tensors) != len(self._tensor_views):
            self._grow(len(tensors))
            indices = None
        for index in range(len(tensors)) if indices is None else indices:
            if index >= 0:
                self._write_tensor(index, tensors[index])

    def _grow(self, count: int) -> None:
        """Re-make the tensor array for `count` tensors (AddTensors moves it, as it may in TFLite)."""
        self._tensors = (abi.TfLiteTensor * count)()
        # the existing tensors keep their C buffers (dims, names...), as TFLite's move keeps them
        kept = self._tensor_views[:count]
        for view in kept:
            view.key = ()  # write the new struct in full
        self._tensor_views = kept + [_TensorView() for _ in range(count - len(kept))]
        self.struct.tensors = ctypes.addressof(self._tensors)
        self.struct.tensors_size = count

    def tensor_index(self, address: int) -> int:
        """The index of the TfLiteTensor struct at `address` in this context's array."""
        offset = address - ctypes.addressof(self._tensors)
        index, misaligned = divmod(offset, _TENSOR_SIZE)
        if misaligned or not 0 <= index < len(self._tensor_views):
            raise ValueError(f"{address:#x} is not a tensor of this TfLiteContext")
        return index

    def _write_tensor(self, index: int, tensor: Tensor) -> None:
        data = tensor.data
        key = _tensor_key(tensor)
        view = self._tensor_views[index]
        if view.key == key and view.data is data:
            return
        struct = self._tensors[index]
        address = None if tensor.type in NON_POD_TYPES else tensor_address(data)
        struct.type = abi.tflite_type(tensor.type)
        struct.data = address
        if view.dims is None or view.dims[0] != tensor.shape:
            view.dims = (tensor.shape, abi.int_array(tensor.shape))
        struct.dims = ctypes.addressof(view.dims[1])
        struct.params.scale = tensor.params.scale
        struct.params.zero_point = tensor.params.zero_point
        struct.allocation_type = int(tensor.allocation_type)
        struct.bytes = tensor.bytes
        if view.name is None or view.name[0] != tensor.name:
            view.name = (tensor.name, ctypes.create_string_buffer(tensor.name.encode("utf-8")))
        struct.name = ctypes.addressof(view.name[1])
        struct.buffer_handle = tensor.buffer_handle
        struct.delegate = (
            _delegate_address(tensor.delegate) if tensor.buffer_handle != NULL_BUFFER_HANDLE else None
        )
        struct.data_is_stale = bool(tensor.data_is_stale)
        struct.is_variable = bool(tensor.is_variable)
        struct.quantization.type, struct.quantization.params = abi.NO_QUANTIZATION, None
        quantization = tensor.quantization
        if isinstance(quantization, AffineQuantization):
            if view.quantization is None or view.quantization[0] is not quantization:
                scale, zero_point = (
                    abi.float_array(quantization.scale.tolist()),
                    abi.int_array(quantization.zero_point.tolist()),
                )
                affine = abi.TfLiteAffineQuantization(
                    ctypes.addressof(scale), ctypes.addressof(zero_point), quantization.quantized_dimension
                )
                view.quantization = (quantization, (scale, zero_point, affine))
            struct.quantization.type, struct.quantization.params = (
                abi.AFFINE_QUANTIZATION,
                ctypes.addressof(view.quantization[1][2]),
            )
        struct.dims_signature = None
        if tensor.dims_signature:
            if view.signature is None or view.signature[0] != tensor.dims_signature:
                view.signature = (tensor.dims_signature, abi.int_array(tensor.dims_signature))
            struct.dims_signature = ctypes.addressof(view.signature[1])
        view.data, view.key = data, key

    def read_back(self, indices: Iterable[int] | None = None) -> None:
        """Take what C code may write into TfLiteTensor structs back into the pytflite tensors (all when
        `indices` is None): a kernel typing a temporary it added and choosing its memory (`type`, and
        `allocation_type` arena, dynamic or persistent, before it resizes the tensor), and a delegate
        keeping a tensor in a buffer of its own (`buffer_handle`, `delegate`, `data_is_stale`), which
        pytflite then copies back before a CPU consumer and after invoke, and frees at teardown. Call
        it after the C call, with the structs synced before it."""
        tensors = self.context.tensors
        for index in range(len(self._tensor_views)) if indices is None else indices:
            if index < 0:
                continue
            struct, tensor = self._tensors[index], tensors[index]
            if struct.type != abi.tflite_type(tensor.type):
                tensor.type = abi.tensor_type(struct.type)
            allocation = struct.allocation_type
            if allocation != tensor.allocation_type:
                if allocation == AllocationType.DYNAMIC:
                    self.context.set_tensor_to_dynamic(tensor)
                elif allocation == AllocationType.PERSISTENT_RO:
                    self.context.set_tensor_to_persistent_ro(tensor)
                elif allocation == AllocationType.ARENA_RW:
                    tensor.allocation_type, tensor.data = AllocationType.ARENA_RW, None
            if struct.buffer_handle != tensor.buffer_handle or (
                struct.buffer_handle != NULL_BUFFER_HANDLE
                and struct.delegate != _delegate_address(tensor.delegate)
            ):
                _take_handle(tensor, struct)
            tensor.data_is_stale = bool(struct.data_is_stale)
            self._tensor_views[index].key = _tensor_key(tensor)

    def _sync_profiler(self, context: Context) -> None:
        if context.profiler is None:
            self.struct.profiler = None
            return
        if self._profiler is None:
            self._profiler = NativeProfiler(context)
        self.struct.profiler = self._profiler.address

    # --- nodes ---------------------------------------------------------------------------------------

    def node_view(self, node_index: int, node: Node, registration: Registration) -> tuple[int, int]:
        """Addresses of the TfLiteNode and TfLiteRegistration of a node (a native delegate kernel's own)."""
        kernel_structs = getattr(node.user_data, "c_structs", None)
        if kernel_structs is not None:
            return kernel_structs()
        key = (
            node.inputs,
            node.outputs,
            node.intermediates,
            node.temporaries,
            id(node.builtin_data),
            registration,
        )
        view = self._node_views.get(node_index)
        if view is None:
            view = self._node_views[node_index] = _NodeView()
        if view.key != key:
            _write_node(view, node, registration)
            view.key = key
        return ctypes.addressof(view.node), ctypes.addressof(view.registration)

    def end_prepare(self) -> None:
        """A delegate's Prepare returned: the partition preview it was given is released."""
        self._preview = []

    # --- callbacks (called by the thunks; they raise freely) -----------------------------------------

    def get_execution_plan(self, plan_out: int) -> None:
        self._plan = abi.int_array(self.context.get_execution_plan())
        ctypes.c_void_p.from_address(plan_out).value = ctypes.addressof(self._plan)

    def get_node_and_registration(self, node_index: int, node_out: int, registration_out: int) -> None:
        node, registration = self.context.get_node_and_registration(node_index)
        node_address, registration_address = self.node_view(node_index, node, registration)
        ctypes.c_void_p.from_address(node_out).value = node_address
        ctypes.c_void_p.from_address(registration_out).value = registration_address

    def replace_node_subsets_with_delegate_kernels(
        self, registration: abi.TfLiteRegistration, nodes: int, delegate: int
    ) -> None:
        from .kernel import delegate_kernel_registration
        from .library import native_delegate_at

        owner = native_delegate_at(delegate)
        kernel = delegate_kernel_registration(
            self, abi.TfLiteRegistration.from_buffer_copy(registration), owner
        )
        self.context.replace_node_subsets_with_delegate_kernels(kernel, abi.read_int_array(nodes), owner)

    def preview_delegate_partitioning(self, nodes: int, params_out: int, count_out: int) -> None:
        partitions = self.context.preview_delegate_partitioning(abi.read_int_array(nodes))
        array = (abi.TfLiteDelegateParams * len(partitions))()
        buffers: list[Any] = [array]
        for struct, params in zip(array, partitions):
            buffers += fill_delegate_params(struct, params, None)
        self._preview = buffers
        ctypes.c_void_p.from_address(params_out).value = ctypes.addressof(array)
        ctypes.c_int.from_address(count_out).value = len(partitions)

    def resize_tensor(self, tensor: int, new_size: int) -> None:
        """ResizeTensor takes ownership of `new_size` (the delegate made it with malloc): freed here."""
        try:
            shape = abi.read_int_array(new_size)
        finally:
            abi.free(new_size)
        self._resize(self.tensor_index(tensor), shape)

    def resize_tensor_explicit(self, tensor: int, rank: int, shape: int) -> None:
        dims = tuple((ctypes.c_int * rank).from_address(shape)) if rank > 0 else ()
        self._resize(self.tensor_index(tensor), dims)

    def _resize(self, index: int, shape: tuple[int, ...]) -> None:
        self.read_back([index])  # a kernel makes a tensor dynamic by writing allocation_type, then resizes
        context = self.context
        context.resize_tensor(context.tensors[index], shape)
        self.sync([index])

    def report_error(self, fmt: bytes, arguments: tuple) -> None:
        self.context.report_error(format_printf(fmt or b"", *split_arguments(arguments)).rstrip("\n"))

    def add_tensors(self, count: int, first_out: int) -> None:
        first = len(self.context.tensors)
        self.context.add_tensors(count)
        self.sync()
        if first_out:
            ctypes.c_int.from_address(first_out).value = first

    def get_external_context(self, kind: int) -> int | None:
        return self._external_contexts.get(kind)

    def set_external_context(self, kind: int, external: int | None) -> None:
        self._external_contexts[kind] = external

    def allocate_persistent_buffer(self, size: int) -> int:
        buffer = ctypes.create_string_buffer(max(size, 1))
        self._persistent.append(buffer)
        return ctypes.addressof(buffer)

    def mark_fresh(self, index: int) -> None:
        """The tensor's data was copied back from its delegate buffer (data_is_stale = false)."""
        self._tensors[index].data_is_stale = False

    def get_tensor(self, index: int) -> int | None:
        if not 0 <= index < len(self._tensor_views):
            return None
        return ctypes.addressof(self._tensors) + index * _TENSOR_SIZE

    def get_model_metadata(self, name: bytes, data_out: int, size_out: int) -> None:
        data = self.context.get_model_metadata(name.decode("utf-8"))
        if data is None:
            raise KeyError(f"the model has no metadata named {name.decode('utf-8', 'replace')!r}")
        buffer = self._metadata.setdefault(name, ctypes.create_string_buffer(data, len(data)))
        ctypes.c_void_p.from_address(data_out).value = ctypes.addressof(buffer)
        ctypes.c_size_t.from_address(size_out).value = len(data)


def fill_delegate_params(
    struct: abi.TfLiteDelegateParams, params: DelegateParams, delegate: int | None
) -> list:
    """Write a TfLiteDelegateParams; returns the int arrays it points to (keep them alive with it)."""
    arrays = [
        abi.int_array(params.nodes_to_replace),
        abi.int_array(params.input_tensors),
        abi.int_array(params.output_tensors),
    ]
    struct.delegate = delegate
    struct.nodes_to_replace, struct.input_tensors, struct.output_tensors = (
        ctypes.addressof(a) for a in arrays
    )
    return arrays


def _write_node(view: _NodeView, node: Node, registration: Registration) -> None:
    buffers: list[Any] = []

    def array(values: tuple[int, ...]) -> int:
        buffer = abi.int_array(values)
        buffers.append(buffer)
        return ctypes.addressof(buffer)

    struct = view.node
    struct.inputs, struct.outputs = array(node.inputs), array(node.outputs)
    struct.intermediates, struct.temporaries = array(node.intermediates), array(node.temporaries)
    struct.user_data = None
    struct.builtin_data = None
    if isinstance(node.builtin_data, DelegateParams):
        params = abi.TfLiteDelegateParams()
        buffers += [
            params,
            *fill_delegate_params(params, node.builtin_data, _delegate_address(node.delegate)),
        ]
        struct.builtin_data = ctypes.addressof(params)
    else:
        options = c_builtin_data(registration.builtin_code, node.builtin_data)
        if options is not None:
            buffers.append(options)
            struct.builtin_data = ctypes.addressof(options)
    struct.custom_initial_data, struct.custom_initial_data_size = None, 0
    if node.custom_initial_data is not None:
        custom = ctypes.create_string_buffer(bytes(node.custom_initial_data), len(node.custom_initial_data))
        buffers.append(custom)
        struct.custom_initial_data, struct.custom_initial_data_size = ctypes.addressof(custom), len(custom)
    struct.delegate = _delegate_address(node.delegate)
    struct.might_have_side_effect = bool(node.might_have_side_effect)

    reg = view.registration
    ctypes.memset(ctypes.addressof(reg), 0, ctypes.sizeof(reg))
    reg.builtin_code = int(registration.builtin_code)
    reg.version = registration.version
    if registration.custom_name and registration.builtin_code in (
        BuiltinOperator.CUSTOM,
        BuiltinOperator.DELEGATE,
    ):
        name = ctypes.create_string_buffer(registration.custom_name.encode("utf-8"))
        buffers.append(name)
        reg.custom_name = ctypes.addressof(name)
    view.buffers = buffers


def _take_handle(tensor: Tensor, struct: abi.TfLiteTensor) -> None:
    """A tensor's buffer handle as C code wrote it; a native delegate stays alive while it holds one
    (until FreeBufferHandle at teardown)."""
    from .library import NativeDelegate, native_delegate_at

    owner = native_delegate_at(struct.delegate) if struct.buffer_handle != NULL_BUFFER_HANDLE else None
    if owner is not None:
        owner.hold_handle(struct.buffer_handle)
    if tensor.buffer_handle != NULL_BUFFER_HANDLE and isinstance(tensor.delegate, NativeDelegate):
        # C code replaced or cleared the handle without FreeBufferHandle
        tensor.delegate.release_handle(tensor.buffer_handle)
    tensor.buffer_handle = struct.buffer_handle
    tensor.delegate = owner


def _tensor_key(tensor: Tensor) -> tuple:
    """What a TfLiteTensor struct is written from, besides the data array."""
    return (
        tensor.shape,
        tensor.type,
        tensor.allocation_type,
        tensor.quantization,
        tensor.buffer_handle,
        tensor.data_is_stale,
    )


# A TfLiteDelegate standing for Python delegates, so that `node->delegate` / `tensor->delegate` is
# non-NULL wherever a Python delegate holds a node or buffer (C code can only compare it).
_PYTHON_DELEGATE = abi.TfLiteDelegate()


def _delegate_address(delegate: Any) -> int | None:
    if delegate is None:
        return None
    return getattr(delegate, "native_address", None) or ctypes.addressof(_PYTHON_DELEGATE)


# --- the C entry points --------------------------------------------------------------------------------

_CONTEXTS: weakref.WeakValueDictionary[int, NativeContext] = weakref.WeakValueDictionary()
_BY_CONTEXT: weakref.WeakKeyDictionary[Any, NativeContext] = weakref.WeakKeyDictionary()


def native_context(context: Context) -> NativeContext:
    """The one NativeContext of a pytflite Context (made on first use, gone with the Context)."""
    native = _BY_CONTEXT.get(context)
    if native is None:
        native = _BY_CONTEXT[context] = NativeContext(context)
    return native


def _report_outside(address: int, error: BaseException) -> None:
    """Put a callback's exception into the interpreter's error text (an InterpreterError is there
    already: it carries the text reported so far)."""
    native = _CONTEXTS.get(address)
    context = None if native is None else native._context()
    if context is None or isinstance(error, InterpreterError):
        return
    context.report_error(str(error) if isinstance(error, KernelError) else f"{type(error).__name__}: {error}")


def _status_callback(method: str) -> Callable[..., int]:
    """A callback returning TfLiteStatus: kTfLiteOk, or kTfLiteError with the exception reported."""

    def callback(address: int, *args: Any) -> int:
        try:
            getattr(_CONTEXTS[address], method)(*args)
            return 0
        except BaseException as error:  # nothing may unwind through C
            _report_outside(address, error)
            return _ERROR

    return callback


def _value_callback(method: str) -> Callable[..., Any]:
    """A callback returning a pointer (or nothing): NULL after an exception, which is reported."""

    def callback(address: int, *args: Any) -> Any:
        try:
            return getattr(_CONTEXTS[address], method)(*args)
        except BaseException as error:
            _report_outside(address, error)
            return None

    return callback


def _report_error(address: int, fmt: bytes, *arguments: Any) -> None:
    try:
        _CONTEXTS[address].report_error(fmt, arguments)
    except BaseException as error:
        _report_outside(address, error)


_vp, _int, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_THUNKS = {
    "GetExecutionPlan": ctypes.CFUNCTYPE(_int, _vp, _vp)(_status_callback("get_execution_plan")),
    "ResizeTensor": ctypes.CFUNCTYPE(_int, _vp, _vp, _vp)(_status_callback("resize_tensor")),
    "ReportError": ReportErrorFn(_report_error),
    "AddTensors": ctypes.CFUNCTYPE(_int, _vp, _int, _vp)(_status_callback("add_tensors")),
    "GetNodeAndRegistration": ctypes.CFUNCTYPE(_int, _vp, _int, _vp, _vp)(
        _status_callback("get_node_and_registration")
    ),
    "ReplaceNodeSubsetsWithDelegateKernels": ctypes.CFUNCTYPE(_int, _vp, abi.TfLiteRegistration, _vp, _vp)(
        _status_callback("replace_node_subsets_with_delegate_kernels")
    ),
    "GetExternalContext": ctypes.CFUNCTYPE(_vp, _vp, _int)(_value_callback("get_external_context")),
    "SetExternalContext": ctypes.CFUNCTYPE(None, _vp, _int, _vp)(_value_callback("set_external_context")),
    "AllocatePersistentBuffer": ctypes.CFUNCTYPE(_vp, _vp, _sz)(
        _value_callback("allocate_persistent_buffer")
    ),
    "ResizeTensorExplicit": ctypes.CFUNCTYPE(_int, _vp, _vp, _int, _vp)(
        _status_callback("resize_tensor_explicit")
    ),
    "PreviewDelegatePartitioning": ctypes.CFUNCTYPE(_int, _vp, _vp, _vp, _vp)(
        _status_callback("preview_delegate_partitioning")
    ),
    "GetTensor": ctypes.CFUNCTYPE(_vp, _vp, _int)(_value_callback("get_tensor")),
    "GetModelMetadata": ctypes.CFUNCTYPE(_int, _vp, ctypes.c_char_p, _vp, _vp)(
        _status_callback("get_model_metadata")
    ),
}
