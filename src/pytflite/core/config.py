"""SubgraphConfig: how the interpreter wants a subgraph run, given once, at construction.

The Interpreter's options (limits, threads, host profile, summation order, tensor preservation, the
delegate partitioning switches) reach each Subgraph as one frozen value, before any kernel's init runs,
so no kernel or delegate ever sees a half-configured subgraph.
"""

from __future__ import annotations

import dataclasses

from ..fidelity.host import HostProfile
from .limits import Limits


@dataclasses.dataclass(frozen=True)
class SubgraphConfig:
    """limits: the caps on tensor sizes, arena bytes and WHILE iterations, or None for none.
    host: the machine whose LiteRT the host-dependent kernels reproduce (Context.host); None: this one.
    num_threads: Context.recommended_num_threads (-1: no preference, as TfLiteContext's default).
    exact_float_summation: Context.exact_float_summation (LiteRT's float summation order in the float
        convolutions).
    preserve_all_tensors: no arena reuse, so every intermediate stays readable after invoke.
    disable_delegate_clustering, disable_delegate_node_fusion: TFLite's partitioning switches.
    """

    limits: Limits | None = None
    host: HostProfile | None = None
    num_threads: int = -1
    exact_float_summation: bool = False
    preserve_all_tensors: bool = False
    disable_delegate_clustering: bool = False
    disable_delegate_node_fusion: bool = False
