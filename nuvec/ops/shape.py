"""Shape operations: reshape, transpose, broadcast, expand/squeeze, and their relatives."""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import as_array, broadcast_shapes, check_shape, normalize_axis
from nuvec.ops.families import Linear, apply, move_batch_to_front
from nuvec.graph.primitive import Primitive

__all__ = ["reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "moveaxis"]


class Reshape(Linear, Primitive):
    """Same elements in row-major order, new `shape`."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def params(self):
        return (self.shape,)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(Reshape(primals[0].shape), cotangents[0])]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Reshape((x.shape[0], *self.shape)), x)], [0]


class Transpose(Linear, Primitive):
    """Permutes axes: output axis i is input axis `axes[i]`."""

    __slots__ = ("axes",)

    def __init__(self, axes: tuple[int, ...]):
        self.axes = axes

    def params(self):
        return (self.axes,)

    def output_specs(self, inputs):
        x = inputs[0]
        return ((tuple(x.shape[a] for a in self.axes), x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return [apply(Transpose(tuple(inverse)), cotangents[0])]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Transpose((0, *(a + 1 for a in self.axes))), x)], [0]


class BroadcastTo(Linear, Primitive):
    """Broadcasts to `shape` (NumPy rule); the derivative sums over the broadcast axes."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def params(self):
        return (self.shape,)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        from nuvec.ops.reduction import sum as reduce_sum

        x = primals[0]
        lead = len(self.shape) - x.ndim
        axes = list(range(lead)) + [
            lead + i for i, d in enumerate(x.shape) if d == 1 and self.shape[lead + i] != 1
        ]
        g = cotangents[0]
        if axes:
            g = reduce_sum(g, axis=axes, keepdims=True)
        return [reshape(g, x.shape) if g.shape != x.shape else g]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        # Align the unbatched dims to the right of the target, keeping the batch axis first.
        pad = len(self.shape) - (x.ndim - 1)
        if pad:
            x = apply(Reshape((x.shape[0], *([1] * pad), *x.shape[1:])), x)
        return [apply(BroadcastTo((x.shape[0], *self.shape)), x)], [0]


def reshape(a: Any, /, shape: Sequence[int], *, stream: Any = None) -> Array:
    """`a` with a new shape of the same size; one dimension may be -1 (inferred).

    Raises:
        ValueError: if the sizes differ or more than one dimension is -1.
    """
    a = as_array(a, "reshape")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: only one dimension can be -1, got {shape}")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or a.size % known:
            raise ValueError(f"reshape: cannot reshape array of shape {a.shape} into {shape}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    check_shape(shape, "reshape")
    size = 1
    for d in shape:
        size *= d
    if size != a.size:
        raise ValueError(f"reshape: cannot reshape array of shape {a.shape} into {shape}")
    if shape == a.shape:
        return a
    return record1(Reshape(shape), (a,), to_stream(stream))


def transpose(a: Any, /, axes: Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """Permutes the axes of `a` (reverses them when `axes` is None).

    Raises:
        ValueError: if `axes` is not a permutation of the array's axes.
    """
    a = as_array(a, "transpose")
    if axes is None:
        perm = tuple(range(a.ndim - 1, -1, -1))
    else:
        perm = tuple(normalize_axis(x, a.ndim, "transpose") for x in axes)
        if len(perm) != a.ndim or sorted(perm) != list(range(a.ndim)):
            raise ValueError(
                f"transpose: axes {tuple(axes)} are not a permutation for shape {a.shape}"
            )
    if perm == tuple(range(a.ndim)):
        return a
    return record1(Transpose(perm), (a,), to_stream(stream))


def broadcast_to(a: Any, /, shape: Sequence[int], *, stream: Any = None) -> Array:
    """`a` broadcast to `shape` (NumPy's rule).

    Raises:
        ValueError: if `a`'s shape cannot be broadcast to `shape`.
    """
    a = as_array(a, "broadcast_to")
    shape = check_shape(shape, "broadcast_to")
    if broadcast_shapes(a.shape, shape, op="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {a.shape} to {shape}")
    if shape == a.shape:
        return a
    return record1(BroadcastTo(shape), (a,), to_stream(stream))


def expand_dims(a: Any, /, axis: int | Sequence[int], *, stream: Any = None) -> Array:
    """`a` with size-1 dimensions inserted at `axis` (positions in the result).

    Raises:
        ValueError: if an axis is out of range or repeated.
    """
    a = as_array(a, "expand_dims")
    axes = [axis] if isinstance(axis, int) else list(axis)
    ndim = a.ndim + len(axes)
    positions = sorted(normalize_axis(x, ndim, "expand_dims") for x in axes)
    if len(set(positions)) != len(positions):
        raise ValueError(f"expand_dims: repeated axis in {tuple(axes)}")
    shape = list(a.shape)
    for p in positions:
        shape.insert(p, 1)
    return record1(Reshape(tuple(shape)), (a,), to_stream(stream))


def squeeze(a: Any, /, axis: int | Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """`a` without size-1 dimensions (all of them, or those in `axis`).

    Raises:
        ValueError: if a listed axis does not have size 1.
    """
    a = as_array(a, "squeeze")
    if axis is None:
        drop = {i for i, d in enumerate(a.shape) if d == 1}
    else:
        axes = [axis] if isinstance(axis, int) else list(axis)
        drop = {normalize_axis(x, a.ndim, "squeeze") for x in axes}
        for i in drop:
            if a.shape[i] != 1:
                raise ValueError(f"squeeze: cannot squeeze axis {i} of size {a.shape[i]} "
                                 f"in shape {a.shape}")
    shape = tuple(d for i, d in enumerate(a.shape) if i not in drop)
    if shape == a.shape:
        return a
    return record1(Reshape(shape), (a,), to_stream(stream))


def moveaxis(a: Any, /, source: int, destination: int, *, stream: Any = None) -> Array:
    """`a` with axis `source` moved to position `destination`."""
    a = as_array(a, "moveaxis")
    src = normalize_axis(source, a.ndim, "moveaxis")
    dst = normalize_axis(destination, a.ndim, "moveaxis")
    order = [i for i in range(a.ndim) if i != src]
    order.insert(dst, src)
    return transpose(a, order, stream=stream)
