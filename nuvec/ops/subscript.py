"""`Array.__getitem__`, `Array.__setitem__` and `Array.at[...]`: NumPy/MLX keys (ints, slices
with any step, None, Ellipsis, integer arrays) turned into slices, reshapes, gathers and
scatters.

Advanced (integer-array) indices broadcast together; their dimensions replace the indexed axes
in place when the advanced indices are adjacent, and go first otherwise (NumPy's rule; a Python
int next to an array counts as advanced). Boolean masks are accepted only as NumPy data or
lists (their shape and positions are static) and must match the sizes of the axes they cover;
boolean nuvec arrays are rejected, as in MLX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops import binary, masked
from nuvec.ops.arguments import BadIndexError, as_array
from nuvec.ops.indexing import (
    check_index_array,
    check_int_index,
    gather,
    index_shape,
    scatter,
)
from nuvec.ops.shape import Reshape, reshape, transpose
from nuvec.ops.slicing import fit_update, static_slice, static_slice_update
from nuvec.ops.unary import negative, reciprocal

Shape = tuple[int, ...]

# Key items, one per index entry after expansion: ("none",), ("slice", start, stop, step),
# ("int", i) or ("array", Array); a NumPy mask gives ("mask", Array, size) per axis until its
# size is checked. Every item but "none" consumes one axis.


def _static_array(op: str, value: Any) -> list[tuple]:
    """NumPy data / lists as index items: integer arrays, or a boolean mask as its nonzero."""
    try:
        data = np.asarray(value)
    except ValueError:  # NumPy's "inhomogeneous shape"
        raise ValueError(f"{op}: nested index lists must be rectangular, got {value!r}") from None
    if data.dtype == bool:
        if data.ndim == 0:
            raise TypeError(f"{op}: a boolean scalar is not a valid index")
        # One item per mask axis, keeping the size that the indexed axis must have.
        return [("mask", as_array(p.astype(np.int64), op), n)
                for p, n in zip(np.nonzero(data), data.shape)]
    if data.dtype.kind not in "iu":
        if data.size == 0:
            data = data.astype(np.int32)
        else:
            raise DtypeError(f"{op}: indices must be integers, got {data.dtype}")
    return [("array", as_array(data, op))]


def _items(op: str, shape: Shape, key: Any) -> list[tuple]:
    """The key as a list of items covering every axis (Ellipsis and missing axes expanded)."""
    entries = key if isinstance(key, tuple) else (key,)
    items: list[tuple] = []
    ellipsis_at = None
    for k in entries:
        if k is None:
            items.append(("none",))
        elif k is Ellipsis:
            if ellipsis_at is not None:
                raise BadIndexError(f"{op}: an index can only have a single ellipsis (...)")
            ellipsis_at = len(items)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError(f"{op}: a boolean scalar is not a valid index")
        elif isinstance(k, (int, np.integer)):
            items.append(("int", int(k)))
        elif isinstance(k, slice):
            items.append(("raw_slice", k))
        elif isinstance(k, Array):
            items.append(("array", check_index_array(op, k)))
        elif isinstance(k, (list, np.ndarray)):
            items.extend(_static_array(op, k))
        else:
            raise TypeError(f"{op}: cannot index an array with {type(k).__name__}")
    used = sum(1 for it in items if it[0] != "none")
    if used > len(shape):
        raise BadIndexError(f"{op}: too many indices for an array with {len(shape)} dimensions "
                         f"({used} were given)")
    full = [("raw_slice", slice(None))] * (len(shape) - used)
    if ellipsis_at is None:
        items += full
    else:
        items[ellipsis_at:ellipsis_at] = full
    out, axis = [], 0
    for it in items:
        if it[0] == "none":
            out.append(it)
            continue
        size = shape[axis]
        if it[0] == "int":
            out.append(("int", check_int_index(op, it[1], size, axis)))
        elif it[0] == "raw_slice":
            out.append(("slice", *_slice_params(op, it[1], size)))
        elif it[0] == "mask":
            if it[2] != size:
                raise BadIndexError(f"{op}: a boolean index of size {it[2]} does not match axis "
                                    f"{axis} with size {size}")
            out.append(("array", it[1]))
        else:
            out.append(it)
        axis += 1
    return out


def _slice_params(op: str, s: slice, size: int) -> tuple[int, int, int]:
    for part in (s.start, s.stop, s.step):
        if part is not None and (isinstance(part, bool) or not isinstance(part, (int, np.integer))):
            raise DtypeError(f"{op}: slice indices must be integers or None, got {part!r}")
    if s.step == 0:
        raise ValueError(f"{op}: slice step cannot be zero")
    return s.indices(size)


class _Plan:
    """How a key maps onto an array: the window to slice, the advanced indices and the layout.

    - `bounds`: (start, stop, strides) of the window (int and array axes kept whole).
    - `perm`: the window's axes with the advanced ones first (None when no arrays).
    - `indices`: one index array (or 0-d int) per advanced axis.
    - `basic`: the final dims of the non-advanced items ("slice" lengths and "none" 1s).
    - `at`: where the broadcast index dims land among `basic` (0 when they go first).
    """

    def __init__(self, op: str, shape: Shape, key: Any):
        items = _items(op, shape, key)
        window: list[tuple[int, int, int]] = []
        self.advanced = any(it[0] == "array" for it in items)
        adv_axes, other_axes, self.indices, self.basic = [], [], [], []
        self.window_shape: list[int] = []
        first_adv = last_adv = None
        axis = 0
        for pos, it in enumerate(items):
            kind = it[0]
            if kind == "none":
                self.basic.append(1)
                continue
            d = shape[axis]
            if kind == "slice":
                _, a, b, c = it
                n = len(range(a, b, c))
                window.append((a, b, c))
                self.basic.append(n)
                self.window_shape.append(n)
                other_axes.append(axis)
            elif kind == "int" and not self.advanced:
                window.append((it[1], it[1] + 1, 1))
                self.window_shape.append(1)
            else:
                window.append((0, d, 1))
                self.window_shape.append(d)
                adv_axes.append(axis)
                idx = it[1]
                if kind == "int":
                    idx = as_array(np.asarray(idx, dtype=np.int32), op)
                self.indices.append(idx)
                first_adv = pos if first_adv is None else first_adv
                last_adv = pos
            axis += 1
        self.perm = None
        self.at = 0
        if self.advanced:
            self.perm = tuple(adv_axes + other_axes)
            between = items[first_adv:last_adv + 1]
            if all(it[0] in ("int", "array") for it in between):
                self.at = sum(1 for it in items[:first_adv] if it[0] in ("slice", "none"))
            self.index_shape = index_shape(self.indices, op)
        self.bounds = tuple(tuple(w[k] for w in window) for k in range(3))

    def result_shape(self) -> Shape:
        if not self.advanced:
            return tuple(self.basic)
        return tuple(self.basic[:self.at]) + self.index_shape + tuple(self.basic[self.at:])

    def gathered_order(self) -> tuple[list[int], list[int]]:
        """Permutations between [index dims, basic dims] and the final layout."""
        k, nb = len(self.index_shape), len(self.basic)
        to_final = list(range(k, k + self.at)) + list(range(k)) + list(range(k + self.at, k + nb))
        inverse = [0] * len(to_final)
        for i, p in enumerate(to_final):
            inverse[p] = i
        return to_final, inverse


def _is_full(plan: _Plan, shape: Shape) -> bool:
    return all(a == 0 and b == d and c == 1 for a, b, c, d in zip(*plan.bounds, shape))


def _basic(shape: Shape, key: tuple) -> tuple[tuple[Shape, Shape, Shape], Shape] | None:
    """The window (starts, stops, strides) and result shape of a key of Python ints, slices,
    None and at most one Ellipsis (the common `a[i]`, `a[1:3, 2]`, `a[..., 0]`, `a[:, None]`),
    as `_Plan` finds them without its items; None for any other key."""
    used = 0
    for k in key:
        if k is not None and k is not Ellipsis:
            used += 1
    if used > len(shape):
        return None
    starts, stops, strides, out = [], [], [], []
    axis, ellipsis = 0, False
    for k in key:
        if type(k) is int:
            i = check_int_index("getitem", k, shape[axis], axis)
            starts.append(i)
            stops.append(i + 1)
            strides.append(1)
            axis += 1
        elif type(k) is slice:
            a, b, c = _slice_params("getitem", k, shape[axis])
            starts.append(a)
            stops.append(b)
            strides.append(c)
            out.append(len(range(a, b, c)))
            axis += 1
        elif k is None:
            out.append(1)
        elif k is Ellipsis and not ellipsis:
            ellipsis = True
            for d in shape[axis:axis + len(shape) - used]:
                starts.append(0)
                stops.append(d)
                strides.append(1)
                out.append(d)
            axis += len(shape) - used
        else:
            return None
    rest = shape[axis:]
    window = (*starts, *(0 for _ in rest)), (*stops, *rest), (*strides, *(1 for _ in rest))
    return window, (*out, *rest)


def getitem(a: Array, key: Any, stream: Any = None) -> Array:
    """`a[key]` with NumPy's semantics (see the module notes)."""
    s = to_stream(stream)
    if type(key) is Array and a.ndim:  # `a[indices]`: rows of `a`, one gather
        return gather(a, [check_index_array("getitem", key)], s, "getitem")
    found = _basic(a.shape, key if type(key) is tuple else (key,))
    if found is not None:  # a window, and a reshape dropping int axes, adding None's
        window, shape = found
        out = static_slice(a, *window, s)
        return out if out.shape == shape else record1(Reshape(shape), (out,), s)
    plan = _Plan("getitem", a.shape, key)
    window = static_slice(a, *plan.bounds, s)
    if not plan.advanced:
        return reshape(window, plan.result_shape(), stream=s)
    x = transpose(window, plan.perm, stream=s)
    out = gather(x, plan.indices, s, "getitem")
    k = len(plan.index_shape)
    out = reshape(out, plan.index_shape + tuple(plan.basic), stream=s)
    to_final, _ = plan.gathered_order()
    return transpose(out, to_final, stream=s) if plan.at and k else out


