"""Run corpus models (each as tests/test_corpus.py drives its mode), the Atan example and `pytflite
analyze`, and write what they produced.

This file runs twice per check: natively, imported by the test, and inside Pyodide (32-bit NumPy), run
by run.mjs as `driver.py JOB.json`. It only collects; `check.py` compares the two collections. It
imports nothing but the standard library, NumPy and pytflite, so it runs unchanged in both places.

The job (a JSON object):
  corpora      corpus folders (manifest.json, NAME.tflite, NAME.npz): the public one, index_ops.py's
  examples     the examples folder (atan_custom_op.py, models/)
  builtin_ref  names of corpus models to run again with OpResolverType.BUILTIN_REF
  host         the HostProfile fields of the machine whose LiteRT to reproduce (the native one: where
               LiteRT's results depend on the CPU, both runs then compute the same thing), or null:
               the host's own detection (tests/arm/compare.py under qemu)
  analyze      (optional) the names of the models to run `pytflite analyze` on; absent: every one
  output       where to write the results: OUTPUT.npz (arrays) and OUTPUT.json (texts)

Arrays are keyed MODEL/LABEL, LABEL being the corpus .npz key the output corresponds to (output_0,
output_1__invoke2, output_0__batch3, encode__output_code), plus output_I__after_reset for a stateful
model's invoke after reset_all_variables; BUILTIN_REF runs are under builtin_ref/MODEL/LABEL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pytflite
from pytflite.tools import cli

Outputs = dict[str, np.ndarray]


def corpus_resolver(reference: bool = False) -> pytflite.MutableOpResolver:
    """The builtin (or BUILTIN_REF) kernels plus the corpus's custom Atan (tests/test_corpus.py's too)."""

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        np.arctan(context.tensors[node.inputs[0]].data, out=context.tensors[node.outputs[0]].data)

    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinRefOpResolver() if reference else pytflite.BuiltinOpResolver())
    resolver.add_custom("Atan", pytflite.Registration(prepare=prepare, invoke=invoke))
    return resolver


def _interpreter(path: str, reference: bool) -> pytflite.Interpreter:
    kind = pytflite.OpResolverType.BUILTIN_REF if reference else pytflite.OpResolverType.AUTO
    return pytflite.Interpreter(model_path=path, experimental_op_resolver_type=kind)


def _outputs_by_index(details: dict) -> list[str]:
    return sorted(details, key=lambda name: details[name]["index"])


def run_plain(path: str, data, reference: bool) -> Outputs:
    interpreter = pytflite.Interpreter(model_path=path, op_resolver=corpus_resolver(reference))
    details = interpreter.get_input_details()
    for i, detail in enumerate(details):  # inputs recorded at another shape than the model's
        if list(detail["shape"]) != list(data[f"input_{i}"].shape):
            interpreter.resize_tensor_input(detail["index"], data[f"input_{i}"].shape)
    interpreter.allocate_tensors()
    for i, detail in enumerate(details):
        interpreter.set_tensor(detail["index"], data[f"input_{i}"])
    interpreter.invoke()
    return {
        f"output_{i}": interpreter.get_tensor(detail["index"])
        for i, detail in enumerate(interpreter.get_output_details())
    }


def run_stateful(path: str, data, reference: bool) -> Outputs:
    """Three invokes carrying state, then one after reset_all_variables (test_corpus's protocol)."""
    interpreter = _interpreter(path, reference)
    ((key, signature),) = interpreter.get_signature_list().items()
    runner = interpreter.get_signature_runner(key)
    (input_name,) = signature["inputs"]
    names = _outputs_by_index(runner.get_output_details())
    results = {}
    for k in range(3):
        outputs = runner(**{input_name: data[f"input_0__invoke{k}"]})
        results.update({f"output_{i}__invoke{k}": outputs[name] for i, name in enumerate(names)})
    interpreter.reset_all_variables()
    outputs = runner(**{input_name: data["input_0__invoke0"]})
    results.update({f"output_{i}__after_reset": outputs[name] for i, name in enumerate(names)})
    return results


def run_dynamic_batch(path: str, data, reference: bool, batches: list[int]) -> Outputs:
    interpreter = _interpreter(path, reference)
    results = {}
    for batch in batches:
        x = data[f"input_0__batch{batch}"]
        index = interpreter.get_input_details()[0]["index"]
        interpreter.resize_tensor_input(index, x.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(index, x)
        interpreter.invoke()
        for i, detail in enumerate(interpreter.get_output_details()):
            results[f"output_{i}__batch{batch}"] = interpreter.get_tensor(detail["index"])
    return results


def run_signatures(path: str, data, reference: bool) -> Outputs:
    interpreter = _interpreter(path, reference)
    results = {}
    for key, signature in interpreter.get_signature_list().items():
        outputs = interpreter.get_signature_runner(key)(
            **{name: data[f"{key}__input_{name}"] for name in signature["inputs"]}
        )
        results.update({f"{key}__output_{name}": outputs[name] for name in signature["outputs"]})
    return results


def run_training(path: str, data) -> Outputs:
    """TF's on-device training recipe (tests/fixtures/flex/training): 20 `train` steps and `infer`;
    then, in a second interpreter, `restore` of the checkpoint TF wrote (a V1 file or a V2 bundle's
    prefix), `infer`, and the bytes `save` writes of those weights."""
    interpreter = pytflite.Interpreter(model_path=path)
    train, infer = interpreter.get_signature_runner("train"), interpreter.get_signature_runner("infer")
    x, y = data["x"], data["y"]
    losses = np.array([train(x=x[i % 4], y=y[i % 4])["loss"] for i in range(20)], np.float32)
    restored = pytflite.Interpreter(model_path=path)
    stem = path[: -len(".tflite")]
    restored.get_signature_runner("restore")(checkpoint_path=np.array(stem + ".ckpt", dtype=np.bytes_))
    restored.get_signature_runner("save")(checkpoint_path=np.array(stem + ".saved.ckpt", dtype=np.bytes_))
    results = {
        "losses": losses,
        "logits": infer(x=x[0])["logits"],
        "restored_logits": restored.get_signature_runner("infer")(x=x[0])["logits"],
    }
    saved = Path(stem + ".saved.ckpt")
    if saved.exists():  # (a V2 model's `save` writes nothing: the converter drops SaveV2)
        results["saved_checkpoint"] = np.frombuffer(saved.read_bytes(), np.uint8)
    return results


def run_signature_calls(path: str, data) -> Outputs:
    """Signature calls replayed in order on one interpreter (tests/fixtures/flex/make_tables.py's
    call_<i>__<signature>__input_<name> keys), each call's outputs kept."""
    interpreter = pytflite.Interpreter(model_path=path)
    calls: dict[int, tuple[str, dict]] = {}
    for key in data.files:
        number, signature, rest = key.split("__", 2)
        if rest.startswith("input_"):
            calls.setdefault(int(number[len("call_") :]), (signature, {}))[1][rest[len("input_") :]] = data[
                key
            ]
    results = {}
    for number in sorted(calls):
        signature, inputs = calls[number]
        outputs = interpreter.get_signature_runner(signature)(**inputs)
        results.update(
            {f"call_{number}__{signature}__output_{name}": value for name, value in outputs.items()}
        )
    return results


def run_model(corpus: Path, entry: dict, reference: bool = False) -> Outputs:
    """One corpus model's outputs, driven as its manifest mode says."""
    path, data = str(corpus / entry["file"]), np.load(corpus / entry["npz"], allow_pickle=True)
    mode = entry["mode"]
    if mode == "training":
        return run_training(path, data)
    if mode == "signature_calls":
        return run_signature_calls(path, data)
    if mode == "stateful":
        return run_stateful(path, data, reference)
    if mode == "dynamic_batch":
        return run_dynamic_batch(path, data, reference, entry["extra"]["batches"])
    if mode == "signatures":
        return run_signatures(path, data, reference)
    return run_plain(path, data, reference)


def _captured(call: Callable[[], object]) -> tuple[object, str]:
    """What `call` returns (or the traceback it raises) and what it printed."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
        try:
            result = call()
        except (Exception, SystemExit):  # the record is the check
            result = traceback.format_exc()
    return result, stdout.getvalue()


def run_atan_example(examples: Path) -> tuple[Outputs, str]:
    """examples/atan_custom_op.py: main() as a user runs it, and its kernel's output on fixed inputs."""
    spec = importlib.util.spec_from_file_location("atan_custom_op", examples / "atan_custom_op.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    error, printed = _captured(module.main)  # main returns None; a traceback if it fails
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    module.register(resolver)
    interpreter = pytflite.Interpreter(model_path=str(module.MODEL), op_resolver=resolver)
    x = np.linspace(-300, 300, 257, dtype=np.float32)
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(index, x)
    interpreter.invoke()
    y = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    return {"atan_example/y": y}, printed + (error or "")


def run_analyze(model: Path) -> str:
    """`pytflite analyze MODEL`'s output and exit status."""
    status, printed = _captured(lambda: cli.main(["analyze", str(model)]))
    return f"{printed}\nexit status: {status}\n"


def host_fields(host: pytflite.HostProfile) -> dict:
    """A HostProfile as JSON values (the job's "host")."""
    return {**dataclasses.asdict(host), "features": sorted(host.features)}


@contextlib.contextmanager
def emulated_host(fields: dict):
    """Every interpreter made inside, the command line's included, reproduces that host's LiteRT (None:
    this host's)."""
    if fields is None:
        yield
        return
    host = pytflite.HostProfile(
        **{
            **fields,
            "features": frozenset(fields["features"]),
            "eigen_caches": fields["eigen_caches"] and tuple(fields["eigen_caches"]),
        }
    )
    detect = pytflite.HostProfile.__dict__["detect"]
    pytflite.HostProfile.detect = staticmethod(lambda: host)
    try:
        yield
    finally:
        pytflite.HostProfile.detect = detect


def collect(job: dict) -> tuple[Outputs, dict]:
    """Every output of the job, and the texts: per-model errors, the example's and analyze's output."""
    arrays: Outputs = {}
    texts: dict = {
        "errors": {},
        "analyze": {},
        "models": [],
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "intp": np.dtype(np.intp).name,
        "host": pytflite.HostProfile.detect().describe(),
    }
    with emulated_host(job["host"]):
        for corpus in map(Path, job["corpora"]):
            for entry in json.loads((corpus / "manifest.json").read_text())["models"]:
                name = entry["name"]
                texts["models"].append(name)
                runs = [("", False)] + ([("builtin_ref/", True)] if name in job["builtin_ref"] else [])
                for prefix, reference in runs:
                    try:
                        outputs = run_model(corpus, entry, reference)
                    except Exception:  # one model's failure must not hide the others'
                        texts["errors"][prefix + name] = traceback.format_exc()
                        continue
                    arrays.update({f"{prefix}{name}/{label}": value for label, value in outputs.items()})
                if name in job.get("analyze", (name,)):
                    texts["analyze"][name] = run_analyze(corpus / entry["file"])
        example_outputs, texts["atan_example"] = run_atan_example(Path(job["examples"]))
    arrays.update(example_outputs)
    return arrays, texts


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    arrays, texts = collect(job)
    np.savez(job["output"] + ".npz", **arrays)
    Path(job["output"] + ".json").write_text(json.dumps(texts, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
