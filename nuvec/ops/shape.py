"""Shape operations: reshape, transpose, broadcast, expand/squeeze, flatten and relatives.

Slicing lives in `nuvec.ops.slicing`, joining and splitting in `nuvec.ops.join`, `atleast_*d`
in `nuvec.ops.atleast`.
"""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph.caller import public_caller
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Copy, Primitive
from nuvec.ops import reduction
from nuvec.ops.arguments import (as_array, bool_flag, check_shape, fresh, index_int, int_tuple,
                                  normalize_axis)
from nuvec.ops.arguments import broadcast_shapes as _broadcast_shapes
from nuvec.ops.families import Linear, apply, is_ones, move_batch_to_front, ones

__all__ = [
    "reshape", "flatten", "unflatten", "transpose", "permute_dims", "swapaxes", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "broadcast_arrays", "broadcast_shapes",
    "matrix_transpose", "contiguous",
]

Shape = tuple[int, ...]


class Reshape(Linear, Primitive):
    """Same elements in row-major order, new `shape`."""

    __slots__ = ("shape",)
    allocates = False  # a view of its input

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def params(self):
        return (self.shape,)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        g, shape = cotangents[0], primals[0].shape
        return [ones(shape, g.dtype) if is_ones(g) else apply(Reshape(shape), g)]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Reshape((x.shape[0], *self.shape)), x)], [0]


class Transpose(Linear, Primitive):
    """Permutes axes: output axis i is input axis `axes[i]`."""

    __slots__ = ("axes",)
    allocates = False  # a view of its input

    def __init__(self, axes: tuple[int, ...]):
        self.axes = axes

    def params(self):
        return (self.axes,)

    def output_specs(self, inputs):
        x = inputs[0]
        shape = x.shape
        return ((tuple([shape[a] for a in self.axes]), x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return [permuted(cotangents[0], tuple(inverse))]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Transpose((0, *(a + 1 for a in self.axes))), x)], [0]


def permuted(x: Array, perm: tuple[int, ...]) -> Array:
    """`x` with its axes permuted by `perm` inside rules: an unevaluated transpose that `perm`
    undoes gives back its input (a weight gradient's transpose and its transpose back, say)
    instead of a second node."""
    primitive = x.primitive
    if isinstance(primitive, Transpose):
        axes = primitive.axes
        if all(axes[p] == i for i, p in enumerate(perm)):
            return x.inputs[0]
    return apply(Transpose(perm), x)


class BroadcastTo(Linear, Primitive):
    """Broadcasts to `shape` (NumPy rule); the derivative sums over the broadcast axes."""

    __slots__ = ("shape",)
    allocates = False  # a view of its input

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def params(self):
        return (self.shape,)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [summed_to(cotangents[0], primals[0].shape)]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        # Align the unbatched dims to the right of the target, keeping the batch axis first.
        pad = len(self.shape) - (x.ndim - 1)
        if pad:
            x = apply(Reshape((x.shape[0], *([1] * pad), *x.shape[1:])), x)
        return [apply(BroadcastTo((x.shape[0], *self.shape)), x)], [0]


