"""Dtypes, dtype categories and MLX's promotion rules.

Owns `Dtype` objects (with their NumPy storage type), the category lattice used by
`issubdtype`, `promote_types`/`result_type` (MLX's table, Python scalars weak), `finfo`, `iinfo`
and `can_cast`. Imports nothing from the rest of nuvec.
"""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np

from nuvec.graph.caller import public_caller


class DtypeError(TypeError, ValueError):
    """An unsupported dtype, or a value that cannot become an array of the needed type.

    It is both a `TypeError` (nuvec's convention for dtypes) and a `ValueError` (what MLX
    raises), so `except TypeError` and MLX code's `except ValueError` both catch it.

    Example:
        >>> import nuvec as mx
        >>> try:
        ...     mx.bitwise_and(mx.array([1.0]), mx.array([1.0]))
        ... except ValueError as e:
        ...     print(type(e).__name__, isinstance(e, TypeError))
        DtypeError True
    """


class IntegerOverflowError(OverflowError, ValueError):
    """A Python int that no integer dtype holds (past int64/uint64): an `OverflowError`, as
    MLX raises, that is also a `ValueError` (nuvec's error for values)."""


class DtypeCategory(enum.Enum):
    """An abstract dtype category, as MLX's enum: `mx.floating` is `mx.DtypeCategory.floating`.

    Example:
        >>> import nuvec as mx
        >>> mx.floating, mx.floating.parent
        (DtypeCategory.floating, DtypeCategory.inexact)
        >>> mx.issubdtype(mx.float32, mx.DtypeCategory.floating)
        True
    """

    complexfloating = 0
    floating = 1
    inexact = 2
    signedinteger = 3
    unsignedinteger = 4
    integer = 5
    number = 6
    generic = 7

    def __repr__(self) -> str:
        return f"DtypeCategory.{self.name}"

    @property
    def parent(self) -> DtypeCategory | None:
        """The category directly above this one (None for `generic`)."""
        return _PARENTS[self]

    def ancestors(self) -> list[DtypeCategory]:
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parent
        return out


generic = DtypeCategory.generic
number = DtypeCategory.number
integer = DtypeCategory.integer
signedinteger = DtypeCategory.signedinteger
unsignedinteger = DtypeCategory.unsignedinteger
inexact = DtypeCategory.inexact
floating = DtypeCategory.floating
complexfloating = DtypeCategory.complexfloating
_PARENTS = {
    generic: None, number: generic, integer: number, signedinteger: integer,
    unsignedinteger: integer, inexact: number, floating: inexact, complexfloating: inexact,
}


class Dtype:
    """An element type: `name`, `size` in bytes, its category and NumPy storage type.

    Example:
        >>> import nuvec as mx
        >>> mx.bfloat16.name, mx.bfloat16.size
        ('bfloat16', 2)
    """

    __slots__ = (
        "name", "size", "category", "np", "kind", "rank", "is_floating", "is_inexact",
        "is_integer", "__weakref__",
    )

    def __init__(self, name: str, np_dtype: Any, category: DtypeCategory, kind: str, rank: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.size = self.np.itemsize
        self.category = category
        self.kind = kind  # "b", "u", "i", "f", "c"
        self.rank = rank  # index into the promotion table
        # plain attributes, not properties: operations test these on every call
        self.is_floating: bool = kind == "f"
        self.is_inexact: bool = kind in "fc"
        self.is_integer: bool = kind in "ui"

    def __repr__(self) -> str:
        return f"nuvec.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


bool_ = Dtype("bool", np.bool_, generic, "b", 0)
uint8 = Dtype("uint8", np.uint8, unsignedinteger, "u", 1)
uint16 = Dtype("uint16", np.uint16, unsignedinteger, "u", 2)
uint32 = Dtype("uint32", np.uint32, unsignedinteger, "u", 3)
uint64 = Dtype("uint64", np.uint64, unsignedinteger, "u", 4)
int8 = Dtype("int8", np.int8, signedinteger, "i", 5)
int16 = Dtype("int16", np.int16, signedinteger, "i", 6)
int32 = Dtype("int32", np.int32, signedinteger, "i", 7)
int64 = Dtype("int64", np.int64, signedinteger, "i", 8)
float16 = Dtype("float16", np.float16, floating, "f", 9)
float32 = Dtype("float32", np.float32, floating, "f", 10)
float64 = Dtype("float64", np.float64, floating, "f", 11)
bfloat16 = Dtype("bfloat16", ml_dtypes.bfloat16, floating, "f", 12)
complex64 = Dtype("complex64", np.complex64, complexfloating, "c", 13)

ALL_DTYPES: tuple[Dtype, ...] = (
    bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
    float16, float32, float64, bfloat16, complex64,
)  # fmt: skip
FLOAT_DTYPES = (float16, float32, float64, bfloat16)
INTEGER_DTYPES = (uint8, uint16, uint32, uint64, int8, int16, int32, int64)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.np: d for d in ALL_DTYPES}


