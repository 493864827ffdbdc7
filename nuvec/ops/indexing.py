"""Gather and scatter: `take`, `take_along_axis`, `put_along_axis` and the primitives behind
advanced `__getitem__`/`__setitem__` and `.at[...]` (whose key handling is in
`nuvec.ops.subscript`).

Index semantics (all of nuvec's indexing): a negative index counts from the end once (-1 is the
last element). Python ints and slices are checked at the call (IndexError when out of range).
Index *arrays* are only known when evaluated: an out-of-range entry there makes the evaluation
fail with an `EvaluationError` naming the index (MLX does not check and reads undefined data;
nuvec never reads out of bounds).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import COPY, Primitive, TransformError
from nuvec.ops import binary, comparison, creation, slicing
from nuvec.ops import shape as shape_ops
from nuvec.ops.arguments import (BadIndexError, as_array, broadcast_shapes,
                                  normalize_axis)
from nuvec.ops.families import apply, batch_size, move_batch_to_front

__all__ = ["take", "take_along_axis", "put_along_axis"]

SCATTER_MODES = ("set", "add", "multiply", "max", "min")


def index_shape(indices: Sequence[Array], op: str = "gather") -> tuple[int, ...]:
    """The shape the index arrays broadcast to (ValueError naming `op` if they do not)."""
    return broadcast_shapes(*(i.shape for i in indices), op=op)


def _refuse_index_vjp(op: str, primals: Sequence[Array], argnums: Sequence[int],
                      index_positions: range) -> None:
    """MLX refuses a VJP with respect to indices that are themselves a differentiated input
    (`vjp(f, [x, idx], ...)`); indices computed from the inputs (`argsort(x)`) get none."""
    for i in argnums:
        if i in index_positions and primals[i].primitive is COPY and primals[i]._node.keep:
            raise TransformError(f"vjp: cannot compute the {op} VJP with respect to its "
                                 f"indices ({primals[i].dtype.name}, shape {primals[i].shape}); "
                                 "use stop_gradient on them or close over them")


class Gather(Primitive):
    """`x[i_0, ..., i_{n-1}]` on the leading n axes of `x`; the index arrays broadcast together.

    Inputs: `x, i_0, ..., i_{n-1}`; output shape: broadcast index shape + `x.shape[n:]`.
    """

    __slots__ = ()

    def output_specs(self, inputs):
        x, idx = inputs[0], inputs[1:]
        return ((index_shape(idx) + x.shape[len(idx):], x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, idx = primals[0], primals[1:]
        _refuse_index_vjp("gather", primals, argnums, range(1, len(primals)))
        if not x.dtype.is_inexact:
            return [None] * len(argnums)
        return [
            apply(SCATTER["add"], creation.zeros_like(x), *idx, cotangents[0]) if i == 0 else None
            for i in argnums
        ]

    def jvp(self, primals, tangents, outputs):
        if tangents[0] is None or not primals[0].dtype.is_inexact:
            return [None]
        return [apply(self, tangents[0], *primals[1:])]

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        x, idx = _batch_indexed(inputs[0], axes[0], inputs[1:], axes[1:], size, False)
        return [apply(self, x, *idx)], [0]


def _batch_indexed(x: Array, x_axis: int | None, idx: Sequence[Array],
                   idx_axes: Sequence[int | None], size: int, force_x: bool):
    """Batched operands of a gather/scatter: indices get the batch axis first (right-aligned
    shapes kept); a batched (or `force_x`) x gets a leading batch axis and an arange index."""
    nd = max((i.ndim if a is None else i.ndim - 1) for i, a in zip(idx, idx_axes))
    out = []
    for i, a in zip(idx, idx_axes):
        if a is not None:
            i = move_batch_to_front(i, a)
            i = shape_ops.reshape(i, (size, *([1] * (nd - (i.ndim - 1))), *i.shape[1:]))
        out.append(i)
    if x_axis is None and not force_x:
        return x, out
    x = move_batch_to_front(x, x_axis, size)
    batch = as_array(np.arange(size, dtype=np.int32).reshape((size,) + (1,) * nd), "vmap")
    return x, [batch, *out]


class Scatter(Primitive):
    """`x` with `updates` written at `x[i_0, ..., i_{n-1}]` (leading axes) by `mode`.

    Inputs: `x, i_0, ..., i_{n-1}, updates`; `updates` has the broadcast index shape +
    `x.shape[n:]` and `x`'s dtype. Modes: "set" (repeated indices: the last update wins),
    "add", "multiply", "max", "min" (repeated indices accumulate).
    """

    __slots__ = ("mode",)

    def __init__(self, mode: str):
        self.mode = mode

    def params(self):
        return (self.mode,)

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, idx, u = primals[0], primals[1:-1], primals[-1]
        _refuse_index_vjp("scatter", primals, argnums, range(1, len(primals) - 1))
        if not x.dtype.is_inexact:
            return [None] * len(argnums)
        g = cotangents[0]
        out: dict[int, Array] = {}
        want_x, want_u = 0 in argnums, len(primals) - 1 in argnums
        if self.mode in ("set", "add"):
            if want_x:
                out[0] = apply(self, g, *idx, creation.zeros_like(u)) if self.mode == "set" else g
            if want_u:
                out[1] = apply(GATHER, g, *idx)
        elif self.mode == "multiply":
            # d out / d u_j = out / u_j (the product of the others); undefined where u_j == 0.
            if want_x:
                out[0] = apply(self, g, *idx, u)
            if want_u:
                out[1] = binary.divide(apply(GATHER, binary.multiply(g, outputs[0]), *idx), u)
        else:
            mask_x, mask_u = self._winners(x, idx, u, outputs[0])
            out[0] = binary.multiply(g, mask_x)
            out[1] = binary.multiply(apply(GATHER, g, *idx), mask_u)
        last = len(primals) - 1
        return [out.get(0) if i == 0 else out.get(1) if i == last else None for i in argnums]

    def _winners(self, x, idx, u, out):
        """max/min: masks of the entries of x and u equal to the result (on a tie each gets
        the whole derivative, as MLX)."""
        mask_x = comparison.equal(x, out).astype(x.dtype)
        return mask_x, comparison.equal(u, apply(GATHER, out, *idx)).astype(x.dtype)

    def jvp(self, primals, tangents, outputs):
        x, idx, u = primals[0], primals[1:-1], primals[-1]
        if not x.dtype.is_inexact:
            return [None]
        tx = tangents[0] if tangents[0] is not None else creation.zeros_like(x)
        tu = tangents[-1] if tangents[-1] is not None else creation.zeros_like(u)
        if self.mode in ("set", "add"):
            return [apply(self, tx, *idx, tu)]
        if self.mode == "multiply":
            scaled = apply(self, tx, *idx, u)
            rel = apply(SCATTER["add"], creation.zeros_like(x), *idx, binary.divide(tu, u))
            return [binary.add(scaled, binary.multiply(outputs[0], rel))]
        mask_x, mask_u = self._winners(x, idx, u, outputs[0])
        return [apply(SCATTER["add"], binary.multiply(tx, mask_x), *idx,
                      binary.multiply(tu, mask_u))]

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        x, idx = _batch_indexed(inputs[0], axes[0], inputs[1:-1], axes[1:-1], size, True)
        u = move_batch_to_front(inputs[-1], axes[-1], size)
        shape = index_shape(idx) + x.shape[len(idx):]
        if u.shape != shape:
            u = shape_ops.broadcast_to(u, shape)
        return [apply(self, x, *idx, u)], [0]


GATHER = Gather()
SCATTER = {mode: Scatter(mode) for mode in SCATTER_MODES}


def check_index_array(op: str, idx: Any) -> Array:
    """An index as an integer array (NumPy data and lists are converted).

    Raises:
        ValueError: for boolean arrays (MLX does not index with masks).
        TypeError: for non-integer arrays.
    """
    idx = as_array(idx, op)
    if idx.dtype is dt.bool_:
        raise ValueError(f"{op}: boolean indices are not supported (MLX); use where()")
    if not idx.dtype.is_integer:
        raise DtypeError(f"{op}: indices must be integers, got {idx.dtype.name} (shape "
                         f"{idx.shape})")
    return idx


def gather(x: Array, indices: Sequence[Array], stream: Any = None, op: str = "take") -> Array:
    """Records `x[indices...]` over the leading `len(indices)` axes (indices already checked).

    Raises:
        ValueError: naming `op`, for a non-empty take along an empty axis (every index is out
            of range: known now, where other out-of-range indices fail the evaluation).
    """
    empty = [k for k in range(len(indices)) if x.shape[k] == 0]
    if empty:
        shape = index_shape(indices, op)
        if 0 not in shape:
            raise ValueError(f"{op}: cannot take indices of shape {shape} from an empty axis "
                             f"(axis {empty[0]} of the indexed shape {x.shape})")
    return record1(GATHER, (x, *indices), to_stream(stream))


def scatter(x: Array, indices: Sequence[Array], updates: Array, mode: str,
            stream: Any = None) -> Array:
    """Records a scatter; `updates` is broadcast to the indexed shape and cast to `x`'s dtype."""
    s = to_stream(stream)
    shape = index_shape(indices) + x.shape[len(indices):]
    updates = slicing.fit_update("scatter", updates, shape, x.dtype, s)
    return record1(SCATTER[mode], (x, *indices, updates), s)


