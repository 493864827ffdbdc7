"""The samplers of `nuvec.random` beyond `bits` and `uniform`: normal, truncated normal,
Gumbel, Laplace, multivariate normal, integers, Bernoulli, categorical and permutations.

Each composes over `uniform` or `RandomBits` (`nuvec.ops.random`); none is a primitive. The
public namespace is `nuvec.random` (this module exports nothing into `nuvec`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import (as_array, broadcast_shapes, check_shape, check_weak_int,
                                   index_int, normalize_axis)
from nuvec.ops.binary import add, maximum, minimum, multiply, subtract
from nuvec.ops.comparison import equal, less, where
from nuvec.ops.creation import zeros
from nuvec.ops.indexing import take
from nuvec.ops.linalg_functions import svd
from nuvec.ops.matmul import matmul
from nuvec.ops.random import (RandomBits, float_dtype, resolve_key, sample_shape, uniform,
                              work_dtype)
from nuvec.ops.reduction import argmax, max as reduce_max
from nuvec.ops.rounding import floor
from nuvec.ops.scan import cumsum
from nuvec.ops.shape import expand_dims, reshape, squeeze
from nuvec.ops.sorting import argsort, searchsorted
from nuvec.ops.unary import (abs as absolute, astype, erf, erfinv, exp, log, log1p, negative,
                              sign, sqrt)

__all__: list[str] = []


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

    Computed as MLX does: `sqrt(2) * erfinv(u)` for `u` uniform in (-1, 1), drawn with
    `shape` and then broadcast with `loc` and `scale` (so `shape=()` with an array `loc`
    shifts one sample by each mean).

    Args:
        shape: the shape of the samples drawn.
        dtype: a real floating dtype.
        loc: the mean (scalar or array); 0 when None.
        scale: the standard deviation (scalar or array); 1 when None.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        An array of `dtype` whose shape is that of `shape`, `loc` and `scale` broadcast.

    Raises:
        TypeError: for a non-floating dtype.
        ValueError: if `shape`, `loc` and `scale` do not broadcast together, or for a
            malformed key.

    Example:
        >>> import nuvec as mx
        >>> mx.random.normal((2, 3), key=mx.random.key(0)).shape
        (2, 3)
        >>> mx.random.normal(loc=mx.array([0.0, 10.0]), key=mx.random.key(0)).shape
        (2,)
    """
    s = to_stream(stream)
    if dtype is not None and dt.to_dtype(dtype, "normal") is dt.complex64:
        return _complex_normal(shape, loc, scale, key, s)
    dtype = float_dtype(dtype, "normal")
    params = [as_array(p, "normal", dtype) for p in (loc, scale) if p is not None]
    shape = _draw_shape("normal", shape, *params)
    k = resolve_key(key, "normal")
    work = work_dtype(dtype)
    low = float(np.nextafter(work.np.type(-1), work.np.type(0)))
    u = uniform(low, 1.0, shape, work, k, stream=s)
    # as MLX: erfinv in the working precision, then `sqrt 2 * scale` and `loc` in `dtype`
    factor = Array(math.sqrt(2.0), dtype)
    if scale is not None:
        factor = multiply(factor, astype(as_array(scale, "normal", dtype), dtype, stream=s),
                          stream=s)
    out = multiply(factor, astype(erfinv(u, stream=s), dtype, stream=s), stream=s)
    if loc is not None:
        out = add(astype(as_array(loc, "normal", dtype), dtype, stream=s), out, stream=s)
    return out


def _complex_normal(shape: Any, loc: Any, scale: Any, key: Any, s: Any) -> Array:
    """Complex normal samples (MLX): real and imaginary parts independent, each of variance
    1/2, so that E|z|^2 = 1; then `loc + scale * z` (complex `loc`/`scale` allowed)."""
    params = [as_array(p, "normal", dt.complex64) for p in (loc, scale) if p is not None]
    shape = _draw_shape("normal", shape, *params)
    parts = normal(tuple(shape) + (2,), dt.float32, key=key, stream=s)
    re, im = parts[..., 0], parts[..., 1]
    z = add(astype(re, dt.complex64, stream=s), multiply(im, 1j, stream=s), stream=s)
    z = multiply(z, math.sqrt(0.5), stream=s)
    if scale is not None:
        z = multiply(z, as_array(scale, "normal", dt.complex64), stream=s)
    if loc is not None:
        z = add(z, as_array(loc, "normal", dt.complex64), stream=s)
    return z


