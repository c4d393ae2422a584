"""A native delegate's kernel as a pytflite Registration: the DELEGATE node runs C code.

ReplaceNodeSubsetsWithDelegateKernels passes a TfLiteRegistration by value; its copy becomes a pytflite
Registration whose init / prepare / invoke / free call the C function pointers with the subgraph's
TfLiteContext and a TfLiteNode for the DELEGATE node (init gets the node's TfLiteDelegateParams as its
buffer, length 0, as in TFLite; `(void*)-1` from init means it failed). The calls release the GIL, so
a delegate's worker threads may call back into the context while its kernel waits for them.

Before each call the TfLiteTensor structs are written again where pytflite may have moved memory:
all of them before prepare and after each allocation (`bind`, which also gives the check-free invoke
loop a step that is a bare C call), the node's own tensors before an invoke outside that loop. `sync`
writes `context->profiler` too; the bare step, which runs only when there is no profiler, makes it NULL.

After init and prepare, what C code wrote into the structs is read back: types, allocation types,
buffer handles, data_is_stale, and (after prepare) the node's temporaries, which a kernel may free and
replace. After invoke too, for the node's outputs, when the delegate can copy buffers back
(CopyFromBufferHandle): such a delegate's invoke is never a bare C call.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from ...core.node import DelegateParams, Node, Registration
from ...core.types import BuiltinOperator
from ...errors import KernelError
from . import abi
from .context import NativeContext, fill_delegate_params

if TYPE_CHECKING:
    from ...core.context import Context
    from .library import NativeDelegate


def _function(prototype: Any, address: int | None) -> Any:
    return prototype(address) if address else None


class _Kernel:
    """One DELEGATE node's C state: its TfLiteNode, TfLiteDelegateParams and the C user data."""

    def __init__(self, native: NativeContext, registration: abi.TfLiteRegistration, delegate: NativeDelegate):
        self.native = native
        self.registration = registration
        self.delegate = delegate
        self.node = abi.TfLiteNode()
        self.params = abi.TfLiteDelegateParams()
        self.buffers: list[Any] = []  # what the params point to
        self.node_arrays: list[Any] = []  # what the node's inputs and outputs point to

    def c_structs(self) -> tuple[int, int]:
        """(TfLiteNode*, TfLiteRegistration*) for GetNodeAndRegistration on this DELEGATE node."""
        return ctypes.addressof(self.node), ctypes.addressof(self.registration)

    def write_node(
        self, inputs: tuple[int, ...], outputs: tuple[int, ...], temporaries: tuple[int, ...]
    ) -> None:
        """The node's tensor lists, all non-NULL from init on as in TFLite (a delegate's Prepare may read
        its new DELEGATE nodes before they are prepared); `temporaries` is on the C heap, as a kernel may
        free and replace it. A DELEGATE node has no intermediates."""
        arrays = [abi.int_array(inputs), abi.int_array(outputs), abi.int_array(())]
        self.node.inputs, self.node.outputs, self.node.intermediates = (ctypes.addressof(a) for a in arrays)
        self.node_arrays = arrays
        abi.free(self.node.temporaries)
        self.node.temporaries = abi.malloc_int_array(temporaries)

    def read_temporaries(self, node: Node) -> None:
        """The temporaries the C kernel gave itself (it replaced `node->temporaries`), into the node."""
        node.temporaries = abi.read_int_array(self.node.temporaries)

    def free_arrays(self) -> None:
        abi.free(self.node.temporaries)
        self.node.temporaries = None


def delegate_kernel_registration(
    native: NativeContext, registration: abi.TfLiteRegistration, delegate: NativeDelegate
) -> Registration:
    """The pytflite Registration running a C delegate kernel (`registration` is our own copy)."""
    name = (
        ctypes.string_at(registration.custom_name).decode("utf-8", "replace")
        if registration.custom_name
        else ""
    )
    # the delegate's name string may not outlive its Prepare: point the copy at our own
    name_buffer = ctypes.create_string_buffer(name.encode("utf-8"))
    registration.custom_name = ctypes.addressof(name_buffer) if name else None
    init = _function(abi.InitFn, registration.init)
    free = _function(abi.FreeFn, registration.free)
    prepare = _function(abi.KernelFn, registration.prepare)
    invoke = _function(abi.KernelFn, registration.invoke)
    profiling_string = _function(abi.ProfilingStringFn, registration.profiling_string)
    context_address = native.address
    label = name or delegate.name
    # a delegate that can copy buffers back may mark its outputs stale in each invoke
    outputs_may_go_stale = delegate.copy_from_buffer_handle is not None

    def init_kernel(context: Context, params: DelegateParams, length: int) -> _Kernel:
        kernel = _Kernel(native, registration, delegate)
        kernel.buffers = [name_buffer, *fill_delegate_params(kernel.params, params, delegate.native_address)]
        kernel.node.builtin_data = ctypes.addressof(kernel.params)
        kernel.node.delegate = delegate.native_address
        kernel.write_node(params.input_tensors, params.output_tensors, ())
        native.sync()
        if init is not None:
            user_data = init(context_address, ctypes.addressof(kernel.params), 0)
            if user_data == abi.INIT_FAILED:
                kernel.free_arrays()
                raise KernelError(f"{label} kernel init failed (TfLiteKernelInitFailed).")
            kernel.node.user_data = user_data
            native.read_back()
        delegate.hold()
        return kernel

    def prepare_kernel(context: Context, node: Node) -> int | None:
        kernel: _Kernel = node.user_data
        kernel.write_node(node.inputs, node.outputs, node.temporaries)
        native.sync()
        if prepare is None:
            return None
        status = prepare(context_address, ctypes.addressof(kernel.node))
        kernel.read_temporaries(node)
        native.read_back()
        return status

    def invoke_kernel(context: Context, node: Node) -> int | None:
        kernel: _Kernel = node.user_data
        native.sync((*node.inputs, *node.outputs, *node.temporaries))
        if invoke is None:
            return None
        status = invoke(context_address, ctypes.addressof(kernel.node))
        if outputs_may_go_stale:
            native.read_back(node.outputs)
        return status

    def bind_kernel(context: Context, node: Node) -> Any:
        native.sync()
        if invoke is None or outputs_may_go_stale:
            return invoke_kernel
        node_address = ctypes.addressof(node.user_data.node)
        struct = native.struct

        def step(context: Context, node: Node) -> int:
            if struct.profiler:  # a profiler was removed since the last sync
                struct.profiler = None
            return invoke(context_address, node_address)

        return step

    def free_kernel(context: Context, kernel: _Kernel) -> None:
        try:
            if free is not None and kernel.node.user_data:
                free(context_address, kernel.node.user_data)
        finally:
            kernel.free_arrays()
            delegate.drop()

    def profile_kernel(context: Context, node: Node) -> str:
        text = profiling_string(context_address, ctypes.addressof(node.user_data.node))
        return ctypes.string_at(text).decode("utf-8", "replace") if text else ""

    return Registration(
        init=init_kernel,
        free=free_kernel,
        prepare=prepare_kernel,
        invoke=invoke_kernel,
        bind=bind_kernel,
        profiling_string=profile_kernel if profiling_string is not None else None,
        builtin_code=BuiltinOperator.DELEGATE,
        custom_name=name or None,
        version=registration.version,
    )