def _updates(op: str, a: Array, plan: _Plan, value: Any, s: Any) -> Array:
    """`value` broadcast to `a[key]`'s shape (leading size-1 dims dropped, as MLX), in the
    layout the update primitive needs, cast to `a`'s dtype."""
    v = as_array(value, op, a.dtype if not isinstance(value, Array) else None)
    lead = 0
    while lead < v.ndim and v.shape[lead] == 1:
        lead += 1
    if lead:
        v = reshape(v, v.shape[lead:], stream=s)
    v = fit_update(op, v, plan.result_shape(), a.dtype, s)
    if not plan.advanced:
        return reshape(v, tuple(plan.window_shape), stream=s)
    if plan.at and plan.index_shape:
        v = transpose(v, plan.gathered_order()[1], stream=s)
    rest = tuple(plan.window_shape[ax] for ax in plan.perm[len(plan.indices):])
    return reshape(v, plan.index_shape + rest, stream=s)


def update(a: Array, key: Any, value: Any, mode: str, op: str, stream: Any = None) -> Array:
    """`a` with `a[key]` combined with `value` by `mode` ("set", "add", "multiply", "max",
    "min"); repeated array indices accumulate (for "set", the last write wins)."""
    s = to_stream(stream)
    plan = _Plan(op, a.shape, key)
    v = _updates(op, a, plan, value, s)
    full = _is_full(plan, a.shape)
    window = static_slice(a, *plan.bounds, s)
    if not plan.advanced:
        new = v if mode == "set" else _combine(mode, window, v, full, s)
    else:
        x = transpose(window, plan.perm, stream=s)
        inverse = [0] * len(plan.perm)
        for i, p in enumerate(plan.perm):
            inverse[p] = i
        new = transpose(scatter(x, plan.indices, v, mode, s), inverse, stream=s)
    if full:
        return new
    return static_slice_update(a, new, *plan.bounds, s)


