"""Shared bodies of `nuvec.ops.reduction`: one reduction each, half types in float32."""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import SHARED, body
from nuvec.backends.common.unary import HALF
from nuvec.graph.dtypes import from_numpy_dtype
from nuvec.ops import reduction as r


_ACCUMULATORS: dict[np.dtype, np.dtype] = {}  # filled on first use of each dtype


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a sum or product accumulates in: float32 for half types (NumPy computes these
    slowly and imprecisely), else the output's."""
    found = _ACCUMULATORS.get(dtype)
    if found is None:
        found = (np.dtype(np.float32) if dtype in HALF
                 else r.sum_dtype(from_numpy_dtype(dtype)).np)
        _ACCUMULATORS[dtype] = found
    return found


@body(r.Sum)
def sum_(xp, p, x):
    fn = np.add.reduce if xp is np else xp.sum  # (what `np.sum` calls, without its wrapper)
    return fn(x, axis=p.axes, keepdims=True, dtype=accumulator(x.dtype))


@body(r.Prod)
def prod(xp, p, x):
    fn = np.multiply.reduce if xp is np else xp.prod
    return fn(x, axis=p.axes, keepdims=True, dtype=accumulator(x.dtype))


def _reduce(name: str, ufunc: np.ufunc | None = None):
    """A factory of kernels applying the reduction `name` over the primitive's axes; on NumPy
    `ufunc.reduce` where given (what `np.max` calls for an ndarray, without its wrapper)."""

    def make(xp):
        fn = ufunc.reduce if xp is np and ufunc is not None else getattr(xp, name)
        return lambda p, x: fn(x, axis=p.axes, keepdims=True)

    return make


def _arg_reduce(name: str):
    """A factory of kernels applying `argmax`/`argmin` along the primitive's one axis."""

    def make(xp):
        fn = getattr(xp, name)
        return lambda p, x: fn(x, axis=p.axes[0], keepdims=True)

    return make


for _cls, _name, _ufunc in ((r.Max, "max", np.maximum), (r.Min, "min", np.minimum),
                            (r.AllTrue, "all", None), (r.AnyTrue, "any", None)):
    SHARED.add_factory(_cls, _reduce(_name, _ufunc))
SHARED.add_factory(r.ArgMax, _arg_reduce("argmax"))
SHARED.add_factory(r.ArgMin, _arg_reduce("argmin"))