def _dtype_by_name(name: str) -> Dtype:
    return _BY_NAME[name]


# MLX's promotion table (JAX's lattice without weak types; no float64 on int paths, no complex128).
_b, _u1, _u2, _u4, _u8 = bool_, uint8, uint16, uint32, uint64
_i1, _i2, _i4, _i8 = int8, int16, int32, int64
_f2, _f4, _f8, _bf, _c8 = float16, float32, float64, bfloat16, complex64
_PROMOTION = (
    # bool  u8    u16   u32   u64   i8    i16   i32   i64   f16   f32   f64   bf16  c64
    (_b,   _u1,  _u2,  _u4,  _u8,  _i1,  _i2,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # bool
    (_u1,  _u1,  _u2,  _u4,  _u8,  _i2,  _i2,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # u8
    (_u2,  _u2,  _u2,  _u4,  _u8,  _i4,  _i4,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # u16
    (_u4,  _u4,  _u4,  _u4,  _u8,  _i8,  _i8,  _i8,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # u32
    (_u8,  _u8,  _u8,  _u8,  _u8,  _f4,  _f4,  _f4,  _f4,  _f2,  _f4,  _f8,  _bf,  _c8),  # u64
    (_i1,  _i2,  _i4,  _i8,  _f4,  _i1,  _i2,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # i8
    (_i2,  _i2,  _i4,  _i8,  _f4,  _i2,  _i2,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # i16
    (_i4,  _i4,  _i4,  _i8,  _f4,  _i4,  _i4,  _i4,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # i32
    (_i8,  _i8,  _i8,  _i8,  _f4,  _i8,  _i8,  _i8,  _i8,  _f2,  _f4,  _f8,  _bf,  _c8),  # i64
    (_f2,  _f2,  _f2,  _f2,  _f2,  _f2,  _f2,  _f2,  _f2,  _f2,  _f4,  _f8,  _f4,  _c8),  # f16
    (_f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f4,  _f8,  _f4,  _c8),  # f32
    (_f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _f8,  _c8),  # f64
    (_bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _bf,  _f4,  _f4,  _f8,  _bf,  _c8),  # bf16
    (_c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8,  _c8),  # c64
)  # fmt: skip


def promote_types(a: Dtype, b: Dtype) -> Dtype:
    """The dtype two arrays of dtypes `a` and `b` promote to (MLX's table).

    Example:
        >>> import nuvec as mx
        >>> mx.promote_types(mx.uint8, mx.int8)
        nuvec.int16
    """
    return _PROMOTION[to_dtype(a, "promote_types", names=True).rank][
        to_dtype(b, "promote_types", names=True).rank]


def to_dtype(value: Any, op: str = "dtype", names: bool = False) -> Dtype:
    """Converts a nuvec `Dtype` or a NumPy dtype/type (and, with `names`, a dtype name such as
    "float32") to a `Dtype`. Ops taking a `dtype=` reject names, as MLX does; the dtype
    inspections (`finfo`, `isdtype`, `result_type`, ...) accept them, as NumPy's do.

    Raises:
        TypeError: if `value` names no supported dtype, or is a name where `names` is False.
    """
    if isinstance(value, Dtype):
        return value
    if value is None:  # NumPy reads None as float64; MLX rejects it
        raise DtypeError(f"{public_caller(op)}: dtype must be a dtype, got None")
    if isinstance(value, str):
        if names and value in _BY_NAME:
            return _BY_NAME[value]
        if value in _BY_NAME:
            raise DtypeError(f"{public_caller(op)}: dtype must be a dtype such as "
                             f"nuvec.{value}, got the string {value!r}")
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is float:
        return float32
    if value is complex:
        return complex64
    try:
        found = _BY_NUMPY.get(np.dtype(value))
    except TypeError:
        found = None
    if found is None:
        raise DtypeError(f"{public_caller(op)}: unsupported dtype {value!r}")
    return found


def from_numpy_dtype(np_dtype: np.dtype) -> Dtype:
    """The nuvec dtype of NumPy data; float64 stays float64, complex128 becomes complex64."""
    found = _BY_NUMPY.get(np_dtype) or _BY_NUMPY.get(np_dtype.newbyteorder("="))
    if found is not None:
        return found
    if np_dtype.kind == "c":
        return complex64
    raise DtypeError(f"array: unsupported NumPy dtype {np_dtype}")


def issubdtype(arg1: Dtype | DtypeCategory, arg2: Dtype | DtypeCategory) -> bool:
    """Whether `arg1` is `arg2` or lies under category `arg2` (MLX's `issubdtype`, with its
    argument names).

    Example:
        >>> import nuvec as mx
        >>> mx.issubdtype(mx.int8, mx.integer), mx.issubdtype(mx.float32, mx.integer)
        (True, False)
    """
    a = arg1 if isinstance(arg1, DtypeCategory) else to_dtype(arg1, "issubdtype", names=True)
    b = arg2 if isinstance(arg2, DtypeCategory) else to_dtype(arg2, "issubdtype", names=True)
    if isinstance(b, Dtype):
        return a is b
    if isinstance(a, Dtype):
        a = a.category
        if a is generic and b is generic:
            return True
    return b in a.ancestors()


_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc",
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind` (the array API's `isdtype`).

    Args:
        dtype: a dtype (or anything `to_dtype` accepts).
        kind: a dtype (equality), one of "bool", "signed integer", "unsigned integer",
            "integral", "real floating", "complex floating", "numeric", or a tuple of these
            (true if any matches).

    Raises:
        TypeError: if `dtype` is not a dtype or `kind` is not a dtype, a string or a tuple.
        ValueError: if `kind` names no kind.

    Example:
        >>> import nuvec as mx
        >>> mx.isdtype(mx.float16, ("integral", "real floating"))
        True
    """
    d = to_dtype(dtype, "isdtype", names=True)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(_KINDS)}")
        return _KINDS[kind](d)
    if isinstance(kind, Dtype):
        return d is kind
    raise TypeError(f"isdtype: kind must be a dtype, a string or a tuple, got "
                    f"{type(kind).__name__}")


def scalar_dtype(value: Any) -> Dtype:
    """The dtype MLX gives an array made from a Python scalar."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int32 if -(2**31) <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex64
    raise DtypeError(f"array: unsupported scalar type {type(value).__name__}")


def weak_scalar_result(dtype: Dtype, value: Any) -> Dtype:
    """Promotes an array dtype with a weak Python scalar: the array's dtype wins within its kind."""
    if isinstance(value, bool):
        return dtype
    if isinstance(value, int):
        return int32 if dtype is bool_ else dtype
    if isinstance(value, float):
        return dtype if dtype.kind in "fc" else float32
    if isinstance(value, complex):
        return complex64
    raise DtypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(*arrays_and_dtypes: Any) -> Dtype:
    """The dtype of combining arrays, dtypes and Python scalars (scalars are weak).

    Example:
        >>> import nuvec as mx
        >>> mx.result_type(mx.array([1], mx.float16), 2.0), mx.result_type(mx.int8, mx.uint8)
        (nuvec.float16, nuvec.int16)
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array, dtype or scalar is required, got none")
    strong = [x.dtype if hasattr(x, "dtype") and not isinstance(x, Dtype) else x
              for x in arrays_and_dtypes if not isinstance(x, (bool, int, float, complex))]
    scalars = [x for x in arrays_and_dtypes if isinstance(x, (bool, int, float, complex))]
    if not strong:
        out = scalar_dtype(scalars[0])
        for s in scalars[1:]:
            out = promote_types(out, scalar_dtype(s))
        return out
    out = to_dtype(strong[0], "result_type", names=True)
    for d in strong[1:]:
        out = promote_types(out, to_dtype(d, "result_type", names=True))
    for s in scalars:
        out = weak_scalar_result(out, s)
    return out


def can_cast(from_: Dtype, to: Dtype) -> bool:
    """Whether `from_` promotes to `to` without changing kind order (safe casting).

    Example:
        >>> import nuvec as mx
        >>> mx.can_cast(mx.int8, mx.int32), mx.can_cast(mx.float32, mx.int32)
        (True, False)
    """
    from_, to = to_dtype(from_, "can_cast", names=True), to_dtype(to, "can_cast", names=True)
    return promote_types(from_, to) is to


class finfo:
    """Machine limits of a floating dtype: `min`, `max`, `eps`, `tiny`, `bits`, `dtype`.

    For complex64 they are those of its float32 parts, and `dtype` is float32 (as MLX).

    Example:
        >>> import nuvec as mx
        >>> mx.finfo(mx.float16).max, mx.finfo(mx.float32).eps
        (65504.0, 1.1920928955078125e-07)
        >>> mx.finfo(mx.complex64)
        finfo(min=-3.40282e+38, max=3.40282e+38, dtype=float32)
    """

    def __init__(self, dtype: Any):
        dt = to_dtype(dtype, "finfo", names=True)
        if not dt.is_inexact:
            raise ValueError(f"finfo: {dt.name} is not inexact")
        info = ml_dtypes.finfo(dt.np) if dt is bfloat16 else np.finfo(dt.np)
        self.dtype = float32 if dt is complex64 else dt
        self.bits = int(info.bits)
        self.min = float(info.min)
        self.max = float(info.max)
        self.eps = float(info.eps)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return f"finfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype.name})"


class iinfo:
    """Limits of an integer dtype: `min`, `max`, `bits`, `dtype`.

    Example:
        >>> import nuvec as mx
        >>> mx.iinfo(mx.int8).min, mx.iinfo(mx.uint8).max
        (-128, 255)
    """

    def __init__(self, dtype: Any):
        dt = to_dtype(dtype, "iinfo", names=True)
        if not dt.is_integer:
            raise ValueError(f"iinfo: {dt.name} is not an integer dtype")
        info = np.iinfo(dt.np)
        self.dtype = dt
        self.bits = int(info.bits)
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"
