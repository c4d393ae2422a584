"""SKIP_GRAM: the skip-grams of a sentence (the first string of the input): every n-gram of its words
(all of 1..n with include_all_ngrams) whose consecutive words are at most max_skip_size words apart,
joined by single spaces, in TFLite's order.

TFLite splits words at C whitespace, but looks at the first character only as a word start: a sentence
that begins with whitespace loses its first word (or keeps it with the leading whitespace when it is the
only one). We split the same way.
"""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

_WHITESPACE = frozenset(b" \t\n\v\f\r")


def skip_gram_prepare(context, node):
    check_arity(node, 1)
    ensure_type_condition(
        input_tensor(context, node, 0), TensorType.STRING, "input_tensor->type != kTfLiteString"
    )
    ensure_type_condition(
        output_tensor(context, node), TensorType.STRING, "output_tensor->type != kTfLiteString"
    )


def _words(sentence: bytes) -> list[bytes]:
    words, start = [], 0
    for i in range(1, len(sentence)):
        if sentence[i] in _WHITESPACE:
            if i > start and sentence[start] not in _WHITESPACE:
                words.append(sentence[start:i])
            start = i + 1
    if len(sentence) > start:
        words.append(sentence[start:])
    return words


def _skip_grams(words: list[bytes], size: int, max_skip: int, all_sizes: bool) -> list[bytes]:
    """TFLite's enumeration: a stack of word positions, grown while the next word is within reach and
    the stack is short of `size`, emitting the stacked words each time it has to shrink."""
    if size < 0 or len(words) < size:
        return []
    grams, stack, depth = [], [0] * size, 1
    while depth >= 0:
        if (
            depth < size
            and stack[depth] + 1 < len(words)
            and (depth == 0 or stack[depth] - stack[depth - 1] <= max_skip)
        ):
            stack[depth] += 1
            depth += 1
            if depth < size:
                stack[depth] = stack[depth - 1]
            continue
        if depth > 0 and (depth <= size if all_sizes else depth == size):
            grams.append(b" ".join(words[stack[i]] for i in range(depth)))
        depth -= 1
    return grams


def skip_gram_invoke(context, node):
    tensors = context.tensors
    sentences = tensors[node.inputs[0]].data
    ensure(sentences.size > 0, "SKIP_GRAM: the input holds no string")
    options = node.builtin_data
    grams = _skip_grams(
        _words(sentences.reshape(-1)[0]),
        options.ngram_size,
        options.max_skip_size,
        options.include_all_ngrams,
    )
    output = tensors[node.outputs[0]]
    context.resize_tensor(output, (len(grams),))
    output.data[:] = np.array(grams, dtype=object)  # via object: NumPy's bytes arrays drop trailing NULs


register_builtin(
    BuiltinOperator.SKIP_GRAM,
    (1, 1),
    types=(TensorType.STRING,),
    prepare=skip_gram_prepare,
    invoke=skip_gram_invoke,
)
