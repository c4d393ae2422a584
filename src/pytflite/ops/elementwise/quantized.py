"""Prepare and invoke of quantized ADD, SUB, MUL, DIV and SQUARED_DIFFERENCE (int8, uint8, int16): the
parameters and formulas per code path, and the runner that looks their results up."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from ...core.derived import derived_constant
from ...core.types import type_name
from ...errors import ensure
from ...fidelity.simd_paths import BLOCK, broadcast_walk, path_groups
from ..common import INTP_TYPE, broadcast_shape, scratch_tensor, set_temporaries
from ..kernel_type import OPTIMIZED, KernelType
from .binary import BinaryData, Runner
from .common import QUANTIZED, T, output_shape, zero_check
from .formulas import (
    Separable,
    add_sub_formulas,
    div_formulas,
    int16_to_8bit_mul_formulas,
    mul_formulas,
    pot_formulas,
    squared_difference_formulas,
)
from .quant_params import (
    add_sub_params,
    check_scales,
    check_zero_points,
    pot_int16,
    pot_params,
    product_params,
    squared_difference_params,
)

# --- quantized arithmetic: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE on int8 / uint8 / int16 ----------------
#
# TFLite rescales each quantized input to a common fixed-point scale, combines, and requantizes to the
# output (ArithmeticParams: offsets, multipliers, shifts, clamp). Its optimized ADD and MUL (what LiteRT's
# BuiltinOpResolver runs; on x86 the NEON code through an SSE translation) compute whole SIMD blocks of
# 8 or 16 elements differently from the scalar code that finishes each row: the input shift is applied
# before the multiply (one rounding instead of two) or as a flooring vshl after it, and the 8-bit
# kernels narrow through int16 lanes that saturate or wrap. (vqrdmulh itself equals the scalar
# SaturatingRoundingDoublingHighMul: both round the high half up.)
# Which elements a SIMD block computes follows TFLite's broadcast walk (broadcast_walk): the whole flat
# array when the shapes match; each innermost row of the "fivefold" broadcast pattern; and the generic
# broadcast falls back to the scalar reference loop. The reference kernels (BUILTIN_REF) are scalar
# throughout. SUB, DIV, SQUARED_DIFFERENCE and int16 MUL are scalar in both.
#
# Every output element is a function of its two input values and of the code path that computed it, so
# for 8-bit inputs prepare tabulates that function over all 256 x 256 input pairs, once per path, and
# invoke is a table lookup. For int16 inputs the per-input rescaling is tabulated over the 65536 values
# where the formula separates (Separable), and the rest computed in int64 NumPy arithmetic.


# The byte of an np.intp that holds its bits 8-15: the first input's byte in the 8-bit lookup's index.
_INDEX_HIGH_BYTE = 1 if sys.byteorder == "little" else np.dtype(np.intp).itemsize - 2


def _run_nothing(tensors, inputs, out):
    """The runner of an empty output."""


def _quantized_runner(context, node, formulas: dict[str, Callable], groups, check=None) -> Runner:
    """The function invoke calls: a lookup in per-path tables of all 256 x 256 results for 8-bit inputs,
    direct int64 arithmetic for int16 ones. `check(b)` validates the second input first (DIV).

    The 8-bit lookup's index, first * 256 + second, is built in the node's np.intp temporary
    (sized here) by two assignments and no arithmetic: the second input's raw bits converted into it
    (so its upper bytes are zero), then the first's written into its second-lowest byte (_INDEX_HIGH_BYTE).
    A ufunc casting its inputs would go through NumPy's buffers."""
    tensors = context.tensors
    first = tensors[node.inputs[0]]
    output = tensors[node.outputs[0]]
    shape = tuple(output.shape)
    size = math.prod(shape)
    if size == 0:
        return _run_nothing
    if first.type in (T.INT8, T.UINT8):
        raw = np.arange(256, dtype=np.uint8).view(first.dtype).astype(np.int64)

        def table(path: str) -> Callable[[], np.ndarray]:
            def compute() -> np.ndarray:
                with np.errstate(all="ignore"):
                    return formulas[path](raw[:, None], raw[None, :]).astype(output.dtype).reshape(-1)

            return compute

        # per model, shared read-only by its interpreters: a table follows from the tensors'
        # quantization, the options and the kernel alone
        tables = {
            path: derived_constant(context, node, f"8-bit table, {path}", table(path)) for path, _ in groups
        }
        main = tables[groups[0][0]]
        extras = [(tables[path], positions) for path, positions in groups[1:]]
        scratch = node.user_data.scratch  # by init: the index's temporary
        (index_tensor,) = scratch
        scratch_tensor(context, index_tensor, INTP_TYPE, shape)
        set_temporaries(context, node, scratch, scratch)
        views = ()  # (first, second, index) and the byte views made of them, while they stay the arrays

        def lookup(tensors, inputs, out):
            nonlocal views
            a, b, index = tensors[inputs[0]].data, tensors[inputs[1]].data, tensors[index_tensor].data
            if check is not None:
                check(b)
            if not views or views[0] is not a or views[1] is not b or views[2] is not index:
                high = index.reshape(-1).view(np.uint8).reshape(*shape, -1)[..., _INDEX_HIGH_BYTE]
                views = (a, b, index, a.view(np.uint8), b.view(np.uint8), high)
            np.copyto(index, views[4])
            np.copyto(views[5], views[3])
            np.take(main, index, out=out, mode="clip")
            for table, positions in extras:
                out.reshape(-1)[positions] = table[index.reshape(-1)[positions]]

        return lookup
    if first.type == T.INT16 and all(isinstance(formulas[path], Separable) for path, _ in groups):
        return _int16_table_runner(formulas, groups, shape, check)
    main_formula = formulas[groups[0][0]]
    extras = [(formulas[path], positions) for path, positions in groups[1:]]

    def compute(tensors, inputs, out):
        b = tensors[inputs[1]].data
        if check is not None:
            check(b)
        x1 = tensors[inputs[0]].data.astype(np.int64)
        x2 = b.astype(np.int64)
        out[...] = main_formula(x1, x2)
        for formula, positions in extras:
            flat1 = np.broadcast_to(x1, shape).reshape(-1)[positions]
            flat2 = np.broadcast_to(x2, shape).reshape(-1)[positions]
            out.reshape(-1)[positions] = formula(flat1, flat2)

    return compute


