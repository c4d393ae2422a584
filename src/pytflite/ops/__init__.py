"""Builtin kernels (one module per op family), the kernel registry and the op resolvers."""
