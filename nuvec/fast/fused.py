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
from nuvec.ops.binary import Add, Multiply, Subtract
from nuvec.ops.comparison import Select
from nuvec.ops.families import Binary, Unary, batch_size, move_batch_to_front

__all__ = ["FusedElementwise", "ProductUpdate", "Step", "fetcher", "is_elementwise",
           "is_scaled_add", "scaled_add_refs"]

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


def is_scaled_add(p: FusedElementwise) -> bool:
    """Whether `p` is `c + m`, `m + c` or `c - m` with `m` a product of two inputs and `c` a
    third, of one float32 or float64 dtype: the form `axpy` computes when a factor is one
    value.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import FusedElementwise, is_scaled_add
        >>> mul, sub = mx.multiply(mx.ones(1), 1).primitive, mx.subtract(mx.ones(1), 1).primitive
        >>> steps = ((mul, (1, 2), mx.float32), (sub, (0, 3), mx.float32))  # c - a * b
        >>> is_scaled_add(FusedElementwise(steps, (4,)))
        True
    """
    return scaled_add_refs(p) is not None


def scaled_add_refs(p: FusedElementwise) -> tuple[int, int, int, float] | None:
    """(c, first factor, second factor, sign of the product) of a scaled add (see
    `is_scaled_add`), as input positions; None for any other program.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import FusedElementwise, scaled_add_refs
        >>> mul, add = mx.multiply(mx.ones(1), 1).primitive, mx.add(mx.ones(1), 1).primitive
        >>> steps = ((mul, (0, 1), mx.float32), (add, (3, 2), mx.float32))  # a * b + c
        >>> scaled_add_refs(FusedElementwise(steps, (4,)))
        (2, 0, 1, 1.0)
    """
    if len(p.steps) != 2:
        return None
    (product, factors, dtype), (total, terms, dtype_out) = p.steps
    if (type(product) is not Multiply or dtype != dtype_out
            or dtype.name not in ("float32", "float64") or max(factors) > 2):
        return None
    step = 3  # the product's ref: it follows the three inputs
    if type(total) is Add and step in terms:
        c = terms[1] if terms[0] == step else terms[0]
        sign = 1.0
    elif type(total) is Subtract and terms[1] == step:
        c, sign = terms[0], -1.0
    else:
        return None
    if sorted((c, *factors)) != [0, 1, 2]:
        return None
    return c, factors[0], factors[1], sign


class ProductUpdate(FastOp):
    """A scaled add `update` (`c + s * x`, `s * x + c` or `c - s * x`, see `scaled_add_refs`)
    whose `x` is the matrix product `a @ b`, as one node: an optimizer's `p - lr * (g.T @ h)`,
    which `compile` finds where the product is read by the update alone. Its inputs are `a`,
    `b`, then `update`'s inputs without `x` (at position `x` among them); `product` is the
    recorded `Matmul`. The CPU computes it as one BLAS gemm accumulating into `c` (no buffer
    for the product, no pass over it); the fallback graph records the product, then the
    update.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import FusedElementwise, ProductUpdate
        >>> from nuvec.graph.array import record1
        >>> from nuvec.graph.device import to_stream
        >>> a, b, c = mx.ones((2, 3)), mx.ones((3, 2)), mx.ones((2, 2))
        >>> mul, sub = mx.multiply(c, 1).primitive, mx.subtract(c, 1).primitive
        >>> update = FusedElementwise(((mul, (1, 2), mx.float32), (sub, (0, 3), mx.float32)),
        ...                           (2, 2))  # inputs c, s, x: c - s * x
        >>> p = ProductUpdate(update, 2, (a @ b).primitive)
        >>> record1(p, [a, b, c, mx.array(0.5)], to_stream(None)).tolist()
        [[-0.5, -0.5], [-0.5, -0.5]]
    """

    __slots__ = ("update", "x", "product")
    op = "compile"

    def __init__(self, update: FusedElementwise, x: int, product: Primitive):
        self.update, self.x, self.product = update, x, product

    def params(self):
        return (self.update, self.x, self.product)

    def __repr__(self) -> str:
        return f"ProductUpdate({self.update!r}, x={self.x})"

    def arity(self, inputs: Sequence[Array]) -> int:
        return len(inputs)

    def output_specs(self, inputs):
        return self.update.output_specs(inputs)

    def update_inputs(self, inputs: Sequence[Any], x: Any) -> list[Any]:
        """`update`'s inputs from this node's (`a`, `b` and the rest) and the product `x`."""
        rest = list(inputs[2:])
        return [*rest[:self.x], x, *rest[self.x:]]

    def fallback(self, inputs: Sequence[Array]) -> list[Array]:
        """The product, then the update, recorded on the current stream."""
        s = to_stream(None)
        x = record1(self.product, list(inputs[:2]), s)
        return [record1(self.update, self.update_inputs(inputs, x), s)]
