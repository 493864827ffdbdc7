"""The rest of MLX's array surface: as_strided, view, hadamard_transform, window functions.

`AsStrided`, `View` and `Hadamard` are primitives (a strided view and a log2(n)-pass butterfly); the
windows (`hanning`, `hamming`, `blackman`, `bartlett`, NumPy's signatures) are compositions.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, check_shape, fresh, index_int, int_tuple, real_number
from nuvec.ops.binary import add, multiply, subtract
from nuvec.ops.creation import arange, ones, zeros
from nuvec.ops.families import Linear, apply, move_batch_to_front
from nuvec.ops.shape import reshape
from nuvec.ops.unary import abs as absolute, astype, cos

__all__ = ["as_strided", "view", "hadamard_transform", "hanning", "hamming", "blackman", "bartlett"]


def _positions(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> np.ndarray:
    """The flat input index read by each output element (int64, `shape`)."""
    out = np.full(shape, offset, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[axis] = size
        out = out + (np.arange(size, dtype=np.int64) * stride).reshape(view)
    return out


class AsStrided(Linear, Primitive):
    """Reads the row-major flattened input at `offset + sum(i_k * strides[k])` (elements)."""

    __slots__ = ("shape", "strides", "offset")
    allocates = False  # a view of its input

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int):
        self.shape, self.strides, self.offset = shape, strides, offset

    def params(self):
        return (self.shape, self.strides, self.offset)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        where = _positions(self.shape, self.strides, self.offset).reshape(-1)
        # Elements read several times (overlapping windows) accumulate their cotangents.
        flat = zeros((x.size,), x.dtype).at[leaf(where, dt.int64)].add(
            reshape(cotangents[0], (-1,)))
        return [reshape(flat, x.shape)]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        size = x.shape[0]
        per_item = x.size // size if size else 0
        batched = AsStrided((size, *self.shape), (per_item, *self.strides), self.offset)
        return [apply(batched, x)], [0]


def as_strided(
    a: Any, /, shape: Sequence[int] | None = None, strides: Sequence[int] | None = None,
    offset: int = 0, *, stream: Any = None,
) -> Array:
    """A new view of `a`'s row-major elements with the given shape and strides (in elements).

    Unlike NumPy's, the read positions are checked at the call: every element read must lie
    inside `a`, so no out-of-buffer read is possible. The result does not alias `a` in any
    observable way (arrays are immutable).

    Args:
        a: the input; its elements are taken in row-major order.
        shape: the output shape (default `a.shape`).
        strides: the step of each output axis in elements (default row-major for `shape`);
            may be zero or negative.
        offset: the flat index of the output's first element.

    Returns:
        An array of `shape` and `a`'s dtype.

    Raises:
        ValueError: if `shape` and `strides` differ in length, for a negative offset, or if
            any read position falls outside `a`.

    Example:
        >>> import nuvec as mx
        >>> mx.as_strided(mx.arange(5), (3, 3), (1, 1)).tolist()
        [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    """
    op = "as_strided"
    a = as_array(a, op)
    shape = a.shape if shape is None else check_shape(shape, op)
    if strides is None:
        row_major, step = [], 1
        for d in reversed(shape):
            row_major.append(step)
            step *= d
        strides = tuple(reversed(row_major))
    strides = int_tuple(strides, op, "strides")
    if len(strides) != len(shape):
        raise ValueError(f"{op}: shape {shape} and strides {strides} differ in length")
    offset = index_int(offset, op, "offset")
    if offset < 0:
        raise ValueError(f"{op}: offset must be non-negative, got {offset}")
    if math.prod(shape):
        low = offset + sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
        high = offset + sum(max(0, (d - 1) * s) for d, s in zip(shape, strides))
        if low < 0 or high >= a.size:
            raise ValueError(
                f"{op}: shape {shape} with strides {strides} and offset {offset} reads "
                f"elements {low}..{high}, outside the {a.size} elements of an array of "
                f"shape {a.shape}"
            )
    return record1(AsStrided(shape, strides, offset), (a,), to_stream(stream))


class View(Primitive):
    """The same bytes read as `dtype`; the last axis scales by the ratio of item sizes.

    Bit reinterpretation has no derivative (the base class says so for vjp and jvp).
    """

    __slots__ = ("dtype",)

    def __init__(self, dtype: dt.Dtype):
        self.dtype = dtype

    def params(self):
        return (self.dtype,)

    def output_specs(self, inputs):
        x = inputs[0]
        last = x.shape[-1] * x.dtype.size // self.dtype.size
        return (((*x.shape[:-1], last), self.dtype),)

    def vmap(self, inputs, axes):
        return [apply(self, move_batch_to_front(inputs[0], axes[0]))], [0]


def view(a: Any, /, dtype: Any, *, stream: Any = None) -> Array:
    """`a`'s bytes reinterpreted as `dtype` (MLX's `view`); the result does not share memory.

    Args:
        a: the input array.
        dtype: the dtype to read the bytes as.

    Returns:
        An array of `dtype` whose last axis is `a.shape[-1] * a.itemsize / dtype.size` long
        (a 0-d array stays 0-d).

    Raises:
        ValueError: if the item sizes differ and `a` is 0-d, or the last axis's bytes do not
            divide into whole items of `dtype`.

    Example:
        >>> import nuvec as mx
        >>> mx.view(mx.array([1.0], mx.float32), mx.uint32).tolist()
        [1065353216]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "view")
    target = dt.to_dtype(dtype, "view")
    if target is a.dtype:
        return fresh(a)
    if a.ndim == 0:
        if target.size != a.dtype.size:
            raise ValueError(f"view: a 0-d {a.dtype.name} array cannot be viewed as "
                             f"{target.name}, whose item size differs")
        # as a 1-element row: `View`'s shape rule and kernels work on a last axis
        return reshape(view(reshape(a, (1,), stream=stream), target, stream=stream), (),
                       stream=stream)
    if target.size != a.dtype.size:
        if (a.shape[-1] * a.dtype.size) % target.size:
            raise ValueError(
                f"view: the last axis of shape {a.shape} ({a.shape[-1] * a.dtype.size} bytes of "
                f"{a.dtype.name}) does not divide into {target.name} items of {target.size} bytes"
            )
    return record1(View(target), (a,), to_stream(stream))


