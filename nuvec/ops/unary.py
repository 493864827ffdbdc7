"""Elementwise operations of one array: math functions, signs, casts.

Smooth functions derive from `_Smooth` (vjp and jvp multiply by `derivative`). Integer and bool
inputs of float-valued functions compute in float32, as in MLX. Rounding lives in
`nuvec.ops.rounding`, complex parts in `nuvec.ops.complex_parts`, the NaN and infinity tests
in `nuvec.ops.nonfinite`.
"""

from __future__ import annotations

import math
from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.caller import name_function
from nuvec.graph.array import Array, record1
from nuvec.graph.convert import AsType
from nuvec.graph.device import Stream, to_stream
from nuvec.ops import binary, complex_parts
from nuvec.ops.arguments import StreamLike, as_array, fresh
from nuvec.ops.families import Binary, Linear, Unary, apply, flat_primitive, is_ones

__all__ = [
    "abs", "negative", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
    "rsqrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "erf", "erfinv",
    "logical_not", "degrees", "radians", "stop_gradient", "astype", "positive",
]  # fmt: skip



def astype(a: Any, dtype: Any, /, *, stream: StreamLike = None) -> Array:
    """`a` converted to `dtype` (floats to ints truncate toward zero, as C casts do).

    Args:
        a: input array.
        dtype: the target dtype.
        stream: the stream (or device) to record on.

    Returns:
        `a` itself if it already has `dtype`, else the converted array.

    Raises:
        TypeError: if `dtype` is not a supported dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.astype(mx.array([1.7, -1.7]), mx.int32).tolist()
        [1, -1]
    """
    a = as_array(a, "astype")
    target = dt.to_dtype(dtype, "astype")
    s = to_stream(stream)
    if a.dtype is target:
        return fresh(a)
    return record1(AsType(target), (a,), s)


class _Smooth(Unary):
    """A differentiable elementwise function: both rules multiply by `self.derivative(x, out)`,
    written with nuvec operations (see `_smooth`)."""

    abstract = True
    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [binary.product(cotangents[0], self.derivative(primals[0], outputs[0]))]

    def jvp(self, primals, tangents, outputs):
        return [binary.product(tangents[0], self.derivative(primals[0], outputs[0]))]


def _smooth(name: str, doc: str, derivative, kind: str = "") -> type:
    """A `_Smooth` primitive class whose derivative is `derivative(x, out)` (with `kind`, its
    rules are `DerivativeProduct(kind)`)."""
    members = {"__slots__": (), "__doc__": doc, "__module__": __name__, "__qualname__": name,
               "derivative": staticmethod(derivative)}
    if kind:
        members["kind"] = kind
    return type(name, (_FromOutput if kind else _Smooth,), members)


def _one_minus_square(x: Array) -> Array:
    return binary.subtract(1.0, square(x))


class DerivativeProduct(Binary):
    """`g · f'(x)` for `f` tanh, sigmoid or relu, from `f`'s output (inputs `g`, `out`; with
    `scaled` False, `out` alone: a cotangent of ones, the seed of a gradient): 'tanh'
    `g · (1 - out²)`, 'sigmoid' `g · out · (1 - out)`, 'relu' `g · (out > 0)` (`maximum(x,
    0)`'s, whose derivative with respect to `out` is 0), one node where the composition
    records three (as PyTorch's `tanh_backward`, `sigmoid_backward` and `threshold_backward`),
    rounded as the composition."""

    __slots__ = ("kind", "scaled")

    def __init__(self, kind: str, scaled: bool = True):
        self.kind, self.scaled = kind, scaled

    def params(self):
        return (self.kind, self.scaled)

    def _slope(self, out: Array) -> Array:
        """The derivative of `f'(x)`, written from `out`, with respect to `out`."""
        if self.kind == "tanh":
            return binary.multiply(out, -2.0)
        return binary.subtract(1.0, binary.multiply(out, 2.0))

    def _through_out(self, c: Array, primals) -> Array:
        """`c` times the derivative of the output with respect to `out`."""
        slope = self._slope(primals[-1])
        return binary.product(binary.product(c, primals[0]) if self.scaled else c, slope)

    def vjp(self, primals, cotangents, argnums, outputs):
        c, out = cotangents[0], primals[-1]
        return [apply(self, c, out) if i == 0 and self.scaled else
                None if self.kind == "relu" else self._through_out(c, primals)
                for i in argnums]

    def jvp(self, primals, tangents, outputs):
        parts = []
        if self.scaled and tangents[0] is not None:
            parts.append(apply(self, tangents[0], primals[1]))
        if tangents[-1] is not None and self.kind != "relu":
            parts.append(self._through_out(tangents[-1], primals))
        if not parts:
            return [None]
        return [parts[0] if len(parts) == 1 else binary.add(parts[0], parts[1])]


