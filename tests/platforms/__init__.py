"""Platforms without LiteRT wheels, each running the Pyodide check's job (tests/pyodide/driver.py) to be
compared with the native run by tests/pyodide/check.py: WASI (wasi.py) and free-threaded CPython
(freethreaded.py). `python -m tests.platforms` runs them all and prints the README's Platforms table."""
