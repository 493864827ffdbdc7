"""Slicing: static windows with start/stop/strides (negative steps too) and MLX's dynamic
`slice`/`slice_update`, whose start indices are arrays.

`Slice`/`SliceUpdate` serve `__getitem__`/`__setitem__`; `DynamicSlice`/`DynamicSliceUpdate`
clamp their starts so the window always fits.
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, handle, record1
from nuvec.graph.convert import scalar_array, stored_scalar
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops import shape as shape_ops
from nuvec.ops import binary, creation, unary
from nuvec.ops.arguments import (as_array, check_shape, fresh, int_tuple, normalize_axes,
                                  normalize_axis)
from nuvec.ops.families import Linear, apply, batch_size, move_batch_to_front

__all__ = ["slice", "slice_update", "flip"]

Shape = tuple[int, ...]


def _range_length(start: int, stop: int, step: int) -> int:
    return len(range(start, stop, step))


class Slice(Linear, Primitive):
    """A strided window: axis i keeps `range(start[i], stop[i], strides[i])` (steps may be < 0).

    `stop` may be -1 with a negative step, meaning "through index 0".
    """

    __slots__ = ("start", "stop", "strides")
    allocates = False  # a view of its input

    def __init__(self, start: Shape, stop: Shape, strides: Shape):
        self.start, self.stop, self.strides = start, stop, strides

    def params(self):
        return (self.start, self.stop, self.strides)

    def index(self) -> tuple[Any, ...]:
        """The window as a tuple of Python slices (kernels apply it directly)."""
        return tuple(
            builtins.slice(0, 0) if _range_length(a, b, s) == 0  # an empty range: no start
            else builtins.slice(a, None if b < 0 else b, s)
            for a, b, s in zip(self.start, self.stop, self.strides)
        )

    def out_shape(self) -> Shape:
        return tuple(map(_range_length, self.start, self.stop, self.strides))

    def output_specs(self, inputs):
        return ((self.out_shape(), inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [in_zeros(primals[0], cotangents[0], *self.params())]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(_batched_slice(self, x.shape[0]), x)], [0]


def in_zeros(like: Array, update: Array, start: Shape, stop: Shape, strides: Shape) -> Array:
    """Zeros of `like`'s shape and dtype but for the window `Slice(start, stop, strides)`,
    which holds `update`: a slice's cotangent, as `add_cotangents` recognizes it."""
    zeros = record1(shape_ops.BroadcastTo(like.shape), (scalar_array(0, like.dtype),),
                    to_stream(None))  # (the cached leaf `_window_cotangent` looks for)
    return apply(SliceUpdate(start, stop, strides), zeros, update)


def _is_zeros(node: Any, dtype: Any) -> bool:
    """Whether `node` is `in_zeros`' zeros (a broadcast of the cached 0 leaf)."""
    return (type(node.primitive) is shape_ops.BroadcastTo
            and node.sources[0] is stored_scalar(0, dtype, ()))


def _window_cotangent(x: Array) -> tuple[SliceUpdate, Array] | None:
    """`(update, window)` where `x` is an `in_zeros` array (zeros with the window `update`
    writes set to `window`), else None."""
    node = x._node
    if type(node.primitive) is not SliceUpdate or not _is_zeros(node.sources[0], x.dtype):
        return None
    return node.primitive, handle(node.sources[1], node.indices[1])


_MOST_WINDOWS = 64  # windows `_written_windows` looks through


def _written_windows(x: Array) -> list[SliceUpdate] | None:
    """The windows written into `in_zeros`' zeros to make `x` (none evaluated yet), outside
    which `x` is 0; None where `x` is not made so (or through more than `_MOST_WINDOWS`)."""
    node, windows = x._node, []
    while type(node.primitive) is SliceUpdate and len(windows) < _MOST_WINDOWS:
        windows.append(node.primitive)
        node = node.sources[0]
    return windows if windows and _is_zeros(node, x.dtype) else None


def _disjoint(a: SliceUpdate, b: SliceUpdate) -> bool:
    """Whether two windows of unit steps share no element."""
    if any(s != 1 for s in a.strides + b.strides):
        return False
    return any(e1 <= s2 or e2 <= s1 for s1, e1, s2, e2 in zip(a.start, a.stop, b.start, b.stop))


