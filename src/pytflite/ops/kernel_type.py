"""Which of TFLite's two kernels for an op a resolver runs (TFLite's `kernel_type` template parameter).

BuiltinOpResolver runs the optimized kernels, BuiltinRefOpResolver (OpResolverType.BUILTIN_REF) the
reference ones. Most ops compute the same either way; for those that round or sum differently, the kernel
registers a prepare factory (register_builtin's `prepare_for`) that the registry calls once with each.
"""

from __future__ import annotations

import enum


class KernelType(enum.Enum):
    OPTIMIZED = "optimized"  # BuiltinOpResolver's kernels (what LiteRT runs by default)
    REFERENCE = "reference"  # BuiltinRefOpResolver's kernels (agree on every host)


OPTIMIZED = KernelType.OPTIMIZED
REFERENCE = KernelType.REFERENCE
