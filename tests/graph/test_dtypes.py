"""Dtypes: objects, categories, MLX promotion, finfo/iinfo, result_type, can_cast."""

import itertools

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.graph import dtypes as dt

ALL = dt.ALL_DTYPES


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_dtype_size_and_numpy_type(d):
    assert d.size == np.dtype(d.np).itemsize
    assert repr(d) == f"nuvec.{d.name}"
    assert mx.array(np.zeros(2), dtype=d).dtype is d


def test_dtype_names_exported():
    for d in ALL:
        assert getattr(mx, "bool_" if d.name == "bool" else d.name) is d


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (mx.bool_, mx.int8, mx.int8),
        (mx.uint8, mx.int8, mx.int16),
        (mx.uint32, mx.int32, mx.int64),
        (mx.uint64, mx.int8, mx.float32),
        (mx.int32, mx.float16, mx.float16),
        (mx.int64, mx.bfloat16, mx.bfloat16),
        (mx.float16, mx.bfloat16, mx.float32),
        (mx.float32, mx.float64, mx.float64),
        (mx.float64, mx.complex64, mx.complex64),
        (mx.uint16, mx.uint32, mx.uint32),
    ],
)
def test_promotion_follows_mlx_table(a, b, expected):
    assert mx.promote_types(a, b) is expected
    assert mx.promote_types(b, a) is expected
    assert (mx.zeros((1,), a) + mx.zeros((1,), b)).dtype is expected


def _mlx_promotion(a, b):
    """MLX's `type_rules` (mlx/dtype.cpp) stated as rules, independent of nuvec's table."""
    if a is b:
        return a
    if mx.complex64 in (a, b):
        return mx.complex64
    if mx.bool_ in (a, b):
        return b if a is mx.bool_ else a
    fa, fb = a.kind == "f", b.kind == "f"
    if fa and fb:  # float64 wins; two different 16-bit floats meet at float32
        return mx.float64 if mx.float64 in (a, b) else mx.float32
    if fa or fb:  # an integer never widens a float
        return a if fa else b
    if a.kind == b.kind:
        return a if a.size > b.size else b
    u, i = (a, b) if a.kind == "u" else (b, a)
    if u is mx.uint64:  # no signed type holds uint64: float32 (never float64)
        return mx.float32
    signed = {1: mx.int8, 2: mx.int16, 4: mx.int32, 8: mx.int64}
    return signed[max(2 * u.size, i.size)]


@pytest.mark.parametrize("a", ALL, ids=lambda d: d.name)
def test_promotion_matches_every_entry_of_mlx_table(a):
    for b in ALL:
        want = _mlx_promotion(a, b)
        assert mx.promote_types(a, b) is want, (a, b)
        assert mx.result_type(a, b) is want, (a, b)
        got = mx.add(mx.zeros((1,), a), mx.zeros((1,), b))
        assert got.dtype is want and np.asarray(got).dtype == want.np, (a, b)


def test_promotion_is_symmetric_and_idempotent():
    for a, b in itertools.product(ALL, ALL):
        assert mx.promote_types(a, b) is mx.promote_types(b, a)
    for a in ALL:
        assert mx.promote_types(a, a) is a


@pytest.mark.parametrize(
    "dtype, scalar, expected",
    [
        (mx.int8, 3, mx.int8),
        (mx.uint8, 3, mx.uint8),
        (mx.int8, 2.5, mx.float32),
        (mx.float16, 2.5, mx.float16),
        (mx.bfloat16, 2, mx.bfloat16),
        (mx.bool_, 1, mx.int32),
        (mx.bool_, True, mx.bool_),
        (mx.float32, 1j, mx.complex64),
    ],
)
def test_python_scalars_are_weak(dtype, scalar, expected):
    assert mx.result_type(mx.zeros((2,), dtype), scalar) is expected


def test_array_dtype_inference_from_data():
    assert mx.array(1).dtype is mx.int32
    assert mx.array(2**40).dtype is mx.int64
    assert mx.array(1.5).dtype is mx.float32
    assert mx.array(True).dtype is mx.bool_
    assert mx.array(1 + 2j).dtype is mx.complex64
    assert mx.array([1, 2]).dtype is mx.int32
    assert mx.array([1.0, 2]).dtype is mx.float32
    assert mx.array(np.zeros(2, np.float64)).dtype is mx.float32
    assert mx.array(np.zeros(2, np.float64), dtype=mx.float64).dtype is mx.float64
    assert mx.array(np.zeros(2, np.int64)).dtype is mx.int64
    assert mx.array(np.zeros(2, np.float16)).dtype is mx.float16
    assert mx.array(np.zeros(2, ml_dtypes.bfloat16)).dtype is mx.bfloat16