def check_int_index(op: str, i: int, size: int, axis: int) -> int:
    if not -size <= i < size:
        raise BadIndexError(f"{op}: index {i} is out of bounds for axis {axis} with "
                                   f"size {size}")
    return i % size


def take(a: Any, /, indices: Any, axis: int | None = None, *, stream: Any = None) -> Array:
    """Elements of `a` at `indices` along `axis` (of the flattened array when None).

    The result's shape is `a.shape[:axis] + indices.shape + a.shape[axis + 1:]`. Negative
    indices count from the end; see the module notes for out-of-range indices.

    Args:
        a: the input array.
        indices: an int, or an integer array (lists and NumPy data are converted).
        axis: the axis to take along; None flattens `a` first.

    Returns:
        The gathered array.

    Raises:
        IndexError: for a Python int index out of range.
        ValueError: for boolean indices or an out-of-range axis.
        TypeError: for non-integer indices.

    Example:
        >>> import nuvec as mx
        >>> mx.take(mx.array([[1, 2], [3, 4]]), mx.array([1, 0]), axis=1).tolist()
        [[2, 1], [4, 3]]
    """
    a = as_array(a, "take")
    s = to_stream(stream)
    if axis is None:
        a = shape_ops.reshape(a, (-1,), stream=s)
        ax = 0
    else:
        ax = normalize_axis(axis, a.ndim, "take")
    if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
        i = check_int_index("take", int(indices), a.shape[ax], ax)
        idx = as_array(np.asarray(i, dtype=np.int32), "take")
    else:
        idx = check_index_array("take", indices)
    x = shape_ops.moveaxis(a, ax, 0, stream=s) if ax else a
    out = gather(x, [idx], s, "take")
    if ax == 0:
        return out
    k = idx.ndim
    order = list(range(k, k + ax)) + list(range(k)) + list(range(k + ax, out.ndim))
    return shape_ops.transpose(out, order, stream=s)


