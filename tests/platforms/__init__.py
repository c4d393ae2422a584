"""Platforms without LiteRT wheels, each running the Pyodide check's job (tests/pyodide/driver.py) to be
compared with the native run by tests/pyodide/check.py: WASI (wasi.py), 32-bit x86 (i386.py), musl
(musl.py) and free-threaded CPython (freethreaded.py), the CPython builds from Debian trixie's sources
(debian.py). `python -m tests.platforms` runs them all (.ci/run does)."""
