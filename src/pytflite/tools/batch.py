"""`pytflite batch MODEL INPUTS OUTPUT`: score a folder or file of items, in this process by default.

With `--ray` the same job runs on Ray Data (`pytflite.batch.ray_data.run_ray`, a local cluster unless
`--address` names one). Items already in OUTPUT are skipped, so a rerun resumes; unreadable items stop
the job or, with `--on-error skip`, are listed at the end.
"""

from __future__ import annotations

import argparse
import sys

from ..batch.local import ON_ERROR, JobReport, run_local
from ..batch.predictor import BATCHING_MODES, BatchError, Predictor
from .loading import ToolError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments after MODEL and its --custom-ops/--delegate (cli._add_model_arguments)."""
    parser.add_argument(
        "inputs", help="a folder of .npy/.npz/.png/.jpg/.wav files, or a .npy/.npz/.parquet file"
    )
    parser.add_argument("output", help="a folder (one .npy/.npz an item) or NAME.parquet (a folder of parts)")
    parser.add_argument("--signature", metavar="KEY", help="run this SignatureDef")
    parser.add_argument("--batch-size", "--batch_size", type=int, default=32, help="items an invoke (32)")
    parser.add_argument(
        "--batching",
        choices=BATCHING_MODES,
        default="cache",
        help="cache: an interpreter per batch size; pad: pad every batch to --batch-size rows",
    )
    parser.add_argument(
        "--on-error", choices=ON_ERROR, default="stop", help="an unreadable item stops the job or is skipped"
    )
    parser.add_argument("--threads", "--num-threads", type=int, default=None, help="threads for BLAS")
    parser.add_argument(
        "--ray", action="store_true", help="run on Ray Data (a local cluster unless --address)"
    )
    parser.add_argument("--address", metavar="HOST:PORT", help="the Ray cluster to join (with --ray)")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: only when stderr is a terminal)",
    )


def command(args: argparse.Namespace) -> int:
    if args.address and not args.ray:
        raise ToolError("--address names a Ray cluster: use it with --ray")
    if args.batch_size < 1:
        raise ToolError(f"--batch-size must be at least 1, not {args.batch_size}")
    try:
        predictor = Predictor(
            args.model,
            signature=args.signature,
            custom_ops=args.custom_ops,
            delegates=args.delegate,
            num_threads=args.threads,
            batching=args.batching,
            pad_to=args.batch_size if args.batching == "pad" else None,
        )
        options = dict(batch_size=args.batch_size, on_error=args.on_error, progress=args.progress)
        if args.ray:
            report = _ray_runner()(predictor, args.inputs, args.output, address=args.address, **options)
        else:
            report = run_local(predictor, args.inputs, args.output, **options)
    except (BatchError, ValueError, RuntimeError) as error:
        raise ToolError(str(error).strip()) from None
    _print_report(report, args.output)
    return 1 if report.failed else 0


def _ray_runner():
    try:
        from ..batch.ray_data import run_ray
    except ImportError as error:
        raise ToolError(f"--ray needs Ray Data: pip install 'pytflite[ray]' ({error})") from None
    return run_ray


def _print_report(report: JobReport, output: str) -> None:
    skipped = f", {len(report.failed)} skipped" if report.failed else ""
    print(f"{report.written} items written to {output}, {report.already_done} already there{skipped}")
    for failure in report.failed:
        print(f"skipped {failure}", file=sys.stderr)
