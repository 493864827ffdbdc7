"""Counter-based random numbers: keys, the global key state, `bits`, `split` and `uniform`.

`RandomBits` is the only primitive: Threefry-2x32 of (key, counter), so a key and a shape always
give the same bits whatever the evaluation order or stream. Every sampler composes over it (the
others live in `nuvec.ops.distributions`). The public namespace is `nuvec.random` (this module
exports nothing into `nuvec`).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, leaf, record1, tracing
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, broadcast_shapes, check_shape, index_int
from nuvec.ops.binary import add, maximum, minimum, multiply, subtract
from nuvec.ops.comparison import less_equal, where
from nuvec.ops.families import apply, move_batch_to_front
from nuvec.ops.unary import abs as absolute, astype, sign

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
    """The global key: each sampler called without a key takes a fresh subkey from it.

    The key is `state[0]`, where `state` is the list MLX exposes as `mx.random.state` (code
    passes it to `compile(inputs=..., outputs=...)` or reads and replaces the key).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = [_make_key(time.time_ns(), "seed")]

    def next(self) -> Array:
        # The state is split eagerly on the host so that it stays a concrete leaf: samples
        # then depend on the order of calls only, never on when they are evaluated.
        with self.lock:
            if tracing.depth and not self.state[0].is_evaluated:  # traced by `compile`
                pair = split(self.state[0])
                self.state[0] = pair[0]
                return pair[1]
            pair = np.asarray(split(self.state[0]))
            self.state[0] = leaf(pair[0].copy(), dt.uint32)
            return leaf(pair[1].copy(), dt.uint32)


def _make_key(seed: int, op: str) -> Array:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{op}: seed must be an int, got {type(seed).__name__}")
    seed = index_int(seed, op, "seed", 0, 2**64 - 1)  # MLX's seeds are uint64
    return leaf(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32), dt.uint32)


_state = _KeyState()
state = _state.state


def resolve_key(key: Any, op: str) -> Array:
    return _state.next() if key is None else _key_input(key, op)


def seed(seed: int) -> None:
    """Seeds the global key, so that samplers called without a key repeat their sequence.

    Args:
        seed: an int in `[0, 2**64)` (MLX's uint64 seed).

    Raises:
        TypeError: for a seed that is not an int.
        ValueError: for a seed outside `[0, 2**64)`.

    Example:
        >>> import nuvec as mx
        >>> mx.random.seed(3); a = mx.random.uniform().item()
        >>> mx.random.seed(3); a == mx.random.uniform().item()
        True
    """
    with _state.lock:
        _state.state[0] = _make_key(seed, "seed")