# Sizes m (besides 1) of the small Hadamard matrices of Sloane's library that MLX also supports:
# a last axis of m * 2**k is transformed as H_m (x) H_(2**k).
HADAMARD_FACTORS = (12, 20, 28)


def hadamard_factor(n: int) -> int | None:
    """`m` with `n = m * 2**k` and m in (1, 12, 20, 28), or None when there is none."""
    for m in (1, *HADAMARD_FACTORS):
        rest = n // m
        if n % m == 0 and rest and not rest & (rest - 1):
            return m
    return None


class Hadamard(Linear, Primitive):
    """`scale * (H_m (x) H_2^k) x` along the last axis; `adjoint` applies the transpose.

    Sylvester's H_2^k is symmetric; the vjp applies the adjoint, which differs from the
    transform only through a non-symmetric H_m.
    """

    __slots__ = ("scale", "adjoint")

    def __init__(self, scale: float, adjoint: bool = False):
        self.scale, self.adjoint = scale, adjoint

    def params(self):
        return (self.scale, self.adjoint)

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(Hadamard(self.scale, not self.adjoint), cotangents[0])]

    def vmap(self, inputs, axes):
        return [apply(self, move_batch_to_front(inputs[0], axes[0]))], [0]


def hadamard_transform(a: Any, /, scale: float | None = None, *, stream: Any = None) -> Array:
    """The Walsh-Hadamard transform along the last axis, as MLX computes it.

    For `n = 2**k` it is `scale * H_n a` with Sylvester's matrix (`H_2n = [[H_n, H_n],
    [H_n, -H_n]]`, symmetric), computed with k butterfly passes. For `n = m * 2**k` with m in
    (12, 20, 28) the last axis is viewed as `[m, 2**k]`: the butterfly runs along `2**k` and
    Sloane's `H_m` along `m`. The default scale `1/sqrt(n)` makes the transform orthonormal.

    Args:
        a: the input; integer and bool inputs compute in float32.
        scale: the factor applied to the result (default `1/sqrt(n)`).

    Returns:
        An array of `a`'s shape (float dtype).

    Raises:
        ValueError: for a last axis whose size is not `m * 2**k` with m in (1, 12, 20, 28)
            (an empty batch is fine; an empty last axis is not).

    Example:
        >>> import nuvec as mx
        >>> mx.hadamard_transform(mx.array([1.0, 0.0]), scale=1.0).tolist()
        [1.0, 1.0]
    """
    op = "hadamard_transform"
    s = to_stream(stream)
    a = as_array(a, op)
    n = a.shape[-1] if a.ndim else 1
    if hadamard_factor(n) is None:
        raise ValueError(
            f"{op}: the last axis must have size m * 2**k with m in (1, 12, 20, 28), got {n} "
            f"(shape {a.shape})"
        )
    factor = 1.0 / math.sqrt(n) if scale is None else real_number(scale, "hadamard_transform",
                                                                       "scale")
    dtype = a.dtype if a.dtype.is_floating else dt.float32
    a = astype(a, dtype, stream=s)
    if n == 1 or a.size == 0:  # nothing to mix: only the scale applies
        return multiply(a, factor, stream=s)
    return record1(Hadamard(factor), (a,), s)


