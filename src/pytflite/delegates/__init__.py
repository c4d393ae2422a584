"""Delegate backends, one module each."""
