"""The 32-bit check: pytflite under Pyodide (NumPy for wasm32, where np.intp is int32) against itself
natively. test_pyodide.py runs it in the suite; `python -m tests.pyodide.check` prints its table.

environment.py  fetches Pyodide (npm) and the wheels it needs, verifies them, runs run.mjs under node
run.mjs         starts Pyodide, mounts the working tree and corpora, runs driver.py
driver.py       runs the models, the Atan example and `pytflite analyze`; writes their results
index_ops.py    one-operator models for index-heavy kernels the public corpus leaves out
check.py        runs driver.py natively and in Pyodide and compares the two (the only comparison)

It lives under tests/ because it is test tooling: it imports tests.oracle's comparison rule and
tests.single_op's model builder, and nothing of it ships with pytflite.
"""