def _combine(mode: str, window: Array, v: Array, full: bool, s: Any) -> Array:
    """`window` combined with `v` (equal shapes and dtypes). As in MLX, a max/min tie gives
    the derivative to both (as the scatter of an array key does), unless the window is the
    whole array in order, where the update is the plain elementwise op (tie: to `v`)."""
    if mode in ("max", "min") and not full:
        extremum = binary.UPDATE_MAXIMUM if mode == "max" else binary.UPDATE_MINIMUM
        return record1(extremum, (window, v), s)
    fn = {"add": binary.add, "multiply": binary.multiply, "max": binary.maximum,
          "min": binary.minimum}[mode]
    return fn(window, v, stream=s)


class ArrayAt:
    """`a.at[key]`: updates returning a new array (`a` is unchanged), as MLX's `array.at`.

    Repeated indices accumulate: `a.at[idx].add(v)` adds every matching update.

    Example:
        >>> import nuvec as mx
        >>> a = mx.zeros((3,))
        >>> a.at[mx.array([0, 0, 2])].add(1.0).tolist()
        [2.0, 0.0, 1.0]
    """

    __slots__ = ("_array", "_key")

    def __init__(self, array: Array, key: Any = None):
        self._array, self._key = array, key

    def __getitem__(self, key: Any) -> ArrayAt:
        return ArrayAt(self._array, key)

    def _apply(self, mode: str, value: Any, op: str) -> Array:
        return update(self._array, self._key, value, mode, f"at.{op}")

    def add(self, value: Any) -> Array:
        """`a` with `value` added at the indices (repeated indices accumulate)."""
        return self._apply("add", value, "add")

    def subtract(self, value: Any) -> Array:
        """`a` with `value` subtracted at the indices (repeated indices accumulate).

        Raises:
            TypeError: for boolean arrays (bool has no subtraction to accumulate).
        """
        if self._array.dtype is dt.bool_:
            raise DtypeError("at.subtract: not supported for bool arrays")
        return self._apply("add", negative(self._value(value, "subtract")), "subtract")

    def multiply(self, value: Any) -> Array:
        """`a` multiplied by `value` at the indices (repeated indices accumulate)."""
        return self._apply("multiply", value, "multiply")

    def divide(self, value: Any) -> Array:
        """`a` divided by `value` at the indices (repeated indices accumulate).

        Raises:
            TypeError: for integer or boolean arrays (division is defined for inexact dtypes).
        """
        if not self._array.dtype.is_inexact:
            raise DtypeError(f"at.divide: expected a floating-point array, got "
                            f"{self._array.dtype.name}")
        return self._apply("multiply", reciprocal(self._value(value, "divide")), "divide")

    def maximum(self, value: Any) -> Array:
        """`a` with the elementwise maximum of itself and `value` at the indices."""
        return self._apply("max", value, "maximum")

    def minimum(self, value: Any) -> Array:
        """`a` with the elementwise minimum of itself and `value` at the indices."""
        return self._apply("min", value, "minimum")

    def _value(self, value: Any, op: str) -> Array:
        dtype = self._array.dtype
        return as_array(value, f"at.{op}", None if isinstance(value, Array) else dtype)


def setitem(a: Array, key: Any, value: Any) -> None:
    """`a[key] = value`: rebinds `a` to the updated array (MLX's in-place semantics)."""
    if isinstance(key, Array) and key.dtype is dt.bool_:
        a._rebind(masked.mask_update(a, key, value))
        return
    a._rebind(update(a, key, value, "set", "setitem"))

