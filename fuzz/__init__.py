"""Fuzzing pytflite with hostile models: case generators (cases.py), the per-case run (harness.py) and
the long multi-process job with its hang and death watchdog (run_fuzz.py). tests/robustness runs a
CI-sized share of the same cases."""