def add_cotangents(a: Array, b: Array) -> Array:
    """`a + b`, two cotangents of one array (reverse mode's sum). Where one is a `Slice`'s
    (zeros but for its window) and both have one shape and dtype, the other with the window
    added in: only the window's elements are summed, and the evaluator writes them into the
    other's buffer where nothing else holds it, where `a + b` passes over the whole array (a
    gradient through row blocks or `x[..., :half]`); where the other is zeros but for windows
    the window does not meet (the cotangents of `split`'s parts), the window is written
    there without a sum. Elements outside the window are the other's as they are, as `x + 0`
    is (but for -0.0, which stays -0.0)."""
    if a.shape == b.shape and a.dtype is b.dtype:
        for whole, part in ((a, b), (b, a)):
            found = _window_cotangent(part)
            if found is not None:
                update, window = found
                written = _written_windows(whole)
                if written is not None and all(_disjoint(update, w) for w in written):
                    return apply(update, whole, window)  # `whole` is 0 there
                summed = binary.add(apply(Slice(*update.params()), whole), window)
                return apply(update, whole, summed)
    return binary.add(a, b)


def _batched_slice(p: Slice | SliceUpdate, size: int) -> Any:
    return type(p)((0, *p.start), (size, *p.stop), (1, *p.strides))


class SliceUpdate(Primitive):
    """`x` with the window of `Slice(start, stop, strides)` replaced by `update`."""

    __slots__ = ("start", "stop", "strides")

    def __init__(self, start: Shape, stop: Shape, strides: Shape):
        self.start, self.stop, self.strides = start, stop, strides

    params = Slice.params
    index = Slice.index

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        g = cotangents[0]
        out = []
        for i in argnums:
            if i == 0:
                out.append(apply(self, g, creation.zeros_like(primals[1])))
            else:
                out.append(apply(Slice(*self.params()), g))
        return out

    def jvp(self, primals, tangents, outputs):
        tx, tu = (t if t is not None else creation.zeros_like(p) for t, p in zip(tangents, primals))
        return [apply(self, tx, tu)]

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        x, u = (move_batch_to_front(a, ax, size) for a, ax in zip(inputs, axes))
        return [apply(_batched_slice(self, size), x, u)], [0]


