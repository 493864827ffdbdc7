"""CPU kernels of `nuvec.graph.custom`: both pass some of their inputs through."""

from __future__ import annotations

from nuvec.backends.numpy.registry import kernel
from nuvec.graph.custom import CustomTransforms, Depends


@kernel(CustomTransforms)
def custom_transforms(p, *inputs):
    outs = inputs[p.num_primals:]
    return outs[0] if len(outs) == 1 else tuple(outs)


@kernel(Depends)
def depends(p, *inputs):
    outs = inputs[: p.count]
    return outs[0] if len(outs) == 1 else tuple(outs)
