"""Initializers, as `mlx.nn.init`: each returns a function mapping an array to a new array of
its shape (and the initializer's dtype) drawn from the named distribution.

Fans follow MLX: for a weight of shape `(out, ..., in)`, `fan_in = in * receptive` and
`fan_out = out * receptive`, `receptive` being the product of the middle dimensions.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.layers.base import input_array, real_or_array
from nuvec.ops.arguments import real_number

__all__ = [
    "constant", "normal", "uniform", "identity", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "sparse", "orthogonal",
]

Initializer = Callable[..., mx.array]


def constant(value: float, dtype: Any = mx.float32) -> Initializer:
    """An initializer filling arrays with `value`.

    Args:
        value: the fill value (a number, or an array broadcast to `a`'s shape).
        dtype: the result dtype.

    Returns:
        A function `init(a)` returning an array of `a`'s shape.

    Raises:
        TypeError: if `value` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.constant(0.5)(mx.zeros((2,))).tolist()
        [0.5, 0.5]
    """
    value = real_or_array(value, "constant", "value")
    return lambda a: mx.full(input_array(a, "constant").shape, value, dtype=dtype)


def normal(mean: float = 0.0, std: float = 1.0, dtype: Any = mx.float32) -> Initializer:
    """An initializer drawing from the normal distribution N(`mean`, `std`**2).

    Raises:
        TypeError: if `mean` or `std` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.normal()(mx.zeros((2, 3))).shape
        (2, 3)
    """
    mean, std = real_or_array(mean, "normal", "mean"), real_or_array(std, "normal", "std")
    return lambda a: mx.random.normal(input_array(a, "normal").shape, dtype=dtype, loc=mean,
                                      scale=std)


def uniform(low: float = 0.0, high: float = 1.0, dtype: Any = mx.float32) -> Initializer:
    """An initializer drawing uniformly from [`low`, `high`).

    Raises:
        TypeError: if `low` or `high` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> bool(mx.all(nn.init.uniform(2, 3)(mx.zeros((4,))) >= 2))
        True
    """
    low, high = real_or_array(low, "uniform", "low"), real_or_array(high, "uniform", "high")
    return lambda a: mx.random.uniform(low, high, input_array(a, "uniform").shape, dtype=dtype)


def identity(dtype: Any = mx.float32) -> Initializer:
    """An initializer returning the identity matrix of a square 2-D array's size.

    Raises (when called):
        ValueError: if the array is not a square matrix.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.identity()(mx.zeros((2, 2))).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    def init(a: mx.array) -> mx.array:
        a = input_array(a, "identity")
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"identity: the input array must be a square matrix but got "
                             f"shape {a.shape}.")
        return mx.eye(a.shape[0], dtype=dtype)
    return init


def _fans(a: mx.array, name: str) -> tuple[int, int]:
    a = input_array(a, name)
    if a.ndim < 2:
        raise ValueError(f"{name}: Glorot / He initialization requires at least 2 dimensional "
                         f"input but input with {a.ndim} dimensions.")
    receptive = math.prod(a.shape[1:-1])
    return a.shape[-1] * receptive, a.shape[0] * receptive


def glorot_normal(dtype: Any = mx.float32) -> Initializer:
    """Glorot (Xavier) normal: `init(a, gain=1.0)` draws N(0, gain**2 * 2 / (fan_in + fan_out)).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.glorot_normal()(mx.zeros((3, 4)), gain=2.0).shape
        (3, 4)
    """
    def init(a: mx.array, gain: float = 1.0) -> mx.array:
        a = input_array(a, "glorot_normal")
        fan_in, fan_out = _fans(a, "glorot_normal")
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(a.shape, dtype=dtype) * std
    return init


def glorot_uniform(dtype: Any = mx.float32) -> Initializer:
    """Glorot (Xavier) uniform initializer.

    Glorot (Xavier) uniform: `init(a, gain=1.0)` draws U(-l, l),
    l = gain * sqrt(6 / (fan_in + fan_out)).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.glorot_uniform()(mx.zeros((3, 4))).shape
        (3, 4)
    """
    def init(a: mx.array, gain: float = 1.0) -> mx.array:
        a = input_array(a, "glorot_uniform")
        fan_in, fan_out = _fans(a, "glorot_uniform")
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return init