class _FromOutput(_Smooth):
    """A `_Smooth` function whose rules are one `DerivativeProduct` of kind `kind` (the
    composition where the factor and the output's shape or dtype differ)."""

    abstract = True
    __slots__ = ()
    kind = ""

    def _rule(self, g: Array, x: Array, out: Array) -> Array:
        if g.shape == out.shape and g.dtype is out.dtype:
            if is_ones(g):
                return apply(DerivativeProduct(self.kind, False), out)
            return apply(DerivativeProduct(self.kind), g, out)
        return binary.product(g, self.derivative(x, out))

    def vjp(self, primals, cotangents, argnums, outputs):
        return [self._rule(cotangents[0], primals[0], outputs[0])]

    def jvp(self, primals, tangents, outputs):
        return [self._rule(tangents[0], primals[0], outputs[0])]


Exp = _smooth("Exp", "e**x; d/dx = out.", lambda x, out: out)
Expm1 = _smooth("Expm1", "e**x - 1; d/dx = out + 1.", lambda x, out: binary.add(out, 1.0))
Log1p = _smooth("Log1p", "ln(1 + x); d/dx = 1 / (1 + x).",
                lambda x, out: binary.divide(1.0, binary.add(x, 1.0)))
Sqrt = _smooth("Sqrt", "sqrt(x); d/dx = 0.5 / out.", lambda x, out: binary.divide(0.5, out))
Rsqrt = _smooth("Rsqrt", "1 / sqrt(x); d/dx = -0.5 out**3.",
                lambda x, out: binary.multiply(binary.multiply(out, square(out)), -0.5))
Square = _smooth("Square", "x**2; d/dx = 2x.", lambda x, out: binary.multiply(x, 2.0))
# x is already of a float type here, so the rules record the primitives without the ops' checks
Sin = _smooth("Sin", "sin(x); d/dx = cos(x).", lambda x, out: apply(COS, x))
Cos = _smooth("Cos", "cos(x); d/dx = -sin(x).", lambda x, out: apply(NEGATIVE, apply(SIN, x)))
Tan = _smooth("Tan", "tan(x); d/dx = 1 + out**2.", lambda x, out: binary.add(square(out), 1.0))
ArcSin = _smooth("ArcSin", "arcsin(x); d/dx = 1 / sqrt(1 - x**2).",
                 lambda x, out: rsqrt(_one_minus_square(x)))
ArcCos = _smooth("ArcCos", "arccos(x); d/dx = -1 / sqrt(1 - x**2).",
                 lambda x, out: negative(rsqrt(_one_minus_square(x))))
ArcTan = _smooth("ArcTan", "arctan(x); d/dx = 1 / (1 + x**2).",
                 lambda x, out: binary.divide(1.0, binary.add(square(x), 1.0)))
Sinh = _smooth("Sinh", "sinh(x); d/dx = cosh(x).", lambda x, out: cosh(x))
Cosh = _smooth("Cosh", "cosh(x); d/dx = sinh(x).", lambda x, out: sinh(x))
Tanh = _smooth("Tanh", "tanh(x); d/dx = 1 - out**2.", lambda x, out: _one_minus_square(out),
               "tanh")
ArcSinh = _smooth("ArcSinh", "arcsinh(x); d/dx = 1 / sqrt(x**2 + 1).",
                  lambda x, out: rsqrt(binary.add(square(x), 1.0)))
ArcCosh = _smooth("ArcCosh", "arccosh(x); d/dx = 1 / sqrt(x**2 - 1).",
                  lambda x, out: rsqrt(binary.subtract(square(x), 1.0)))
ArcTanh = _smooth("ArcTanh", "arctanh(x); d/dx = 1 / (1 - x**2).",
                  lambda x, out: binary.divide(1.0, _one_minus_square(x)))
Sigmoid = _smooth("Sigmoid", "1 / (1 + e**-x); d/dx = out (1 - out).",
                  lambda x, out: binary.multiply(out, binary.subtract(1.0, out)), "sigmoid")
Erf = _smooth("Erf", "The error function; d/dx = 2/sqrt(pi) e**(-x**2).",
              lambda x, out: binary.multiply(exp(negative(square(x))), 2.0 / math.sqrt(math.pi)))
ErfInv = _smooth("ErfInv", "The inverse error function; d/dx = sqrt(pi)/2 e**(out**2).",
                 lambda x, out: binary.multiply(exp(square(out)), math.sqrt(math.pi) / 2.0))

Sign = flat_primitive("Sign", "-1, 0 or 1 (x/|x| for complex).", __name__)
LogicalNot = flat_primitive("LogicalNot", "not x on booleans.", __name__)
StopGradient = flat_primitive("StopGradient", "The identity, opaque to differentiation.",
                              __name__)