def _int16_table_runner(formulas: dict[str, Separable], groups, shape, check) -> Callable:
    """int16 inputs through a Separable formula: each input's part looked up in a table over the 65536
    values (indexed by the raw bits), then `combine` per element."""
    raw = np.arange(1 << 16, dtype=np.uint16).view(np.int16).astype(np.int64)
    tables = {
        path: (formulas[path].first(raw).astype(np.int32), formulas[path].second(raw).astype(np.int32))
        for path, _ in groups
    }
    main_path = groups[0][0]
    first_table, second_table = tables[main_path]
    combine = formulas[main_path].combine
    extras = [(tables[path], formulas[path].combine, positions) for path, positions in groups[1:]]

    def compute(tensors, inputs, out):
        b = tensors[inputs[1]].data
        if check is not None:
            check(b)
        bits1, bits2 = tensors[inputs[0]].data.view(np.uint16), b.view(np.uint16)
        out[...] = combine(first_table.take(bits1), second_table.take(bits2))
        for (table1, table2), extra, positions in extras:
            flat1 = np.broadcast_to(bits1, shape).reshape(-1)[positions]
            flat2 = np.broadcast_to(bits2, shape).reshape(-1)[positions]
            out.reshape(-1)[positions] = extra(table1.take(flat1), table2.take(flat2))

    return compute


