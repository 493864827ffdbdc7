"""Rule rows for the transformation primitives: `Copy`, `CustomTransforms`, `Depends`."""

from __future__ import annotations

import nuvec as mx
from nuvec.transforms.custom import CustomTransforms
from nuvec.transforms.depends import Depends
from nuvec.graph.primitive import COPY, Copy
from nuvec.graph.array import record1
from nuvec.testing import OpSpec


def _copy(x):
    return record1(COPY, (x,), x.stream)


def _product(x, y):
    return mx.exp(x) * y


_checkpointed = mx.checkpoint(_product)

_custom = mx.custom_function(_product)


@_custom.vjp
def _custom_vjp(primals, cotangent, output):
    x, y = primals
    return cotangent * output, cotangent * mx.exp(x)


@_custom.jvp
def _custom_jvp(primals, tangents):
    x, y = primals
    dx, dy = tangents
    out = mx.exp(x) * (y * dx if dx is not None else 0.0)
    return out + mx.exp(x) * dy if dy is not None else out


def _depends(x, y):
    return mx.depends([x * 2.0], [y])[0]


SPECS = [
    OpSpec("copy", _copy, lambda r: [r.standard_normal((2, 3))], covers=[Copy]),
    OpSpec("checkpoint", _checkpointed,
           lambda r: [r.standard_normal((2, 3)), r.standard_normal((2, 3))],
           covers=[CustomTransforms]),
    OpSpec("custom_function", _custom,
           lambda r: [r.standard_normal(3), r.standard_normal(3)], covers=[CustomTransforms]),
    OpSpec("depends", _depends, lambda r: [r.standard_normal(3), r.standard_normal(2)],
           argnums=[0], covers=[Depends]),
]
