"""Fused cross-entropy of logits against integer class targets, per row in float32.

Its gradient for the logits is the dedicated `CrossEntropyVjp` (`softmax - one_hot`, from the
saved loss); the targets have no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import DeviceType, stream as stream_context, to_stream
from nuvec.fast.base import FastOp, floating, mx, one, wide
from nuvec.fast.softmax import logsumexp_graph
from nuvec.ops.arguments import as_array

__all__ = ["cross_entropy"]


def one_hot(y: Array, classes: int, dtype: dt.Dtype) -> Array:
    """`[..., classes]` one-hot rows of the non-negative class indices `y`, in `dtype`."""
    ops = mx()
    positions = ops.arange(0, classes, 1, dtype=y.dtype)
    return ops.astype(ops.equal(ops.expand_dims(y, -1), positions), dtype)


def wrap(y: Array, classes: int) -> Array:
    """Class indices with negative values counted from the end."""
    ops = mx()
    return ops.where(ops.less(y, 0), ops.add(y, classes), y)


def _score(x: Array, hit: Array) -> Array:
    """The picked logit of each row; NaN for a row whose target is out of range (so its loss
    and gradient are NaN, never a plausible value)."""
    ops = mx()
    picked = ops.sum(ops.where(hit, x, 0.0), axis=-1)
    return ops.where(ops.any(hit, axis=-1), picked, float("nan"))


class _Rows(FastOp):
    __slots__ = ()
    abstract = True
    cpu_fused = True

    def valid(self, inputs):
        x = inputs[0]
        rows = x.shape[:-1]
        targets = inputs[1]
        rest = all(a.dtype is dt.float32 and a.shape == rows for a in inputs[2:])
        return targets.dtype is dt.int32 and targets.shape == rows and rest


class CrossEntropy(_Rows):
    """`(logits, targets)`: `logsumexp(logits) - logits[target]` per row, in float32."""

    __slots__ = ()
    op = "cross_entropy"

    def arity(self, inputs):
        return 2

    def specs(self, inputs):
        return [(inputs[1].shape, dt.float32)]

    def fallback(self, inputs):
        ops = mx()
        x, targets = inputs
        classes = x.shape[-1]
        hit = one_hot(wrap(targets, classes), classes, dt.bool_)
        lse = ops.squeeze(logsumexp_graph(x), -1)
        return [ops.astype(ops.subtract(lse, _score(x, hit)), dt.float32)]

    def vjp(self, primals, cotangents, argnums, outputs):
        if 1 in argnums:
            raise ValueError("cross_entropy: no gradient with respect to the targets")
        x, targets = primals
        return [one(CrossEntropyVjp(), [x, targets, outputs[0], cotangents[0]])]

    def batch_first(self, inputs, axes):
        return [0, 1]


class CrossEntropyVjp(_Rows):
    """`(logits, targets, loss, g)`: the gradient of `CrossEntropy` for the logits."""

    __slots__ = ()
    op = "cross_entropy_vjp"

    def arity(self, inputs):
        return 4

    def fallback(self, inputs):
        ops = mx()
        x, targets, loss, g = inputs
        classes = x.shape[-1]
        y = wrap(targets, classes)
        hit = one_hot(y, classes, dt.bool_)
        xf = wide(x)
        # float64 logits keep their score in float64 (the saved loss is float32).
        lse = ops.astype(ops.add(loss, _score(xf, hit)), xf.dtype)
        p = ops.exp(ops.subtract(xf, ops.expand_dims(lse, -1)))
        gx = ops.multiply(
            ops.astype(ops.expand_dims(g, -1), xf.dtype),
            ops.subtract(p, one_hot(y, classes, xf.dtype)),
        )
        return [ops.astype(gx, x.dtype)]


def _check_classes(targets: Array, classes: int) -> None:
    """Rejects evaluated CPU targets outside `[-classes, classes)` (values computed lazily can
    only be seen at evaluation: their rows' losses are NaN)."""
    if not targets.is_evaluated or targets.stream.device.type is not DeviceType.cpu:
        return
    data = np.asarray(targets)
    if data.size == 0:
        return
    low, high = int(data.min()), int(data.max())
    if low < -classes or high >= classes:
        bad = low if low < -classes else high
        raise ValueError(f"cross_entropy: target {bad} is out of range for {classes} classes "
                         f"(targets must lie in [{-classes}, {classes}))")


def cross_entropy(logits: Any, targets: Any, *, stream: Any = None) -> Array:
    """Cross-entropy of each row of `logits` against its integer class target.

    `loss = logsumexp(logits[..., :]) - logits[..., target]`, computed in float32; negative
    targets count from the end of the class axis. Evaluated targets outside `[-C, C)` are
    rejected at the call; targets still to be computed cannot be checked there, and an
    out-of-range one gives its row a NaN loss (and gradient).

    Args:
        logits: floating-point `[..., C]`.
        targets: integer class indices of shape `logits.shape[:-1]`.
        stream: stream or device.

    Returns:
        A float32 array of the targets' shape.

    Raises:
        ValueError: if the shapes do not match, the logits have no classes, or an evaluated
            target is out of range.
        TypeError: if the logits are not floating-point or the targets not integers.

    Example:
        >>> import nuvec as mx
        >>> round(mx.fast.cross_entropy(mx.zeros((1, 2)), mx.array([0])).item(), 4)
        0.6931
    """
    with stream_context(to_stream(stream)):
        logits = as_array(logits, "cross_entropy")
        targets = as_array(targets, "cross_entropy")
        if logits.ndim == 0 or targets.shape != logits.shape[:-1]:
            raise ValueError(
                f"cross_entropy: targets of shape {targets.shape} do not match logits of "
                f"shape {logits.shape}"
            )
        floating("cross_entropy", logits.dtype)
        if not targets.dtype.is_integer:
            raise DtypeError(
                "cross_entropy: targets must be integer class indices, got "
                f"{targets.dtype.name}"
            )
        if logits.shape[-1] == 0:
            raise ValueError(f"cross_entropy: logits of shape {logits.shape} have no classes")
        _check_classes(targets, logits.shape[-1])
        return one(CrossEntropy(), [logits, mx().astype(targets, dt.int32)])