def _along_axis(op: str, a: Any, indices: Any, axis: int | None, s: Any):
    """`a` and the open-grid index tuple of take/put_along_axis (checked)."""
    a = as_array(a, op)
    idx = check_index_array(op, indices)
    if axis is None:
        a, idx = shape_ops.reshape(a, (-1,), stream=s), shape_ops.reshape(idx, (-1,), stream=s)
        ax = 0
    else:
        ax = normalize_axis(axis, a.ndim, op)
        if idx.ndim != a.ndim:
            raise ValueError(f"{op}: indices of shape {idx.shape} must have as many dimensions "
                             f"as the array {a.shape}")
    for j, (d, e) in enumerate(zip(a.shape, idx.shape)):
        if j != ax and d != e and 1 not in (d, e):
            raise ValueError(f"{op}: indices of shape {idx.shape} do not broadcast with the "
                             f"array {a.shape} off axis {ax}")
    grids = []
    for j in range(a.ndim):
        if j == ax:
            grids.append(idx)
        else:
            pos = np.arange(a.shape[j], dtype=np.int64).reshape(
                [a.shape[j] if k == j else 1 for k in range(a.ndim)])
            grids.append(as_array(pos, op))
    return a, grids


def take_along_axis(a: Any, /, indices: Any, axis: int | None = None, *,
                    stream: Any = None) -> Array:
    """Picks `a`'s values at `indices` along `axis` (NumPy's `take_along_axis`).

    `indices` has `a`'s number of dimensions; off `axis`, `a` and `indices` broadcast. With
    `axis=None` both are flattened. Negative indices count from the end; an out-of-range one
    makes the evaluation fail (see the module notes).

    Args:
        a: the input array.
        indices: an integer array with `a`'s number of dimensions.
        axis: the axis to index along; None flattens `a` and `indices`.

    Returns:
        The picked values, of the broadcast shape of `a` and `indices` (with `indices`' size
        along `axis`).

    Raises:
        ValueError: if the ranks or shapes do not match, or the indices are boolean.
        TypeError: for non-integer indices.

    Example:
        >>> import nuvec as mx
        >>> a = mx.array([[10, 30, 20]])
        >>> mx.take_along_axis(a, mx.array([[0, 2, 1]]), axis=1).tolist()
        [[10, 20, 30]]
    """
    s = to_stream(stream)
    a, grids = _along_axis("take_along_axis", a, indices, axis, s)
    return gather(a, grids, s, "take_along_axis")


def put_along_axis(a: Any, /, indices: Any, values: Any, axis: int | None = None, *,
                   stream: Any = None) -> Array:
    """`a` with `values` written at `indices` along `axis` (NumPy's `put_along_axis`).

    `values` broadcasts to the indexed shape and is cast to `a`'s dtype; with repeated indices
    the last value wins. With `axis=None` the flattened array is updated and reshaped back.
    Negative indices count from the end; an out-of-range one makes the evaluation fail (see the
    module notes).

    Args:
        a: the input array.
        indices: an integer array with `a`'s number of dimensions.
        values: the values to write.
        axis: the axis to index along; None uses the flattened array.

    Returns:
        A new array of `a`'s shape; `a` is unchanged.

    Raises:
        ValueError: if the shapes do not match or the indices are boolean.
        TypeError: for non-integer indices.

    Example:
        >>> import nuvec as mx
        >>> mx.put_along_axis(mx.zeros((1, 3)), mx.array([[1]]), 5.0, axis=1).tolist()
        [[0.0, 5.0, 0.0]]
    """
    s = to_stream(stream)
    orig = as_array(a, "put_along_axis")
    a, grids = _along_axis("put_along_axis", orig, indices, axis, s)
    values = as_array(values, "put_along_axis", orig.dtype)
    values = slicing.fit_update("put_along_axis", values, index_shape(grids), a.dtype, s)
    out = scatter(a, grids, values, "set", s)
    return shape_ops.reshape(out, orig.shape, stream=s) if axis is None else out