def key(seed: int) -> Array:
    """A PRNG key (uint32 `[2]`: the high and low 32 bits of `seed`).

    Args:
        seed: an int in `[0, 2**64)` (MLX's uint64 seed).

    Raises:
        TypeError: for a seed that is not an int.
        ValueError: for a seed outside `[0, 2**64)`.

    Example:
        >>> import nuvec as mx
        >>> mx.random.key(1).tolist()
        [0, 1]
    """
    return _make_key(seed, "key")


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

    Example:
        >>> import nuvec as mx
        >>> x = mx.random.bits((2, 3), 1, key=mx.random.key(0))
        >>> x.shape, x.dtype
        ((2, 3), nuvec.uint8)
    """
    shape = check_shape(shape, "bits")
    if width not in _WIDTH_DTYPES:
        raise ValueError(f"bits: width must be 1, 2 or 4 bytes, got {width}")
    k = resolve_key(key, "bits")
    return record1(RandomBits(shape, int(width)), (k,), to_stream(stream))


def split(key: Array, num: int = 2, *, stream: Any = None) -> Array:
    """Splits a key into `num` independent keys (shape `[num, 2]`).

    Args:
        key: the key to split.
        num: the number of keys.
        stream: the stream (or device) to record on.

    Returns:
        A uint32 array of shape `[num, 2]`.

    Raises:
        ValueError: for a malformed key or a negative `num`.

    Example:
        >>> import nuvec as mx
        >>> mx.random.split(mx.random.key(0)).shape
        (2, 2)
    """
    k = _key_input(key, "split")
    num = index_int(num, "split", "num", high=2**31 - 1)
    if num < 0:
        raise ValueError(f"split: num must be non-negative, got {num}")
    return record1(RandomBits((num, 2), 4), (k,), to_stream(stream))


def float_dtype(dtype: Any, op: str) -> dt.Dtype:
    # MLX's samplers take `dtype=None` as their default, float32.
    d = dt.float32 if dtype is None else dt.to_dtype(dtype, op)
    if not d.is_floating:
        raise DtypeError(f"{op}: can only generate real floating-point numbers, got {d.name}")
    return d


def work_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """The dtype samplers compute in: float64 for float64, float32 below (as the kernels)."""
    return dt.float64 if dtype is dt.float64 else dt.float32


def sample_shape(op: str, shape: Any, *params: Array) -> tuple[int, ...]:
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
    work = work_dtype(dtype)
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

    The samples are `low + u * (high - low)` for `u` in `[0, 1)`, so a `high` below `low`
    gives samples in `(high, low]`, and infinite bounds give what the formula gives (inf for
    `uniform(0, inf)`, nan for `uniform(-inf, 0)`), as in MLX.

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
    s = to_stream(stream)
    dtype = float_dtype(dtype, "uniform")
    bounds = _number_bounds(low, high, dtype)
    if bounds is not None:  # the usual call: its constants on the host
        shape = check_shape(shape, "uniform")
        return _scaled(_unit(shape, dtype, resolve_key(key, "uniform"), s), *bounds, s)
    lo, hi = as_array(low, "uniform", dtype), as_array(high, "uniform", dtype)
    lo, hi = astype(lo, dtype, stream=s), astype(hi, dtype, stream=s)
    shape = sample_shape("uniform", shape, lo, hi)
    k = resolve_key(key, "uniform")
    u = _unit(shape, dtype, k, s)
    work = u.dtype
    scalars = all(isinstance(b, (int, float)) for b in (low, high))
    lo_w, hi_w = astype(lo, work, stream=s), astype(hi, work, stream=s)
    out = add(multiply(u, subtract(hi_w, lo_w, stream=s), stream=s), lo_w, stream=s)
    out = astype(out, dtype, stream=s)
    # Rounding of low + u * (high - low) may reach high: clamp to the value next to high on
    # low's side (high < low is allowed, as in MLX: the samples lie in (high, low]). That
    # value can pass low when they are (nearly) equal; low then is the only value left.
    if scalars and low <= high:
        return maximum(minimum(out, _next_toward(hi, None, dtype, s), stream=s), lo, stream=s)
    edge = _next_toward(hi, lo, dtype, s)
    decreasing = minimum(maximum(out, edge, stream=s), lo, stream=s)
    if scalars:
        return decreasing
    increasing = maximum(minimum(out, edge, stream=s), lo, stream=s)
    return where(less_equal(lo, hi, stream=s), increasing, decreasing, stream=s)


def _number_bounds(low: Any, high: Any, dtype: dt.Dtype) -> tuple[float, float, float] | None:
    """`(low, high - low, the value below high)` for Python-number bounds `low <= high` (ints
    within int64, as `as_array` takes them) of a float32 or float64 `dtype`, computed on the
    host as `uniform`'s graph computes them (each rounded once in `dtype`): a draw then
    records only its samples' own operations. None for other bounds and dtypes."""
    if not (_host_number(low) and _host_number(high) and low <= high
            and work_dtype(dtype) is dtype):
        return None
    kind = dtype.np.type
    info = np.finfo(kind)
    with np.errstate(over="ignore", invalid="ignore"):
        lo, hi = kind(low), kind(high)
        step = np.minimum(np.maximum(abs(hi) * info.eps, info.tiny), info.max)
        return float(lo), float(hi - lo), float(hi - step)


def _host_number(x: Any) -> bool:
    """Whether `x` is a Python float, or an int `as_array` takes (within int64)."""
    return isinstance(x, float) or (isinstance(x, int) and -(1 << 63) <= x < 1 << 63)


def _scaled(u: Array, low: float, span: float, edge: float, s: Any) -> Array:
    """`low + u * span` clamped to `[low, edge]`; the operations that change nothing (a span
    of 1, a low of 0, the clamps of `[0, 1)`, which `u` already lies in) are left out."""
    out = u if span == 1.0 else multiply(u, span, stream=s)
    out = out if low == 0.0 else add(out, low, stream=s)
    if low == 0.0 and span == 1.0:
        return out
    return maximum(minimum(out, edge, stream=s), low, stream=s)


def _next_toward(x: Array, toward: Array | None, dtype: dt.Dtype, s: Any) -> Array:
    """The value of `dtype` next to `x` in the direction of `toward` (elementwise; None:
    downward), for the open end of an interval."""
    # A step of a full epsilon (not half) is representable above and below every power of 2;
    # capped at the largest finite value so that an infinite bound stays infinite (MLX).
    info = dt.finfo(dtype)
    step = multiply(absolute(x, stream=s), float(info.eps), stream=s)
    step = minimum(maximum(step, float(info.tiny), stream=s), float(info.max), stream=s)
    if toward is not None:
        step = multiply(step, sign(subtract(x, toward, stream=s), stream=s), stream=s)
    return subtract(x, step, stream=s)