def test_issubdtype_categories():
    assert mx.issubdtype(mx.float32, mx.floating)
    assert mx.issubdtype(mx.bfloat16, mx.inexact)
    assert mx.issubdtype(mx.int8, mx.signedinteger)
    assert mx.issubdtype(mx.uint8, mx.integer)
    assert not mx.issubdtype(mx.uint8, mx.signedinteger)
    assert mx.issubdtype(mx.complex64, mx.complexfloating)
    assert mx.issubdtype(mx.complex64, mx.number)
    assert mx.issubdtype(mx.floating, mx.inexact)
    assert mx.issubdtype(mx.float16, mx.float16)
    assert not mx.issubdtype(mx.float16, mx.float32)
    assert mx.issubdtype(mx.bool_, mx.generic)
    assert not mx.issubdtype(mx.bool_, mx.number)


def test_dtype_categories_are_mlx_s_enum():
    assert mx.DtypeCategory.floating is mx.floating and mx.floating.parent is mx.inexact
    assert [(c.name, c.value) for c in mx.DtypeCategory] == [
        ("complexfloating", 0), ("floating", 1), ("inexact", 2), ("signedinteger", 3),
        ("unsignedinteger", 4), ("integer", 5), ("number", 6), ("generic", 7),
    ]
    assert mx.DtypeCategory(5) is mx.integer and repr(mx.integer) == "DtypeCategory.integer"
    assert mx.issubdtype(mx.float32, mx.DtypeCategory.floating)
    assert mx.issubdtype(mx.DtypeCategory.floating, mx.DtypeCategory.inexact)
    assert not mx.issubdtype(mx.inexact, mx.floating)


def test_finfo_of_complex64_describes_its_float32_parts():
    info = mx.finfo(mx.complex64)
    assert info.dtype is mx.float32 and info.eps == mx.finfo(mx.float32).eps  # as MLX


@pytest.mark.parametrize(
    "d, expected",
    [(mx.float16, "finfo(min=-65504, max=65504, dtype=float16)"),
     (mx.bfloat16, "finfo(min=-3.38953e+38, max=3.38953e+38, dtype=bfloat16)"),
     (mx.float32, "finfo(min=-3.40282e+38, max=3.40282e+38, dtype=float32)"),
     (mx.float64, "finfo(min=-1.79769e+308, max=1.79769e+308, dtype=float64)")],
    ids=["float16", "bfloat16", "float32", "float64"],
)
def test_finfo_repr_as_mlx(d, expected):
    assert repr(mx.finfo(d)) == expected


@pytest.mark.parametrize("d", [mx.float16, mx.bfloat16, mx.float32, mx.float64], ids=str)
def test_finfo_matches_numpy(d):
    ref = ml_dtypes.finfo(d.np) if d is mx.bfloat16 else np.finfo(d.np)
    info = mx.finfo(d)
    assert info.max == float(ref.max) and info.min == float(ref.min)
    assert info.eps == float(ref.eps) and info.bits == ref.bits
    assert info.dtype is d


@pytest.mark.parametrize("d", dt.INTEGER_DTYPES, ids=str)
def test_iinfo_matches_numpy(d):
    ref = np.iinfo(d.np)
    info = mx.iinfo(d)
    assert (info.min, info.max, info.bits) == (ref.min, ref.max, ref.bits)


def test_finfo_iinfo_reject_wrong_kinds():
    with pytest.raises(ValueError, match="^finfo: "):
        mx.finfo(mx.int32)
    with pytest.raises(ValueError, match="^iinfo: "):
        mx.iinfo(mx.float32)
    with pytest.raises(TypeError, match="^finfo: unsupported dtype"):
        mx.finfo("float128")


def test_result_type_and_can_cast():
    assert mx.result_type(mx.int8, mx.uint8) is mx.int16
    assert mx.result_type(1, 2.0) is mx.float32
    assert mx.result_type(mx.array([1], mx.int16), 1.0) is mx.float32
    assert mx.can_cast(mx.int8, mx.int32)
    assert not mx.can_cast(mx.float32, mx.int32)
    assert mx.can_cast(mx.float16, mx.float32)


def test_constants():
    assert mx.pi == np.pi and mx.e == np.e and mx.inf == np.inf and np.isnan(mx.nan)
    assert mx.newaxis is None
    assert abs(mx.euler_gamma - np.euler_gamma) < 1e-15
