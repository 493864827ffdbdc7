"""Joining and splitting: concatenate, stack, split, pad, repeat, tile, roll.

`Concatenate` is the one primitive; the rest compose it with reshapes, broadcasts, slices and
(for `pad`'s edge mode) `take`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph import memory
from nuvec.graph.caller import public_caller
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops import creation, indexing, slicing, unary
from nuvec.ops import shape as shape_ops
from nuvec.ops.arguments import (INT64_MAX, INT64_MIN, as_array, check_shape, fresh, int_tuple,
                                 normalize_axis)
from nuvec.ops.families import apply, batch_size, move_batch_to_front

__all__ = ["concatenate", "concat", "stack", "unstack", "split", "pad", "repeat", "tile", "roll"]

Shape = tuple[int, ...]


class Concatenate(Primitive):
    """Joins inputs of equal dtype and equal shapes except along `axis`."""

    __slots__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = axis

    def params(self):
        return (self.axis,)

    def output_specs(self, inputs):
        shape = list(inputs[0].shape)
        shape[self.axis] = sum(x.shape[self.axis] for x in inputs)
        return ((tuple(shape), inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        g = cotangents[0]
        offsets = np.cumsum([0] + [x.shape[self.axis] for x in primals]).tolist()
        out = []
        for i in argnums:
            start, stop = [0] * g.ndim, list(g.shape)
            start[self.axis], stop[self.axis] = offsets[i], offsets[i + 1]
            out.append(slicing.static_slice(g, tuple(start), tuple(stop), (1,) * g.ndim))
        return out

    def jvp(self, primals, tangents, outputs):
        ts = [t if t is not None else creation.zeros_like(p) for t, p in zip(tangents, primals)]
        return [apply(self, *ts)]

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        xs = [move_batch_to_front(x, ax, size) for x, ax in zip(inputs, axes)]
        return [apply(Concatenate(self.axis + 1), *xs)], [0]


def _common(op: str, arrays: Sequence[Any], s: Any) -> list[Array]:
    if isinstance(arrays, Array) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{public_caller(op)}: expected a list or tuple of arrays, got "
                        f"{type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{public_caller(op)}: no arrays given")
    xs = [as_array(x, op) for x in arrays]
    out = xs[0].dtype
    for x in xs[1:]:
        out = dt.promote_types(out, x.dtype)

    return [x if x.dtype is out else unary.astype(x, out, stream=s) for x in xs]


def concatenate(arrays: Sequence[Any], axis: int | None = 0, *, stream: Any = None) -> Array:
    """Joins arrays along `axis` (after flattening them when `axis` is None).

    Dtypes promote to the common dtype.

    Args:
        arrays: a list or tuple of arrays.
        axis: the axis to join along; None flattens every array first.

    Returns:
        The joined array.

    Raises:
        ValueError: if no arrays are given, ranks differ, or shapes differ off `axis`.

    Example:
        >>> import nuvec as mx
        >>> mx.concatenate([mx.array([1, 2]), mx.array([3])]).tolist()
        [1, 2, 3]
    """
    s = to_stream(stream)
    xs = _common("concatenate", arrays, s)
    if axis is None:
        xs = [shape_ops.reshape(x, (-1,), stream=s) for x in xs]
        axis = 0
    ndim = xs[0].ndim
    if ndim == 0:
        raise ValueError(f"{public_caller('concatenate')}: zero-dimensional arrays cannot be "
                         "concatenated")
    ax = normalize_axis(axis, ndim, "concatenate")
    for x in xs:
        if x.ndim != ndim or any(d != e for i, (d, e) in enumerate(zip(x.shape, xs[0].shape))
                                 if i != ax):
            shapes = ", ".join(str(y.shape) for y in xs)
            raise ValueError(f"{public_caller('concatenate')}: all shapes must match except "
                             f"along axis {ax}, "
                             f"got {shapes}")
    if len(xs) == 1:
        return fresh(xs[0])
    return record1(Concatenate(ax), tuple(xs), s)


def concat(arrays: Sequence[Any], axis: int | None = 0, *, stream: Any = None) -> Array:
    """MLX's (and the array API's) second name for `concatenate`.

    Args:
        arrays: the arrays to join.
        axis: the axis to join along; None flattens the inputs first.
        stream: the stream (or device) to record on.

    Returns:
        The joined array.

    Raises:
        ValueError: as `concatenate`.

    Example:
        >>> import nuvec as mx
        >>> mx.concat([mx.zeros((2,)), mx.ones((1,))]).tolist()
        [0.0, 0.0, 1.0]
    """
    return concatenate(arrays, axis, stream=stream)


def stack(arrays: Sequence[Any], axis: int = 0, *, stream: Any = None) -> Array:
    """Joins arrays of one shape along a new axis `axis`.

    Args:
        arrays: a list or tuple of arrays.
        axis: the position of the new axis in the result.

    Returns:
        The stacked array.

    Raises:
        ValueError: if no arrays are given or their shapes differ.

    Example:
        >>> import nuvec as mx
        >>> mx.stack([mx.zeros((2,)), mx.ones((2,))], axis=1).shape
        (2, 2)
    """
    s = to_stream(stream)
    xs = _common("stack", arrays, s)
    for x in xs:
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: all arrays must have the same shape, got "
                             f"{', '.join(str(y.shape) for y in xs)}")
    ax = normalize_axis(axis, xs[0].ndim + 1, "stack")
    return concatenate([shape_ops.expand_dims(x, ax, stream=s) for x in xs], ax, stream=s)


def unstack(x: Any, /, *, axis: int = 0, stream: Any = None) -> tuple[Array, ...]:
    """The arrays `stack` would join into `x`: one per index along `axis`, without that axis.

    Args:
        x: an array of at least one dimension.
        axis: the axis to take apart.
        stream: the stream or device to run on.

    Returns:
        A tuple of `x.shape[axis]` arrays.

    Raises:
        ValueError: if `x` is 0-d or `axis` is out of range.

    Example:
        >>> import nuvec as mx
        >>> [p.tolist() for p in mx.unstack(mx.array([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    x = as_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: expected an array of at least 1 dimension, got shape ()")
    ax = normalize_axis(axis, x.ndim, "unstack")
    s = to_stream(stream)
    start, stop = [0] * x.ndim, list(x.shape)
    parts = []
    for i in range(x.shape[ax]):
        start[ax], stop[ax] = i, i + 1
        part = slicing.static_slice(x, tuple(start), tuple(stop), (1,) * x.ndim, s)
        parts.append(shape_ops.squeeze(part, ax, stream=s))
    return tuple(parts)


def split(a: Any, /, indices_or_sections: int | Sequence[int], axis: int = 0, *,
          stream: Any = None) -> list[Array]:
    """Splits `a` along `axis` into equal sections, or at the given indices.

    Args:
        a: the input array.
        indices_or_sections: a number of equal sections, or the indices where parts begin
            (NumPy's rule: indices are clipped to the axis, so parts may be empty).
        axis: the axis to split.

    Returns:
        A list of arrays.

    Raises:
        ValueError: if `a` cannot be split into that many equal sections.

    Example:
        >>> import nuvec as mx
        >>> [p.tolist() for p in mx.split(mx.array([1, 2, 3, 4]), [1, 3])]
        [[1], [2, 3], [4]]
    """
    a = as_array(a, "split")
    if a.ndim == 0:
        raise ValueError("split: cannot split a zero-dimensional array")
    ax = normalize_axis(axis, a.ndim, "split")
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ValueError(f"split: cannot split axis {ax} of size {n} into {k} equal sections")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        cuts = []
        for i in int_tuple(indices_or_sections, "split", "indices_or_sections"):
            cuts.append(min(max(i + n if i < 0 else i, 0), n))
        bounds = [0, *cuts, n]
    s = to_stream(stream)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        start, stop = [0] * a.ndim, list(a.shape)
        start[ax], stop[ax] = lo, max(lo, hi)
        parts.append(slicing.static_slice(a, tuple(start), tuple(stop), (1,) * a.ndim, s))
    return parts


def _pad_widths(op: str, pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """NumPy's pad_width forms: n, (n,), (before, after), ((before, after),), or one per axis."""
    try:
        raw = np.asarray(pad_width)
        if raw.dtype.kind not in "iu" and raw.size:  # floats are rejected, never truncated
            raise TypeError(f"{op}: pad_width must hold ints, got {pad_width!r}")
        widths = np.broadcast_to(raw.astype(np.int64), (ndim, 2))
    except ValueError:
        raise ValueError(f"{op}: pad_width {pad_width!r} does not match an array with {ndim} "
                         "dimensions") from None
    if (widths < 0).any():
        raise ValueError(f"{op}: pad widths must be non-negative, got {pad_width!r}")
    return [(int(lo), int(hi)) for lo, hi in widths.tolist()]


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def pad(a: Any, pad_width: int | Sequence[Any], mode: str = "constant",
        constant_values: Any = 0, *, stream: Any = None) -> Array:
    """`a` padded along each axis.

    Args:
        a: the input array.
        pad_width: `n`, `(before, after)`, or one `(before, after)` pair per axis.
        mode: "constant" (fill with `constant_values`), "edge" (repeat the edge values),
            "reflect" (mirror without the edge value) or "symmetric" (mirror with it).
        constant_values: a scalar or 0-d array, cast to `a`'s dtype.

    Returns:
        The padded array.

    Raises:
        ValueError: for an unknown mode, negative or mismatched widths, edge, reflect or
            symmetric padding of an empty axis, or a result past int32 dimensions or memory.

    Example:
        >>> import nuvec as mx
        >>> mx.pad(mx.array([1, 2]), 1).tolist()
        [0, 1, 2, 0]
    """
    a = as_array(a, "pad")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(map(repr, _PAD_MODES))}, "
                         f"got {mode!r}")
    widths = _pad_widths("pad", pad_width, a.ndim)
    s = to_stream(stream)
    if not any(lo or hi for lo, hi in widths):
        return fresh(a)
    shape = check_shape(tuple(d + lo + hi for d, (lo, hi) in zip(a.shape, widths)), "pad")
    memory.check_allocation("pad", shape, a.dtype.size, a.dtype.name, s.device)
    if mode != "constant":
        out = a
        for ax, (lo, hi) in enumerate(widths):
            if lo or hi:
                n = a.shape[ax]
                if n == 0:
                    raise ValueError(f"pad: cannot {mode}-pad axis {ax} of size 0")
                # which source element each output position reads, as NumPy's pad places them
                idx = np.pad(np.arange(n, dtype=np.int32), (lo, hi), mode=mode)
                out = indexing.take(out, as_array(idx, "pad"), axis=ax, stream=s)
        return out
    value = as_array(constant_values, "pad", a.dtype)
    if value.size != 1:
        raise ValueError(f"pad: constant_values must be a scalar, got shape {value.shape}")
    base = slicing.fit_update("pad", shape_ops.reshape(value, (), stream=s), shape, a.dtype, s)
    start = tuple(lo for lo, _ in widths)
    stop = tuple(lo + d for (lo, _), d in zip(widths, a.shape))
    return slicing.static_slice_update(base, a, start, stop, (1,) * a.ndim, s)


def repeat(array: Any, repeats: int, axis: int | None = None, *, stream: Any = None) -> Array:
    """Repeats each element `repeats` times along `axis` (of the flattened array when None).

    Args:
        array: the input array.
        repeats: how many times each element appears.
        axis: the axis to repeat along; None flattens first.

    Returns:
        The array with the repeated axis `repeats` times longer.

    Raises:
        TypeError: if `repeats` is not an int.
        ValueError: if `repeats` is negative, or `axis` is out of range (an `AxisError`, also
            an IndexError; a 0-d array has no axis).

    Example:
        >>> import nuvec as mx
        >>> mx.repeat(mx.array([1, 2]), 2).tolist()
        [1, 1, 2, 2]
    """
    a = as_array(array, "repeat")
    if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, bool):
        raise TypeError(f"repeat: repeats must be an int, got {type(repeats).__name__}")
    if repeats < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
    s = to_stream(stream)
    if axis is None:
        a = shape_ops.reshape(a, (-1,), stream=s)
        axis = 0
    ax = normalize_axis(axis, a.ndim, "repeat")  # (a 0-d array has no axis, as in MLX)
    x = shape_ops.expand_dims(a, ax + 1, stream=s)
    shape = list(x.shape)
    shape[ax + 1] = int(repeats)
    x = shape_ops.broadcast_to(x, tuple(shape), stream=s)
    out = list(a.shape)
    out[ax] *= int(repeats)
    return shape_ops.reshape(x, tuple(out), stream=s)


def tile(a: Any, reps: int | Sequence[int], /, *, stream: Any = None) -> Array:
    """`a` repeated `reps` times along each axis (NumPy's rule for differing lengths).

    Args:
        a: the input array.
        reps: an int or one count per axis (the shorter of `reps` and `a.shape` gets leading
            ones).

    Returns:
        The tiled array.

    Raises:
        ValueError: if a repetition count is negative.

    Example:
        >>> import nuvec as mx
        >>> mx.tile(mx.array([1, 2]), 2).tolist()
        [1, 2, 1, 2]
    """
    a = as_array(a, "tile")
    reps_t = int_tuple(reps, "tile", "reps")
    if any(r < 0 for r in reps_t):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps_t}")
    s = to_stream(stream)
    ndim = max(a.ndim, len(reps_t))
    shape = (1,) * (ndim - a.ndim) + a.shape
    reps_t = (1,) * (ndim - len(reps_t)) + reps_t
    x = shape_ops.reshape(a, tuple(v for d in shape for v in (1, d)), stream=s)
    x = shape_ops.broadcast_to(x, tuple(v for r, d in zip(reps_t, shape) for v in (r, d)), stream=s)
    return shape_ops.reshape(x, tuple(r * d for r, d in zip(reps_t, shape)), stream=s)


def roll(a: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None, *,
         stream: Any = None) -> Array:
    """Shifts elements along `axis` cyclically (over the flattened array when None).

    A tuple `shift` pairs with a tuple `axis` (an int broadcasts against the other); without
    an axis its shifts add up, as in NumPy and MLX.

    Args:
        a: the input array.
        shift: how far elements move (negative: toward the start).
        axis: an int, a tuple of ints, or None.

    Returns:
        The rolled array.

    Raises:
        ValueError: if `shift` and `axis` have different lengths or an axis is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.roll(mx.array([1, 2, 3]), 1).tolist()
        [3, 1, 2]
    """
    a = as_array(a, "roll")
    s = to_stream(stream)
    shifts = int_tuple(shift, "roll", "shift")
    if any(not INT64_MIN <= v <= INT64_MAX for v in shifts):
        raise ValueError(f"roll: shift must fit in int64, got {shift!r}")
    if axis is None:
        flat = shape_ops.reshape(a, (-1,), stream=s)
        rolled = _roll_axes(flat, shifts, (0,) * len(shifts), s)
        return shape_ops.reshape(rolled, a.shape, stream=s)
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} have different lengths")
    norm = tuple(normalize_axis(x, a.ndim, "roll") for x in axes)
    return _roll_axes(a, tuple(int(k) for k in shifts), norm, s)


def _roll_axes(a: Array, shifts: Shape, axes: Shape, s: Any) -> Array:
    total = [0] * a.ndim
    for k, ax in zip(shifts, axes):
        total[ax] += int(k)
    for ax, k in enumerate(total):
        n = a.shape[ax]
        if n == 0 or k % n == 0:
            continue
        k %= n
        lo, hi = [0] * a.ndim, list(a.shape)
        hi[ax] = n - k
        head = slicing.static_slice(a, tuple(lo), tuple(hi), (1,) * a.ndim, s)
        lo[ax], hi[ax] = n - k, n
        tail = slicing.static_slice(a, tuple(lo), tuple(hi), (1,) * a.ndim, s)
        a = record1(Concatenate(ax), (tail, head), s)
    return fresh(a)
