"""The Python API's tensor listing as LiteRT's: which tensors get_tensor_details() shows, under which index.

LiteRT lists every typed tensor of a subgraph in the order it was added: the model's, then those its
kernels add (im2col buffers, hybrid quantization scratch...) and those delegates add. pytflite's kernels
keep other scratch, hidden here (Tensor.kernel_scratch). The listing lives beside the Interpreter, not in
core: `ListedTemporaries` observes a subgraph (core/observer.py) and keeps a tensor for each temporary
LiteRT's kernel for a node would add (`rules/`: per op, what LiteRT 2.3's kernels add under each resolver
type, including which nodes XNNPACK would take); `TensorNumbering` gives every listed tensor LiteRT's
index. The Interpreter switches it off with `experimental_list_litert_temporaries=False` (the batch
Predictor does): the numbering then lists the subgraph's own tensors only.
"""

from .numbering import TensorNumbering
from .rules import LiteRTKernels
from .temporaries import ListedTemporaries

__all__ = ["ListedTemporaries", "LiteRTKernels", "TensorNumbering"]
