"""Rule rows for `nuvec.ops.reduction`: every reduction primitive, with keepdims and ties-free
inputs (max/min are differentiable there); softmax/logsumexp over any axes record the fused
last-axis nodes of `nuvec.fast.softmax`."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.fast.softmax import LogSumExp, Softmax
from nuvec.ops import reduction as r
from nuvec.testing import OpSpec


def normal(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def distinct(*shape):
    """A permutation of well-separated values: no ties, so max/min are differentiable."""
    return lambda rng: [rng.permutation(np.prod(shape)).reshape(shape) * 0.5 + 0.1]


SPECS = [
    OpSpec("sum_axis", lambda x: mx.sum(x, axis=1), normal(2, 3, 4), [r.Sum]),
    OpSpec("sum_all_keepdims", lambda x: mx.sum(x, keepdims=True), normal(3, 2), [r.Sum]),
    OpSpec("prod_axes", lambda x: mx.prod(x, axis=(0, 2)), normal(2, 3, 2), [r.Prod]),
    OpSpec("prod_with_zero", lambda x: mx.prod(x * mx.array([1.0, 0.0, 1.0]), axis=-1),
           normal(2, 3), [r.Prod]),
    OpSpec("max_axis", lambda x: mx.max(x, axis=-1), distinct(3, 4), [r.Max]),
    OpSpec("min_axes_keepdims", lambda x: mx.min(x, axis=(0, 1), keepdims=True),
           distinct(2, 3, 2), [r.Min]),
    # integer and boolean results: the gradient checks confirm they carry none (zero)
    OpSpec("argmax_axis", lambda x: mx.argmax(x, axis=1), distinct(3, 4), [r.ArgMax]),
    OpSpec("argmin_flat", lambda x: mx.argmin(x), distinct(3, 4), [r.ArgMin]),
    OpSpec("all_axis", lambda x: mx.all(x > 0, axis=0), normal(3, 4), [r.AllTrue]),
    OpSpec("any_axis", lambda x: mx.any(x > 0, axis=1), normal(3, 4), [r.AnyTrue]),
    OpSpec("logsumexp_axis", lambda x: mx.logsumexp(x, axis=-1), normal(3, 4), [LogSumExp]),
    OpSpec("logsumexp_axes_keepdims", lambda x: mx.logsumexp(x, axis=(0, 2), keepdims=True),
           normal(2, 3, 2), [LogSumExp]),
    OpSpec("softmax_last", lambda x: mx.softmax(x, axis=-1), normal(3, 4), [Softmax]),
    OpSpec("softmax_axes", lambda x: mx.softmax(x, axis=(0, 1)), normal(2, 3, 2), [Softmax]),
    OpSpec("softmax_middle", lambda x: mx.softmax(x, axis=1), normal(2, 3, 2), [Softmax]),
    OpSpec("mean_var_std", lambda x: mx.mean(x, 0) + mx.var(x, 0, ddof=1) + mx.std(x, 0),
           normal(4, 3), [r.Sum]),
    OpSpec("median", lambda x: mx.median(x, axis=1), distinct(3, 4), [r.Sum]),
]
