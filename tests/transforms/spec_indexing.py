"""Rule rows for gathers and scatters (advanced indexing, take, .at[...], put_along_axis)."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import binary, indexing
from nuvec.testing import OpSpec


def _x_idx(shape, n, high):
    return lambda rng: [rng.standard_normal(shape), rng.integers(-high, high, size=n)]


def _at(method):
    # repeated indices on purpose: the updates accumulate at index 1
    def fn(x, u):
        return getattr(x.at[mx.array([1, 3, 1]), 1:], method)(u)

    return fn


def _winners(rng):
    # distinct values, so max/min have no ties and the derivative is defined everywhere
    return [rng.permutation(20).reshape(4, 5) / 4.0, rng.permutation(15).reshape(3, 5) / 3.0 + 0.1]


SPECS = [
    OpSpec("getitem_array", lambda x, i: x[i], _x_idx((5, 3), (2, 2), 5), [indexing.Gather]),
    OpSpec("getitem_mixed", lambda x, i: x[1:, i, None, ::-1], _x_idx((3, 4, 2), (3,), 4),
           [indexing.Gather]),
    OpSpec("getitem_separated", lambda x, i: x[i, :, 0], _x_idx((4, 2, 3), (2,), 4),
           [indexing.Gather]),
    OpSpec("take_axis", lambda x, i: mx.take(x, i, axis=1), _x_idx((2, 4), (3,), 4),
           [indexing.Gather]),
    OpSpec("take_along_axis", lambda x, i: mx.take_along_axis(x, i, axis=0),
           lambda rng: [rng.standard_normal((3, 4)), rng.integers(0, 3, size=(2, 4))],
           [indexing.Gather]),
    OpSpec("setitem_array", lambda x, i, u: _set(x, i, u),
           lambda rng: [rng.standard_normal((5, 2)), rng.permutation(5)[:3],
                        rng.standard_normal((3, 2))],
           [indexing.Scatter]),
    OpSpec("put_along_axis", lambda x, i, u: mx.put_along_axis(x, i, u, axis=1),
           lambda rng: [rng.standard_normal((2, 5)), rng.permutation(5)[None, :2],
                        rng.standard_normal((2, 2))],
           [indexing.Scatter]),
    OpSpec("at_add", _at("add"),
           lambda rng: [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))],
           [indexing.Scatter]),
    OpSpec("at_subtract", _at("subtract"),
           lambda rng: [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))],
           [indexing.Scatter]),
    OpSpec("at_multiply", _at("multiply"),
           lambda rng: [rng.standard_normal((4, 3)), rng.uniform(0.5, 2.0, (3, 2))],
           [indexing.Scatter]),
    OpSpec("at_divide", _at("divide"),
           lambda rng: [rng.standard_normal((4, 3)), rng.uniform(0.5, 2.0, (3, 2))],
           [indexing.Scatter]),
    OpSpec("at_maximum", lambda x, u: x.at[mx.array([0, 2, 0])].maximum(u), _winners,
           [indexing.Scatter]),
    OpSpec("at_minimum", lambda x, u: x.at[mx.array([3, 3, 1])].minimum(u), _winners,
           [indexing.Scatter]),
    OpSpec("at_maximum_static", lambda x, u: x.at[1:].maximum(u), _winners, [binary.Maximum]),
    OpSpec("at_minimum_static", lambda x, u: x.at[:-1].minimum(u), _winners, [binary.Minimum]),
]


def _set(x, i, u):
    y = x * 1.0
    y[i] = u
    return y
