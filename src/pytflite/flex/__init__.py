"""Select TensorFlow ops (Flex): TF ops a converter left in a model, run by NumPy kernels.

A model converted with SELECT_TF_OPS carries nodes whose custom code is "Flex" + a TF op name and whose
options hold the TF NodeDef. The interpreter gives every such node the Flex kernel (kernel.py) when its
resolver has nothing under that name, as TensorFlow's interpreter applied its Flex delegate: such models
run with the default resolver. The kernel decodes the NodeDef (node_def.py, with the message classes of
protos.py) and runs the TF kernel of its op from the registry (registry.py), which the modules of
kernels/ fill and `register` extends:

    @pytflite.flex.register("MyTfOp", types={"T": ["float32"]})
    def my_tf_op(node, x):
        return x * node.attr("scale")

docs/flex.md lists the registered ops.
"""

from __future__ import annotations

from . import kernels as _kernels  # noqa: F401 (registers pytflite's TF kernels)
from .node_def import TfNode
from .registry import TfKernel, kernel_for, register, registered_kernels, unregister
from .tensor_list import TensorList

__all__ = ["TensorList", "TfKernel", "TfNode", "kernel_for", "register", "registered_kernels", "unregister"]
