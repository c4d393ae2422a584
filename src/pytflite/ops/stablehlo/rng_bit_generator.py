"""STABLEHLO_RNG_BIT_GENERATOR: random bits from a counter-based generator, and the state after them.

The uint64 state vector is read as uint32 words (little endian). Its first two words are the key, the
next two a 64-bit counter that each block advances by one (carrying from word 2 into word 3, never
further). Threefry-2x32 (20 rounds) takes a u64[2] state and yields 2 words a block; Philox-4x32-10
(also DEFAULT) takes u64[2] or u64[3] and yields 4 words a block, the counter's upper two words being
state words 4 and 5 for u64[3] and, as LiteRT has it, the key words again for u64[2]. The output's
bytes are the words in order (a 64-bit element is two words), the last block cut short; the output
state is the input state with words 0..3 replaced by the key and the advanced counter.
"""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import KernelError, ensure, ensure_condition_eq, ensure_type_condition
from ...model.options import RngAlgorithm
from ..common import check_arity, input_tensor, output_tensor
from ..random.philox import philox_words
from ..registry import register_builtin

T = TensorType
_U32 = np.uint32
_U64 = (1 << 64) - 1
_THREEFRY_PARITY = 0x1BD11BDA
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry_words(key: tuple[int, int], counter: int, blocks: int) -> np.ndarray:
    """Threefry-2x32, 20 rounds, on counters counter, counter + 1, ... (mod 2**64): 2 * blocks words."""
    low = np.uint64(counter) + np.arange(blocks, dtype=np.uint64)  # wraps modulo 2**64
    x0, x1 = (low & np.uint64(0xFFFFFFFF)).astype(_U32), (low >> np.uint64(32)).astype(_U32)
    keys = (key[0], key[1], key[0] ^ key[1] ^ _THREEFRY_PARITY)
    x0 += _U32(key[0])
    x1 += _U32(key[1])
    for group in range(5):  # four rounds each, then a key injection
        for rotation in _THREEFRY_ROTATIONS[group % 2]:
            x0 += x1
            x1 = (x1 << _U32(rotation)) | (x1 >> _U32(32 - rotation))
            x1 ^= x0
        x0 += _U32(keys[(group + 1) % 3])
        x1 += _U32((keys[(group + 2) % 3] + group + 1) & 0xFFFFFFFF)
    return np.stack((x0, x1), axis=1).reshape(-1)


def _philox(key: tuple[int, int], counter: int, high: int, blocks: int) -> np.ndarray:
    """Philox blocks whose 64-bit counter wraps without carrying into its upper words `high`."""
    first = min(blocks, (1 << 64) - counter)
    words = philox_words(key, (high << 64) | counter, first)
    if first == blocks:
        return words
    return np.concatenate((words, philox_words(key, high << 64, blocks - first)))


def rng_bit_generator_prepare(context, node):
    check_arity(node, 1, 2)
    state = input_tensor(context, node, 0)
    ensure_type_condition(state, T.UINT64, "initial_state->type != kTfLiteUInt64")
    ensure_condition_eq(len(state.shape), 1, "NumDimensions(initial_state) != 1")
    key, output = output_tensor(context, node, 0), output_tensor(context, node, 1)
    ensure_type_condition(key, T.UINT64, "output_key->type != kTfLiteUInt64")
    ensure(key.shape == state.shape, "HaveSameShapes(output_key, initial_state) was not true.")
    ensure(
        output.type in (T.INT32, T.INT64, T.UINT32, T.UINT64),
        "output->type == kTfLiteInt32 || output->type == kTfLiteInt64 || output->type == kTfLiteUInt32 "
        "|| output->type == kTfLiteUInt64 was not true.",
    )
    context.resize_tensor(key, key.shape)
    context.resize_tensor(output, output.shape)


def rng_bit_generator_invoke(context, node):
    tensors = context.tensors
    state = tensors[node.inputs[0]]
    output = tensors[node.outputs[1]]
    ensure(not output.is_dynamic, "!IsDynamicTensor(output) was not true.")
    words = np.ascontiguousarray(state.data).view(_U32)
    out = output.data.reshape(-1).view(_U32)  # a view of the output's memory, 64-bit elements as 2 words
    key = (int(words[0]), int(words[1]))
    counter = int(words[2]) | int(words[3]) << 32
    algorithm = node.builtin_data.algorithm
    if algorithm == RngAlgorithm.THREEFRY:
        ensure_condition_eq(state.shape[0], 2, "SizeOfDimension(initial_state, 0) != 2")
        blocks = -(-out.size // 2)
        bits = threefry_words(key, counter, blocks)
    elif algorithm in (RngAlgorithm.PHILOX, RngAlgorithm.DEFAULT):
        size = state.shape[0]
        ensure(size in (2, 3), "state_dim_0_size == 2 || state_dim_0_size == 3 was not true.")
        upper = words[4:6] if size == 3 else words[0:2]
        blocks = -(-out.size // 4)
        bits = _philox(key, counter, int(upper[0]) | int(upper[1]) << 32, blocks)
    else:
        raise KernelError(f"Unknown RNG algorithm: {int(algorithm)}")
    out[...] = bits[: out.size]
    advanced = (counter + blocks) & _U64
    new_state = words.copy()
    new_state[2], new_state[3] = advanced & 0xFFFFFFFF, advanced >> 32
    tensors[node.outputs[0]].data.reshape(-1)[...] = new_state.view(np.uint64)


register_builtin(
    BuiltinOperator.STABLEHLO_RNG_BIT_GENERATOR,
    (1, 1),
    types=(T.UINT64,),
    prepare=rng_bit_generator_prepare,
    invoke=rng_bit_generator_invoke,
    stateful=True,
)
