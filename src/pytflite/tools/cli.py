"""The `pytflite` command: argument parsing and dispatch to the tool modules.

    pytflite run MODEL [--input name=file.npy|file.png|random] [--signature KEY] [--debug N]
    pytflite benchmark MODEL [--num_runs N] [--warmup_runs N] [--enable_op_profiling] [--compare-litert]
    pytflite profile MODEL [--num_runs N] [--csv FILE] [--plot FILE.png] [--model-explorer FILE.json]
    pytflite analyze MODEL [--delegate SPEC]
    pytflite visualize MODEL -o graph.html [--delegate SPEC]
    pytflite compare MODEL (--delegate SPEC | --litert) [--atol A] [--rtol R]
    pytflite batch MODEL INPUTS OUTPUT [--signature KEY] [--batch-size N] [--on-error stop|skip] [--ray]

Every command takes `--custom-ops ops.py` (a module with `register(resolver)`, or `mediapipe`) and `--delegate
module:Factory` or `--delegate libfoo.so` (repeatable, with `--delegate-option key=value`). benchmark's flags are spelled as
benchmark_model's (`--num_runs=10` and `--num_runs 10` both work).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .loading import ToolError


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add_model_arguments(
    parser: argparse.ArgumentParser, delegates: bool = True, delegate_options: bool = True
) -> None:
    parser.add_argument("model", help="path to a .tflite file")
    parser.add_argument(
        "--custom-ops",
        action="append",
        default=[],
        metavar="MODULE",
        help="Python module (file.py or dotted name) whose register(resolver) adds custom ops, or an op pack "
        "pytflite ships (mediapipe); repeatable",
    )
    if delegates:
        parser.add_argument(
            "--delegate",
            action="append",
            default=[],
            metavar="SPEC",
            help="module:Factory or file.py:Factory returning a delegate, a module or file.py with "
            "tflite_plugin_create_delegate(options), a native delegate library (libfoo.so, TFLite's C "
            "plugin interface), or replay:OP,OP (repeatable)",
        )
    if delegates and delegate_options:
        parser.add_argument(
            "--delegate-option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="keyword argument for the delegate factory (value read as a Python literal)",
        )


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="[NAME=]SOURCE",
        help="an input value: file.npy, file.png, random, zeros or ones; an .npz holds several (repeatable)",
    )
    parser.add_argument(
        "--signature",
        "--signature_to_run_for",
        metavar="KEY",
        help="run this SignatureDef, not the primary graph",
    )
    parser.add_argument(
        "--image-range", metavar="LO,HI", help="float range images are scaled to (default 0,1)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--num_threads", "--num-threads", type=int, default=None, help="threads for BLAS")


def _add_partition_arguments(parser: argparse.ArgumentParser) -> None:
    """benchmark_model's limits on delegate partitioning, for the commands that apply delegates to a graph."""
    parser.add_argument("--max_delegated_partitions", type=int, default=None)
    parser.add_argument("--min_nodes_per_partition", type=int, default=None)


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    """`run`'s flags: how outputs are shown or saved, and repeated or debugged invokes."""
    _add_model_arguments(run)
    _add_input_arguments(run)
    run.add_argument("--top_k", "--top-k", type=int, default=5, help="classes shown for score outputs")
    run.add_argument("--labels", help="text file with one class label per line")
    run.add_argument("--repeat", type=int, default=1, help="invoke this many times and report the times")
    run.add_argument("--save", metavar="FILE.npz", help="write the outputs to an .npz")
    run.add_argument(
        "--debug",
        type=int,
        nargs="?",
        const=1,
        default=None,
        help="print every node (level 1-3; env PYTFLITE_DEBUG)",
    )


