"""Hostile models and bad input: the load-time verifier, API validation, concurrency and fuzzing."""
