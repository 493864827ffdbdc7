"""Elementwise arithmetic of two arrays: +, -, *, /, //, %, **, extrema, arctan2, logaddexp, clip.

Each public op promotes (Python scalars are weak), broadcasts explicitly, then records a
primitive that sees equal shapes and dtypes. Comparisons, logic, bitwise operations and `where`
live in `nuvec.ops.comparison` (re-exported here, where the rules above use them).
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.caller import name_function
from nuvec.graph.array import Array, record1, record_pair
from nuvec.graph.convert import scalar_node, stored_scalar
from nuvec.graph.device import Stream, to_stream
from nuvec.ops import comparison, creation
from nuvec.ops import rounding as r
from nuvec.ops import unary as u
from nuvec.ops.arguments import as_array, broadcast_all, promote
from nuvec.graph.primitive import Primitive
from nuvec.ops.families import Binary, apply, batch_inputs, is_ones, times

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "divmod", "power",
    "maximum", "minimum", "arctan2", "logaddexp", "clip",
]


def binary_operands(op: str, a: Any, b: Any, s: Stream) -> tuple[Array, Array]:
    """The two operands of an elementwise op, promoted to one dtype and broadcast to one shape."""
    if type(a) is Array and type(b) is Array and a.dtype is b.dtype and a.shape == b.shape:
        return a, b  # nothing to do (the common case)
    a, b = promote(op, a, b, s)
    if a.shape != b.shape:
        a, b = broadcast_all(op, (a, b), s)
    return a, b


def product(a: Array, b: Array) -> Array:
    """a * b inside rules: records `Multiply` at once when shapes and dtypes already agree (as
    a cotangent and a partial derivative usually do), else promotes and broadcasts first."""
    if a.shape == b.shape and a.dtype is b.dtype:
        out = times(a, b)
        return apply(MULTIPLY, a, b) if out is None else out
    return multiply(a, b)


def _sum_tangents(parts: list[Array]) -> Array | None:
    out = None
    for p in parts:
        out = p if out is None else apply(ADD, out, p)
    return out


class Add(Binary):
    """a + b."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [cotangents[0] for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [_sum_tangents([t for t in tangents if t is not None])]


class Subtract(Binary):
    """a - b."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [cotangents[0] if i == 0 else u.negative(cotangents[0]) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        ta, tb = tangents
        if tb is None:
            return [ta]
        if ta is None:
            return [u.negative(tb)]
        return [apply(self, ta, tb)]


class _SmoothBinary(Binary):
    """A differentiable elementwise function of two inputs: each rule multiplies by
    `self.partial(i, a, b, out)`, the derivative with respect to input `i`. Integer and
    boolean results carry no gradient."""

    abstract = True
    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        if not outputs[0].dtype.is_inexact:
            return [None for _ in argnums]
        a, b = primals
        return [product(cotangents[0], self.partial(i, a, b, outputs[0])) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        if not outputs[0].dtype.is_inexact:
            return [None]
        a, b = primals
        parts = [product(t, self.partial(i, a, b, outputs[0]))
                 for i, t in enumerate(tangents) if t is not None]
        return [_sum_tangents(parts)]


class Multiply(_SmoothBinary):
    """a * b."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        return b if i == 0 else a


class Divide(_SmoothBinary):
    """a / b on inexact dtypes; d/da = 1/b, d/db = -out/b."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        return divide(1.0, b) if i == 0 else u.negative(divide(out, b))


class Remainder(_SmoothBinary):
    """a - b floor(a / b): the sign of the divisor (NumPy, Python); d/db = -floor(a / b)."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        if i == 0:
            return _ones(a)
        return u.negative(r.floor(divide(a, b)))


class FloorDivide(Binary):
    """Integer floor(a / b) (floats compose floor(divide)); no gradient."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [None]


class Power(_SmoothBinary):
    """a ** b; d/da = b a**(b-1), d/db = log(a) out (0 where out is 0, as MLX)."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        if i == 0:
            return multiply(power(a, subtract(b, 1.0)), b)
        return comparison.where(out, multiply(u.log(a), out), 0.0)