def _draw_shape(op: str, shape: Any, *params: Array) -> tuple[int, ...]:
    """`shape`, checked to broadcast with the parameters (MLX broadcasts its draws to them)."""
    shape = check_shape(shape, op)
    broadcast_shapes(shape, *(p.shape for p in params), op=op)
    return shape


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

    Args:
        low: the lower bound, included (scalar or array).
        high: the upper bound, excluded (scalar or array).
        shape: the output shape; the bounds must broadcast to it.
        dtype: an integer dtype.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: for a floating or complex dtype.
        ValueError: if the bounds do not broadcast to `shape`, a Python int bound does not fit
            `dtype`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.randint(0, 10, (100,), key=mx.random.key(0))
        >>> 0 <= x.min().item() and x.max().item() < 10
        True
    """
    s = to_stream(stream)
    dtype = dt.int32 if dtype is None else dt.to_dtype(dtype, "randint")
    if dtype.is_inexact:
        raise DtypeError(f"randint: dtype must be an integer or bool dtype, got {dtype.name}")
    for bound in (low, high):  # a Python int past the dtype would wrap (MLX raises)
        check_weak_int("randint", bound, dtype)
    lo, hi = as_array(low, "randint"), as_array(high, "randint")
    shape = sample_shape("randint", shape, lo, hi)
    k = resolve_key(key, "randint")
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
        DtypeError: for an integer or bool `p` (a `TypeError` and a `ValueError`).

    Example:
        >>> import nuvec as mx
        >>> mx.random.bernoulli(0.5, (4,), key=mx.random.key(0)).dtype == mx.bool_
        True
    """
    s = to_stream(stream)
    pa = as_array(p, "bernoulli")
    if not pa.dtype.is_floating:  # as MLX (a Python int p too)
        raise DtypeError(f"bernoulli: the probability p must be floating, got {pa.dtype.name}")
    shape = pa.shape if shape is None else sample_shape("bernoulli", shape, pa)
    k = resolve_key(key, "bernoulli")
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

    As MLX (and JAX), a uniform sample between `erf(lower / sqrt 2)` and `erf(upper / sqrt 2)`
    goes through `sqrt 2 * erfinv`. nuvec does that arithmetic in float64 whatever `dtype`,
    so bounds up to about 8 standard deviations out keep the right distribution; beyond, where
    the erf values round to +-1, samples collapse onto a bound (MLX's float32 arithmetic does
    so from about 5). Where `lower > upper` every sample is `lower`, as in MLX.

    Args:
        lower: the lower bound (scalar or array).
        upper: the upper bound (scalar or array).
        shape: the output shape; the bounds' broadcast shape when None.
        dtype: a real floating dtype.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: for a non-floating dtype.
        ValueError: if the bounds do not broadcast to `shape`, or for a malformed key.

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.truncated_normal(-1, 1, (50,), key=mx.random.key(0))
        >>> bool((mx.abs(x) <= 1).all())
        True
    """
    s = to_stream(stream)
    dtype = float_dtype(dtype, "truncated_normal")
    lo = astype(as_array(lower, "truncated_normal", dtype), dtype, stream=s)
    hi = astype(as_array(upper, "truncated_normal", dtype), dtype, stream=s)
    if shape is None:
        shape = broadcast_shapes(lo.shape, hi.shape, op="truncated_normal")
    shape = sample_shape("truncated_normal", shape, lo, hi)
    k = resolve_key(key, "truncated_normal")
    work = dt.float64  # float32 erf/erfinv lose the tails from about 5 standard deviations
    root2 = math.sqrt(2.0)
    lo_w, hi_w = astype(lo, work, stream=s), astype(hi, work, stream=s)
    a = erf(multiply(lo_w, 1 / root2, stream=s), stream=s)
    b = erf(multiply(hi_w, 1 / root2, stream=s), stream=s)
    u = uniform(a, b, shape, work, k, stream=s)
    out = multiply(erfinv(u, stream=s), root2, stream=s)
    # The lower bound is applied last, so it wins over an upper bound below it (MLX).
    return astype(maximum(minimum(out, hi_w, stream=s), lo_w, stream=s), dtype, stream=s)


def gumbel(
    shape: Sequence[int] = (), dtype: Any = dt.float32, key: Array | None = None, *,
    stream: Any = None,
) -> Array:
    """Standard Gumbel samples: `-log(-log(u))` for `u` uniform in (0, 1).

    Args:
        shape: the output shape.
        dtype: a real floating dtype.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: for a non-floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.random.gumbel((3,), key=mx.random.key(0)).shape
        (3,)
    """
    s = to_stream(stream)
    dtype = float_dtype(dtype, "gumbel")
    shape = check_shape(shape, "gumbel")
    k = resolve_key(key, "gumbel")
    work = work_dtype(dtype)
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

    Args:
        shape: the output shape.
        dtype: a real floating dtype.
        loc: the location.
        scale: the scale.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: for a non-floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.random.laplace((3,), key=mx.random.key(0)).dtype == mx.float32
        True
    """
    s = to_stream(stream)
    dtype = float_dtype(dtype, "laplace")
    shape = check_shape(shape, "laplace")
    k = resolve_key(key, "laplace")
    work = work_dtype(dtype)
    low = float(np.nextafter(work.np.type(-1), work.np.type(0)))
    u = uniform(low, 1.0, shape, work, k, stream=s)
    tail = log1p(negative(absolute(u, stream=s), stream=s), stream=s)
    out = multiply(sign(u, stream=s), tail, stream=s)  # (the sign of MLX's: the same samples)
    out = astype(out, dtype, stream=s)  # then scaled and shifted in `dtype`, as MLX's
    if isinstance(scale, Array) or scale != 1.0:
        out = multiply(astype(as_array(scale, "laplace", dtype), dtype, stream=s), out, stream=s)
    if isinstance(loc, Array) or loc != 0.0:
        out = add(astype(as_array(loc, "laplace", dtype), dtype, stream=s), out, stream=s)
    return out


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

    As MLX: the Gumbel-max trick, `argmax(logits + gumbel)` with float32 noise laid out as the
    logits (the class axis as far from the end); when the logits hold one distribution (every
    other axis of size 1) and the output is not 0-d, inverse-CDF sampling instead.

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
    s = to_stream(stream)
    lg = as_array(logits, "categorical")
    if lg.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    ax = normalize_axis(axis, lg.ndim, "categorical")
    if shape is not None and num_samples is not None:
        raise ValueError("categorical: at most one of shape or num_samples can be given")
    classes, rest = lg.shape[ax], lg.shape[:ax] + lg.shape[ax + 1:]
    if num_samples is not None:
        num_samples = index_int(num_samples, "categorical", "num_samples", high=2**31 - 1)
        if num_samples < 0:
            raise ValueError(f"categorical: num_samples must be non-negative, got {num_samples}")
        out_shape = (*rest, int(num_samples))
    else:
        out_shape = rest if shape is None else check_shape(shape, "categorical")
        if broadcast_shapes(out_shape, rest, op="categorical") != out_shape:
            raise ValueError(
                f"categorical: shape {out_shape} does not broadcast with the logits' "
                f"batch shape {rest}"
            )
    if classes == 0:
        raise ValueError(f"categorical: axis {axis} of the logits (shape {lg.shape}) is empty")
    k = resolve_key(key, "categorical")
    if math.prod(out_shape) == 0:
        return zeros(out_shape, dt.uint32, stream=s)
    if out_shape and math.prod(rest) == 1:
        return _inverse_cdf(reshape(lg, (classes,), stream=s), out_shape, k, s)
    if num_samples is not None:
        lg = expand_dims(lg, -1, stream=s)
    at = len(out_shape) - (lg.ndim - ax - 1)  # the noise's class axis
    g = gumbel((*out_shape[:at], classes, *out_shape[at:]), dt.float32, k, stream=s)
    return argmax(add(g, lg, stream=s), axis=at, stream=s)


