"""Coverage-guided fuzzing with atheris (libFuzzer for Python: it mutates inputs towards new lines and
branches of the instrumented pytflite and flatbuffers) of one of pytflite's attack surfaces
(fuzz/surfaces.py: model, allocate, invoke, flexbuffer, npy, npz, wav, png, parquet), starting from and
adding to its corpus, fuzz/corpus/SURFACE/ (kept in the repository). On a crash libFuzzer stops, prints
the traceback and writes the input as crash-*; rerun it by passing that file instead of the corpus.

    .venv/bin/python fuzz/guided.py SURFACE [-- libFuzzer options: -max_total_time=60 -seed=7 ...]
    .venv/bin/python fuzz/guided.py SURFACE --seed-corpus   # write the surface's seeds anew
    .venv/bin/python fuzz/guided.py SURFACE --minimize      # keep only the inputs that add coverage
    .venv/bin/python fuzz/guided.py all --seconds 20 --seed 7   # every surface in turn (what CI runs)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `fuzz` as a package when run as a script

_PROGRAM = "PYTFLITE_FUZZ_PROGRAM"

with atheris.instrument_imports(include=["pytflite", "flatbuffers"]):  # flexbuffers' decoder too
    import pytflite  # noqa: F401  (instrumented here, before fuzz.surfaces imports it)
    from fuzz import surfaces


def fuzz_one(surface: str, options: list[str]) -> None:
    """Run libFuzzer on `surface` (in this process: it exits when done)."""
    folder = surfaces.CORPUS / surface
    if not folder.is_dir():
        folder = surfaces.write_seed_corpus(surface)
    if not any(not a.startswith("-") for a in options):  # no corpus or crash file given: the surface's own
        options.append(str(folder))
    # libFuzzer's merge runs argv[0] again as a program: minimize() names an executable wrapper for it
    program = os.environ.get(_PROGRAM, sys.argv[0])
    atheris.Setup([program, "-max_len=65536", "-rss_limit_mb=2048", *options], surfaces.target(surface))
    atheris.Fuzz()


def minimize(surface: str) -> None:
    """libFuzzer's merge of the surface's corpus into a fresh folder, which then replaces it."""
    folder = surfaces.CORPUS / surface
    with tempfile.TemporaryDirectory() as work:
        kept, program = Path(work) / "kept", Path(work) / "fuzz-surface"
        kept.mkdir()
        program.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} {surface} -- "$@"\n')
        program.chmod(0o755)
        environment = {**os.environ, _PROGRAM: str(program)}
        subprocess.run([str(program), "-merge=1", str(kept), str(folder)], check=True, env=environment)
        found = sorted(kept.iterdir())
        if not found:
            raise SystemExit(f"libFuzzer's merge kept no input of {folder}: left as it was")
        shutil.rmtree(folder)
        shutil.copytree(kept, folder)
    print(f"{folder}: {len(found)} inputs")


def fuzz_all(seconds: int, seed: int) -> int:
    """Each surface for `seconds` (a process each) from its committed corpus, libFuzzer seeded with `seed`;
    1 on any crash."""
    failed = []
    for surface in surfaces.SURFACES:
        folder = surfaces.CORPUS / surface
        if not folder.is_dir():
            surfaces.write_seed_corpus(surface)
        with (
            tempfile.TemporaryDirectory() as found
        ):  # new inputs go there: the committed corpus stays as it is
            options = [
                "--",
                f"-max_total_time={seconds}",
                f"-seed={seed}",
                "-print_final_stats=1",
                found,
                str(folder),
            ]
            result = subprocess.run([sys.executable, __file__, surface, *options])
        print(f"== {surface}: {'crash' if result.returncode else 'no crash'}", flush=True)
        if result.returncode:
            failed.append(surface)
    print(f"guided fuzzing, seed {seed}, {seconds} s a surface: crashes in {failed or 'none'}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    names = (*surfaces.SURFACES, "all")
    if len(argv) < 2 or argv[1] not in names:
        raise SystemExit(
            f"usage: {argv[0]} {{{','.join(names)}}} [--seed-corpus | --minimize | -- libFuzzer options]"
        )
    surface, rest = argv[1], argv[2:]
    if surface == "all":
        seconds = int(rest[rest.index("--seconds") + 1]) if "--seconds" in rest else 20
        seed = int(rest[rest.index("--seed") + 1]) if "--seed" in rest else 0
        return fuzz_all(seconds, seed)
    if "--seed-corpus" in rest:
        print(surfaces.write_seed_corpus(surface))
    elif "--minimize" in rest:
        minimize(surface)
    else:
        fuzz_one(surface, [a for a in rest if a != "--"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
