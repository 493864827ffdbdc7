"""Installs operators and methods on `Array` (MLX's array methods), in one table."""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.ops import binary, reduction, shape, unary


def _reflected(op):
    def method(self: Array, other: Any) -> Array:
        return op(other, self)

    return method


def _in_place(op):
    def method(self: Array, other: Any) -> Array:
        self._rebind(op(self, other))
        return self

    return method


_BINARY = {
    "add": binary.add,
    "sub": binary.subtract,
    "mul": binary.multiply,
}

for _name, _op in _BINARY.items():
    setattr(Array, f"__{_name}__", lambda self, other, _op=_op: _op(self, other))
    setattr(Array, f"__r{_name}__", _reflected(_op))
    setattr(Array, f"__i{_name}__", _in_place(_op))

Array.__neg__ = lambda self: unary.negative(self)
Array.astype = lambda self, dtype, stream=None: unary.astype(self, dtype, stream=stream)
Array.sum = lambda self, axis=None, keepdims=False, *, stream=None: reduction.sum(
    self, axis, keepdims, stream=stream
)
Array.exp = lambda self, *, stream=None: unary.exp(self, stream=stream)


def _reshape(self: Array, *shape: Any, stream: Any = None) -> Array:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return shape_module.reshape(self, shape, stream=stream)


shape_module = shape
Array.reshape = _reshape
Array.T = property(lambda self: shape.transpose(self))