def _inverse_cdf(lg: Array, shape: tuple[int, ...], k: Array, s: Any) -> Array:
    """Samples of `shape` from the 1-D logits `lg`: the first class whose running sum of
    `exp(lg - max)` passes `u * total`, for `u` uniform in [0, 1) (MLX's arithmetic)."""
    x = astype(lg, work_dtype(lg.dtype), stream=s)
    top = reduce_max(x, stream=s)
    # Equal infinities shift to 0, not nan: all -inf (or all +inf) logits sample uniformly.
    shifted = where(equal(x, top, stream=s), 0.0, subtract(x, top, stream=s), stream=s)
    running = cumsum(exp(shifted, stream=s), stream=s)
    u = uniform(0.0, 1.0, shape, dt.float32, k, stream=s)
    total = take(running, lg.size - 1, stream=s)
    found = searchsorted(running, multiply(u, total, stream=s), side="right", stream=s)
    # A nan logit makes every sum nan, which sorts past the end: MLX gives the last class.
    return minimum(found, lg.size - 1, stream=s)


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

    As MLX: standard normal rows `z` (float32) times the symmetric square root of `cov` from
    its SVD, `z @ (U sqrt(S) Vt)`. `cov` should be symmetric positive semi-definite; for
    others the result is that of this formula (the SVD takes absolute eigenvalues).

    Args:
        mean: `[..., n]`.
        cov: `[..., n, n]`.
        shape: the batch shape of the samples (broadcast with the parameters' batch shapes).
        dtype: float32 (the only dtype MLX takes; `mean` and `cov` are not cast to it).

    Returns:
        An array of shape `broadcast(shape, mean.shape[:-1], cov.shape[:-2]) + [n]`, float32
        or, for float64 parameters, float64.

    Raises:
        TypeError: for a dtype other than float32 or complex parameters (a `DtypeError`,
            also a ValueError as MLX raises).
        ValueError: for mismatched mean/cov shapes or a malformed key.

    Example:
        >>> import nuvec as mx
        >>> mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), (5,)).shape
        (5, 2)
    """
    s = to_stream(stream)
    dtype = dt.float32 if dtype is None else dt.to_dtype(dtype, "multivariate_normal")
    if dtype is not dt.float32:
        raise DtypeError(f"multivariate_normal: dtype must be float32, got {dtype.name}")
    m, c = (as_array(a, "multivariate_normal") for a in (mean, cov))
    work = dt.promote_types(dt.promote_types(m.dtype, c.dtype), dt.float32)
    if work not in (dt.float32, dt.float64):
        raise DtypeError(f"multivariate_normal: mean and cov must be real, got {m.dtype.name} "
                         f"and {c.dtype.name}")
    if m.ndim < 1 or c.ndim < 2 or c.shape[-1] != c.shape[-2] or c.shape[-1] != m.shape[-1]:
        raise ValueError(
            "multivariate_normal: mean must be [..., n] and cov [..., n, n], got shapes "
            f"{m.shape} and {c.shape}"
        )
    batch = broadcast_shapes(check_shape(shape, "multivariate_normal"), m.shape[:-1],
                             c.shape[:-2], op="multivariate_normal")
    k = resolve_key(key, "multivariate_normal")
    z = normal((*batch, m.shape[-1]), dtype, key=k, stream=s)
    u, sv, vt = svd(astype(c, work, stream=s), stream=s)
    root = matmul(multiply(u, expand_dims(sqrt(sv, stream=s), -2, stream=s), stream=s), vt,
                  stream=s)
    out = squeeze(matmul(expand_dims(z, -2, stream=s), root, stream=s), -2, stream=s)
    return add(out, astype(m, work, stream=s), stream=s)


def permutation(
    x: Any, axis: int = 0, key: Array | None = None, *, stream: Any = None
) -> Array:
    """A random permutation of `arange(x)` (int `x`) or of `x`'s entries along `axis`.

    Args:
        x: a length `n` (permutes `arange(n)`) or an array to shuffle.
        axis: the axis of `x` to shuffle.
        key: a PRNG key; the global key when None.
        stream: the stream (or device) to record on.

    Returns:
        The permuted values (uint32 for an int `x`).

    Raises:
        ValueError: for a negative length or one past 2**31 - 1, a 0-d array or an axis out
            of range.
        TypeError: if `axis` is not an int.

    Example:
        >>> import nuvec as mx
        >>> sorted(mx.random.permutation(5, key=mx.random.key(0)).tolist())
        [0, 1, 2, 3, 4]
    """
    s = to_stream(stream)
    k = resolve_key(key, "permutation")
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        if x < 0:
            raise ValueError(f"permutation: length must be non-negative, got {x}")
        n = index_int(x, "permutation", "x", high=2**31 - 1)  # MLX's lengths are int32
        normalize_axis(axis, 1, "permutation")  # (arange(n) has the one axis)
        return argsort(record1(RandomBits((n,), 4), (k,), s), stream=s)
    a = as_array(x, "permutation")
    if a.ndim == 0:
        raise ValueError("permutation: cannot permute a 0-d array")
    ax = normalize_axis(axis, a.ndim, "permutation")
    order = argsort(record1(RandomBits((a.shape[ax],), 4), (k,), s), stream=s)
    return take(a, order, axis=ax, stream=s)
