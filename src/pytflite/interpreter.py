"""The tf.lite-compatible Interpreter and SignatureRunner.

`pytflite.Interpreter` is a drop-in replacement for `ai_edge_litert.interpreter.Interpreter`: the same
constructor arguments, methods, detail-dict keys, exception types and messages. Two additions:
`op_resolver=` takes a resolver holding Python custom ops, and `experimental_delegates=` takes Python
Delegate objects. `interpreter.subgraphs` exposes the runtime underneath (tensors, nodes, contexts).
"""

from __future__ import annotations

import enum
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .core.arena import MemoryReport
from .core.blas_threads import ONE_BLAS_THREAD
from .core.config import SubgraphConfig
from .core.delegate import Delegate
from .core.delegation import DelegatePartition
from .core.limits import DEFAULT_LIMITS, Limits
from .core.node import OPTIONAL_TENSOR
from .core.subgraph import Subgraph
from .core.types import (
    BuiltinOperator,
    Status,
    api_dtype,
)
from .delegates.loading import load_delegate  # noqa: F401 (LiteRT's interpreter module exports it)
from .errors import ErrorReporter, InterpreterError, InvalidArgumentError
from .fidelity.host import HostProfile
from .interpreter_builder import build_subgraphs
from .model.loading import load_model_content, load_model_file
from .model.reader import ModelDescription
from .ops.resolver import BuiltinOpResolver, BuiltinRefOpResolver, MutableOpResolver, OpResolver
from .tensor_access import checked_value, readable_data, set_tensor_checked, tensor_details, tensor_value
from .tensor_listing import ListedTemporaries, LiteRTKernels, TensorNumbering

_REFERENCE_TO_INTERNAL_DATA = """There is at least 1 reference to internal data
      in the interpreter in the form of a numpy array or slice. Be sure to
      only hold the function returned from tensor() if you are using raw
      data access."""


class OpResolverType(enum.Enum):
    """Which builtin kernels the interpreter uses (tf.lite.experimental.OpResolverType).

    pytflite has no default delegate, so AUTO, BUILTIN and BUILTIN_WITHOUT_DEFAULT_DELEGATES all mean
    the builtin kernels; BUILTIN_REF selects the reference-kernel rounding where TFLite's differs. The
    type also says which LiteRT kernels' temporaries get_tensor_details() lists (LiteRT applies XNNPACK
    under AUTO and BUILTIN).
    """

    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


def _resolver_type(resolver_type: Any) -> OpResolverType:
    name = getattr(resolver_type, "name", None)  # also accepts LiteRT's own OpResolverType members
    if name not in OpResolverType.__members__:
        raise InvalidArgumentError(f"Unrecognized passed in op resolver type: {resolver_type}")
    return OpResolverType[name]


def _resolver_for(resolver_type: OpResolverType) -> OpResolver:
    return BuiltinRefOpResolver() if resolver_type is OpResolverType.BUILTIN_REF else BuiltinOpResolver()


# the LiteRT kernels each resolver type runs, whose temporaries the tensor listing shows (LiteRT applies
# XNNPACK by default, except where the type says otherwise)
_LITERT_KERNELS = {
    OpResolverType.AUTO: LiteRTKernels.XNNPACK,
    OpResolverType.BUILTIN: LiteRTKernels.XNNPACK,
    OpResolverType.BUILTIN_REF: LiteRTKernels.REFERENCE,
    OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES: LiteRTKernels.BUILTIN,
}


class _TensorView:
    """Lends a tensor's memory to NumPy; every array made from it holds the interpreter's anchor."""

    def __init__(self, data: np.ndarray, anchor: object):
        self._data = data
        self._anchor = anchor
        self.__array_interface__ = data.__array_interface__


