"""Counter-based random numbers: keys, split, and the samplers of `nuvec.random`.

`RandomBits` is the only primitive: Threefry-2x32 of (key, counter), so a key and a shape always
give the same bits whatever the evaluation order or stream. Every sampler composes over it. The
public namespace is `nuvec.random` (this module exports nothing into `nuvec`).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, broadcast_shapes, check_shape, normalize_axis
from nuvec.ops.families import apply, move_batch_to_front

__all__: list[str] = []

_WIDTH_DTYPES = {1: dt.uint8, 2: dt.uint16, 4: dt.uint32}


class RandomBits(Primitive):
    """Random unsigned integers of `width` bytes from a key `[..., 2]` (uint32); no derivative."""

    __slots__ = ("shape", "width")

    def __init__(self, shape: tuple[int, ...], width: int):
        self.shape = shape
        self.width = width

    def params(self):
        return (self.shape, self.width)

    def output_specs(self, inputs):
        return ((inputs[0].shape[:-1] + self.shape, _WIDTH_DTYPES[self.width]),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [None]

    def vmap(self, inputs, axes):
        # Each key of the batch draws its own bits: the kernel maps over leading key axes.
        return [apply(self, move_batch_to_front(inputs[0], axes[0]))], [0]


def _key_input(key: Any, op: str) -> Array:
    key = as_array(key, op)
    if key.dtype is not dt.uint32 or key.shape != (2,):
        raise ValueError(
            f"{op}: expected a key of shape (2,) and dtype uint32, "
            f"got shape {key.shape} and dtype {key.dtype.name}"
        )
    return key


class _KeyState:
    """The global key: each sampler called without a key takes a fresh subkey from it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key = _make_key(time.time_ns())

    def next(self) -> Array:
        # The state is split eagerly on the host so that it stays a concrete leaf: samples
        # then depend on the order of calls only, never on when they are evaluated.
        with self.lock:
            pair = np.asarray(split(self.key))
            self.key = leaf(pair[0].copy(), dt.uint32)
            return leaf(pair[1].copy(), dt.uint32)


def _make_key(seed: int) -> Array:
    seed = int(seed) % (1 << 64)
    return leaf(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32), dt.uint32)


_state = _KeyState()


def _resolve(key: Any, op: str) -> Array:
    return _state.next() if key is None else _key_input(key, op)


def seed(seed: int) -> None:
    """Seeds the global key, so that samplers called without a key repeat their sequence.

    Args:
        seed: any Python int.

    Example:
        >>> import nuvec as mx
        >>> mx.random.seed(3); a = mx.random.uniform().item()
        >>> mx.random.seed(3); a == mx.random.uniform().item()
        True
    """
    with _state.lock:
        _state.key = _make_key(seed)


def key(seed: int) -> Array:
    """A PRNG key (uint32 `[2]`: the high and low 32 bits of `seed`).

    Example:
        >>> import nuvec as mx
        >>> mx.random.key(1).tolist()
        [0, 1]
    """
    return _make_key(seed)


def bits(
    shape: Sequence[int] = (), width: int = 4, key: Array | None = None, *, stream: Any = None
) -> Array:
    """Random bits as unsigned integers of `width` bytes (uint8, uint16 or uint32).

    Args:
        shape: output shape.
        width: bytes per element: 1, 2 or 4.
        key: a PRNG key; the global key when None.

    Returns:
        An unsigned integer array of `shape`.

    Raises:
        ValueError: for a width other than 1, 2, 4, a negative dimension or a malformed key.
    """
    shape = check_shape(shape, "bits")
    if width not in _WIDTH_DTYPES:
        raise ValueError(f"bits: width must be 1, 2 or 4 bytes, got {width}")
    k = _resolve(key, "bits")
    return record1(RandomBits(shape, int(width)), (k,), to_stream(stream))


def split(key: Array, num: int = 2, *, stream: Any = None) -> Array:
    """Splits a key into `num` independent keys (shape `[num, 2]`).

    Raises:
        ValueError: for a malformed key or a negative `num`.

    Example:
        >>> import nuvec as mx
        >>> mx.random.split(mx.random.key(0)).shape
        (2, 2)
    """
    k = _key_input(key, "split")
    if int(num) < 0:
        raise ValueError(f"split: num must be non-negative, got {num}")
    return record1(RandomBits((int(num), 2), 4), (k,), to_stream(stream))