class Log(_Smooth):
    """Logarithm in `base` (e, 2 or 10); d/dx = 1 / (x ln(base))."""

    __slots__ = ("base",)

    def __init__(self, base: float):
        self.base = base

    def params(self):
        return (self.base,)

    def derivative(self, x, out):
        return binary.divide(1.0 / math.log(self.base), x)


class Abs(Unary):
    """|x|; d/dx = sign(x) (z/|z| for complex, whose result is float32)."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return dt.float32 if dtype is dt.complex64 else dtype

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        # The transpose of t -> real(conj(sign(z)) t) under the pairing real(a b) of the
        # rules (`vjp` conjugates it into MLX's u * sign(z)).
        s = complex_parts.conj(sign(x)) if x.dtype is dt.complex64 else sign(x)
        return [binary.multiply(cotangents[0], s)]

    def jvp(self, primals, tangents, outputs):
        x, t = primals[0], tangents[0]
        if x.dtype is dt.complex64:
            return [complex_parts.real(binary.multiply(complex_parts.conj(sign(x)), t))]
        return [binary.multiply(t, sign(x))]


class Negative(Linear, Unary):
    """-x."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(self, cotangents[0])]


ABS, NEGATIVE, SIGN = Abs(), Negative(), Sign()
EXP, EXPM1, LOG1P, SQRT, RSQRT, SQUARE = Exp(), Expm1(), Log1p(), Sqrt(), Rsqrt(), Square()
SIN, COS, TAN, ARCSIN, ARCCOS, ARCTAN = Sin(), Cos(), Tan(), ArcSin(), ArcCos(), ArcTan()
SINH, COSH, TANH = Sinh(), Cosh(), Tanh()
ARCSINH, ARCCOSH, ARCTANH = ArcSinh(), ArcCosh(), ArcTanh()
SIGMOID, ERF, ERFINV = Sigmoid(), Erf(), ErfInv()
LOGICAL_NOT, STOP_GRADIENT = LogicalNot(), StopGradient()


def float_input(a: Any, op: str, s: Stream, complex_ok: bool = True) -> Array:
    """The input of a float-valued function: ints and bools compute in float32 (as MLX).

    Raises:
        TypeError: if `a` is complex and the function is real-only.
    """
    if not isinstance(a, Array):
        a = as_array(a, op)
    if not a.dtype.is_inexact:
        a = record1(AsType(dt.float32), (a,), s)
    elif a.dtype is dt.complex64 and not complex_ok:
        raise DtypeError(f"{op}: not supported for complex64 arrays")
    return a


def _float_function(name: str, primitive: Unary, summary: str, complex_ok: bool = True):
    """A public float-valued function `name(a, /, *, stream=None)` recording `primitive`."""

    def op(a: Any, /, *, stream: StreamLike = None) -> Array:
        s = to_stream(stream)
        if type(a) is not Array or not a.dtype.is_floating:  # else `float_input` keeps `a`
            a = float_input(a, name, s, complex_ok)
        return record1(primitive, (a,), s)

    rejects = "converted to an array, or is complex" if not complex_ok else "converted to an array"
    name_function(op, name)
    op.__doc__ = f"""{summary}

    Integer and boolean inputs compute in float32 (MLX); float dtypes are kept.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The elementwise result, of `a`'s float dtype.

    Raises:
        TypeError: if `a` cannot be {rejects}.

    Example:
        >>> import nuvec as mx
        >>> mx.{name}(mx.array([0.5])).dtype
        nuvec.float32
    """
    return op


exp = _float_function("exp", EXP, "Elementwise exponential e**a.")
expm1 = _float_function("expm1", EXPM1, "Elementwise e**a - 1, accurate for small `a`.", False)
log1p = _float_function("log1p", LOG1P, "Elementwise ln(1 + a), accurate for small `a`.")
sqrt = _float_function("sqrt", SQRT, "Elementwise square root.")
rsqrt = _float_function("rsqrt", RSQRT, "Elementwise reciprocal square root 1 / sqrt(a).")
sin = _float_function("sin", SIN, "Elementwise sine (radians).")
cos = _float_function("cos", COS, "Elementwise cosine (radians).")
tan = _float_function("tan", TAN, "Elementwise tangent (radians).")
arcsin = _float_function("arcsin", ARCSIN, "Elementwise inverse sine.")
arccos = _float_function("arccos", ARCCOS, "Elementwise inverse cosine.")
arctan = _float_function("arctan", ARCTAN, "Elementwise inverse tangent.")
sinh = _float_function("sinh", SINH, "Elementwise hyperbolic sine.")
cosh = _float_function("cosh", COSH, "Elementwise hyperbolic cosine.")
tanh = _float_function("tanh", TANH, "Elementwise hyperbolic tangent.")
arcsinh = _float_function("arcsinh", ARCSINH, "Elementwise inverse hyperbolic sine.")
arccosh = _float_function("arccosh", ARCCOSH, "Elementwise inverse hyperbolic cosine.")
arctanh = _float_function("arctanh", ARCTANH, "Elementwise inverse hyperbolic tangent.")
sigmoid = _float_function("sigmoid", SIGMOID, "Elementwise logistic sigmoid 1 / (1 + e**-a).")
erf = _float_function("erf", ERF, "Elementwise error function.", False)
erfinv = _float_function("erfinv", ERFINV, "Elementwise inverse error function.", False)
log = _float_function("log", Log(math.e), "Elementwise natural logarithm.")
log2 = _float_function("log2", Log(2.0), "Elementwise base-2 logarithm.")
log10 = _float_function("log10", Log(10.0), "Elementwise base-10 logarithm.")


