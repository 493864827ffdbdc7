"""`depends`: pass arrays through, evaluating other arrays before them."""

from __future__ import annotations

from typing import Sequence

from nuvec.graph.array import Array, record
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive

__all__ = ["depends"]


class Depends(Primitive):
    """Outputs = the first `count` inputs; the rest are dependencies evaluated before them."""

    __slots__ = ("count",)

    def __init__(self, count: int):
        self.count = count

    def params(self):
        return (self.count,)

    def output_specs(self, inputs):
        return tuple((x.shape, x.dtype) for x in inputs[: self.count])

    def vjp(self, primals, cotangents, argnums, outputs):
        return [cotangents[i] if i < self.count else None for i in argnums]

    def jvp(self, primals, tangents, outputs):
        return list(tangents[: self.count])

    def vmap(self, inputs, axes):
        return record(self, inputs, to_stream(None)), list(axes[: self.count])


def depends(
    inputs: Array | Sequence[Array], dependencies: Array | Sequence[Array]
) -> Array | list[Array]:
    """`inputs` unchanged, but evaluating them first evaluates `dependencies`.

    Gradients flow to `inputs` only.

    Args:
        inputs: an array or arrays to pass through.
        dependencies: an array or arrays that must be computed before the results are.

    Returns:
        One array per input, equal to it (a single array for a single input array).

    Raises:
        TypeError: if an entry is not an array.

    Example:
        >>> import nuvec as mx
        >>> (y,) = mx.depends([mx.array(1.0)], [mx.array(2.0)])
        >>> y.item()
        1.0
    """
    if isinstance(inputs, Array):
        return depends([inputs], dependencies)[0]
    if isinstance(dependencies, Array):
        dependencies = [dependencies]
    for what, values in (("inputs", inputs), ("dependencies", dependencies)):
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"depends: {what} must be an array or a list or tuple of arrays, "
                            f"got {values!r} ({type(values).__name__})")
        for v in values:
            if not isinstance(v, Array):
                raise TypeError(f"depends: {what} must be arrays, got {type(v).__name__}")
    if not inputs:
        return []
    return record(Depends(len(inputs)), [*inputs, *dependencies], to_stream(None))
