"""`isdtype` (the array API's dtype-kind predicate) over every dtype, kind and tuple."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.graph.dtypes import ALL_DTYPES

KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric"]


def numpy_kind(dtype, kind):
    """NumPy 2's `isdtype` on the storage type (bfloat16 is a real floating type)."""
    if dtype is mx.bfloat16:
        return kind in ("real floating", "numeric")
    return bool(np.isdtype(dtype.np, kind))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_isdtype_matches_numpy(dtype, kind):
    assert mx.isdtype(dtype, kind) is numpy_kind(dtype, kind)


def test_isdtype_dtypes_and_tuples():
    assert mx.isdtype(mx.float32, mx.float32)
    assert not mx.isdtype(mx.float32, mx.float64)
    assert mx.isdtype(mx.uint8, ("bool", "unsigned integer"))
    assert mx.isdtype(mx.int8, (mx.float16, "integral"))
    assert not mx.isdtype(mx.complex64, ("real floating", mx.bool_))
    assert mx.isdtype("float16", "real floating")
    assert mx.isdtype(mx.array([1, 2]).dtype, "signed integer")


def test_isdtype_rejects_bad_arguments():
    with pytest.raises(ValueError, match="^isdtype: unknown kind 'floating'"):
        mx.isdtype(mx.float32, "floating")
    with pytest.raises(TypeError, match="^isdtype: kind must be"):
        mx.isdtype(mx.float32, 3)
    with pytest.raises(TypeError, match="^isdtype: unsupported dtype"):
        mx.isdtype("not a dtype", "numeric")