class Interpreter:
    """Interpreter for TensorFlow Lite models (same API as ai_edge_litert.interpreter.Interpreter)."""

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        model_content: bytes | None = None,
        experimental_delegates: Sequence[Delegate] | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type: Any = OpResolverType.AUTO,
        experimental_preserve_all_tensors: bool = False,
        experimental_disable_delegate_clustering: bool = False,
        experimental_default_delegate_latest_features: bool = False,
        experimental_compress_quantization_zero_points: bool = False,
        experimental_disable_delegate_node_fusion: bool = False,
        experimental_force_delegate_node_profiling: bool = False,
        *,
        op_resolver: OpResolver | None = None,
        limits: Limits | None = None,
        experimental_exact_float_summation: bool | None = None,
        experimental_host_profile: HostProfile | None = None,
        experimental_list_litert_temporaries: bool = True,
    ):
        """`experimental_exact_float_summation` (a pytflite extra): True makes the float CONV_2D and
        DEPTHWISE_CONV_2D kernels sum in LiteRT's order, bit-exact but slower; False keeps the fast
        BLAS order (~1e-7 relative off; the compiled float DEPTHWISE_CONV_2D, without a depth multiplier,
        sums in LiteRT's order either way); None (default) decides per subgraph: exact where the subgraph
        has a hybrid op (float32 activations meeting int8 weights), whose per-batch input quantization
        turns those 1e-7 into whole quantization steps (on every host: LiteRT-x86's order, within
        LiteRT's own spread on ARM, where BLAS's order would change with the BLAS build). See
        Context.exact_float_summation.

        `experimental_host_profile` (a pytflite extra): the machine whose LiteRT results to reproduce
        where LiteRT's depend on the CPU (docs/fidelity.md); default: this one (HostProfile.detect()),
        e.g. `pytflite.KNOWN_PROFILES["intel_sapphire_rapids"]` to get what LiteRT computes there.

        `experimental_list_litert_temporaries` (a pytflite extra): True (default) makes
        get_tensor_details() list, under LiteRT's indices, the temporaries LiteRT's kernels would add
        (tensor_listing/); False leaves them out and skips that bookkeeping."""
        resolver_type = _resolver_type(experimental_op_resolver_type)
        resolver = op_resolver if op_resolver is not None else _resolver_for(resolver_type)
        _check_arguments(model_path, model_content, num_threads)
        self._error_reporter = ErrorReporter()
        # `limits` (a pytflite extra) caps what an untrusted model may ask for: memory, nesting, loops
        self._limits = limits if limits is not None else DEFAULT_LIMITS
        # model/loading.py: the file mapped, bytes viewed (mutable buffers copied to bytes first), one
        # description per model shared by all its interpreters
        self._model: ModelDescription = (
            load_model_file(model_path, self._limits)
            if model_path
            else load_model_content(bytes(model_content), self._limits)
        )
        config = SubgraphConfig(
            limits=self._limits,
            host=_host(experimental_host_profile),
            num_threads=int(num_threads or 1),
            preserve_all_tensors=bool(experimental_preserve_all_tensors),
            disable_delegate_clustering=bool(experimental_disable_delegate_clustering),
            disable_delegate_node_fusion=bool(experimental_disable_delegate_node_fusion),
        )
        exact = (
            None if experimental_exact_float_summation is None else bool(experimental_exact_float_summation)
        )
        kernels = _LITERT_KERNELS[resolver_type] if experimental_list_litert_temporaries else None
        self._build(self._with_custom_ops(resolver), config, exact, kernels)
        self._experimental_compress_quantization_zero_points = experimental_compress_quantization_zero_points
        self._view_anchor = object()
        self._delegates: list[Delegate] = []
        for delegate in experimental_delegates or []:
            self.modify_graph_with_delegate(delegate)
        self._signature_defs = self.get_signature_list()
        if os.environ.get("PYTFLITE_DEBUG"):  # print every node as it runs (debug.py)
            from .debug import attach_from_env

            attach_from_env(self)

    def _build(
        self, resolver: OpResolver, config: SubgraphConfig, exact: bool | None, kernels: LiteRTKernels | None
    ) -> None:
        """The model's subgraphs, each with LiteRT's tensor numbering and, unless `kernels` is None, the
        listing of the temporaries those LiteRT kernels would add."""
        listings: dict[int, ListedTemporaries] = {}

        def list_temporaries(subgraph: Subgraph) -> ListedTemporaries:
            listings[subgraph.index] = ListedTemporaries(subgraph, kernels)
            return listings[subgraph.index]

        self._subgraphs: list[Subgraph] = build_subgraphs(
            self._model,
            resolver,
            self._error_reporter,
            config,
            exact_float_summation=exact,
            observer_for=None if kernels is None else list_temporaries,
        )
        self._numberings = [TensorNumbering(s, listings.get(s.index)) for s in self._subgraphs]

    def __del__(self):
        # Teardown must not raise: a kernel whose free fails leaks only its own state. It names no module
        # global either: at interpreter shutdown they may already be None.
        for subgraph in getattr(self, "_subgraphs", ()):
            try:  # noqa: SIM105 (contextlib.suppress would be a module global)
                subgraph.free()
            except Exception:
                pass

    def _with_custom_ops(self, resolver: OpResolver) -> OpResolver:
        """The resolver the model's ops are found in, asked once the model has loaded (as LiteRT runs its
        custom op registerers then); InterpreterWithCustomOps adds its registerers' ops."""
        return resolver

    # --- pytflite extras ------------------------------------------------------------------------------

    @property
    def subgraphs(self) -> list[Subgraph]:
        """The runtime's subgraphs (index 0 is the primary one): tensors, nodes, plan, context."""
        return self._subgraphs

    @property
    def model(self) -> ModelDescription:
        """The parsed model the interpreter was built from."""
        return self._model

    def modify_graph_with_delegate(self, delegate: Delegate) -> None:
        """Let `delegate` claim nodes of every subgraph (Interpreter::ModifyGraphWithDelegate).

        Subgraphs are delegated in order and the first failure stops; a delegate error (the delegate or
        its kernels failed) removes every delegate from every subgraph, leaving a working CPU graph.
        """
        try:
            for subgraph in self._subgraphs:
                if not subgraph.name.startswith("VALIDATION:"):
                    subgraph.delegation.modify_graph_with_delegate(delegate)
        except InterpreterError as error:
            if error.status == Status.DELEGATE_ERROR:
                for subgraph in self._subgraphs:
                    subgraph.delegation.remove_all_delegates()
            raise
        if delegate not in self._delegates:
            self._delegates.append(delegate)

    def memory_report(self, subgraph_index: int = 0) -> MemoryReport:
        """Arena size, its lower bound, and the bytes of constants and dynamic tensors."""
        return self._subgraph(subgraph_index).memory_report()

    def delegate_partitions(self, subgraph_index: int = 0) -> list[DelegatePartition]:
        """The DELEGATE nodes of a subgraph's plan: which original nodes (and ops) each one runs."""
        return self._subgraph(subgraph_index).delegation.delegate_partitions()

    # --- lifecycle ------------------------------------------------------------------------------------

    def allocate_tensors(self) -> None:
        self._ensure_safe()
        _allocate(self._subgraphs[0])

    def invoke(self) -> None:
        self._ensure_safe()
        subgraph = self._subgraphs[0]
        _invoke(subgraph, self._numberings[0])
        tensors = subgraph.tensors
        for t in subgraph.outputs:
            if t != OPTIONAL_TENSOR and tensors[t].data_is_stale:
                subgraph.delegation.ensure_tensor_data_is_readable(t)

    def resize_tensor_input(self, input_index: int, tensor_size: Any, strict: bool = False) -> None:
        self._ensure_safe()
        self._resize(self._subgraphs[0], input_index, tensor_size, strict)

    def reset_all_variables(self) -> None:
        for subgraph in self._subgraphs:
            subgraph.reset_variable_tensors()

    def _safe_to_run(self) -> bool:
        return sys.getrefcount(self._view_anchor) == 2

    def _ensure_safe(self) -> None:
        if not self._safe_to_run():
            raise RuntimeError(_REFERENCE_TO_INTERNAL_DATA)

    @staticmethod
    def _resize(subgraph: Subgraph, index: int, tensor_size: Any, strict: bool) -> None:
        index = _tensor_index(index, "resize_tensor_input")
        try:
            shape = np.array(tensor_size, dtype=np.int32)
        except OverflowError:
            raise InvalidArgumentError(f"Shape {tensor_size!r} does not fit in int32 dimensions.") from None
        except (TypeError, ValueError):
            raise InvalidArgumentError("Failed to convert numpy value into readable tensor.") from None
        if shape.ndim != 1:
            raise InvalidArgumentError(f"Shape should be 1D instead of {shape.ndim}.")
        # an index out of range is the runtime's RuntimeError, as in LiteRT
        subgraph.resize_input_tensor(index, shape.tolist(), strict)

    # --- tensor access --------------------------------------------------------------------------------

    def set_tensor(self, tensor_index: int, value: Any) -> None:
        tensor = self._numberings[0].tensor(_tensor_index(tensor_index, "set_tensor"))
        set_tensor_checked(self._subgraphs[0], tensor.index, value)

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        subgraph = self._subgraph(subgraph_index)
        tensor = self._numberings[subgraph_index].tensor(_tensor_index(tensor_index, "get_tensor"))
        return tensor_value(subgraph, tensor.index)

    def tensor(self, tensor_index: int):
        """A function returning a NumPy view of the tensor's current buffer (no copy).

        Hold the function, not the array: while any such array is alive, allocate_tensors, invoke and
        resize_tensor_input refuse to run, because they may move the memory it points to.
        """

        tensor_index = _tensor_index(tensor_index, "tensor")

        def view() -> np.ndarray:
            data = readable_data(self._subgraphs[0], self._numberings[0].tensor(tensor_index).index)
            return np.asarray(_TensorView(data, self._view_anchor))

        return view

    # --- introspection --------------------------------------------------------------------------------

    def _subgraph(self, subgraph_index: int) -> Subgraph:
        if not 0 <= subgraph_index < len(self._subgraphs):
            raise InvalidArgumentError(
                f"Invalid subgraph index {subgraph_index} exceeds max subgraph index {len(self._subgraphs)}"
            )
        return self._subgraphs[subgraph_index]

    def num_subgraphs(self) -> int:
        return len(self._subgraphs)

    def _get_tensor_details(self, tensor_index: int, subgraph_index: int) -> dict[str, Any]:
        subgraph = self._subgraph(int(subgraph_index))
        tensor = self._numberings[int(subgraph_index)].tensor(int(tensor_index))
        return tensor_details(subgraph, tensor, int(tensor_index))

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict[str, Any]]:
        if not 0 <= subgraph_index < len(self._subgraphs):
            raise InvalidArgumentError(
                f"subgraph_index is out of range: {subgraph_index} for the model, which has "
                f"{len(self._subgraphs)} subgraphs."
            )
        subgraph = self._subgraphs[subgraph_index]
        # as LiteRT: every typed tensor, under LiteRT's indices (tensor_listing/): the model's, those
        # kernels or delegates added, and the temporaries LiteRT's kernels would have
        return [
            tensor_details(subgraph, t, index)
            for index, t in enumerate(self._numberings[subgraph_index].tensors())
            if t.type is not None
        ]

    def get_input_details(self) -> list[dict[str, Any]]:
        subgraph = self._subgraphs[0]
        return [tensor_details(subgraph, subgraph.tensors[i]) for i in subgraph.inputs]

    def get_output_details(self) -> list[dict[str, Any]]:
        subgraph = self._subgraphs[0]
        return [tensor_details(subgraph, subgraph.tensors[i]) for i in subgraph.outputs]

    def _get_op_details(self, op_index: int) -> dict[str, Any]:
        subgraph = self._subgraphs[0]
        if not 0 <= op_index < len(subgraph.nodes):
            raise InvalidArgumentError("Invalid node index")
        node, registration = subgraph.nodes[op_index]
        if registration.builtin_code == BuiltinOperator.CUSTOM:
            op_name = registration.custom_name or "UnknownCustomOp"
        else:
            op_name = BuiltinOperator(registration.builtin_code).name
        return {
            "index": int(op_index),
            "op_name": op_name,
            "inputs": np.array(node.inputs, dtype=np.int32),
            "outputs": np.array(node.outputs, dtype=np.int32),
            "operand_types": [
                api_dtype(subgraph.tensors[t].type) for t in node.inputs if t != OPTIONAL_TENSOR
            ],
            "result_types": [
                api_dtype(subgraph.tensors[t].type) for t in node.outputs if t != OPTIONAL_TENSOR
            ],
        }

    def _get_ops_details(self) -> list[dict[str, Any]]:
        return [self._get_op_details(i) for i in range(len(self._subgraphs[0].nodes))]

    # --- signatures -----------------------------------------------------------------------------------

    def _get_full_signature_list(self) -> dict[str, dict[str, dict[str, int]]]:
        """Each signature's inputs and outputs by name, with their tensor indices (LiteRT's own name for
        it, underscore included, which applications call)."""
        # LiteRT keeps signature inputs and outputs in std::maps, so they come out sorted by name
        return {
            signature.key: {
                "inputs": dict(sorted(signature.inputs.items())),
                "outputs": dict(sorted(signature.outputs.items())),
            }
            for signature in self._model.signatures
        }

    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        return {
            key: {"inputs": list(entry["inputs"]), "outputs": list(entry["outputs"])}
            for key, entry in self._get_full_signature_list().items()
        }

    def signature_subgraph_index(self, signature_key: str) -> int:
        """The subgraph a signature runs (a pytflite extra)."""
        for signature in self._model.signatures:
            if signature.key == signature_key:
                return signature.subgraph_index
        raise InvalidArgumentError("No matching signature.")

    def get_signature_runner(self, signature_key: str | None = None) -> SignatureRunner:
        if signature_key is None:
            if len(self._signature_defs) != 1:
                raise InvalidArgumentError(
                    f"SignatureDef signature_key is None and model has {len(self._signature_defs)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = next(iter(self._signature_defs))
        return SignatureRunner(interpreter=self, signature_key=signature_key)

    @property
    def experimental_compress_quantization_zero_points(self) -> bool:
        return self._experimental_compress_quantization_zero_points


class InterpreterWithCustomOps(Interpreter):
    """An Interpreter whose op resolver also holds the ops its custom op registerers add (LiteRT's class).

    Each registerer is a function taking a MutableOpResolver that already holds the builtins (LiteRT
    passes a pointer to a C++ one), or the name of such a function. LiteRT looks names up as symbols in
    the process; pytflite imports them: `module:function` or `module.function`. A name that cannot be
    found fails with LiteRT's ValueError text, once the model has loaded, as in LiteRT.
    """

    def __init__(self, custom_op_registerers: Sequence[Any] | None = None, **kwargs: Any):
        self._custom_op_registerers = list(custom_op_registerers or [])
        super().__init__(**kwargs)

    def _with_custom_ops(self, resolver: OpResolver) -> OpResolver:
        if not self._custom_op_registerers:
            return resolver
        extended = MutableOpResolver()
        extended.add_all(resolver)
        # LiteRT runs the named registerers first, then the functions, each in list order
        registerers = sorted(self._custom_op_registerers, key=lambda r: not isinstance(r, str))
        for registerer in registerers:
            _registerer_function(registerer)(extended)
        return extended


def _registerer_function(registerer: Any) -> Any:
    """A custom op registerer as a function: itself, or the function its name imports to."""
    if not isinstance(registerer, str):
        if not callable(registerer):
            raise TypeError(
                f"custom_op_registerers: {registerer!r} is neither a function nor a function's name"
            )
        return registerer
    separator = ":" if ":" in registerer else "."
    module_name, _, attribute = registerer.rpartition(separator)
    if not module_name:
        reason = "pytflite finds registerers by Python name, 'module:function' or 'module.function'"
    else:
        try:
            function = getattr(importlib.import_module(module_name), attribute, None)
        except ImportError as error:
            reason = f"cannot import module {module_name}: {error}"
        else:
            if callable(function):
                return function
            reason = f"module {module_name} has no function {attribute}"
    raise InvalidArgumentError(f"Looking up symbol '{registerer}' failed with error '{reason}'.")


class SignatureRunner:
    """Runs one SignatureDef of a model by input and output names (tf.lite SignatureRunner)."""

    def __init__(self, interpreter: Interpreter | None = None, signature_key: str | None = None):
        if not interpreter:
            raise InvalidArgumentError("None interpreter provided.")
        if not signature_key:
            raise InvalidArgumentError("None signature_key provided.")
        signature_defs = interpreter._get_full_signature_list()
        if signature_key not in signature_defs:
            raise InvalidArgumentError(f'Invalid signature_key provided: "{signature_key}".')
        self._interpreter = interpreter
        self._signature_key = signature_key
        self._inputs = signature_defs[signature_key]["inputs"]
        self._outputs = signature_defs[signature_key]["outputs"]
        self._subgraph_index = interpreter.signature_subgraph_index(signature_key)

    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        if len(kwargs) != len(self._inputs):
            raise InvalidArgumentError(
                "Invalid number of inputs provided for running a SignatureDef, "
                f"expected {len(self._inputs)} vs provided {len(kwargs)}"
            )
        subgraph = self._interpreter._subgraphs[self._subgraph_index]
        arrays = {}
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise InvalidArgumentError(f"Invalid Input name ({name}) for SignatureDef")
            index = self._inputs[name]
            # check what set_tensor will check before the graph is resized to a bad value's shape
            arrays[name] = checked_value(subgraph.tensors[index], index, value)
        for name, array in arrays.items():
            Interpreter._resize(subgraph, self._inputs[name], array.shape, strict=False)
        _allocate(subgraph)
        for name, value in kwargs.items():  # the values themselves: a string input must be an array
            set_tensor_checked(subgraph, self._inputs[name], value)
        _invoke(subgraph, self._interpreter._numberings[self._subgraph_index])
        result = {}
        for name, index in self._outputs.items():
            subgraph.delegation.ensure_tensor_data_is_readable(index)
            result[name] = tensor_value(subgraph, index)
        return result

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        return {
            name: self._interpreter._get_tensor_details(i, self._subgraph_index)
            for name, i in self._inputs.items()
        }

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        return {
            name: self._interpreter._get_tensor_details(i, self._subgraph_index)
            for name, i in self._outputs.items()
        }


# --- helpers shared by Interpreter and SignatureRunner ----------------------------------------------


def _check_arguments(model_path: Any, model_content: Any, num_threads: Any) -> None:
    """The constructor's argument checks, with LiteRT's messages, before anything is loaded."""
    if num_threads is not None:
        if not isinstance(num_threads, int):
            raise InvalidArgumentError("type of num_threads should be int")
        if num_threads < 1:
            raise InvalidArgumentError("num_threads should >= 1")
    if not model_content and not model_path:
        raise InvalidArgumentError("`model_path` or `model_content` must be specified.")
    if model_content and model_path:
        raise InvalidArgumentError("Can't both provide `model_path` and `model_content`")
    if model_content and not isinstance(model_content, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"model_content must be bytes, not {type(model_content).__name__}")


def _host(profile: Any) -> HostProfile:
    """The machine whose LiteRT to reproduce: `experimental_host_profile`, or this one."""
    host = profile if profile is not None else HostProfile.detect()
    if not isinstance(host, HostProfile):
        raise InvalidArgumentError(
            f"experimental_host_profile must be a HostProfile, not {type(host).__name__}"
        )
    return host


def _tensor_index(index: Any, method: str) -> int:
    """A tensor index argument as an int; LiteRT's bindings refuse non-integers with a TypeError."""
    if isinstance(index, (int, np.integer)):  # bool is an int, as in LiteRT's bindings
        return int(index)
    raise TypeError(f"{method}(): tensor_index must be an int, not {type(index).__name__}")


def _out_of_memory(step: str, error: MemoryError) -> InterpreterError:
    """NumPy's MemoryError (an allocation the machine cannot give) as the runtime's RuntimeError."""
    return InterpreterError(f"{step}: out of memory ({error})", Status.ERROR)


def _allocate(subgraph: Subgraph) -> None:
    """allocate_tensors (the planner holds the arena to the interpreter's Limits.max_bytes)."""
    try:
        subgraph.allocate_tensors()
    except MemoryError as error:
        raise _out_of_memory("allocate_tensors", error) from None


def _invoke(subgraph: Subgraph, numbering: TensorNumbering) -> None:
    """invoke with BLAS on one thread (core/blas_threads.py; a try block, not a generator context
    manager: this runs once per inference, and small graphs feel a microsecond)."""
    try:
        with ONE_BLAS_THREAD:
            subgraph.invoke()
        numbering.subgraph_ran()  # the listing shows what LiteRT's Eval sized
    except MemoryError as error:
        raise _out_of_memory("invoke", error) from None