class _Extremum(_SmoothBinary):
    """max/min, NaN propagating. A tie sends the whole gradient to `b` (`mx.maximum`, as MLX);
    with `ties_to_both`, to each input equal to the output (`a.at[key].maximum`, as MLX's slice
    and scatter updates)."""

    abstract = True
    __slots__ = ("ties_to_both",)

    def __init__(self, ties_to_both: bool = False):
        self.ties_to_both = ties_to_both

    def params(self):
        return (self.ties_to_both,)

    def partial(self, i, a, b, out):
        if self.ties_to_both:
            return u.astype(comparison.equal(out, b if i else a), out.dtype)
        return u.astype(self.mask(i, out, b), out.dtype)


class Maximum(_Extremum):
    """max(a, b). The masks compare the output with `b` (`out > b` exactly where `a > b`, NaN
    included), as PyTorch's ReLU gradient reads its output: the backward pass keeps no other
    value of `a`'s size, so the pre-activation of `maximum(x @ w.T + b, 0)` is freed once the
    maximum has run (written over in place)."""

    __slots__ = ()

    def mask(self, i, out, b):
        return comparison.greater(out, b) if i == 0 else comparison.less_equal(out, b)

    def vjp(self, primals, cotangents, argnums, outputs):
        g, out = cotangents[0], outputs[0]
        if (argnums != [0] or self.ties_to_both or not out.dtype.is_inexact
                or g.shape != out.shape or g.dtype is not out.dtype
                or not _is_zero(primals[1])):
            return super().vjp(primals, cotangents, argnums, outputs)
        # `maximum(x, 0)` (`nn.relu`): one node where the partial and its product are three
        if is_ones(g):
            return [apply(u.DerivativeProduct("relu", False), out)]
        return [apply(u.DerivativeProduct("relu"), g, out)]


def _is_zero(a: Array) -> bool:
    """Whether `a` is the stored leaf of the integer 0 (`maximum(x, 0)`'s second input)."""
    return a.primitive is None and a._node is stored_scalar(0, a.dtype, a.shape)


class Minimum(_Extremum):
    """min(a, b); the masks compare the output with `b`, as `Maximum`'s."""

    __slots__ = ()

    def mask(self, i, out, b):
        return comparison.less(out, b) if i == 0 else comparison.greater_equal(out, b)


