"""Contractions: inner, outer, tensordot, vecdot, kron (einsum and its engine: `einsum.py`).

All are compositions: diagonals, sums, transposes and reshapes around one batched `matmul` per
pair of operands, so large contractions run through BLAS and derivatives and batching come
from those operations. Integer and complex contractions use multiply and sum (matmul takes
real floats only).
"""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import broadcast_all, int_tuple, normalize_axis
from nuvec.ops.binary import multiply
from nuvec.ops.complex_parts import conjugate
from nuvec.ops.einsum import LETTERS, contract, promoted
from nuvec.ops.shape import moveaxis, reshape

__all__ = ["inner", "outer", "tensordot", "vecdot", "kron"]


def tensordot(a: Any, b: Any, /, axes: int | Sequence[Sequence[int]] = 2, *,
              stream: Any = None) -> Array:
    """Sum of products over the given axes of `a` and `b`.

    Args:
        a: the first array.
        b: the second array.
        axes: an int `n` contracts the last `n` axes of `a` with the first `n` of `b`; a pair
            of lists contracts `a`'s axes `axes[0]` with `b`'s `axes[1]`, in order.
        stream: the stream or device to run on.

    Returns:
        An array with `a`'s free axes followed by `b`'s.

    Raises:
        ValueError: if axes are out of range, repeated, or their sizes differ, or the
            operands have more than 52 dimensions together.

    Example:
        >>> import nuvec as mx
        >>> mx.tensordot(mx.ones((2, 3)), mx.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    s = to_stream(stream)
    a, b = promoted("tensordot", (a, b), s)
    if isinstance(axes, int):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes {axes} is out of range for shapes {a.shape} "
                             f"and {b.shape}")
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        try:
            first, second = axes
            first, second = int_tuple(first, "", ""), int_tuple(second, "", "")
        except (TypeError, ValueError) as e:  # not iterable, not two entries, not ints
            raise type(e)(f"tensordot: axes must be an int or a pair of lists of ints, got "
                          f"{axes!r}") from None
        if len(first) != len(second):
            raise ValueError(f"tensordot: axes {axes!r} name {len(first)} and {len(second)} "
                             "axes")
        axes_a = [normalize_axis(x, a.ndim, "tensordot") for x in first]
        axes_b = [normalize_axis(x, b.ndim, "tensordot") for x in second]
        if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
            raise ValueError(f"tensordot: repeated axis in {axes!r}")
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axis {i} of shape {a.shape} and axis {j} of shape "
                             f"{b.shape} differ in size")
    if a.ndim + b.ndim > len(LETTERS):
        raise ValueError(f"tensordot: at most {len(LETTERS)} dimensions in all, got shapes "
                         f"{a.shape} and {b.shape}")
    la = list(LETTERS[: a.ndim])
    lb = list(LETTERS[a.ndim: a.ndim + b.ndim])
    for i, j in zip(axes_a, axes_b):
        lb[j] = la[i]
    output = [l for k, l in enumerate(la) if k not in axes_a] + \
        [l for k, l in enumerate(lb) if k not in axes_b]
    sizes = {**dict(zip(la, a.shape)), **dict(zip(lb, b.shape))}
    return contract([a, b], [la, lb], output, sizes, [(0, 1)], s)


def inner(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Inner product over the last axes of `a` and `b` (a product if either is 0-d).

    Args:
        a: the first operand.
        b: the second operand.
        stream: the stream (or device) to record on.

    Returns:
        An array of shape `a.shape[:-1] + b.shape[:-1]`.

    Raises:
        ValueError: if the last axes differ in size.

    Example:
        >>> import nuvec as mx
        >>> mx.inner(mx.array([1.0, 2.0]), mx.array([3.0, 4.0])).item()
        11.0
    """
    s = to_stream(stream)
    a, b = promoted("inner", (a, b), s)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b, stream=s)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: last dimensions differ, got shapes {a.shape} and {b.shape}")
    return tensordot(a, b, ([-1], [-1]), stream=s)


def outer(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Outer product of the flattened `a` and `b`: `out[i, j] = a[i] * b[j]`.

    Args:
        a: the first operand (flattened).
        b: the second operand (flattened).
        stream: the stream (or device) to record on.

    Returns:
        An array of shape `(a.size, b.size)`.

    Example:
        >>> import nuvec as mx
        >>> mx.outer(mx.array([1, 2]), mx.array([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    s = to_stream(stream)
    a, b = promoted("outer", (a, b), s)
    return multiply(reshape(a, (a.size, 1), stream=s), reshape(b, (1, b.size), stream=s),
                    stream=s)


def vecdot(a: Any, b: Any, /, *, axis: int = -1, stream: Any = None) -> Array:
    """Vector dot product `sum(conj(a) * b)` along `axis`, broadcasting the other axes.

    Args:
        a: the first operand (conjugated when complex).
        b: the second operand.
        axis: the axis to contract, after broadcasting.
        stream: the stream (or device) to record on.

    Returns:
        An array of the broadcast shape without `axis`.

    Raises:
        ValueError: if the shapes do not broadcast or `axis` is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.vecdot(mx.array([[1.0, 2.0]]), mx.array([3.0, 4.0])).tolist()
        [11.0]
    """
    s = to_stream(stream)
    a, b = promoted("vecdot", (a, b), s)
    if a.ndim == 0 or b.ndim == 0:  # (before broadcasting, as MLX and NumPy)
        raise ValueError(f"vecdot: inputs must have at least one dimension, got shapes "
                         f"{a.shape} and {b.shape}")
    a, b = broadcast_all("vecdot", (a, b), s)
    ax = normalize_axis(axis, a.ndim, "vecdot")
    if a.dtype is dt.complex64:
        a = conjugate(a, stream=s)
    a, b = moveaxis(a, ax, -1, stream=s), moveaxis(b, ax, -1, stream=s)
    labels = list(LETTERS[: a.ndim])
    sizes = dict(zip(labels, a.shape))
    return contract([a, b], [labels, labels], labels[:-1], sizes, [(0, 1)], s)


def kron(a: Any, b: Any, *, stream: Any = None) -> Array:
    """Kronecker product: blocks `a[i...] * b` laid out on `a`'s grid.

    The shapes are aligned on the right; the result's shape is their elementwise product.

    Args:
        a: the first operand.
        b: the second operand.
        stream: the stream (or device) to record on.

    Returns:
        The Kronecker product, of the promoted dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.kron(mx.array([1, 2]), mx.array([1, 10])).tolist()
        [1, 10, 2, 20]
    """
    s = to_stream(stream)
    a, b = promoted("kron", (a, b), s)
    ndim = max(a.ndim, b.ndim)
    sa = (1,) * (ndim - a.ndim) + a.shape
    sb = (1,) * (ndim - b.ndim) + b.shape
    a2 = reshape(a, tuple(d for x in sa for d in (x, 1)), stream=s)
    b2 = reshape(b, tuple(d for x in sb for d in (1, x)), stream=s)
    return reshape(multiply(a2, b2, stream=s), tuple(x * y for x, y in zip(sa, sb)), stream=s)