def negative(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise -a.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        -a, of `a`'s dtype.

    Raises:
        TypeError: for boolean arrays (use `logical_not`).

    Example:
        >>> import nuvec as mx
        >>> mx.negative(mx.array([1, -2])).tolist()
        [-1, 2]
    """
    a = as_array(a, "negative")
    if a.dtype is dt.bool_:
        raise DtypeError("negative: not supported for bool arrays; use logical_not")
    return record1(NEGATIVE, (a,), to_stream(stream))


def positive(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise +a: `a`'s values, in every dtype (bool too, as in MLX).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A new array of `a`'s values and dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.positive(mx.array([1, -2])).tolist()
        [1, -2]
    """
    to_stream(stream)
    return fresh(as_array(a, "positive"))


def abs(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise absolute value; complex input gives float32 magnitudes.

    Unsigned and boolean arrays are returned unchanged.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        |a|, of `a`'s dtype (float32 for complex64).

    Example:
        >>> import nuvec as mx
        >>> mx.abs(mx.array([-1, 2])).tolist()
        [1, 2]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "abs")
    if a.dtype is dt.bool_ or a.dtype.kind == "u":
        return fresh(a)
    return record1(ABS, (a,), to_stream(stream))


def sign(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise sign: -1, 0 or 1 in `a`'s dtype (a / |a| for complex; bools unchanged).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The signs, of `a`'s dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.sign(mx.array([-2.0, 0.0, 3.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, "sign")
    if a.dtype is dt.bool_:
        return fresh(a)
    return record1(SIGN, (a,), to_stream(stream))


def square(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise a * a, in `a`'s dtype (integers stay integers).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        a * a, of `a`'s dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.square(mx.array([3])).tolist()
        [9]
    """
    return record1(SQUARE, (as_array(a, "square"),), to_stream(stream))


def reciprocal(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise 1 / a; integer inputs give float32.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        1 / a (float32 for integer input).

    Example:
        >>> import nuvec as mx
        >>> mx.reciprocal(mx.array([4])).tolist()
        [0.25]
    """
    return binary.divide(1.0, as_array(a, "reciprocal"), stream=stream)


def logical_not(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise logical not; the input is converted to bool first (nonzero is True).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Example:
        >>> import nuvec as mx
        >>> mx.logical_not(mx.array([0, 2])).tolist()
        [True, False]
    """
    s = to_stream(stream)
    a = astype(as_array(a, "logical_not"), dt.bool_, stream=s)
    return record1(LOGICAL_NOT, (a,), s)


def degrees(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Converts radians to degrees; integer inputs give float32.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        Degrees (float32 for integer input).

    Example:
        >>> import nuvec as mx
        >>> mx.degrees(mx.array(3.141592653589793)).item()
        180.0
    """
    s = to_stream(stream)
    return binary.multiply(float_input(a, "degrees", s), 180.0 / math.pi, stream=s)


def radians(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Converts degrees to radians; integer inputs give float32.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        Radians (float32 for integer input).

    Example:
        >>> import nuvec as mx
        >>> mx.radians(mx.array(180.0)).item()
        3.1415927410125732
    """
    s = to_stream(stream)
    return binary.multiply(float_input(a, "radians", s), math.pi / 180.0, stream=s)


def stop_gradient(a: Any, /, *, stream: StreamLike = None) -> Array:
    """The identity, but no gradient flows through it (vjp and jvp see a constant).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        An array equal to `a`.

    Example:
        >>> import nuvec as mx
        >>> mx.grad(lambda x: (x * mx.stop_gradient(x)).sum())(mx.array([3.0])).tolist()
        [3.0]
    """
    return record1(STOP_GRADIENT, (as_array(a, "stop_gradient"),), to_stream(stream))