def _cosine_window(op: str, m: int, coefficients: Sequence[float]) -> Array:
    """`sum_k (-1)^k c_k cos(2 pi k n / (M - 1))` for `n` in `[0, M)`."""
    m = _window_length(op, m)
    if m <= 1:
        return ones((m,), dt.float32)
    phase = multiply(arange(m, dtype=dt.float32), 2 * math.pi / (m - 1))
    out: Array | None = None
    for k, c in enumerate(coefficients):
        term = multiply(cos(multiply(phase, float(k))), c * (-1) ** k)
        out = term if out is None else add(out, term)
    assert out is not None
    return out


def _window_length(op: str, m: Any) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"{op}: M must be an int, got {type(m).__name__}")
    return max(int(m), 0)


def hanning(M: int) -> Array:
    """The Hann window of `M` points (NumPy's `hanning`), float32.

    Args:
        M: the number of points.

    Returns:
        `0.5 - 0.5 cos(2 pi n / (M - 1))`; empty for `M < 1`, `[1.0]` for `M == 1`.

    Raises:
        TypeError: if `M` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.hanning(3).tolist()
        [0.0, 1.0, 0.0]
    """
    return _cosine_window("hanning", M, (0.5, 0.5))


def hamming(M: int) -> Array:
    """The Hamming window of `M` points (NumPy's `hamming`), float32.

    Args:
        M: the number of points.

    Returns:
        `0.54 - 0.46 cos(2 pi n / (M - 1))`; empty for `M < 1`, `[1.0]` for `M == 1`.

    Raises:
        TypeError: if `M` is not an int.

    Example:
        >>> import nuvec as mx
        >>> [round(x, 4) for x in mx.hamming(3).tolist()]
        [0.08, 1.0, 0.08]
    """
    return _cosine_window("hamming", M, (0.54, 0.46))


def blackman(M: int) -> Array:
    """The Blackman window of `M` points (NumPy's `blackman`), float32.

    Args:
        M: the number of points.

    Returns:
        `0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))`; empty for `M < 1`,
        `[1.0]` for `M == 1`.

    Raises:
        TypeError: if `M` is not an int.

    Example:
        >>> import nuvec as mx
        >>> round(mx.blackman(5)[1].item(), 4)
        0.34
    """
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def bartlett(M: int) -> Array:
    """The Bartlett (triangular) window of `M` points (NumPy's `bartlett`), float32.

    Args:
        M: the number of points.

    Returns:
        `1 - |2 n / (M - 1) - 1|`; empty for `M < 1`, `[1.0]` for `M == 1`.

    Raises:
        TypeError: if `M` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.bartlett(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    m = _window_length("bartlett", M)
    if m <= 1:
        return ones((m,), dt.float32)
    ramp = subtract(multiply(arange(m, dtype=dt.float32), 2.0 / (m - 1)), 1.0)
    return subtract(1.0, absolute(ramp))
