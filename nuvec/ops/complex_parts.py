"""Complex parts: `conjugate` (`conj`), `real` and `imag`, all linear.

Real inputs are returned unchanged (`imag` gives zeros); complex64 parts are float32.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops import binary, creation, unary
from nuvec.ops.arguments import StreamLike, as_array, fresh
from nuvec.ops.families import Linear, Unary, apply

__all__ = ["conj", "conjugate", "real", "imag"]


class Conjugate(Linear, Unary):
    """Complex conjugate."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(self, cotangents[0])]


class Real(Linear, Unary):
    """Real part of a complex array (float32)."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return dt.float32

    def vjp(self, primals, cotangents, argnums, outputs):
        return [unary.astype(cotangents[0], dt.complex64)]


class Imag(Linear, Unary):
    """Imaginary part of a complex array (float32); the cotangent comes back as -i * c.

    imag(t) = real(-i t), so under the pairing real(a b) of the rules the transpose multiplies
    by -i (`vjp` conjugates it into MLX's +i).
    """

    __slots__ = ()

    def out_dtype(self, dtype):
        return dt.float32

    def vjp(self, primals, cotangents, argnums, outputs):
        return [binary.multiply(unary.astype(cotangents[0], dt.complex64), -1j)]


CONJUGATE, REAL, IMAG = Conjugate(), Real(), Imag()


def conjugate(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise complex conjugate; real arrays are returned unchanged.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The conjugate (`a` itself when it is real).

    Example:
        >>> import nuvec as mx
        >>> mx.conjugate(mx.array([1 + 2j])).tolist()
        [(1-2j)]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "conjugate")
    if a.dtype is not dt.complex64:
        return fresh(a)
    return record1(CONJUGATE, (a,), to_stream(stream))


def conj(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise complex conjugate (same as `conjugate`).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The conjugate (`a` itself when it is real).

    Example:
        >>> import nuvec as mx
        >>> mx.conj(mx.array([1 + 2j])).tolist()
        [(1-2j)]
    """
    return conjugate(a, stream=stream)


def real(a: Any, /, *, stream: StreamLike = None) -> Array:
    """The real part (float32 for complex64); real arrays are returned unchanged.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The real part.

    Example:
        >>> import nuvec as mx
        >>> mx.real(mx.array([1 + 2j])).tolist()
        [1.0]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "real")
    if a.dtype is not dt.complex64:
        return fresh(a)
    return record1(REAL, (a,), to_stream(stream))


def imag(a: Any, /, *, stream: StreamLike = None) -> Array:
    """The imaginary part (float32 for complex64); zeros of `a`'s dtype for real arrays.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The imaginary part.

    Example:
        >>> import nuvec as mx
        >>> mx.imag(mx.array([1 + 2j])).tolist()
        [2.0]
    """
    a = as_array(a, "imag")
    if a.dtype is not dt.complex64:
        return creation.zeros_like(a, stream=stream)
    return record1(IMAG, (a,), to_stream(stream))