def _float_dtype(dtype: Any, op: str) -> dt.Dtype:
    d = dt.to_dtype(dtype, op)
    if not d.is_floating:
        raise TypeError(f"{op}: can only generate real floating-point numbers, got {d.name}")
    return d


def _sample_shape(op: str, shape: Any, *params: Array) -> tuple[int, ...]:
    shape = check_shape(shape, op)
    out = broadcast_shapes(shape, *(p.shape for p in params), op=op)
    if out != shape:
        raise ValueError(
            f"{op}: cannot generate values of shape {shape} from parameters of shapes "
            f"{', '.join(str(p.shape) for p in params)}"
        )
    return shape


def _unit(shape: tuple[int, ...], dtype: dt.Dtype, k: Array, s: Any) -> Array:
    """Uniform numbers in [0, 1) of `dtype` (float32 math below float32, as the kernels)."""
    from nuvec.ops.binary import minimum, multiply
    from nuvec.ops.unary import astype

    work = dt.float64 if dtype is dt.float64 else dt.float32
    raw = record1(RandomBits(shape, 4), (k,), s)
    u = multiply(astype(raw, work, stream=s), 2.0**-32, stream=s)
    # float32 rounds the top 128 values of 2**32 up to 1.0: keep the interval half-open.
    return minimum(u, float(np.nextafter(work.np.type(1), work.np.type(0))), stream=s)