class ArcTan2(_SmoothBinary):
    """arctan(a / b) in the right quadrant; d/da = b/(a²+b²), d/db = -a/(a²+b²)."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        norm = add(u.square(a), u.square(b))
        return divide(b, norm) if i == 0 else divide(u.negative(a), norm)


class LogAddExp(_SmoothBinary):
    """log(e**a + e**b) computed stably; d/da = e**(a - out)."""

    __slots__ = ()

    def partial(self, i, a, b, out):
        return u.exp(subtract(a if i == 0 else b, out))


class Clip(Primitive):
    """min(max(a, lo), hi) on equal shapes in one pass; gradients as the composition's
    (ties go to the bound, as `maximum` and `minimum` send them to their second operand)."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def _masks(self, primals, out):
        a, lo, hi = primals
        inside = comparison.less(out, hi)
        above = comparison.greater(a, lo)
        return [
            u.astype(m, out.dtype)
            for m in (comparison.logical_and(above, inside),
                      comparison.logical_and(u.logical_not(above), inside),
                      u.logical_not(inside))
        ]

    def vjp(self, primals, cotangents, argnums, outputs):
        if not outputs[0].dtype.is_inexact:
            return [None for _ in argnums]
        masks = self._masks(primals, outputs[0])
        return [multiply(cotangents[0], masks[i]) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        if not outputs[0].dtype.is_inexact:
            return [None]
        masks = self._masks(primals, outputs[0])
        return [_sum_tangents([multiply(t, m) for t, m in zip(tangents, masks) if t is not None])]

    def vmap(self, inputs, axes):
        return [apply(self, *batch_inputs(inputs, axes))], [0]


def _ones(like: Array) -> Array:
    return creation.ones_like(like)


ADD, SUBTRACT, MULTIPLY, DIVIDE = Add(), Subtract(), Multiply(), Divide()
REMAINDER, FLOOR_DIVIDE, POWER = Remainder(), FloorDivide(), Power()
MAXIMUM, MINIMUM, ARCTAN2, LOGADDEXP = Maximum(), Minimum(), ArcTan2(), LogAddExp()
# the extrema of `a.at[key].maximum/minimum` on a static key (tie: both inputs, as MLX)
UPDATE_MAXIMUM, UPDATE_MINIMUM = Maximum(ties_to_both=True), Minimum(ties_to_both=True)
CLIP = Clip()


def _at_least_float(op: str, a: Any, b: Any, s: Stream) -> tuple[Array, Array]:
    """Promoted, broadcast operands; integer and bool results compute in float32 (MLX)."""
    a, b = binary_operands(op, a, b, s)
    if not a.dtype.is_inexact:
        a, b = u.astype(a, dt.float32, stream=s), u.astype(b, dt.float32, stream=s)
    return a, b


def _real_only(op: str, *arrays: Array) -> None:
    if any(x.dtype is dt.complex64 for x in arrays):
        raise DtypeError(f"{op}: not supported for complex64 arrays")


def _plain(primitive: Binary) -> bool:
    """Whether `primitive`'s output has its (equal) inputs' shape and dtype."""
    cls = type(primitive)
    return cls.output_specs is Binary.output_specs and cls.out_dtype is Binary.out_dtype


def _binary_function(
    name: str, primitive: Binary, summary: str, returns: str, example: str,
    floats: bool = False, real: bool = False,
):
    """The public op `name(a, b, /, *, stream=None)` recording `primitive`.

    `floats`: integer and bool operands compute in float32; `real`: complex is rejected.
    """

    # dtypes whose operands need no promotion, cast or check (equal dtypes and shapes, or an
    # inexact array and a weak Python float or int, which takes its dtype)
    pairs = frozenset(d for d in dt.ALL_DTYPES if (d.is_inexact or not floats)
                      and not (real and d.kind == "c")) if _plain(primitive) else frozenset()
    weak = frozenset(d for d in pairs if d.is_inexact)

    def op(a: Any, b: Any, /, *, stream: Any = None) -> Array:
        s = to_stream(stream)
        if type(a) is Array:  # the per-op path of arithmetic: record at once
            d = a.dtype
            if type(b) is Array:
                if b.dtype is d and d in pairs and b.shape == a.shape:
                    return record_pair(primitive, a._node, a._index, b._node, b._index, s,
                                       a.shape, d)
            elif (type(b) is float or type(b) is int) and d in weak:
                return record_pair(primitive, a._node, a._index, scalar_node(b, d, a.shape), 0,
                                   s, a.shape, d)
        elif type(b) is Array and (type(a) is float or type(a) is int) and b.dtype in weak:
            return record_pair(primitive, scalar_node(a, b.dtype, b.shape), 0, b._node,
                               b._index, s, b.shape, b.dtype)
        a, b = _at_least_float(name, a, b, s) if floats else binary_operands(name, a, b, s)
        if real:
            _real_only(name, a, b)
        return record1(primitive, (a, b), s)

    complex_error = "\n        TypeError: for complex input." if real else ""
    name_function(op, name)
    op.__doc__ = f"""{summary}

    Operands are promoted (Python scalars are weak) and broadcast together.

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        {returns}

    Raises:
        ValueError: if the shapes cannot be broadcast together.{complex_error}

    Example:
        >>> import nuvec as mx
        >>> {example}
    """
    return op


add = _binary_function(
    "add", ADD, "Elementwise a + b.", "The sum, of the promoted dtype and the broadcast shape.",
    "mx.add(mx.array([1, 2]), 1).tolist()\n        [2, 3]")
subtract = _binary_function(
    "subtract", SUBTRACT, "Elementwise a - b (for booleans: a != b, as MLX).",
    "The difference, of the promoted dtype and the broadcast shape.",
    "mx.subtract(mx.array([1, 2]), 1).tolist()\n        [0, 1]")
multiply = _binary_function(
    "multiply", MULTIPLY, "Elementwise a * b.",
    "The product, of the promoted dtype and the broadcast shape.",
    "mx.multiply(mx.array([1, 2]), 3).tolist()\n        [3, 6]")
divide = _binary_function(
    "divide", DIVIDE, "Elementwise true division a / b; division by zero gives inf or NaN.",
    "The quotient: float32 for integer and bool operands (MLX), else the promoted dtype.",
    "mx.divide(mx.array([1, 3]), 2).tolist()\n        [0.5, 1.5]", floats=True)
remainder = _binary_function(
    "remainder", REMAINDER, "Elementwise remainder of floor division, with the sign of `b` "
    "(Python's and NumPy's `%`).\n\n    An integer remainder by zero gives 0; a float one NaN.",
    "The remainder, of the promoted dtype and the broadcast shape.",
    "mx.remainder(mx.array([-7, 7]), 3).tolist()\n        [2, 1]", real=True)
power = _binary_function(
    "power", POWER, "Elementwise a ** b.\n\n    Integer bases with negative integer exponents "
    "give the truncated result (0 unless the\n    base is 1 or -1) instead of NumPy's error.",
    "The powers, of the promoted dtype and the broadcast shape.",
    "mx.power(mx.array([2, 3]), 2).tolist()\n        [4, 9]")
maximum = _binary_function(
    "maximum", MAXIMUM, "Elementwise maximum; NaN propagates.",
    "The larger values, of the promoted dtype and the broadcast shape.",
    "mx.maximum(mx.array([1, 5]), 3).tolist()\n        [3, 5]")
minimum = _binary_function(
    "minimum", MINIMUM, "Elementwise minimum; NaN propagates.",
    "The smaller values, of the promoted dtype and the broadcast shape.",
    "mx.minimum(mx.array([1, 5]), 3).tolist()\n        [1, 3]")
arctan2 = _binary_function(
    "arctan2", ARCTAN2, "Elementwise arctan(a / b) in the quadrant of the point (b, a).",
    "Angles in radians: float32 for integer operands, else the promoted dtype.",
    "[round(v, 6) for v in mx.arctan2(mx.array([0.0, 1.0]), 1.0).tolist()]\n"
    "        [0.0, 0.785398]",
    floats=True, real=True)
logaddexp = _binary_function(
    "logaddexp", LOGADDEXP, "Elementwise log(exp(a) + exp(b)), without overflow.",
    "The result: float32 for integer operands, else the promoted dtype.",
    "[round(v, 6) for v in mx.logaddexp(mx.array([0.0]), 0.0).tolist()]\n"
    "        [0.693147]",
    floats=True, real=True)


def floor_divide(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise floor(a / b) in the promoted dtype (Python's and NumPy's `//`).

    Integers round toward negative infinity; an integer division by zero gives 0.

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        The floored quotient, of the promoted dtype and the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.floor_divide(mx.array([-7, 7]), 2).tolist()
        [-4, 3]
    """
    s = to_stream(stream)
    a, b = binary_operands("floor_divide", a, b, s)
    _real_only("floor_divide", a, b)
    if a.dtype.is_floating:
        return r.floor(record1(DIVIDE, (a, b), s), stream=s)
    return record1(FLOOR_DIVIDE, (a, b), s)


def divmod(a: Any, b: Any, /, *, stream: Any = None) -> list[Array]:
    """`[floor_divide(a, b), remainder(a, b)]` (a list, as MLX's).

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        The list [quotient, remainder].

    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> [x.tolist() for x in mx.divmod(mx.array([7, -7]), 2)]
        [[3, -4], [1, 1]]
    """
    s = to_stream(stream)
    a, b = binary_operands("divmod", a, b, s)  # checked here, so errors say `divmod`
    _real_only("divmod", a, b)
    return [floor_divide(a, b, stream=s), remainder(a, b, stream=s)]


def clip(a: Any, /, a_min: Any, a_max: Any, *, stream: Any = None) -> Array:
    """Clips `a` to `[a_min, a_max]`; either bound may be None (not both), a scalar or an array.

    The result equals `minimum(maximum(a, a_min), a_max)`, promoted and broadcast as that is,
    computed in one pass (complex values compare as `maximum` and `minimum` do, real part
    first, as MLX's).

    Args:
        a: input array or scalar.
        a_min: lower bound (scalar, array or None).
        a_max: upper bound (scalar, array or None).
        stream: the stream (or device) to record on.

    Returns:
        The clipped array (promoted with the bounds, broadcast with them).

    Raises:
        ValueError: if both bounds are None or the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.clip(mx.array([-1, 5, 9]), 0, 6).tolist()
        [0, 5, 6]
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: at most one of a_min and a_max may be None")
    s = to_stream(stream)
    x = as_array(a, "clip")
    if a_min is None:
        return minimum(x, a_max, stream=s)
    if a_max is None:
        return maximum(x, a_min, stream=s)
    x, lo = promote("clip", x, a_min, s)
    x, hi = promote("clip", x, a_max, s)
    lo = u.astype(lo, x.dtype, stream=s)
    if x.dtype is dt.complex64:
        return minimum(maximum(x, lo, stream=s), hi, stream=s)
    if not (x.shape == lo.shape == hi.shape):
        x, lo, hi = broadcast_all("clip", (x, lo, hi), s)
    return record1(CLIP, (x, lo, hi), s)