def reshape(a: Any, /, shape: Sequence[int], *, stream: Any = None) -> Array:
    """`a` with a new shape of the same size; one dimension may be -1 (inferred).

    Args:
        a: the input array.
        shape: the new shape (an int for 1-D).

    Returns:
        The reshaped array (`a` itself when the shape is unchanged).

    Raises:
        ValueError: if the sizes differ or more than one dimension is -1.

    Example:
        >>> import nuvec as mx
        >>> mx.reshape(mx.array([1, 2, 3, 4]), (2, -1)).shape
        (2, 2)
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "reshape")
    shape = _infer_shape(a, shape, "reshape")
    if shape == a.shape:
        return fresh(a)
    return record1(Reshape(shape), (a,), stream)


def _infer_shape(a: Array, shape: Any, op: str) -> Shape:
    shape = int_tuple(shape, op, "shape")
    if shape.count(-1) > 1:
        raise ValueError(f"{op}: only one dimension can be -1, got {shape}")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or a.size % known:
            raise ValueError(f"{op}: cannot reshape array of shape {a.shape} into {shape}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    check_shape(shape, op)
    size = 1
    for d in shape:
        size *= d
    if size != a.size:
        raise ValueError(f"{op}: cannot reshape array of shape {a.shape} into {shape}")
    return shape


def flatten(a: Any, /, start_axis: int = 0, end_axis: int = -1, *, stream: Any = None) -> Array:
    """`a` with axes `start_axis` through `end_axis` (inclusive) merged into one.

    A 0-d array becomes shape (1,). As in MLX, axes past either end are clamped to the first
    and last axis (`flatten(a, 0, 7)` of a 3-d array merges all three).

    Args:
        a: the input array.
        start_axis: the first axis to merge (negative counts from the end).
        end_axis: the last axis to merge (inclusive; negative counts from the end).

    Returns:
        The array with the merged axis.

    Raises:
        ValueError: if `end_axis` comes before `start_axis` (once clamped).
        TypeError: if an axis is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.flatten(mx.zeros((2, 3, 4)), 1).shape
        (2, 12)
    """
    a = as_array(a, "flatten")
    if a.ndim == 0:
        return reshape(a, (1,), stream=stream)
    # MLX's rule: negative axes count from the end, then both are clamped to the axes
    start = index_int(start_axis, "flatten", "start_axis")
    end = index_int(end_axis, "flatten", "end_axis")
    lo = max(start + a.ndim if start < 0 else start, 0)
    hi = min(end + a.ndim if end < 0 else end, a.ndim - 1)
    if hi < lo:
        raise ValueError(f"flatten: end_axis {end_axis} must come after start_axis {start_axis} "
                         f"for shape {a.shape}")
    return reshape(a, (*a.shape[:lo], -1 if a.size else _prod(a.shape[lo:hi + 1]),
                       *a.shape[hi + 1:]), stream=stream)


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for d in xs:
        n *= d
    return n


def unflatten(a: Any, /, axis: int, shape: Sequence[int], *, stream: Any = None) -> Array:
    """`a` with axis `axis` split into `shape` (one entry may be -1).

    Args:
        a: the input array.
        axis: the axis to split.
        shape: the sizes replacing it; their product is the axis' size.

    Returns:
        The array with `len(shape) - 1` more dimensions.

    Raises:
        ValueError: if `shape` is empty or its size does not match the axis.

    Example:
        >>> import nuvec as mx
        >>> mx.unflatten(mx.zeros((2, 12)), 1, (3, -1)).shape
        (2, 3, 4)
    """
    a = as_array(a, "unflatten")
    ax = normalize_axis(axis, a.ndim, "unflatten")
    shape = int_tuple(shape, "unflatten", "shape")
    if not shape:
        raise ValueError("unflatten: shape must not be empty")
    part = _infer_shape(_Sized(a.shape[ax]), shape, "unflatten")
    return reshape(a, (*a.shape[:ax], *part, *a.shape[ax + 1:]), stream=stream)


class _Sized:
    """Something with a shape and size (to reuse reshape's -1 inference on one axis)."""

    def __init__(self, n: int):
        self.size, self.shape = n, (n,)


def transpose(a: Any, /, axes: Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """Permutes the axes of `a` (reverses them when `axes` is None).

    Args:
        a: the input array.
        axes: output axis i is input axis `axes[i]`.

    Returns:
        The transposed array.

    Raises:
        ValueError: if `axes` is not a permutation of the array's axes.

    Example:
        >>> import nuvec as mx
        >>> mx.transpose(mx.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "transpose")
    n = a.ndim
    if axes is None:
        if n < 2:
            return fresh(a)
        return record1(Transpose(tuple(range(n - 1, -1, -1))), (a,), stream)
    axes = int_tuple(axes, "transpose", "axes")
    if len(axes) != n:
        raise ValueError(f"{public_caller('transpose')}: axes {axes} are not a permutation "
                         f"for shape {a.shape}")
    # Python ints (`int_tuple`): only their range is left to check, then the permutation
    perm = tuple([x if 0 <= x < n else normalize_axis(x, n, "transpose") for x in axes])
    identity = list(range(n))
    if sorted(perm) != identity:
        raise ValueError(f"{public_caller('transpose')}: axes {axes} are not a permutation "
                         f"for shape {a.shape}")
    if list(perm) == identity:
        return fresh(a)
    return record1(Transpose(perm), (a,), stream)


def permute_dims(a: Any, /, axes: Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """MLX's (and the array API's) second name for `transpose`: `a` with its axes permuted.

    Args:
        a: the input array.
        axes: a permutation of the axes; default reverses them.
        stream: the stream (or device) to record on.

    Returns:
        The permuted array.

    Raises:
        ValueError: if `axes` is not a permutation of `a`'s axes.

    Example:
        >>> import nuvec as mx
        >>> mx.permute_dims(mx.zeros((2, 3)), (1, 0)).shape
        (3, 2)
    """
    return transpose(a, axes, stream=stream)


def matrix_transpose(a: Any, /, *, stream: Any = None) -> Array:
    """`a` with its last two axes exchanged (a stack of matrices, each transposed).

    Args:
        a: an array of at least two dimensions.
        stream: the stream or device to run on.

    Returns:
        The array with its last two axes swapped (also `a.mT`).

    Raises:
        ValueError: if `a` has fewer than two dimensions.

    Example:
        >>> import nuvec as mx
        >>> mx.matrix_transpose(mx.zeros((5, 2, 3))).shape
        (5, 3, 2)
    """
    a = as_array(a, "matrix_transpose")
    if a.ndim < 2:
        raise ValueError(f"matrix_transpose: expected an array of at least 2 dimensions, got "
                         f"shape {a.shape}")
    return transpose(a, (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2), stream=stream)


class Contiguous(Copy):
    """The identity (`Copy`'s rules), computed into row-major (C-order) memory where the input
    is laid out otherwise (a transpose's or a strided slice's view); column-major memory is
    kept as it is with `allow_col_major`."""

    __slots__ = ("allow_col_major",)

    def __init__(self, allow_col_major: bool):
        self.allow_col_major = allow_col_major

    def params(self):
        return (self.allow_col_major,)


def contiguous(a: Any, /, allow_col_major: bool = False, *, stream: Any = None) -> Array:
    """`a`'s values in row-major memory, copied only where `a` is laid out otherwise.

    The values are `a`'s either way; the layout matters to code that reads the buffer
    (`np.asarray(x)`, DLPack, a custom kernel).

    Args:
        a: the input array.
        allow_col_major: keep column-major (Fortran-order) memory without a copy.
        stream: the stream or device to run on.

    Returns:
        An array of `a`'s shape, dtype and values.

    Example:
        >>> import nuvec as mx
        >>> import numpy as np
        >>> np.asarray(mx.contiguous(mx.zeros((2, 3)).T)).flags.c_contiguous
        True
    """
    a = as_array(a, "contiguous")
    return record1(Contiguous(bool_flag(allow_col_major, "contiguous", "allow_col_major")), (a,),
                   to_stream(stream))


def swapaxes(a: Any, /, axis1: int, axis2: int, *, stream: Any = None) -> Array:
    """`a` with axes `axis1` and `axis2` exchanged.

    Args:
        a: the input array.
        axis1: one axis.
        axis2: the other axis.

    Returns:
        The array with the two axes swapped.

    Raises:
        ValueError: if an axis is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.swapaxes(mx.zeros((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    a = as_array(a, "swapaxes")
    i = normalize_axis(axis1, a.ndim, "swapaxes")
    j = normalize_axis(axis2, a.ndim, "swapaxes")
    perm = list(range(a.ndim))
    perm[i], perm[j] = j, i
    return transpose(a, perm, stream=stream)


def moveaxis(a: Any, /, source: int, destination: int, *, stream: Any = None) -> Array:
    """`a` with axis `source` moved to position `destination`.

    Args:
        a: the input array.
        source: the axis to move.
        destination: its position in the result.

    Returns:
        The array with the axis moved (the other axes keep their order).

    Raises:
        ValueError: if an axis is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.moveaxis(mx.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    a = as_array(a, "moveaxis")
    src = normalize_axis(source, a.ndim, "moveaxis")
    dst = normalize_axis(destination, a.ndim, "moveaxis")
    order = [i for i in range(a.ndim) if i != src]
    order.insert(dst, src)
    return transpose(a, order, stream=stream)


def broadcast_to(a: Any, /, shape: Sequence[int], *, stream: Any = None) -> Array:
    """`a` broadcast to `shape` (NumPy's rule).

    Args:
        a: an array or a scalar.
        shape: the target shape.

    Returns:
        The broadcast array (`a` itself when the shape is unchanged).

    Raises:
        ValueError: if `a`'s shape cannot be broadcast to `shape`.

    Example:
        >>> import nuvec as mx
        >>> mx.broadcast_to(mx.array([1, 2]), (2, 2)).tolist()
        [[1, 2], [1, 2]]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "broadcast_to")
    shape = check_shape(shape, "broadcast_to")
    if len(shape) < a.ndim or _broadcast_shapes(a.shape, shape, op="broadcast_to") != shape:
        raise ValueError(
            f"{public_caller('broadcast_to')}: cannot broadcast shape {a.shape} to {shape}"
        )
    if shape == a.shape:
        return fresh(a)
    return record1(BroadcastTo(shape), (a,), stream)


def summed_to(g: Array, shape: Shape) -> Array:
    """`g` summed over the axes a broadcast of `shape` to `g`'s shape added or stretched, as
    `shape` (the cotangent of the broadcast array)."""
    lead = g.ndim - len(shape)
    axes = list(range(lead)) + [
        lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1
    ]
    if axes:  # (a cotangent: inexact, so the sum keeps its dtype)
        g = apply(reduction.Sum(tuple(axes)), g)
    shape = tuple(shape)  # (the summed axes' size-1 dimensions dropped: one `Reshape` node)
    return apply(Reshape(shape), g) if g.shape != shape else g


def broadcast_array(a: Array, shape: Shape, stream: Any) -> Array:
    """`a` recorded as broadcast to `shape` on `stream` (a `Stream`), for callers that took
    `shape` from `a`'s own with NumPy's rule (no checks again: one node, or `a` itself)."""
    return a if a.shape == shape else record1(BroadcastTo(shape), (a,), stream)


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """The shape that `shapes` broadcast to together (NumPy's rule).

    Args:
        *shapes: one or more shapes (sequences of ints).

    Returns:
        The broadcast shape as a tuple.

    Raises:
        ValueError: if no shape is given or the shapes do not broadcast.

    Example:
        >>> import nuvec as mx
        >>> mx.broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    if not shapes:
        raise ValueError("broadcast_shapes: at least one shape is required")
    return _broadcast_shapes(*(check_shape(s, "broadcast_shapes") for s in shapes))


def broadcast_arrays(*arrays: Any, stream: Any = None) -> list[Array]:
    """The arrays broadcast to their common shape.

    Args:
        *arrays: arrays (or scalars).

    Returns:
        A list of arrays (as MLX's), all of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast together.

    Example:
        >>> import nuvec as mx
        >>> [x.shape for x in mx.broadcast_arrays(mx.zeros((2, 1)), mx.zeros((3,)))]
        [(2, 3), (2, 3)]
    """
    stream = to_stream(stream)
    arrays_ = [as_array(a, "broadcast_arrays") for a in arrays]
    shape = _broadcast_shapes(*(a.shape for a in arrays_), op="broadcast_arrays")
    return [broadcast_to(a, shape, stream=stream) for a in arrays_]


def expand_dims(a: Any, /, axis: int | Sequence[int], *, stream: Any = None) -> Array:
    """`a` with size-1 dimensions inserted at `axis` (positions in the result).

    Args:
        a: the input array.
        axis: an int or a sequence of ints.

    Returns:
        The array with `len(axis)` more dimensions.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.expand_dims(mx.zeros((2, 3)), (0, 2)).shape
        (1, 2, 1, 3)
    """
    a = as_array(a, "expand_dims")
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
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

    Args:
        a: the input array.
        axis: the axes to remove (each must have size 1); None removes every size-1 axis.

    Returns:
        The squeezed array.

    Raises:
        ValueError: if a listed axis does not have size 1.

    Example:
        >>> import nuvec as mx
        >>> mx.squeeze(mx.zeros((1, 3, 1))).shape
        (3,)
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "squeeze")
    if axis is None:
        drop = {i for i, d in enumerate(a.shape) if d == 1}
    else:
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        drop = {normalize_axis(x, a.ndim, "squeeze") for x in axes}
        if len(drop) != len(axes):
            raise ValueError(f"squeeze: repeated axis in {tuple(axes)}")
        for i in drop:
            if a.shape[i] != 1:
                raise ValueError(f"squeeze: cannot squeeze axis {i} of size {a.shape[i]} "
                                 f"in shape {a.shape}")
    shape = tuple(d for i, d in enumerate(a.shape) if i not in drop)
    if shape == a.shape:
        return fresh(a)
    return record1(Reshape(shape), (a,), stream)