def quantized_prepare(context, node, op_name: str, first, second, output, kernel_type: KernelType) -> None:
    """Prepare of ADD/SUB/MUL/DIV/SQUARED_DIFFERENCE on quantized int8/uint8/int16 inputs: leaves the
    BinaryData of the lookup runner."""
    kind = first.type
    shape = broadcast_shape(first.shape, second.shape)
    walk = broadcast_walk(first.shape, second.shape)
    size = math.prod(shape)
    block = broadcast_block = 0  # SIMD widths; 0: the kernel is scalar
    check = None
    if op_name in ("ADD", "SUB"):
        check_scales(op_name, first, second, output)
        check_zero_points(op_name, kind, first, second, output)
        sign = 1 if op_name == "ADD" else -1
        if kind == T.INT16 and pot_int16(node, first, second, output):
            first_shift, second_shift, low, high = pot_params(node, first, second, output, op_name)
            ensure(
                walk[0] == "elementwise" or op_name == "SUB",
                "ADD of power-of-two scaled int16 inputs does not broadcast in TFLite.",
            )
            formulas = pot_formulas(first_shift, second_shift, sign, low, high)
        else:
            params = add_sub_params(node, first, second, output, op_name)
            simd = kernel_type is OPTIMIZED and op_name == "ADD"
            formulas = add_sub_formulas(params, sign, kind, simd)
            if BLOCK in formulas and not simd:  # int16 SUB's loop as the compiler vectorized it
                block = 4 if walk[0] == "elementwise" else 0
            elif simd and kind == T.INT16:
                block = 16 if walk[0] == "elementwise" else 0  # int16 broadcasts in the reference loop
            elif simd:
                block, broadcast_block = (16, 8) if kind == T.INT8 else (8, 8)
    elif op_name == "MUL":
        ensure(
            output.type == kind or (kind == T.INT16 and output.type in (T.INT8, T.UINT8)),
            "Unsupported combination of input and output types in Mul.",
        )
        check_scales(op_name, first, second, output)
        # float arithmetic in TFLite (the scales are floats), widened to double afterwards
        real = float(
            np.float32(first.params.scale) * np.float32(second.params.scale) / np.float32(output.params.scale)
        )
        params = product_params(node, first, second, output, real, op_name)
        if kind == T.INT16 and output.type != T.INT16:
            ensure(walk[0] == "elementwise", "MUL of int16 inputs into an 8-bit output does not broadcast.")
            formulas = int16_to_8bit_mul_formulas(output.params.zero_point, params.low, params.high)
        elif kind == T.INT16:
            check_zero_points(op_name, kind, first, second, output)
            formulas = mul_formulas(params, kind, simd=False)
        else:
            check_zero_points(op_name, kind, first, second, output)
            simd = kernel_type is OPTIMIZED
            formulas = mul_formulas(params, kind, simd)
            if simd:
                block = broadcast_block = 16 if kind == T.INT8 else 8
    elif op_name == "DIV":
        check_scales(op_name, first, second, output)
        check_zero_points(op_name, kind, first, second, output)
        real = float(
            np.float32(first.params.scale)
            / (np.float32(second.params.scale) * np.float32(output.params.scale))
        )
        params = product_params(node, first, second, output, real, op_name)
        formulas = div_formulas(params)
        check = zero_check(second, "data[i] != zero_point was not true.", second.params.zero_point)
    else:  # SQUARED_DIFFERENCE
        check_scales(op_name, first, second, output)
        check_zero_points(op_name, kind, first, second, output)
        params = squared_difference_params(first, second, output)
        formulas = squared_difference_formulas(params)
    if walk[0] != "elementwise" and not (walk[0] == "fivefold" and (block or broadcast_block)):
        output_shape(first, second, op_name)  # TFLite's broadcast loop: its rank limit
    groups = path_groups(walk, size, block, broadcast_block)
    context.resize_tensor(output, shape)
    node.user_data = BinaryData(
        _quantized_runner(context, node, formulas, groups, check), node.user_data.scratch
    )


def quantized_arithmetic(op_name: str, first, output) -> bool:
    """Whether TFLite takes its quantized path: always for int8/uint8; for int16, ADD and MUL only with
    a quantized output (else plain integer arithmetic), SUB and DIV always. The inputs and output must
    then all carry quantization."""
    if first.type not in QUANTIZED:
        return False
    if first.type == T.INT16 and op_name in ("ADD", "MUL") and output.quantization is None:
        return False
    for tensor, what in ((first, "input"), (output, "output")):
        ensure(
            tensor.quantization is not None,
            f"{op_name} of {type_name(first.type)} tensors needs a quantized {what}.",
        )
    return True
