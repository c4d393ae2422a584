"""Predictor: a model as a function on dict-of-arrays batches (Ray Data's numpy batch format).

Axis 0 of every input is the batch axis and rows pass through the model independently. How a batch of
n rows reaches the interpreter depends on the model's batch dimension:
- dynamic (`shape_signature[0] == -1`): `batching="cache"` keeps one allocated interpreter per batch size
  (an LRU of `cache_size`), so ragged batch sizes that recur never re-allocate; `batching="pad"` cuts the
  batch into chunks of `pad_to` rows, pads the last one by repeating its final row, and cuts the outputs
  back;
- fixed to B rows: chunks of B rows, padded the same way (B == 1 is row by row);
- no batch axis at all (the batch arrays have one more axis than the model's inputs): item by item.

A Predictor pickles as its construction arguments only: custom ops and delegates are importable
references, so a worker process (a Ray actor) rebuilds its interpreters itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..interpreter import Interpreter
from ..ops.resolver import BuiltinOpResolver, MutableOpResolver
from ..tools.loading import OP_PACKS, ToolError, import_module_from, load_delegate

BATCHING_MODES = ("cache", "pad")


class BatchError(ValueError):
    """A batch or a Predictor argument the model cannot take (the message names the input or option)."""


def _registerer(spec: str) -> Callable[[MutableOpResolver], None]:
    """`module:function` (dotted name or file.py), or a module (or op pack name) with `register`."""
    module_name, sep, attribute = spec.rpartition(":")
    if not (sep and module_name and attribute.isidentifier()):
        module_name, attribute = OP_PACKS.get(spec, spec), "register"
    try:
        function = getattr(import_module_from(module_name), attribute, None)
    except ToolError as error:
        raise BatchError(f"custom ops {spec!r}: {error}") from None
    if not callable(function):
        raise BatchError(f"custom ops {spec!r}: {module_name} has no function {attribute}(resolver)")
    return function


@dataclass(frozen=True)
class InputSpec:
    """One model input as the Predictor feeds it."""

    name: str
    index: int  # tensor index in the subgraph that runs
    signature: tuple[int, ...]  # shape_signature (-1: dynamic)
    dtype: np.dtype


class _Session:
    """One allocated interpreter whose inputs have a given shape."""

    def __init__(self, interpreter: Interpreter, signature: str | None, shapes: dict[str, tuple[int, ...]]):
        self.interpreter = interpreter
        if signature is not None:
            self.runner = interpreter.get_signature_runner(signature)
            inputs = {name: d["index"] for name, d in self.runner.get_input_details().items()}
        else:
            self.runner = None
            inputs = {d["name"]: d["index"] for d in interpreter.get_input_details()}
            self.outputs = {d["name"]: d["index"] for d in interpreter.get_output_details()}
        if self.runner is None:  # a signature runner resizes and allocates on its first call
            for name, shape in shapes.items():
                interpreter.resize_tensor_input(inputs[name], shape)
            interpreter.allocate_tensors()
        self.inputs = inputs

    def run(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.runner is not None:
            return self.runner(**arrays)
        for name, array in arrays.items():
            self.interpreter.set_tensor(self.inputs[name], array)
        self.interpreter.invoke()
        return {name: self.interpreter.get_tensor(index) for name, index in self.outputs.items()}


def _fits(shape: tuple[int, ...], signature: tuple[int, ...]) -> bool:
    return len(shape) == len(signature) and all(d in (-1, n) for d, n in zip(signature, shape, strict=True))


def _shape_text(signature: tuple[int, ...], first: str | None = None) -> str:
    dims = ["?" if d < 0 else str(d) for d in signature]
    if first is not None and dims:
        dims[0] = first
    return "[" + ", ".join(dims) + "]"


def _restore(arguments: dict[str, Any]) -> Predictor:
    return Predictor(**arguments)


class Predictor:
    """Call it with `{input name: array}` (axis 0: the batch) to get `{output name: array}` back."""

    def __init__(
        self,
        model_path: str,
        *,
        signature: str | None = None,
        custom_ops: Sequence[str] = (),
        delegates: Sequence[str] = (),
        num_threads: int | None = None,
        batching: str = "cache",
        pad_to: int | None = None,
        cache_size: int = 4,
    ):
        self._arguments = dict(
            model_path=str(model_path),
            signature=signature,
            custom_ops=tuple(custom_ops),
            delegates=tuple(delegates),
            num_threads=num_threads,
            batching=batching,
            pad_to=pad_to,
            cache_size=cache_size,
        )
        if batching not in BATCHING_MODES:
            raise BatchError(f"batching must be one of {', '.join(BATCHING_MODES)}, not {batching!r}")
        if pad_to is not None and pad_to < 1:
            raise BatchError(f"pad_to must be at least 1, not {pad_to}")
        if batching == "pad" and pad_to is None:
            raise BatchError('batching="pad" needs pad_to (the rows every invoke gets)')
        if cache_size < 1:
            raise BatchError(f"cache_size must be at least 1, not {cache_size}")
        self._resolver: MutableOpResolver | None = None
        if custom_ops:
            self._resolver = MutableOpResolver()
            self._resolver.add_all(BuiltinOpResolver())
            for spec in custom_ops:
                _registerer(spec)(self._resolver)
        self._sessions: OrderedDict[Any, _Session] = OrderedDict()
        template = self._interpreter()
        self._signature = self._signature_key(template, signature)
        self._inputs, self.output_names = self._describe(template)
        self.input_names = tuple(i.name for i in self._inputs)
        self._fixed_batch = self._fixed_batch_size()

    def __reduce__(self):
        return _restore, (self._arguments,)

    @property
    def inputs(self) -> tuple[InputSpec, ...]:
        """The model's inputs: name, tensor index, shape signature (-1: dynamic) and dtype of each."""
        return self._inputs

    @property
    def arguments(self) -> dict[str, Any]:
        """What the Predictor was made with (by name), as it pickles: its model, custom ops and
        delegates by path and importable reference."""
        return dict(self._arguments)

    @property
    def cached_batch_sizes(self) -> tuple[Any, ...]:
        """The keys of the allocated interpreters, least recently used first (for tests and tuning)."""
        return tuple(self._sessions)

    # --- construction helpers ---------------------------------------------------------------------

    def _interpreter(self) -> Interpreter:
        try:
            delegates = [load_delegate(spec) for spec in self._arguments["delegates"]]
        except ToolError as error:
            raise BatchError(str(error)) from None
        return Interpreter(
            model_path=self._arguments["model_path"],
            op_resolver=self._resolver,
            experimental_delegates=delegates,
            num_threads=self._arguments["num_threads"],
            experimental_list_litert_temporaries=False,  # a batch never lists tensors
        )

    @staticmethod
    def _signature_key(interpreter: Interpreter, signature: str | None) -> str | None:
        keys = list(interpreter.get_signature_list())
        if signature is None:
            if len(keys) > 1:
                raise BatchError(f"the model has signatures {', '.join(keys)}: choose one with signature=")
            return keys[0] if keys else None
        if signature not in keys:
            raise BatchError(f"no signature {signature!r} in the model (it has: {', '.join(keys) or 'none'})")
        return signature

    def _describe(self, interpreter: Interpreter) -> tuple[tuple[InputSpec, ...], tuple[str, ...]]:
        if self._signature is not None:
            runner = interpreter.get_signature_runner(self._signature)
            inputs = list(runner.get_input_details().items())
            outputs = tuple(runner.get_output_details())
        else:
            inputs = [(d["name"], d) for d in interpreter.get_input_details()]
            outputs = tuple(d["name"] for d in interpreter.get_output_details())
        described = tuple(
            InputSpec(name, d["index"], tuple(int(n) for n in d["shape_signature"]), np.dtype(d["dtype"]))
            for name, d in inputs
        )
        return described, outputs

    def _fixed_batch_size(self) -> int | None:
        """B when every input's axis 0 is fixed to B; None when it is dynamic; else the model is refused
        batch-axis calls (item-by-item calls still work)."""
        firsts = {i.signature[0] if i.signature else 0 for i in self._inputs}
        if firsts == {-1}:
            return None
        if len(firsts) == 1 and min(firsts) > 0:
            return firsts.pop()
        return 0

    def _session(self, key: Any, shapes: dict[str, tuple[int, ...]]) -> _Session:
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
            return session
        session = _Session(self._interpreter(), self._signature, shapes)
        self._sessions[key] = session
        while len(self._sessions) > self._arguments["cache_size"]:
            self._sessions.popitem(last=False)
        return session

    # --- calls ------------------------------------------------------------------------------------

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = self._checked(batch)
        rows = len(next(iter(arrays.values())))
        per_item = all(arrays[i.name].ndim == len(i.signature) + 1 for i in self._inputs)
        if per_item:
            return self._run_items(arrays, rows)
        if self._fixed_batch == 0:
            raise BatchError(
                "the model's inputs do not share a batch axis: pass arrays with one more axis than each "
                "input to run item by item"
            )
        self._check_item_shapes(arrays)
        if self._fixed_batch is None and self._arguments["batching"] == "cache":
            return self._run_chunk(arrays, rows)
        chunk = self._fixed_batch or self._arguments["pad_to"]
        parts = [
            self._run_chunk({n: a[start : start + chunk] for n, a in arrays.items()}, chunk)
            for start in range(0, rows, chunk)
        ]
        return {name: np.concatenate([p[name] for p in parts]) for name in self.output_names}

    def _checked(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [n for n in self.input_names if n not in batch]
        extra = [n for n in batch if n not in self.input_names]
        if missing or extra:
            raise BatchError(
                f"the batch has inputs {sorted(batch)}, the model takes {list(self.input_names)}"
                + (f" (missing: {', '.join(missing)})" if missing else "")
                + (f" (unknown: {', '.join(extra)})" if extra else "")
            )
        arrays = {}
        for spec in self._inputs:
            array = np.asarray(batch[spec.name])
            if array.ndim == 0:
                raise BatchError(f"input {spec.name}: a batch needs an axis 0, got a scalar")
            if not np.can_cast(array.dtype, spec.dtype, casting="same_kind"):
                raise BatchError(
                    f"input {spec.name}: cannot convert {array.dtype} to the model's {spec.dtype}"
                )
            arrays[spec.name] = array.astype(spec.dtype, copy=False)
        sizes = {name: len(a) for name, a in arrays.items()}
        if len(set(sizes.values())) > 1:
            raise BatchError(f"inputs differ in batch size: {sizes}")
        if not next(iter(sizes.values())):
            raise BatchError("the batch is empty")
        return arrays

    def _check_item_shapes(self, arrays: dict[str, np.ndarray]) -> None:
        for spec in self._inputs:
            shape = arrays[spec.name].shape
            if not _fits(shape[1:], spec.signature[1:]):
                raise BatchError(
                    f"input {spec.name}: the model takes {_shape_text(spec.signature, 'n')}, "
                    f"the batch is {list(shape)}"
                )

    def check_item(self, item: dict[str, np.ndarray]) -> None:
        """Refuse one item (no batch axis) whose inputs or shapes the model cannot take, before it is
        stacked into a batch: readers call this to name the file at fault."""
        if set(item) != set(self.input_names):
            raise BatchError(f"the item has inputs {sorted(item)}, the model takes {list(self.input_names)}")
        for spec in self._inputs:
            shape = np.shape(item[spec.name])
            if not (_fits(shape, spec.signature[1:]) or _fits(shape, spec.signature)):
                raise BatchError(
                    f"input {spec.name} has shape {list(shape)}, the model takes "
                    f"{_shape_text(spec.signature[1:])} per item"
                )

    def _run_chunk(self, arrays: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
        """Run `arrays` (at most `size` rows) at batch size `size`, padding and cutting back if needed."""
        n = len(next(iter(arrays.values())))
        if n < size:
            pad = np.minimum(np.arange(size), n - 1)
            arrays = {name: a[pad] for name, a in arrays.items()}
        shapes = {name: a.shape for name, a in arrays.items()}
        key = (size, tuple(shapes[i.name][1:] for i in self._inputs))
        outputs = self._session(key, shapes).run(arrays)
        for name, value in outputs.items():
            if value.ndim == 0 or len(value) != size:
                raise BatchError(
                    f"output {name} has shape {list(value.shape)}: its axis 0 is not the batch of {size}"
                )
        return {name: outputs[name][:n] for name in self.output_names}

    def _run_items(self, arrays: dict[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        results = []
        for row in range(rows):
            items = {name: a[row] for name, a in arrays.items()}
            shapes = {name: a.shape for name, a in items.items()}
            key = ("item", tuple(shapes[i.name] for i in self._inputs))
            outputs = self._session(key, shapes).run(items)
            results.append(outputs)
        return {name: np.stack([r[name] for r in results]) for name in self.output_names}