def _fan(a: mx.array, mode: str, name: str) -> int:
    fan_in, fan_out = _fans(a, name)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"{name}: invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def he_normal(dtype: Any = mx.float32) -> Initializer:
    """He (Kaiming) normal: `init(a, mode="fan_in", gain=1.0)` draws N(0, gain**2 / fan).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.he_normal()(mx.zeros((3, 4)), mode="fan_out").shape
        (3, 4)
    """
    def init(a: mx.array, mode: str = "fan_in", gain: float = 1.0) -> mx.array:
        a = input_array(a, "he_normal")
        std = gain / math.sqrt(_fan(a, mode, "he_normal"))
        return mx.random.normal(a.shape, dtype=dtype) * std
    return init


def he_uniform(dtype: Any = mx.float32) -> Initializer:
    """He (Kaiming) uniform initializer.

    He (Kaiming) uniform: `init(a, mode="fan_in", gain=1.0)` draws U(-l, l),
    l = gain * sqrt(3 / fan).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.init.he_uniform()(mx.zeros((3, 4))).shape
        (3, 4)
    """
    def init(a: mx.array, mode: str = "fan_in", gain: float = 1.0) -> mx.array:
        a = input_array(a, "he_uniform")
        limit = gain * math.sqrt(3.0 / _fan(a, mode, "he_uniform"))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return init


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0,
           dtype: Any = mx.float32) -> Initializer:
    """Sparse normal initializer.

    Sparse normal: each row of a 2-D array gets `ceil(sparsity * columns)` zeros at random
    columns, the other entries drawn from N(`mean`, `std`**2).

    Raises:
        TypeError: if `sparsity` is not a real number.
        ValueError: if `sparsity` is not in [0, 1]; when called, if the array is not 2-D.

    Example:
        >>> import nuvec.nn as nn
        >>> w = nn.init.sparse(0.5)(mx.zeros((2, 4)))
        >>> (w == 0).sum(axis=1).tolist()
        [2, 2]
    """
    sparsity = real_number(sparsity, "sparse", "sparsity")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"sparse: sparsity must be in [0, 1], got {sparsity}")

    def init(a: mx.array) -> mx.array:
        a = input_array(a, "sparse")
        if a.ndim != 2:
            raise ValueError(f"sparse: only arrays with 2 dimensions are supported, got shape "
                             f"{a.shape}")
        rows, cols = a.shape
        zeros = int(math.ceil(sparsity * cols))
        order = mx.argsort(mx.random.uniform(shape=a.shape), axis=1)
        keep = mx.ones(a.shape, dtype=mx.bool_)
        keep = mx.put_along_axis(keep, order[:, :zeros], mx.array(False), axis=1)
        values = mx.random.normal(a.shape, dtype=dtype, loc=mean, scale=std)
        return mx.where(keep, values, mx.zeros((), dtype=dtype))
    return init


def orthogonal(gain: float = 1.0, dtype: Any = mx.float32) -> Initializer:
    """Orthogonal initializer.

    Orthogonal: a 2-D array of orthonormal rows or columns (from the QR decomposition of a
    normal matrix, signs fixed by R's diagonal), times `gain`.

    Raises (when called):
        ValueError: if the array is not 2-D.

    Example:
        >>> import nuvec.nn as nn
        >>> q = nn.init.orthogonal()(mx.zeros((3, 3)))
        >>> bool(mx.allclose(q @ q.T, mx.eye(3), atol=1e-5))
        True
    """
    def init(a: mx.array) -> mx.array:
        a = input_array(a, "orthogonal")
        if a.ndim != 2:
            raise ValueError(f"orthogonal: requires a 2D array but got a {a.ndim}D array.")
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = mx.linalg.qr(mx.random.normal((n, n)), stream=mx.cpu)
        q = q * mx.sign(mx.diag(r))
        q = q[:rows, :] if rows < cols else q[:, :cols]
        return (gain * q).astype(dtype)
    return init