def uniform(
    low: Any = 0,
    high: Any = 1,
    shape: Sequence[int] = (),
    dtype: Any = dt.float32,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Uniform samples in the half-open interval `[low, high)`.

    Args:
        low: lower bound (scalar or array broadcastable to `shape`).
        high: upper bound (scalar or array broadcastable to `shape`).
        shape: output shape; the bounds must broadcast to it.
        dtype: a real floating dtype.
        key: a PRNG key; the global key when None.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: for a non-floating dtype.
        ValueError: if the bounds do not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.uniform(-1, 1, (3,), key=mx.random.key(0))
        >>> bool(((x >= -1) & (x < 1)).all())
        True
    """
    from nuvec.ops.binary import add, minimum, multiply, subtract
    from nuvec.ops.unary import astype

    s = to_stream(stream)
    dtype = _float_dtype(dtype, "uniform")
    lo, hi = as_array(low, "uniform", dtype), as_array(high, "uniform", dtype)
    lo, hi = astype(lo, dtype, stream=s), astype(hi, dtype, stream=s)
    shape = _sample_shape("uniform", shape, lo, hi)
    k = _resolve(key, "uniform")
    u = _unit(shape, dtype, k, s)
    work = u.dtype
    lo_w, hi_w = astype(lo, work, stream=s), astype(hi, work, stream=s)
    out = add(multiply(u, subtract(hi_w, lo_w, stream=s), stream=s), lo_w, stream=s)
    out = astype(out, dtype, stream=s)
    # Rounding of low + u * (high - low) may reach high: clamp below it, as MLX does.
    below = _next_below(astype(hi, dtype, stream=s), dtype, s)
    return minimum(out, below, stream=s)


def _next_below(x: Array, dtype: dt.Dtype, s: Any) -> Array:
    """The largest value of `dtype` below `x` (elementwise), for the open upper bound."""
    from nuvec.ops.binary import maximum, multiply, subtract
    from nuvec.ops.unary import abs as absolute

    # A step of a full epsilon (not half) is representable above and below every power of 2.
    eps = float(dt.finfo(dtype).eps)
    tiny = float(dt.finfo(dtype).tiny)
    step = maximum(multiply(absolute(x, stream=s), eps, stream=s), tiny, stream=s)
    return subtract(x, step, stream=s)


def normal(
    shape: Sequence[int] = (),
    dtype: Any = dt.float32,
    loc: Any = None,
    scale: Any = None,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Normal samples with mean `loc` (default 0) and standard deviation `scale` (default 1).

    Computed as MLX does: `sqrt(2) * erfinv(u)` for `u` uniform in (-1, 1).

    Raises:
        TypeError: for a non-floating dtype.
        ValueError: if `loc`/`scale` do not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> mx.random.normal((2, 3), key=mx.random.key(0)).shape
        (2, 3)
    """
    from nuvec.ops.binary import add, multiply
    from nuvec.ops.unary import astype, erfinv

    s = to_stream(stream)
    dtype = _float_dtype(dtype, "normal")
    params = [as_array(p, "normal", dtype) for p in (loc, scale) if p is not None]
    shape = _sample_shape("normal", shape, *params)
    k = _resolve(key, "normal")
    work = dt.float64 if dtype is dt.float64 else dt.float32
    low = float(np.nextafter(work.np.type(-1), work.np.type(0)))
    u = uniform(low, 1.0, shape, work, k, stream=s)
    out = multiply(erfinv(u, stream=s), math.sqrt(2.0), stream=s)
    if scale is not None:
        out = multiply(out, astype(as_array(scale, "normal", dtype), work, stream=s), stream=s)
    if loc is not None:
        out = add(out, astype(as_array(loc, "normal", dtype), work, stream=s), stream=s)
    return astype(out, dtype, stream=s)


def randint(
    low: Any,
    high: Any,
    shape: Sequence[int] = (),
    dtype: Any = dt.int32,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Random integers uniformly in `[low, high)`.

    Raises:
        TypeError: for a floating or complex dtype.
        ValueError: if the bounds do not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.randint(0, 10, (100,), key=mx.random.key(0))
        >>> 0 <= x.min().item() and x.max().item() < 10
        True
    """
    from nuvec.ops.binary import maximum
    from nuvec.ops.unary import astype, floor

    s = to_stream(stream)
    dtype = dt.to_dtype(dtype, "randint")
    if dtype.is_inexact:
        raise TypeError(f"randint: dtype must be an integer or bool dtype, got {dtype.name}")
    lo, hi = as_array(low, "randint"), as_array(high, "randint")
    shape = _sample_shape("randint", shape, lo, hi)
    k = _resolve(key, "randint")
    lo64, hi64 = astype(lo, dt.float64, stream=s), astype(hi, dt.float64, stream=s)
    # float64 keeps every integer of an int32 range exact; floor (not truncation) keeps
    # negative bounds unbiased.
    u = floor(uniform(lo64, hi64, shape, dt.float64, k, stream=s), stream=s)
    return astype(maximum(u, lo64, stream=s), dtype, stream=s)


def bernoulli(
    p: Any = 0.5, shape: Sequence[int] | None = None, key: Array | None = None, *,
    stream: Any = None,
) -> Array:
    """Boolean samples that are True with probability `p`.

    Args:
        p: probability (scalar or array).
        shape: output shape; `p`'s shape when None.
        key: a PRNG key; the global key when None.

    Raises:
        ValueError: if `p` does not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> mx.random.bernoulli(0.5, (4,), key=mx.random.key(0)).dtype == mx.bool_
        True
    """
    from nuvec.ops.binary import less

    s = to_stream(stream)
    pa = as_array(p, "bernoulli")
    if not pa.dtype.is_floating:
        from nuvec.ops.unary import astype

        pa = astype(pa, dt.float32, stream=s)
    shape = pa.shape if shape is None else _sample_shape("bernoulli", shape, pa)
    k = _resolve(key, "bernoulli")
    return less(uniform(0, 1, shape, pa.dtype, k, stream=s), pa, stream=s)


def truncated_normal(
    lower: Any,
    upper: Any,
    shape: Sequence[int] | None = None,
    dtype: Any = dt.float32,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Standard normal samples truncated to `[lower, upper]` (inverse-CDF sampling).

    Raises:
        TypeError: for a non-floating dtype.
        ValueError: if the bounds do not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.truncated_normal(-1, 1, (50,), key=mx.random.key(0))
        >>> bool((mx.abs(x) <= 1).all())
        True
    """
    from nuvec.ops.binary import clip, multiply
    from nuvec.ops.unary import astype, erf, erfinv

    s = to_stream(stream)
    dtype = _float_dtype(dtype, "truncated_normal")
    lo = astype(as_array(lower, "truncated_normal", dtype), dtype, stream=s)
    hi = astype(as_array(upper, "truncated_normal", dtype), dtype, stream=s)
    if shape is None:
        shape = broadcast_shapes(lo.shape, hi.shape, op="truncated_normal")
    shape = _sample_shape("truncated_normal", shape, lo, hi)
    k = _resolve(key, "truncated_normal")
    work = dt.float64 if dtype is dt.float64 else dt.float32
    root2 = math.sqrt(2.0)
    lo_w, hi_w = astype(lo, work, stream=s), astype(hi, work, stream=s)
    a = erf(multiply(lo_w, 1 / root2, stream=s), stream=s)
    b = erf(multiply(hi_w, 1 / root2, stream=s), stream=s)
    u = uniform(a, b, shape, work, k, stream=s)
    out = multiply(erfinv(u, stream=s), root2, stream=s)
    return astype(clip(out, lo_w, hi_w, stream=s), dtype, stream=s)


def gumbel(
    shape: Sequence[int] = (), dtype: Any = dt.float32, key: Array | None = None, *,
    stream: Any = None,
) -> Array:
    """Standard Gumbel samples: `-log(-log(u))` for `u` uniform in (0, 1).

    Raises:
        TypeError: for a non-floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.random.gumbel((3,), key=mx.random.key(0)).shape
        (3,)
    """
    from nuvec.ops.unary import astype, log, negative

    s = to_stream(stream)
    dtype = _float_dtype(dtype, "gumbel")
    shape = check_shape(shape, "gumbel")
    k = _resolve(key, "gumbel")
    work = dt.float64 if dtype is dt.float64 else dt.float32
    u = uniform(float(dt.finfo(work).tiny), 1.0, shape, work, k, stream=s)
    out = negative(log(negative(log(u, stream=s), stream=s), stream=s), stream=s)
    return astype(out, dtype, stream=s)


def laplace(
    shape: Sequence[int] = (),
    dtype: Any = dt.float32,
    loc: float = 0.0,
    scale: float = 1.0,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Laplace samples with location `loc` and scale `scale` (inverse CDF).

    Raises:
        TypeError: for a non-floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.random.laplace((3,), key=mx.random.key(0)).dtype == mx.float32
        True
    """
    from nuvec.ops.binary import add, multiply
    from nuvec.ops.unary import abs as absolute
    from nuvec.ops.unary import astype, log1p, negative, sign

    s = to_stream(stream)
    dtype = _float_dtype(dtype, "laplace")
    shape = check_shape(shape, "laplace")
    k = _resolve(key, "laplace")
    work = dt.float64 if dtype is dt.float64 else dt.float32
    low = float(np.nextafter(work.np.type(-1), work.np.type(0)))
    u = uniform(low, 1.0, shape, work, k, stream=s)
    tail = log1p(negative(absolute(u, stream=s), stream=s), stream=s)
    out = negative(multiply(sign(u, stream=s), tail, stream=s), stream=s)
    out = add(multiply(out, scale, stream=s), loc, stream=s)
    return astype(out, dtype, stream=s)


def categorical(
    logits: Any,
    axis: int = -1,
    shape: Sequence[int] | None = None,
    num_samples: int | None = None,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Samples class indices (uint32) from unnormalized log-probabilities along `axis`.

    Uses the Gumbel-max trick: `argmax(logits + gumbel)`.

    Args:
        logits: unnormalized log-probabilities.
        axis: the class axis.
        shape: output shape (must broadcast with the logits' other axes).
        num_samples: samples per distribution, appended as the last output axis.
        key: a PRNG key; the global key when None.

    Raises:
        ValueError: if both `shape` and `num_samples` are given, for a bad axis or shape, or
            an empty class axis.

    Example:
        >>> import nuvec as mx
        >>> mx.random.categorical(mx.array([[0.0, 9.0]]), key=mx.random.key(0)).tolist()
        [1]
    """
    from nuvec.ops.binary import add
    from nuvec.ops.reduction import argmax
    from nuvec.ops.shape import expand_dims, moveaxis

    s = to_stream(stream)
    lg = as_array(logits, "categorical")
    if lg.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    ax = normalize_axis(axis, lg.ndim, "categorical")
    if shape is not None and num_samples is not None:
        raise ValueError("categorical: at most one of shape or num_samples can be given")
    lg = moveaxis(lg, ax, -1, stream=s)
    rest, classes = lg.shape[:-1], lg.shape[-1]
    if num_samples is not None:
        if int(num_samples) < 0:
            raise ValueError(f"categorical: num_samples must be non-negative, got {num_samples}")
        out_shape = (*rest, int(num_samples))
        lg = expand_dims(lg, -2, stream=s)
    else:
        out_shape = rest if shape is None else check_shape(shape, "categorical")
        if broadcast_shapes(out_shape, rest, op="categorical") != out_shape:
            raise ValueError(
                f"categorical: shape {out_shape} does not broadcast with the logits' "
                f"batch shape {rest}"
            )
    if classes == 0:
        raise ValueError(f"categorical: axis {axis} of the logits (shape {lg.shape}) is empty")
    k = _resolve(key, "categorical")
    if math.prod(out_shape) == 0:
        from nuvec.ops.creation import zeros

        return zeros(out_shape, dt.uint32, stream=s)
    work = dt.float64 if lg.dtype is dt.float64 else dt.float32
    g = gumbel((*out_shape, classes), work, k, stream=s)
    return argmax(add(g, lg, stream=s), axis=-1, stream=s)


def multivariate_normal(
    mean: Any,
    cov: Any,
    shape: Sequence[int] = (),
    dtype: Any = dt.float32,
    key: Array | None = None,
    *,
    stream: Any = None,
) -> Array:
    """Samples of a multivariate normal distribution `N(mean, cov)`.

    `cov` must be symmetric positive semi-definite; it is factored with `eigh` as
    `V sqrt(w)`, which also covers singular covariances.

    Args:
        mean: `[..., n]`.
        cov: `[..., n, n]`.
        shape: the batch shape of the samples (broadcast with the parameters' batch shapes).
        dtype: float32 or float64.

    Returns:
        An array of shape `broadcast(shape, mean.shape[:-1], cov.shape[:-2]) + [n]`.

    Raises:
        TypeError: for dtypes other than float32/float64.
        ValueError: for mismatched mean/cov shapes or a malformed key.

    Example:
        >>> import nuvec as mx
        >>> mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), (5,)).shape
        (5, 2)
    """
    from nuvec.linalg import eigh
    from nuvec.ops.binary import add, maximum, multiply
    from nuvec.ops.matmul import matmul
    from nuvec.ops.shape import expand_dims, squeeze
    from nuvec.ops.unary import astype, sqrt

    s = to_stream(stream)
    dtype = dt.to_dtype(dtype, "multivariate_normal")
    if dtype not in (dt.float32, dt.float64):
        raise TypeError(f"multivariate_normal: dtype must be float32 or float64, got {dtype.name}")
    m = astype(as_array(mean, "multivariate_normal"), dtype, stream=s)
    c = astype(as_array(cov, "multivariate_normal"), dtype, stream=s)
    if m.ndim < 1 or c.ndim < 2 or c.shape[-1] != c.shape[-2] or c.shape[-1] != m.shape[-1]:
        raise ValueError(
            "multivariate_normal: mean must be [..., n] and cov [..., n, n], got shapes "
            f"{m.shape} and {c.shape}"
        )
    batch = broadcast_shapes(check_shape(shape, "multivariate_normal"), m.shape[:-1],
                             c.shape[:-2], op="multivariate_normal")
    k = _resolve(key, "multivariate_normal")
    z = normal((*batch, m.shape[-1]), dtype, key=k, stream=s)
    w, v = eigh(c, stream=s)
    factor = multiply(v, expand_dims(sqrt(maximum(w, 0.0, stream=s), stream=s), -2, stream=s),
                      stream=s)
    out = squeeze(matmul(factor, expand_dims(z, -1, stream=s), stream=s), -1, stream=s)
    return add(out, m, stream=s)


def permutation(
    x: Any, axis: int = 0, key: Array | None = None, *, stream: Any = None
) -> Array:
    """A random permutation of `arange(x)` (int `x`) or of `x`'s entries along `axis`.

    Raises:
        ValueError: for a negative length, a 0-d array or a bad axis.

    Example:
        >>> import nuvec as mx
        >>> sorted(mx.random.permutation(5, key=mx.random.key(0)).tolist())
        [0, 1, 2, 3, 4]
    """
    from nuvec.ops.indexing import take
    from nuvec.ops.sorting import argsort

    s = to_stream(stream)
    k = _resolve(key, "permutation")
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        if x < 0:
            raise ValueError(f"permutation: length must be non-negative, got {x}")
        return argsort(record1(RandomBits((int(x),), 4), (k,), s), stream=s)
    a = as_array(x, "permutation")
    if a.ndim == 0:
        raise ValueError("permutation: cannot permute a 0-d array")
    ax = normalize_axis(axis, a.ndim, "permutation")
    order = argsort(record1(RandomBits((a.shape[ax],), 4), (k,), s), stream=s)
    return take(a, order, axis=ax, stream=s)