def _add_benchmark_arguments(bench: argparse.ArgumentParser) -> None:
    """`benchmark`'s flags, spelled as benchmark_model's, then pytflite's own (--compare-litert and on)."""
    _add_model_arguments(bench)
    _add_input_arguments(bench)
    bench.add_argument("--graph", help=argparse.SUPPRESS)
    bench.add_argument("--num_runs", type=int, default=50, help="minimum number of timed runs")
    bench.add_argument("--min_secs", type=float, default=1.0, help="minimum seconds of timed runs")
    bench.add_argument(
        "--max_secs", type=float, default=150.0, help="stop timed runs after this many seconds"
    )
    bench.add_argument("--warmup_runs", type=int, default=1, help="minimum number of warm-up runs")
    bench.add_argument("--warmup_min_secs", type=float, default=0.5, help="minimum seconds of warm-up")
    bench.add_argument("--run_delay", type=float, default=-1.0, help="seconds to sleep between runs")
    bench.add_argument("--input_layer", default="", help="input names, comma separated (for the shapes)")
    bench.add_argument("--input_layer_shape", default="", help="shapes: dims by ',', inputs by ':'")
    bench.add_argument("--enable_op_profiling", type=_bool, nargs="?", const=True, default=False)
    bench.add_argument("--profiling_output_csv_file", default="", help="write the op profile as CSV here")
    _add_partition_arguments(bench)
    bench.add_argument(
        "--compare-litert", "--compare_litert", action="store_true", help="also time ai-edge-litert"
    )
    bench.add_argument(
        "--progress", choices=("auto", "always", "never"), default="auto", help="progress bar on stderr"
    )
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")


def _add_profile_arguments(profile: argparse.ArgumentParser) -> None:
    """`profile`'s flags: the runs to average over and where the tables, chart and node data go."""
    _add_model_arguments(profile)
    _add_input_arguments(profile)
    profile.add_argument("--num_runs", type=int, default=10)
    profile.add_argument("--warmup_runs", type=int, default=1)
    profile.add_argument("--csv", metavar="FILE", help="write the tables as CSV")
    profile.add_argument("--plot", metavar="FILE.png", help="write a bar chart of time by node type")
    profile.add_argument(
        "--model-explorer",
        metavar="FILE.json",
        help="write per-op avg ms (FILE.json) and %% of total (FILE.percent.json) as Model Explorer node data",
    )
    profile.add_argument("--top", type=int, default=10, help="rows of 'Top by Computation Time'")


def _add_compare_arguments(compare: argparse.ArgumentParser) -> None:
    """`compare`'s flags: the reference to compare against and the tolerances."""
    _add_model_arguments(compare)
    _add_input_arguments(compare)
    compare.add_argument(
        "--litert", action="store_true", help="compare against ai-edge-litert's builtin kernels"
    )
    compare.add_argument(
        "--rtol", type=float, default=1e-4, help="relative tolerance (of the tensor's magnitude)"
    )
    compare.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance")
    compare.add_argument("--all", action="store_true", help="list every differing tensor, not just the first")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytflite", description="TensorFlow Lite models in Python: tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run_arguments(commands.add_parser("run", help="invoke a model once and print its outputs"))
    _add_benchmark_arguments(
        commands.add_parser("benchmark", help="time invokes as TFLite's benchmark_model does")
    )
    _add_profile_arguments(
        commands.add_parser("profile", help="per-operator times (benchmark_model's op profiling)")
    )

    analyze = commands.add_parser("analyze", help="describe a model (tf.lite.experimental.Analyzer)")
    _add_model_arguments(analyze)
    _add_partition_arguments(analyze)

    visualize = commands.add_parser("visualize", help="write an HTML page drawing the graph")
    _add_model_arguments(visualize)
    visualize.add_argument("-o", "--output", default="graph.html", help="the HTML file to write")
    _add_partition_arguments(visualize)

    _add_compare_arguments(
        commands.add_parser(
            "compare", help="find the first tensor that differs with a delegate, or against ai-edge-litert"
        )
    )

    from . import batch

    scoring = commands.add_parser("batch", help="score a folder or file of inputs into .npy files or Parquet")
    _add_model_arguments(scoring, delegate_options=False)  # workers build delegates from the spec alone
    batch.add_arguments(scoring)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        from . import run

        return run.command(args)
    if args.command == "benchmark":
        from . import benchmark

        return benchmark.command(args)
    if args.command == "profile":
        from . import profile

        return profile.command(args)
    if args.command == "analyze":
        from . import analyze

        return analyze.command(args)
    if args.command == "visualize":
        from . import visualize

        return visualize.command(args)
    if args.command == "batch":
        from . import batch

        return batch.command(args)
    from . import compare

    return compare.command(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except ToolError as error:
        print(f"pytflite {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `pytflite analyze big.tflite | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
