"""Matrix products: `matmul` (NumPy's batching and 1-D rules) and `addmm`.

The `Matmul` primitive multiplies the last two axes of two arrays of equal rank whose batch
axes are equal; the op promotes, reshapes 1-D operands and broadcasts the batch axes first.
`Addmm` (as MLX's `AddMM`) is the same product scaled and added to a third array that
broadcasts to it, in one node: a layer's `x @ w.T + b` adds its bias into the product's fresh
buffer, where the composition would record a broadcast and an addition into a new one.
"""

from __future__ import annotations

import math
from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import Stream, to_stream
from nuvec.graph.caller import public_caller
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, broadcast_shapes, real_number
from nuvec.ops.binary import add, multiply
from nuvec.ops.families import apply, batch_size, move_batch_to_front
from nuvec.ops.shape import (Transpose, broadcast_array, broadcast_to, permuted, reshape,
                             summed_to)
from nuvec.ops.unary import astype

__all__ = ["matmul", "addmm"]


def _swap_last(x: Array) -> Array:
    if x.ndim == 2:  # (a layer's weight and its gradients)
        return permuted(x, (1, 0))
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return permuted(x, tuple(perm))


class Matmul(Primitive):
    """a @ b over the last two axes; inputs have equal rank (>= 2) and equal batch axes."""

    __slots__ = ()

    def output_specs(self, inputs):
        a, b = inputs
        return (((*a.shape[:-1], b.shape[-1]), a.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        a, b = primals
        g = cotangents[0]
        return [apply(self, g, _swap_last(b)) if i == 0 else self._grad_b(a, b, g)
                for i in argnums]

    def _grad_b(self, a: Array, b: Array, g: Array) -> Array:
        """a^T g; for a transposed matrix `b` (a layer's `x @ w.T`) as (g^T a)^T, whose
        transpose back to `w` is row-major: elementwise updates of `w` then read both in order."""
        if b.ndim == 2 and isinstance(b.primitive, Transpose) and b.primitive.axes == (1, 0):
            return _swap_last(apply(self, _swap_last(g), a))
        return apply(self, _swap_last(a), g)

    def jvp(self, primals, tangents, outputs):
        a, b = primals
        ta, tb = tangents
        parts = []
        if ta is not None:
            parts.append(apply(self, ta, b))
        if tb is not None:
            parts.append(apply(self, a, tb))
        return [parts[0] if len(parts) == 1 else add(parts[0], parts[1])]

    def vmap(self, inputs, axes):
        a, b = inputs
        ax_a, ax_b = axes
        if ax_a is not None and ax_b is None and a.ndim == 3:
            # A batched matrix times a fixed one: fold the batch into the rows (one GEMM).
            a = move_batch_to_front(a, ax_a)
            n, m, k = a.shape
            out = apply(self, reshape(a, (n * m, k)), b)
            return [reshape(out, (n, m, b.shape[-1]))], [0]
        size = batch_size(inputs, axes)
        a = move_batch_to_front(a, ax_a, size)
        b = move_batch_to_front(b, ax_b, size)
        return [apply(self, a, b)], [0]


MATMUL = Matmul()


class Addmm(Primitive):
    """`alpha * (a @ b) + beta * c`: `a`, `b` as `Matmul`'s inputs, `c` of their dtype
    broadcasting to the product's shape (NumPy's rule)."""

    __slots__ = ("alpha", "beta")

    def __init__(self, alpha: float, beta: float):
        self.alpha, self.beta = alpha, beta

    def params(self):
        return (self.alpha, self.beta)

    def output_specs(self, inputs):
        return MATMUL.output_specs(inputs[:2])

    def vjp(self, primals, cotangents, argnums, outputs):
        a, b, c = primals
        g = cotangents[0]
        gp = g if self.alpha == 1.0 or argnums == [2] else multiply(g, self.alpha)
        grads = []
        for i in argnums:
            if i == 2:
                grads.append(summed_to(g if self.beta == 1.0 else multiply(g, self.beta),
                                       c.shape))
            else:
                grads.append(MATMUL.vjp([a, b], [gp], [i], None)[0])
        return grads

    def jvp(self, primals, tangents, outputs):
        a, b, _ = primals
        ta, tb, tc = tangents
        parts = []
        if ta is not None or tb is not None:
            tp = MATMUL.jvp([a, b], [ta, tb], None)[0]
            parts.append(tp if self.alpha == 1.0 else multiply(tp, self.alpha))
        if tc is not None:
            tc = tc if self.beta == 1.0 else multiply(tc, self.beta)
            parts.append(broadcast_to(tc, outputs[0].shape))
        return [parts[0] if len(parts) == 1 else add(parts[0], parts[1])]

    def vmap(self, inputs, axes):
        a, b, c = inputs
        size = batch_size(inputs, axes)
        a = move_batch_to_front(a, axes[0], size)
        b = move_batch_to_front(b, axes[1], size)
        if axes[2] is not None:  # its batch axis first, aligned with the product's
            c = move_batch_to_front(c, axes[2])
            c = reshape(c, (size, *(1,) * (a.ndim - c.ndim), *c.shape[1:]))
        return [apply(self, a, b, c)], [0]


def _matmul_dtype(op: str, a: Array, b: Array, *more: Array) -> dt.Dtype:
    out = dt.promote_types(a.dtype, b.dtype)
    for c in more:
        out = dt.promote_types(out, c.dtype)
    if not out.is_inexact:  # float16 ... float64 and complex64, as MLX
        names = ", ".join(x.dtype.name for x in (a, b, *more))
        raise DtypeError(
            f"{op}: only floating-point and complex types are supported, got {names} "
            f"(which promote to {out.name})"
        )
    return out


def _operands(op: str, a: Array, b: Array, dtype: dt.Dtype, s: Stream
              ) -> tuple[Array, Array, tuple[int, ...]]:
    """The inputs of the `Matmul` node computing `a @ b` (validated arrays) in `dtype`, and the
    shape of the product (the node's, or one it is reshaped to)."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"{public_caller(op)}: inputs must have at least one dimension, "
            f"got shapes {a.shape} and {b.shape}"
        )
    a2 = reshape(a, (1, a.shape[0]), stream=s) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1), stream=s) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(
            f"{public_caller(op)}: the last dimension of the first input with shape {a.shape} "
            f"must match the second to last dimension of the second input with shape {b.shape}"
        )
    # (an operand of `dtype` already is read as it is: `astype` would give a new handle on it)
    if a2.dtype is not dtype:
        a2 = astype(a2, dtype, stream=s)
    if b2.dtype is not dtype:
        b2 = astype(b2, dtype, stream=s)
    if b2.ndim == 2:  # one GEMM over all the rows of a's batch
        batch = a2.shape[:-2]  # (the batch axes broadcast with b's none)
        # explicit row count: a -1 is ambiguous when K is 0
        rows = (reshape(a2, (math.prod(a2.shape[:-1]), a2.shape[-1]), stream=s)
                if a2.ndim > 2 else a2)
        x, y = rows, b2
    else:
        batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op=op)
        x = broadcast_to(a2, (*batch, *a2.shape[-2:]), stream=s)
        y = broadcast_to(b2, (*batch, *b2.shape[-2:]), stream=s)
    out_shape = (
        *batch,
        *(a2.shape[-2:-1] if a.ndim > 1 else ()),
        *(b2.shape[-1:] if b.ndim > 1 else ()),
    )
    return x, y, out_shape


def _product(op: str, a: Array, b: Array, dtype: dt.Dtype, s: Stream) -> Array:
    """The matrix product of validated arrays, computed in `dtype`."""
    x, y, out_shape = _operands(op, a, b, dtype, s)
    out = record1(MATMUL, (x, y), s)
    return out if out.shape == out_shape else reshape(out, out_shape, stream=s)


def matmul(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Matrix product with NumPy's rules.

    1-D operands are treated as a row (first) or a column (second) vector and that axis is
    removed from the result; axes before the last two are batch axes and broadcast. Inputs
    are promoted; the result must be a real floating dtype (as MLX). float16/bfloat16 compute
    in float32.

    Args:
        a: the first operand (at least 1-D).
        b: the second operand (at least 1-D).

    Returns:
        The product, of the promoted dtype.

    Raises:
        ValueError: for 0-d inputs, mismatched inner dimensions or batch shapes that do not
            broadcast.
        TypeError: if the promoted dtype is not a real floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.matmul(mx.array([[1.0, 2.0]]), mx.array([[3.0], [4.0]])).tolist()
        [[11.0]]
    """
    a, b = as_array(a, "matmul"), as_array(b, "matmul")
    s = to_stream(stream)
    return _product("matmul", a, b, _matmul_dtype("matmul", a, b), s)


def addmm(
    c: Any, a: Any, b: Any, /, alpha: float = 1.0, beta: float = 1.0, *, stream: Any = None
) -> Array:
    """`alpha * (a @ b) + beta * c`, with `c` broadcast to the product's shape.

    Args:
        c: the addend.
        a: the first matrix operand (matmul's rules).
        b: the second matrix operand.
        alpha: the scale of the product.
        beta: the scale of `c`.

    Returns:
        The result, of the dtype `a`, `b` and `c` promote to.

    Raises:
        ValueError: as `matmul`, or if `c` does not broadcast to the product's shape.
        TypeError: if the promoted dtype is not a real floating dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.addmm(mx.array([1.0]), mx.array([[2.0]]), mx.array([[3.0]]), beta=2.0).tolist()
        [[8.0]]
    """
    c, a, b = as_array(c, "addmm"), as_array(a, "addmm"), as_array(b, "addmm")
    alpha = real_number(alpha, "addmm", "alpha", finite=False)
    beta = real_number(beta, "addmm", "beta", finite=False)
    s = to_stream(stream)
    dtype = _matmul_dtype("addmm", a, b, c)
    x, y, shape = _operands("addmm", a, b, dtype, s)
    if c.shape != shape and broadcast_shapes(c.shape, shape, op="addmm") != shape:
        raise ValueError(f"addmm: c with shape {c.shape} cannot be broadcast to the product's "
                         f"shape {shape}")
    if c.dtype is not dtype:
        c = astype(c, dtype, stream=s)
    node_shape = (*x.shape[:-1], y.shape[-1])
    if a.ndim > 1 and b.ndim > 1 and (node_shape == shape or c.ndim <= 1
                                      or all(d == 1 for d in c.shape[:-1])):
        # one node; where a's batch rows were flattened, c varies along the last axis alone
        if node_shape != shape and c.ndim > 1:
            c = reshape(c, c.shape[-1:], stream=s)
        out = record1(Addmm(alpha, beta), (x, y, c), s)
        return out if node_shape == shape else reshape(out, shape, stream=s)
    product = record1(MATMUL, (x, y), s)
    if node_shape != shape:
        product = reshape(product, shape, stream=s)
    c = broadcast_array(c, shape, s)  # (checked above)
    if alpha != 1.0:
        product = multiply(product, alpha, stream=s)
    if beta != 1.0:
        c = multiply(c, beta, stream=s)
    return add(product, c, stream=s)
