"""`FusedElementwise`: a chain of elementwise primitives recorded as one node (by `compile`).

The node's inputs broadcast (NumPy's rule, right-aligned) to its `shape`; its `steps` apply
elementwise primitives in order, each to node inputs and earlier steps' results, and the last
step is the output. Backends compute it in blocks (CPU) or one generated kernel (GPU). Its
fallback graph records the same primitives one by one, so derivatives go through that graph;
batching records one wider fused node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from nuvec.fast.base import FastOp
from nuvec.graph.array import Array, record1
from nuvec.graph.convert import AsType
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import Dtype
from nuvec.graph.primitive import Primitive
from nuvec.ops import shape as shape_ops
from nuvec.ops.comparison import Select
from nuvec.ops.families import Binary, Unary, batch_size, move_batch_to_front

__all__ = ["FusedElementwise", "Step", "fetcher", "is_elementwise"]

# One step: (primitive, refs, dtype); ref r < number of inputs names node input r, a larger
# one names the result of step r - number of inputs.
Step = tuple[Primitive, tuple[int, ...], Dtype]
_ELEMENTWISE = (Unary, Binary, AsType, Select)


def fetcher(positions: Sequence[int]) -> Callable[[Sequence[Any]], tuple]:
    """A function giving the values at `positions` of a list as a tuple: how a replayed
    program's steps read their arguments (an `itemgetter`, cheaper than a comprehension).

    Example:
        >>> from nuvec.fast.fused import fetcher
        >>> fetcher((2, 0))(["a", "b", "c"]), fetcher((1,))(["a", "b"]), fetcher(())(["a"])
        (('c', 'a'), ('b',), ())
    """
    if len(positions) > 1:
        return itemgetter(*positions)
    if positions:
        return lambda values, i=positions[0]: (values[i],)
    return lambda values: ()


def is_elementwise(primitive: Primitive) -> bool:
    """Whether `primitive` maps equal-shaped inputs to one output element by element.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import is_elementwise
        >>> (is_elementwise(mx.exp(mx.ones(2)).primitive),
        ...  is_elementwise(mx.sum(mx.ones(2)).primitive))
        (True, False)
    """
    return isinstance(primitive, _ELEMENTWISE)


class FusedElementwise(FastOp):
    """Elementwise `steps` over inputs broadcast to `shape`, as one node.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import FusedElementwise
        >>> from nuvec.graph.array import record1
        >>> from nuvec.graph.device import to_stream
        >>> exp, add = mx.exp(mx.ones(1)).primitive, mx.add(mx.ones(1), 1).primitive
        >>> p = FusedElementwise(((exp, (0,), mx.float32), (add, (2, 1), mx.float32)), (2,))
        >>> y = record1(p, [mx.array([0.0, 1.0]), mx.array(1.0)], to_stream(None))
        >>> [round(v, 4) for v in y.tolist()]
        [2.0, 3.7183]
    """

    __slots__ = ("shape", "steps")
    op = "compile"

    def __init__(self, steps: Sequence[Step], shape: tuple[int, ...]):
        self.steps = tuple(steps)
        self.shape = tuple(shape)

    def params(self):
        return (self.steps, self.shape)

    def __repr__(self) -> str:
        names = " -> ".join(p.name for p, _, _ in self.steps)
        return f"FusedElementwise({names}, {self.shape})"

    def arity(self, inputs: Sequence[Array]) -> int:
        return len(inputs)

    def output_specs(self, inputs):
        return ((self.shape, self.steps[-1][2]),)

    def fallback(self, inputs: Sequence[Array]) -> list[Array]:
        """The steps recorded one by one on the current stream (inputs broadcast first)."""
        s = to_stream(None)
        values = [x if x.shape == self.shape else shape_ops.broadcast_to(x, self.shape)
                  for x in inputs]
        for primitive, refs, _ in self.steps:
            values.append(record1(primitive, [values[r] for r in refs], s))
        return [values[-1]]

    def vmap(self, inputs, axes):
        # elementwise: batch axes go first, right-aligned under a fused node one axis wider
        size, rank = batch_size(inputs, axes), len(self.shape)
        moved = []
        for x, ax in zip(inputs, axes):
            if ax is not None:
                x = move_batch_to_front(x, ax)
                if x.ndim - 1 < rank:
                    x = shape_ops.reshape(x, (size, *[1] * (rank - x.ndim + 1), *x.shape[1:]))
            moved.append(x)
        wider = FusedElementwise(self.steps, (size, *self.shape))
        return [record1(wider, moved, to_stream(None))], [0]
