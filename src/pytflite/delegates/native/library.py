"""NativeDelegate: a TfLiteDelegate created by a shared library's `tflite_plugin_create_delegate`.

The plugin interface is TFLite's external delegate one, the same LiteRT's `load_delegate` uses:

    TfLiteDelegate* tflite_plugin_create_delegate(const char* const* keys, const char* const* values,
                                                  size_t num_options, void (*report_error)(const char*));
    void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate);

Options are passed as two parallel arrays of UTF-8 strings (`str(value)`), and a NULL result fails with
what the plugin reported, as in LiteRT (which then calls the destroy entry point with that NULL).
Delegates built on TFLite's opaque API (a non-NULL `opaque_delegate_builder`) are refused: that API
reaches into LiteRT's own interpreter.

The delegate is destroyed once the Python object is gone and nothing needs it: no kernel it made and
no tensor holding one of its buffer handles (the subgraph frees kernels first, then buffer handles, as
TFLite does), so an interpreter tearing down after the delegate's finalizer ran (at exit, in a
collected cycle) still finds it.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import TYPE_CHECKING, Any

from ...core.delegate import Delegate, DelegateFlags
from ...errors import KernelError
from . import abi
from .context import native_context

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.tensor import Tensor

CREATE, DESTROY = "tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate"
_ReportFn = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


class NativeLoadError(Exception):
    """Why a library gives no delegate (for a NULL from the plugin: what the plugin reported)."""


class LibraryNotOpened(NativeLoadError):
    """The dynamic loader could not open the library (no such file, wrong architecture, ...)."""


class _Plugin:
    """The library and the TfLiteDelegate it made; destroys the delegate once it is released by its
    Python object and its last user (a kernel, a buffer handle) is gone."""

    def __init__(self, library: ctypes.CDLL, destroy: Any, address: int, reporter: Any):
        self.library, self.destroy, self.address, self.reporter = library, destroy, address, reporter
        self.users = 0
        self.released = False

    def release(self) -> None:
        self.released = True
        self._destroy_if_unused()

    def drop(self) -> None:
        self.users -= 1
        self._destroy_if_unused()

    def _destroy_if_unused(self) -> None:
        if self.released and self.users <= 0 and self.address:
            address, self.address = self.address, 0
            self.destroy(address)


_DELEGATES: weakref.WeakValueDictionary[int, NativeDelegate] = weakref.WeakValueDictionary()


def native_delegate_at(address: int | None) -> NativeDelegate:
    """The NativeDelegate whose TfLiteDelegate is at `address`."""
    delegate = _DELEGATES.get(address or 0)
    if delegate is None:
        raise KernelError(f"TfLiteDelegate {address or 0:#x} was not loaded by pytflite's load_delegate")
    return delegate


class NativeDelegate(Delegate):
    """A delegate from a native plugin library; use it like any pytflite Delegate."""

    def __init__(self, library: str | os.PathLike, options: dict[str, Any] | None = None):
        library = os.fspath(library)
        why = abi.check_platform()
        if why:
            raise NativeLoadError(why)
        try:
            handle = ctypes.CDLL(library)  # calls through CDLL functions release the GIL
        except OSError as error:
            raise LibraryNotOpened(f"cannot open {library}: {error}") from None
        try:
            create, destroy = getattr(handle, CREATE), getattr(handle, DESTROY)
        except AttributeError:
            raise NativeLoadError(
                f"{library} does not export {CREATE} and {DESTROY}, the entry points of a TFLite "
                "delegate plugin."
            ) from None
        create.argtypes = [
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_size_t,
            _ReportFn,
        ]
        create.restype = ctypes.c_void_p
        destroy.argtypes, destroy.restype = [ctypes.c_void_p], None

        options = options or {}
        keys = (ctypes.c_char_p * len(options))(*(str(k).encode("utf-8") for k in options))
        values = (ctypes.c_char_p * len(options))(*(str(v).encode("utf-8") for v in options.values()))
        messages: list[str] = []
        reporter = _ReportFn(lambda text: messages.append(text.decode("utf-8", "replace") if text else ""))
        address = create(keys, values, len(options), reporter)
        if not address:
            # LiteRT's Delegate finalizer runs after a failed creation too and passes the NULL on; plugins
            # count on it (LiteRT's test delegate counts it as a destruction)
            destroy(None)
            raise NativeLoadError("".join(messages))
        struct = abi.TfLiteDelegate.from_address(address)
        if struct.opaque_delegate_builder:
            destroy(address)
            raise NativeLoadError(
                f"{library} made a delegate with TFLite's opaque delegate API (opaque_delegate_builder is "
                "set), which works only inside LiteRT's own interpreter; pytflite hosts delegates written "
                "against the TfLiteContext C API (TfLiteDelegate.Prepare)."
            )

        self._library_name = os.path.basename(library)
        self._struct = struct
        self._plugin = _Plugin(handle, destroy, address, reporter)
        weakref.finalize(self, self._plugin.release)
        _DELEGATES[address] = self
        self._prepare = abi.DelegatePrepareFn(struct.Prepare) if struct.Prepare else None
        self._copy_from = (
            abi.CopyBufferHandleFn(struct.CopyFromBufferHandle) if struct.CopyFromBufferHandle else None
        )
        self._copy_to = (
            abi.CopyBufferHandleFn(struct.CopyToBufferHandle) if struct.CopyToBufferHandle else None
        )
        self._free_handle = (
            abi.FreeBufferHandleFn(struct.FreeBufferHandle) if struct.FreeBufferHandle else None
        )
        self._library = handle  # as LiteRT's Delegate: the plugin library, for calling its other exports
        self._held_handles: dict[int, int] = {}  # buffer handle -> how many tensors hold it (hold_handle)
        super().__init__()

    # The callbacks are properties, not bound methods stored on the object: those would make it a
    # reference cycle, and the plugin's delegate would then outlive its last user until Python's cycle
    # collector ran (LiteRT destroys it at once, and its tests count on that).

    @property
    def prepare(self):
        return self._prepare_graph if self._prepare else None

    @property
    def copy_from_buffer_handle(self):
        return self._copy_from_buffer_handle if self._copy_from else None

    @property
    def copy_to_buffer_handle(self):
        return self._copy_to_buffer_handle if self._copy_to else None

    @property
    def free_buffer_handle(self):
        # always there, FreeBufferHandle or not: a tensor letting go of a handle C code gave it must
        # release the delegate it held (release_handle), or the delegate would never be destroyed
        return self._free_buffer_handle

    @property
    def name(self) -> str:
        return self._library_name

    @property
    def native_address(self) -> int:
        """The TfLiteDelegate* the plugin returned."""
        return ctypes.addressof(self._struct)

    def _get_native_delegate_pointer(self) -> int:
        """LiteRT's Delegate method of that name: the TfLiteDelegate* (code written for LiteRT calls it)."""
        return self.native_address

    @property
    def flags(self) -> DelegateFlags:  # read from the struct each time: the delegate owns it
        return DelegateFlags(self._struct.flags)

    def hold(self) -> None:
        """A kernel or a tensor's buffer handle needs the C delegate alive until the matching drop."""
        self._plugin.users += 1

    def drop(self) -> None:
        self._plugin.drop()

    def hold_handle(self, handle: int) -> None:
        """A tensor holds `handle` (C code wrote it into the tensor's struct)."""
        self._held_handles[handle] = self._held_handles.get(handle, 0) + 1
        self.hold()

    def release_handle(self, handle: int) -> None:
        """A tensor let go of `handle`. Only handles held by hold_handle count: one attached from Python
        (Delegation.set_buffer_handle) never kept the delegate alive, so it must not drop it either."""
        held = self._held_handles.get(handle, 0)
        if held:
            self._held_handles[handle] = held - 1
            self.drop()

    def _prepare_graph(self, context: Context, delegate: Delegate) -> int | None:
        native = native_context(context)
        native.sync()
        try:
            status = self._prepare(native.address, self.native_address) or None
            native.read_back()
            return status
        finally:
            native.end_prepare()

    def _copy_from_buffer_handle(
        self, context: Context, delegate: Delegate, handle: int, tensor: Tensor
    ) -> int | None:
        status = self._copy(self._copy_from, context, handle, tensor)
        if not status:
            native_context(context).mark_fresh(tensor.index)
        return status

    def _copy_to_buffer_handle(
        self, context: Context, delegate: Delegate, handle: int, tensor: Tensor
    ) -> int | None:
        return self._copy(self._copy_to, context, handle, tensor)

    def _copy(self, function: Any, context: Context, handle: int, tensor: Tensor) -> int | None:
        native = native_context(context)
        native.sync([tensor.index])
        return function(native.address, self.native_address, handle, native.get_tensor(tensor.index)) or None

    def _free_buffer_handle(self, context: Context, delegate: Delegate, handle: int) -> None:
        """FreeBufferHandle where the delegate has one; the tensor's hold on the delegate ends either way."""
        try:
            if self._free_handle is not None:
                self._free_handle(
                    native_context(context).address, self.native_address, ctypes.byref(ctypes.c_int(handle))
                )
        finally:
            self.release_handle(handle)
