"""The long fuzz job: run N hostile-model cases across worker processes and report the figures.

    .venv/bin/python fuzz/run_fuzz.py --cases 100000 --workers 2          # the reliability figures
    .venv/bin/python fuzz/run_fuzz.py --cases 100000 --seeds 1-10         # the same for each of 10 seeds
    .venv/bin/python fuzz/run_fuzz.py --replay 12345 --seed 0 --out case.tflite   # rebuild one case

Each worker runs its share of case numbers in-process (construct + allocate + random inputs + invoke,
fuzz/harness.py) under a soft per-case time limit, and reports every case to the parent over a pipe.
The parent is the watchdog: a worker silent for twice the time limit is killed and its case recorded as
a hang, a worker that dies (segfault, OOM kill) is recorded as a process death; either way a fresh
worker resumes after the case. Workers run under an address-space limit, so runaway allocation shows
up as a MemoryError rather than an OOM kill: a crash, even wrapped in a pytflite error, since under the
harness's 16 MiB Limits no kernel should need that much (fuzz/harness.py).
The summary (cases, outcomes, crashes, hangs, deaths, max RSS, time) is printed and written as JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `fuzz` as a package when run as a script

from fuzz.cases import corpus_seeds, make_case
from fuzz.harness import run_case_with_timeout


def _worker(seed: int, numbers: range, timeout: float, memory_bytes: int, connection) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    corpus_seeds()  # parse the corpus once, before the first case's clock starts
    for number in numbers:
        connection.send(("start", number))
        label, model = make_case(seed, number)
        outcome = run_case_with_timeout(model, number, timeout)
        connection.send(("done", number, label, outcome.kind, outcome.stage, outcome.detail))
    connection.send(("rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    connection.close()


class _Worker:
    def __init__(self, context, seed: int, numbers: range, args):
        self.numbers = numbers
        self.receive, send = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_worker, args=(seed, numbers, args.timeout, args.memory_mb << 20, send), daemon=True
        )
        self.process.start()
        send.close()
        self.current: int | None = None
        self.last_message = time.monotonic()
        self.finished = False


def run(args) -> dict:
    context = multiprocessing.get_context("fork")
    counts: Counter = Counter()
    by_kind: Counter = Counter()
    problems: list[dict] = []
    max_rss_kb = 0
    # each worker owns a contiguous slice of case numbers; after a hang or death it resumes after it
    share = -(-args.cases // args.workers)
    pending = [
        range(args.first + i * share, args.first + min((i + 1) * share, args.cases))
        for i in range(args.workers)
    ]
    workers = [_Worker(context, args.seed, numbers, args) for numbers in pending if len(numbers)]
    started, done = time.monotonic(), 0
    next_report = started + args.progress

    def restart(worker: _Worker, why: str) -> _Worker:
        number = worker.current
        label, _ = make_case(args.seed, number)
        problems.append({"case": number, "kind": why, "label": label})
        counts[why] += 1
        worker.process.kill()
        worker.process.join()
        rest = range(number + 1, worker.numbers.stop)
        return _Worker(context, args.seed, rest, args) if len(rest) else None

    while workers:
        alive = []
        for worker in workers:
            replacement = worker
            while worker.receive.poll(0.05 / len(workers)):
                try:
                    message = worker.receive.recv()
                except EOFError:
                    break
                worker.last_message = time.monotonic()
                if message[0] == "start":
                    worker.current = message[1]
                elif message[0] == "done":
                    _, number, label, kind, stage, detail = message
                    worker.current = None
                    done += 1
                    counts[kind] += 1
                    by_kind[(label.split(":")[0], kind)] += 1
                    if kind in ("crash", "hang"):
                        problems.append(
                            {"case": number, "kind": kind, "label": label, "stage": stage, "detail": detail}
                        )
                elif message[0] == "rss":
                    max_rss_kb = max(max_rss_kb, message[1])
                    worker.finished = True
            if worker.finished:
                worker.process.join()
                continue
            if not worker.process.is_alive() and not worker.receive.poll():
                if worker.current is None:
                    continue
                replacement = restart(worker, "death")
                done += 1
            elif worker.current is not None and time.monotonic() - worker.last_message > 2 * args.timeout + 5:
                replacement = restart(worker, "hang")
                done += 1
            if replacement is not None:
                alive.append(replacement)
        workers = alive
        if time.monotonic() > next_report:
            rate = done / (time.monotonic() - started)
            print(f"{done}/{args.cases} cases, {rate:.0f}/s, {dict(counts)}", flush=True)
            next_report += args.progress
    max_rss_kb = max(max_rss_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {
        "command": " ".join(sys.argv),
        "seed": args.seed,
        "cases_run": done,
        "outcomes": dict(counts),
        "by_generator": {f"{g}/{k}": n for (g, k), n in sorted(by_kind.items())},
        "crashes": counts["crash"],
        "hangs": counts["hang"],
        "process_deaths": counts["death"],
        "max_rss_mib": round(max_rss_kb / 1024, 1),
        "seconds": round(time.monotonic() - started, 1),
        "workers": args.workers,
        "per_case_timeout_s": args.timeout,
        "problems": problems[:200],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--first", type=int, default=0, help="first case number (to resume a run)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--seeds", type=_seed_list, help="run --cases cases for each of these seeds: 1-10, or 3,7,11"
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case before it is a hang")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space limit per worker")
    parser.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines")
    parser.add_argument("--json", default="fuzz/last_run.json", help="where to write the summary")
    parser.add_argument(
        "--replay", type=int, help="rebuild case N, run it in this process, print the outcome"
    )
    parser.add_argument("--out", help="with --replay: also write the case's model to this file")
    args = parser.parse_args(argv)
    if args.replay is not None:
        label, model = make_case(args.seed, args.replay)
        if args.out:
            Path(args.out).write_bytes(model)
        outcome = run_case_with_timeout(model, args.replay, args.timeout)
        print(
            f"case {args.replay} ({label}, {len(model)} bytes): {outcome.kind} at {outcome.stage}\n{outcome.detail}"
        )
        return 0 if outcome.kind in ("ok", "rejected") else 1
    seeds = args.seeds or [args.seed]
    runs = []
    for seed in seeds:
        args.seed = seed
        runs.append(run(args))
        if len(seeds) > 1:
            outcome = {k: runs[-1][k] for k in ("cases_run", "crashes", "hangs", "process_deaths", "seconds")}
            print(f"seed {seed}: {outcome}", flush=True)
    summary = runs[0] if len(runs) == 1 else _over_seeds(runs)
    Path(args.json).write_text(json.dumps(summary, indent=1))
    shown = {k: v for k, v in summary.items() if k not in ("problems", "per_seed")}
    print(json.dumps(shown, indent=1))
    for problem in summary["problems"][:20]:
        print(
            f"--- seed {problem.get('seed', args.seed)} case {problem['case']} ({problem['label']}): "
            f"{problem['kind']}\n{problem.get('detail', '')}"
        )
    return 0 if not (summary["crashes"] or summary["hangs"] or summary["process_deaths"]) else 1


def _seed_list(text: str) -> list[int]:
    """ "1-10" or "3,7,11" (or both: "1-3,9")."""
    seeds = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def _over_seeds(runs: list[dict]) -> dict:
    """One summary of several seeds' runs: totals, each seed's own, every problem tagged with its seed."""
    totals: Counter = Counter()
    for summary in runs:
        totals.update(summary["outcomes"])
    return {
        "command": runs[0]["command"],
        "seeds": [summary["seed"] for summary in runs],
        "cases_run": sum(summary["cases_run"] for summary in runs),
        "outcomes": dict(totals),
        "crashes": sum(summary["crashes"] for summary in runs),
        "hangs": sum(summary["hangs"] for summary in runs),
        "process_deaths": sum(summary["process_deaths"] for summary in runs),
        "max_rss_mib": max(summary["max_rss_mib"] for summary in runs),
        "seconds": round(sum(summary["seconds"] for summary in runs), 1),
        "workers": runs[0]["workers"],
        "per_case_timeout_s": runs[0]["per_case_timeout_s"],
        "per_seed": [{k: v for k, v in summary.items() if k != "problems"} for summary in runs],
        "problems": [
            {**problem, "seed": summary["seed"]} for summary in runs for problem in summary["problems"]
        ],
    }


if __name__ == "__main__":
    sys.exit(main())
