"""Arrays sharing the memory of NumPy data and other buffers (`array(..., copy=None/False)`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf
from nuvec.graph.convert import foreign_data


def _foreign_data(val: Any) -> np.ndarray | None:
    """`val` as NumPy data without a copy, or None for Python scalars, lists and arrays."""
    if isinstance(val, (Array, bool, int, float, complex, list, tuple, str)):
        return None
    if isinstance(val, np.ndarray):
        return val
    if any(hasattr(val, k) for k in ("__array__", "__array_interface__", "__dlpack__")):
        return foreign_data(val)
    try:
        return np.asarray(memoryview(val))
    except TypeError:
        return None


def shared_array(val: Any, target: dt.Dtype | None, copy: bool | None, op: str) -> Array | None:
    """An array over `val`'s own memory, or None when a copy is needed and allowed.

    Raises:
        ValueError: if `copy` is False and a copy is needed (another dtype, or data that is
            not an in-memory buffer).
    """
    if isinstance(val, Array):
        if copy is False and target is not None and target is not val.dtype:
            raise ValueError(f"{op}: converting {val.dtype.name} to {target.name} needs a copy, "
                             "but copy=False")
        return None
    data = _foreign_data(val)
    if data is not None and data.dtype.kind in "biufc" or (
            data is not None and data.dtype.name == "bfloat16"):
        kept = target or dt.from_numpy_dtype(data.dtype)
        if kept.np == data.dtype and (target is not None or data.dtype != np.float64):
            # a view: the memory stays the caller's (not counted as nuvec's, never reused)
            return leaf(data.view(), kept)
    if copy is False:
        what = "this data" if data is None else f"{data.dtype} data"
        raise ValueError(f"{op}: {what} cannot be shared as the requested dtype; "
                         "copy=False forbids the copy")
    return None
