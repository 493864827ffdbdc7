"""Installs the constructor, operators and methods on `Array` (MLX's array methods)."""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.graph.caller import name_function
from nuvec.graph.dtypes import DtypeError
from nuvec.ops import binary, comparison, matrices, misc, reduction, rounding, shape, statistics
from nuvec.ops import complex_parts, creation, unary
from nuvec.ops.arguments import fresh
from nuvec.ops.matmul import matmul as _matmul


def _construct(self: Array, val: Any, dtype: Any = None, *, copy: bool | None = True):
    self._rebind(creation.array(val, dtype, copy=copy))


# `mx.array(val, dtype)` is `creation.array` (see Array's summary); named `array` so that a
# call with wrong arguments says `array() got an unexpected keyword argument ...`
Array.__init__ = name_function(_construct, "array")


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
    "truediv": binary.divide,
    "floordiv": binary.floor_divide,
    "mod": binary.remainder,
    "pow": binary.power,
    "and": comparison.bitwise_and,
    "or": comparison.bitwise_or,
    "xor": comparison.bitwise_xor,
    "lshift": comparison.left_shift,
    "rshift": comparison.right_shift,
}

for _name, _op in _BINARY.items():
    setattr(Array, f"__{_name}__", _op)  # a plain function binds `self` as its first operand
    setattr(Array, f"__r{_name}__", _reflected(_op))
    setattr(Array, f"__i{_name}__", _in_place(_op))


def _in_place_divide(self: Array, other: Any) -> Array:
    # MLX refuses `a /= b` on an integer or bool array (the quotient is float)
    if not self.dtype.is_inexact:
        raise ValueError(f"divide: in-place division needs an inexact array, got "
                         f"{self.dtype.name} (write `a = a / b` for a float result)")
    self._rebind(binary.divide(self, other))
    return self


Array.__itruediv__ = _in_place_divide


def _comparison(op):
    def method(self: Array, other: Any) -> Any:
        # `a == None`, `a == "x"` and `a == [1, 2]` are False (NotImplemented lets Python
        # decide) and ordering them raises, as in MLX
        if other is None or isinstance(other, (str, list, tuple)):
            if op.__name__ in ("equal", "not_equal"):
                return NotImplemented
            raise DtypeError(f"{op.__name__}: cannot compare an array with "
                             f"{type(other).__name__}")
        return op(self, other)

    return method


_COMPARISONS = {
    "eq": comparison.equal,
    "ne": comparison.not_equal,
    "lt": comparison.less,
    "le": comparison.less_equal,
    "gt": comparison.greater,
    "ge": comparison.greater_equal,
}

for _name, _op in _COMPARISONS.items():
    setattr(Array, f"__{_name}__", _comparison(_op))

_UNARY_OPERATORS = {
    "neg": unary.negative,
    "abs": unary.abs,
    "invert": comparison.bitwise_invert,
    "pos": fresh,
}

for _name, _op in _UNARY_OPERATORS.items():
    setattr(Array, f"__{_name}__", lambda self, _op=_op: _op(self))


def _method(op, method):
    """`method` named after `op`, installed on `Array` (signatures show MLX's parameters only)."""
    method.__name__ = method.__qualname__ = op.__name__
    setattr(Array, op.__name__, method)


def _elementwise(op):
    def method(self: Array, *, stream: Any = None) -> Array:
        return op(self, stream=stream)

    _method(op, method)


def reduction_method(op):
    def method(self: Array, axis: Any = None, keepdims: bool = False, *,
               stream: Any = None) -> Array:
        return op(self, axis, keepdims, stream=stream)

    _method(op, method)


def _moment(op):
    def method(self: Array, axis: Any = None, keepdims: bool = False, ddof: int = 0, *,
               stream: Any = None) -> Array:
        return op(self, axis, keepdims, ddof, stream=stream)

    _method(op, method)


def _scan_method(op):
    def method(self: Array, axis: int | None = None, *, reverse: bool = False,
               inclusive: bool = True, stream: Any = None) -> Array:
        return op(self, axis, reverse=reverse, inclusive=inclusive, stream=stream)

    _method(op, method)


# array methods of elementwise operations: `a.exp()`, `a.round(2)`, ...
for _name in (
    "abs", "exp", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "reciprocal",
    "sin", "cos",
):  # fmt: skip
    _elementwise(getattr(unary, _name))
_elementwise(complex_parts.conj)

Array.round = lambda self, decimals=0, *, stream=None: rounding.round(self, decimals, stream=stream)
Array.real = property(lambda self: complex_parts.real(self))
Array.imag = property(lambda self: complex_parts.imag(self))
Array.astype = lambda self, dtype, stream=None: unary.astype(self, dtype, stream=stream)
# reductions: `a.sum(axis, keepdims)`, `a.var(axis, keepdims, ddof)`, ...
for _op in (
    reduction.sum, reduction.prod, statistics.mean, reduction.max, reduction.min,
    reduction.all, reduction.any, reduction.argmax, reduction.argmin,
):  # fmt: skip
    reduction_method(_op)
for _op in (statistics.var, statistics.std):
    _moment(_op)
# scans: `a.cumsum(axis, reverse=..., inclusive=...)`, ...
from nuvec.ops import scan as _scan  # noqa: E402

for _op in (_scan.cumsum, _scan.cumprod, _scan.cummax, _scan.cummin, _scan.logcumsumexp):
    _scan_method(_op)
Array.diag = lambda self, k=0, *, stream=None: matrices.diag(self, k, stream=stream)
Array.diagonal = lambda self, offset=0, axis1=0, axis2=1, stream=None: matrices.diagonal(
    self, offset, axis1, axis2, stream=stream
)
Array.__matmul__ = lambda self, other: _matmul(self, other)
Array.__rmatmul__ = _reflected(_matmul)
Array.__imatmul__ = _in_place(_matmul)


def _reshape(self: Array, *shape: Any, stream: Any = None) -> Array:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]  # a sequence (or anything else, which `reshape` rejects)
    return shape_module.reshape(self, shape, stream=stream)


shape_module = shape
Array.reshape = _reshape
Array.T = property(lambda self: shape.transpose(self))
Array.mT = property(lambda self: shape.matrix_transpose(self))

# shape methods and indexing (MLX's `a.flatten()`, `a.transpose(1, 0)`, `a[i] = v`, `a.at[i]`)
from nuvec.ops import join as _join, subscript as _subscript  # noqa: E402


def _transpose(self: Array, *axes: Any, stream: Any = None) -> Array:
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return shape.transpose(self, axes or None, stream=stream)


Array.transpose = _transpose
Array.flatten = lambda self, start_axis=0, end_axis=-1, *, stream=None: shape.flatten(
    self, start_axis, end_axis, stream=stream)
Array.squeeze = lambda self, axis=None, *, stream=None: shape.squeeze(self, axis, stream=stream)
Array.swapaxes = lambda self, axis1, axis2, *, stream=None: shape.swapaxes(
    self, axis1, axis2, stream=stream)
Array.moveaxis = lambda self, source, destination, *, stream=None: shape.moveaxis(
    self, source, destination, stream=stream)
Array.split = lambda self, indices_or_sections, axis=0, *, stream=None: _join.split(
    self, indices_or_sections, axis, stream=stream)
Array.__getitem__ = lambda self, key: _subscript.getitem(self, key)
Array.__setitem__ = lambda self, key, value: _subscript.setitem(self, key, value)
Array.at = property(lambda self: _subscript.ArrayAt(self))


Array.view = lambda self, dtype, *, stream=None: misc.view(self, dtype, stream=stream)
