"""Rule families: base classes giving the common output specs and batching rules.

A concrete primitive subclasses one and writes only what is special (usually `vjp`/`jvp`):

- `Unary`: elementwise, one input; batching keeps the batch axis.
- `Binary`: elementwise on equal shapes; batching moves batch axes to the front and
  broadcasts an unbatched operand.
- `Reduction`: reduces `axes` keeping them as size-1 dimensions (the public op squeezes).
- `Flat`: elementwise, one input, no derivative (`flat_primitive` makes one by name).
- `Linear`: a mixin whose `jvp` applies the primitive to the tangents (one input).
"""

from __future__ import annotations

from typing import Sequence

from nuvec.graph.array import Array, handle, record1
from nuvec.graph.convert import scalar_array, stored_scalar
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import Dtype
from nuvec.graph.primitive import Primitive


def apply(primitive: Primitive, *inputs: Array) -> Array:
    """Records a single-output primitive on the current stream (rules use this)."""
    return record1(primitive, inputs, to_stream(None))


def ones(shape: tuple[int, ...], dtype: Dtype) -> Array:
    """The stored leaf of ones of `shape` (one element, cached): `grad`'s seed cotangent, and
    a rule's cotangent of ones moved to another shape (no reshape or broadcast node)."""
    return scalar_array(1.0, dtype, shape)


def is_ones(a: Array) -> bool:
    """Whether `a` is the leaf `ones(a.shape, a.dtype)`: a product with it is the other factor
    exactly (1 * x is x in IEEE arithmetic, NaN, infinities and -0.0 included). Makes no leaf:
    a leaf of any other shape (a parameter) is not one."""
    return a.primitive is None and a._node is stored_scalar(1.0, a.dtype, a.shape)


def times(a: Array, b: Array) -> Array | None:
    """`a * b` when one factor `is_ones` and both have one shape and dtype (a fresh handle on
    the other factor), else None: rules skip the pass NumPy code would not write."""
    if a.shape != b.shape or a.dtype is not b.dtype:
        return None
    if is_ones(a):
        return handle(b._node, b._index)
    if is_ones(b):
        return handle(a._node, a._index)
    return None


def move_batch_to_front(x: Array, axis: int | None, size: int | None = None) -> Array:
    """`x` with its batch axis first; an unbatched `x` is broadcast along a new first axis."""
    if axis is None:
        assert size is not None
        return shape_ops.broadcast_to(shape_ops.expand_dims(x, 0), (size, *x.shape))
    return x if axis == 0 else shape_ops.moveaxis(x, axis, 0)


def batch_size(inputs: Sequence[Array], axes: Sequence[int | None]) -> int:
    for x, ax in zip(inputs, axes):
        if ax is not None:
            return x.shape[ax]
    raise ValueError("vmap: no batched input")


class Unary(Primitive):
    """Elementwise primitive of one input; the output has the input's shape."""

    __slots__ = ()

    def out_dtype(self, dtype: Dtype) -> Dtype:
        return dtype

    def output_specs(self, inputs):
        x = inputs[0]
        return ((x.shape, self.out_dtype(x.dtype)),)

    def vmap(self, inputs, axes):
        return [apply(self, inputs[0])], [axes[0]]


class Binary(Primitive):
    """Elementwise primitive of two inputs of equal shape and dtype (the op broadcasts)."""

    __slots__ = ()

    def out_dtype(self, dtype: Dtype) -> Dtype:
        return dtype

    def output_specs(self, inputs):
        a = inputs[0]
        return ((a.shape, self.out_dtype(a.dtype)),)

    def vmap(self, inputs, axes):
        return [apply(self, *batch_inputs(inputs, axes))], [0]


def batch_inputs(inputs: Sequence[Array], axes: Sequence[int | None]) -> list[Array]:
    """Every input with the batch axis first and equal batched shapes (for elementwise rules)."""
    size = batch_size(inputs, axes)
    return [move_batch_to_front(x, ax, size) for x, ax in zip(inputs, axes)]


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` reduced over `axes` (distinct, in range) with them kept as size 1."""
    if len(axes) == len(shape):  # every axis (the common `sum(x)`): no walk over them
        return (1,) * len(shape)
    kept = list(shape)
    for i in axes:
        kept[i] = 1
    return tuple(kept)


def squeezed_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` without `axes` (distinct, in range)."""
    if len(axes) == len(shape):  # every axis: a scalar
        return ()
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class Reduction(Primitive):
    """Reduces `axes` of one input, keeping them as size-1 dimensions."""

    __slots__ = ("axes",)

    def __init__(self, axes: tuple[int, ...]):
        self.axes = tuple(axes)

    def params(self):
        return (self.axes,)

    def out_dtype(self, dtype: Dtype) -> Dtype:
        return dtype

    def output_specs(self, inputs):
        x = inputs[0]
        return ((kept_shape(x.shape, self.axes), self.out_dtype(x.dtype)),)

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(type(self)(tuple(a + 1 for a in self.axes)), x)], [0]


class Flat(Unary):
    """No derivative flows through: piecewise-constant functions (rounding, sign), boolean
    results, and `stop_gradient`."""

    abstract = True
    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None]

    def jvp(self, primals, tangents, outputs):
        return [None]


def flat_primitive(name: str, doc: str, module: str) -> type:
    """A `Flat` primitive class (no gradient) named `name`, defined in `module`."""
    return type(name, (Flat,), {"__slots__": (), "__doc__": doc, "__module__": module,
                                 "__qualname__": name})


class Linear:
    """Mixin for single-input linear primitives: the tangent goes through the same primitive."""

    __slots__ = ()

    def jvp(self, primals, tangents, outputs):
        return [apply(self, tangents[0])]  # type: ignore[arg-type]


# The shape operations the batching helpers call (imported last, as shape imports this module).
from nuvec.ops import shape as shape_ops  # noqa: E402
