"""A native delegate's kernel as a pytflite Registration: the DELEGATE node runs C code.

ReplaceNodeSubsetsWithDelegateKernels passes a TfLiteRegistration by value; its copy becomes a pytflite
Registration whose init / prepare / invoke / free call the C function pointers with the subgraph's
TfLiteContext and a TfLiteNode for the DELEGATE node (init gets the node's TfLiteDelegateParams as its
buffer, length 0, as in TFLite; `(void*)-1` from init means it failed). The calls release the GIL, so
a delegate's worker threads may call back into the context while its kernel waits for them.

Before each call the TfLiteTensor structs are written again where pytflite may have moved memory:
all of them before prepare and after each allocation (`calls`, which also gives the check-free invoke
loop a bare C call), the node's own tensors before an invoke outside that loop. `sync` writes
`context->profiler` too; the bare call, which runs only when there is no profiler, makes it NULL.

After init and prepare, what C code wrote into the structs is read back: types, allocation types,
buffer handles, data_is_stale, and (after prepare) the node's temporaries, which a kernel may free and
replace. After invoke too, for the node's outputs, when the delegate can copy buffers back
(CopyFromBufferHandle): such a delegate's invoke is never a bare C call.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from ...core.node import DelegateParams, Node, Registration
from ...core.types import BuiltinOperator, Status
from ...errors import InterpreterError, KernelError
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


class _KernelCalls:
    """The pytflite callbacks of one C delegate kernel, as methods sharing its function pointers, the
    context they are passed and the name string, which must live as long as the registration."""

    def __init__(self, native: NativeContext, registration: abi.TfLiteRegistration, delegate: NativeDelegate):
        self.native = native
        self.registration = registration
        self.delegate = delegate
        self.name = (
            ctypes.string_at(registration.custom_name).decode("utf-8", "replace")
            if registration.custom_name
            else ""
        )
        # the delegate's name string may not outlive its Prepare: point the copy at our own
        self.name_buffer = ctypes.create_string_buffer(self.name.encode("utf-8"))
        registration.custom_name = ctypes.addressof(self.name_buffer) if self.name else None
        self.c_init = _function(abi.InitFn, registration.init)
        self.c_free = _function(abi.FreeFn, registration.free)
        self.c_prepare = _function(abi.KernelFn, registration.prepare)
        self.c_invoke = _function(abi.KernelFn, registration.invoke)
        self.c_profiling_string = _function(abi.ProfilingStringFn, registration.profiling_string)
        self.context_address = native.address
        self.label = self.name or delegate.name
        # a delegate that can copy buffers back may mark its outputs stale in each invoke
        self.outputs_may_go_stale = delegate.copy_from_buffer_handle is not None

    def init(self, context: Context, params: DelegateParams, length: int) -> _Kernel:
        """Registration.init: the node's C structs, then the C init (which gets the TfLiteDelegateParams)."""
        native, delegate = self.native, self.delegate
        kernel = _Kernel(native, self.registration, delegate)
        kernel.buffers = [
            self.name_buffer,
            *fill_delegate_params(kernel.params, params, delegate.native_address),
        ]
        kernel.node.builtin_data = ctypes.addressof(kernel.params)
        kernel.node.delegate = delegate.native_address
        kernel.write_node(params.input_tensors, params.output_tensors, ())
        native.sync()
        if self.c_init is not None:
            user_data = self.c_init(self.context_address, ctypes.addressof(kernel.params), 0)
            if user_data == abi.INIT_FAILED:
                kernel.free_arrays()
                raise KernelError(f"{self.label} kernel init failed (TfLiteKernelInitFailed).")
            kernel.node.user_data = user_data
            native.read_back()
        delegate.hold()
        return kernel

    def prepare(self, context: Context, node: Node) -> int | None:
        """Registration.prepare: the C prepare on fresh structs, then what it wrote (temporaries too) read back."""
        kernel: _Kernel = node.user_data
        kernel.write_node(node.inputs, node.outputs, node.temporaries)
        self.native.sync()
        if self.c_prepare is None:
            return None
        status = self.c_prepare(self.context_address, ctypes.addressof(kernel.node))
        kernel.read_temporaries(node)
        self.native.read_back()
        return status

    def invoke(self, context: Context, node: Node) -> int | None:
        """Registration.invoke: the C invoke with the node's tensors synced, and its outputs read back
        when they may have gone stale."""
        kernel: _Kernel = node.user_data
        self.native.sync((*node.inputs, *node.outputs, *node.temporaries))
        if self.c_invoke is None:
            return None
        status = self.c_invoke(self.context_address, ctypes.addressof(kernel.node))
        if self.outputs_may_go_stale:
            self.native.read_back(node.outputs)
        return status

    def calls(self, context: Context, node: Node) -> tuple | None:
        """Registration.calls: after syncing every struct, a bare C call where nothing needs reading
        back (a status other than OK raised: the C kernel reported its error), else the invoke."""
        self.native.sync()
        if self.c_invoke is None or self.outputs_may_go_stale:
            return None
        invoke, context_address = self.c_invoke, self.context_address
        node_address = ctypes.addressof(node.user_data.node)
        struct = self.native.struct

        def native_invoke() -> None:
            if struct.profiler:  # a profiler was removed since the last sync
                struct.profiler = None
            status = invoke(context_address, node_address)
            if status:
                raise InterpreterError(f"the delegate kernel's invoke returned {status}", Status(status))

        return (native_invoke,)

    def free(self, context: Context, kernel: _Kernel) -> None:
        """Registration.free: the C free of the user data, then the node's arrays and our hold on the delegate."""
        try:
            if self.c_free is not None and kernel.node.user_data:
                self.c_free(self.context_address, kernel.node.user_data)
        finally:
            kernel.free_arrays()
            self.delegate.drop()

    def profiling_string(self, context: Context, node: Node) -> str:
        """Registration.profiling_string: the C kernel's text for the profiler's event."""
        text = self.c_profiling_string(self.context_address, ctypes.addressof(node.user_data.node))
        return ctypes.string_at(text).decode("utf-8", "replace") if text else ""


def delegate_kernel_registration(
    native: NativeContext, registration: abi.TfLiteRegistration, delegate: NativeDelegate
) -> Registration:
    """The pytflite Registration running a C delegate kernel (`registration` is our own copy)."""
    calls = _KernelCalls(native, registration, delegate)
    return Registration(
        init=calls.init,
        free=calls.free,
        prepare=calls.prepare,
        invoke=calls.invoke,
        calls=calls.calls,
        profiling_string=calls.profiling_string if calls.c_profiling_string is not None else None,
        builtin_code=BuiltinOperator.DELEGATE,
        custom_name=calls.name or None,
        version=registration.version,
    )