class DynamicSlice(Primitive):
    """A window of `sizes` along `axes` starting at the int array `start` (clamped in range).

    When `batched`, axis 0 of `x` is a batch axis and `start` has one row per batch entry.
    """

    __slots__ = ("axes", "sizes", "batched")

    def __init__(self, axes: Shape, sizes: Shape, batched: bool = False):
        self.axes, self.sizes, self.batched = axes, sizes, batched

    def params(self):
        return (self.axes, self.sizes, self.batched)

    def output_specs(self, inputs):
        shape = list(inputs[0].shape)
        for a, n in zip(self.axes, self.sizes):
            shape[a] = n
        return ((tuple(shape), inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, start = primals
        update = DynamicSliceUpdate(self.axes, self.batched)
        return [apply(update, creation.zeros_like(x), cotangents[0], start) if i == 0 else None
                for i in argnums]

    def jvp(self, primals, tangents, outputs):
        return [apply(self, tangents[0], primals[1])] if tangents[0] is not None else [None]

    def vmap(self, inputs, axes):
        x, start = inputs
        axes_x, axes_s = axes
        if axes_s is None:
            x = move_batch_to_front(x, axes_x)
            shifted = tuple(a + 1 for a in self.axes)
            return [apply(DynamicSlice(shifted, self.sizes, self.batched), x, start)], [0]
        x, start, merge = _merge_batch(x, axes_x, start, axes_s, self.batched)
        out = apply(DynamicSlice(tuple(a + merge for a in self.axes), self.sizes, True), x, start)
        return [_split_batch(out, inputs, axes, self.batched)], [0]


class DynamicSliceUpdate(Primitive):
    """`x` with the window starting at `start` (clamped) along `axes` replaced by `update`."""

    __slots__ = ("axes", "batched")

    def __init__(self, axes: Shape, batched: bool = False):
        self.axes, self.batched = axes, batched

    def params(self):
        return (self.axes, self.batched)

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, update, start = primals
        g = cotangents[0]
        sizes = tuple(update.shape[a] for a in self.axes)
        out = []
        for i in argnums:
            if i == 0:
                out.append(apply(self, g, creation.zeros_like(update), start))
            elif i == 1:
                out.append(apply(DynamicSlice(self.axes, sizes, self.batched), g, start))
            else:
                out.append(None)
        return out

    def jvp(self, primals, tangents, outputs):
        tx, tu = (t if t is not None else creation.zeros_like(p)
                  for t, p in zip(tangents, primals[:2]))
        return [apply(self, tx, tu, primals[2])]

    def vmap(self, inputs, axes):
        x, update, start = inputs
        ax_x, ax_u, ax_s = axes
        size = batch_size(inputs, axes)
        if ax_s is None:
            x, update = move_batch_to_front(x, ax_x, size), move_batch_to_front(update, ax_u, size)
            shifted = tuple(a + 1 for a in self.axes)
            return [apply(DynamicSliceUpdate(shifted, self.batched), x, update, start)], [0]
        x = move_batch_to_front(x, ax_x, size)
        update = move_batch_to_front(update, ax_u, size)
        inner = x.shape[1] if self.batched else 0  # the existing batch axis
        x, start, merge = _merge_batch(x, 0, start, ax_s, self.batched)
        if self.batched:
            update = shape_ops.reshape(update, (size * inner, *update.shape[2:]))
        out = apply(DynamicSliceUpdate(tuple(a + merge for a in self.axes), True), x, update, start)
        return [shape_ops.reshape(out, (size, inner, *out.shape[1:])) if self.batched else out], [0]


def _merge_batch(x: Array, ax_x: int | None, start: Array, ax_s: int, batched: bool):
    """x and start with one leading batch axis (a new vmap batch merged with an existing one).

    Returns (x, start, shift): `shift` is how many leading axes the primitive's axes move by.
    """
    size = start.shape[ax_s]
    x = move_batch_to_front(x, ax_x, size)
    start = move_batch_to_front(start, ax_s)
    if not batched:
        return x, start, 1
    # x is [new, old, ...] and start [new, old, k]: flatten both batch axes into one.
    x = shape_ops.reshape(x, (x.shape[0] * x.shape[1], *x.shape[2:]))
    start = shape_ops.reshape(start, (start.shape[0] * start.shape[1], start.shape[-1]))
    return x, start, 0


def _split_batch(out: Array, inputs: Sequence[Array], axes: Sequence[int | None], batched: bool):
    if not batched:
        return out
    size = inputs[1].shape[axes[1]]
    return shape_ops.reshape(out, (size, -1, *out.shape[1:]))


def static_slice(a: Array, start: Shape, stop: Shape, strides: Shape, stream: Any = None) -> Array:
    """Records a `Slice` (normalized parameters, see `Slice`); returns `a` for a full window."""
    if all(s == 1 and b == 0 and e == d for b, e, s, d in zip(start, stop, strides, a.shape)):
        return fresh(a)
    return record1(Slice(start, stop, strides), (a,), to_stream(stream))


def static_slice_update(a: Array, update: Array, start: Shape, stop: Shape, strides: Shape,
                        stream: Any = None) -> Array:
    """Records a `SliceUpdate`; `update` must have the window's shape and `a`'s dtype."""
    return record1(SliceUpdate(start, stop, strides), (a, update), to_stream(stream))


def fit_update(op: str, update: Array, shape: Shape, dtype: Any, s: Any) -> Array:
    """`update` broadcast to `shape` and cast to `dtype` (the operand of an update primitive).

    Raises:
        ValueError: if `update` does not broadcast to `shape`.
    """
    if update.shape != shape:
        try:
            update = shape_ops.broadcast_to(update, shape, stream=s)
        except ValueError:
            raise ValueError(f"{op}: cannot broadcast an update of shape {update.shape} to "
                             f"{shape}") from None
    if update.dtype is not dtype:
        update = unary.astype(update, dtype, stream=s)
    return update


def _dynamic_args(op: str, a: Array, start_indices: Any, axes: Sequence[int]):
    start = as_array(start_indices, op)
    if not start.dtype.is_integer:
        raise DtypeError(f"{op}: start_indices must be integers, got {start.dtype.name}")
    axes = int_tuple(axes, op, "axes")
    norm = tuple(normalize_axis(x, a.ndim, op) for x in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"{op}: repeated axis in {axes}")
    if start.size != len(norm) or start.ndim > 1:
        raise ValueError(f"{op}: start_indices of shape {start.shape} do not match "
                         f"{len(norm)} axes")
    return shape_ops.reshape(start, (len(norm),)), norm


def slice(a: Any, start_indices: Any, axes: Sequence[int], slice_size: Sequence[int], *,
          stream: Any = None) -> Array:
    """A sub-array of shape `slice_size` whose corner along `axes` is the array `start_indices`.

    The start may be computed (an array); it is clamped so the window fits in `a` (a start
    past the end reads the last full window).

    Args:
        a: the input array.
        start_indices: an int array with one start per entry of `axes`.
        axes: the axes the starts refer to.
        slice_size: the output's full shape (one entry per axis of `a`).

    Returns:
        The window, of shape `slice_size`.

    Raises:
        ValueError: if the sizes do not fit `a` or the starts do not match `axes`.
        TypeError: if `start_indices` is not an integer array.

    Example:
        >>> import nuvec as mx
        >>> a = mx.array([[1, 2, 3], [4, 5, 6]])
        >>> mx.slice(a, mx.array(1), (0,), (1, 2)).tolist()
        [[4, 5]]
    """
    a = as_array(a, "slice")
    start, norm = _dynamic_args("slice", a, start_indices, axes)
    sizes = check_shape(slice_size, "slice")
    if len(sizes) != a.ndim or any(n > d for n, d in zip(sizes, a.shape)):
        raise ValueError(f"slice: slice_size {sizes} does not fit an array of shape {a.shape}")
    s = to_stream(stream)
    # The axes not listed start at 0.
    out = static_slice(a, (0,) * a.ndim, tuple(
        sizes[i] if i not in norm else a.shape[i] for i in range(a.ndim)), (1,) * a.ndim, s)
    if not norm:
        return out
    return record1(DynamicSlice(norm, tuple(sizes[i] for i in norm)), (out, start), s)


def slice_update(a: Any, update: Any, start_indices: Any, axes: Sequence[int], *,
                 stream: Any = None) -> Array:
    """`a` with the window of `update`'s shape starting at `start_indices` (along `axes`) replaced.

    `update` is cast to `a`'s dtype; the start is clamped so the window fits in `a`.

    Args:
        a: the input array.
        update: the new values; its sizes along `axes` give the window, elsewhere it
            broadcasts to `a`'s sizes.
        start_indices: an int array with one start per entry of `axes`.
        axes: the axes the starts refer to.

    Returns:
        A new array; `a` is unchanged.

    Raises:
        ValueError: if `update` does not fit `a` or the starts do not match `axes`.
        TypeError: if `start_indices` is not an integer array.

    Example:
        >>> import nuvec as mx
        >>> mx.slice_update(mx.zeros((3,)), mx.array([7.0]), mx.array(1), (0,)).tolist()
        [0.0, 7.0, 0.0]
    """
    a = as_array(a, "slice_update")
    update = as_array(update, "slice_update")
    start, norm = _dynamic_args("slice_update", a, start_indices, axes)
    s = to_stream(stream)
    if update.ndim > a.ndim:
        raise ValueError(f"slice_update: update of shape {update.shape} has more dimensions "
                         f"than the array {a.shape}")
    if update.ndim < a.ndim:
        update = shape_ops.reshape(update, (1,) * (a.ndim - update.ndim) + update.shape, stream=s)
    shape = tuple(update.shape[i] if i in norm else a.shape[i] for i in range(a.ndim))
    if any(n > d for n, d in zip(shape, a.shape)):
        raise ValueError(f"slice_update: update of shape {update.shape} does not fit an array "
                         f"of shape {a.shape}")
    update = fit_update("slice_update", update, shape, a.dtype, s)
    if not norm:
        return update
    return record1(DynamicSliceUpdate(norm), (a, update, start), s)


def flip(a: Any, /, axis: int | Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """`a` with the order of its elements reversed along `axis` (every axis when None).

    Args:
        a: the input array.
        axis: an axis, a sequence of distinct axes, or None.
        stream: the stream or device to run on.

    Returns:
        The flipped array (a view on the CPU).

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.flip(mx.array([[1, 2], [3, 4]]), axis=1).tolist()
        [[2, 1], [4, 3]]
    """
    a = as_array(a, "flip")
    axes = set(normalize_axes(axis, a.ndim, "flip"))
    if not axes:
        return fresh(a)
    flipped = [i in axes for i in range(a.ndim)]
    start = tuple(d - 1 if f else 0 for d, f in zip(a.shape, flipped))
    stop = tuple(-1 if f else d for d, f in zip(a.shape, flipped))
    return static_slice(a, start, stop, tuple(-1 if f else 1 for f in flipped), stream)
