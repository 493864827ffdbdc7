"""GPU overrides that use CuPy-only routines: `erf`/`erfinv` from `cupyx.scipy.special`
(the CPU computes them with NumPy-only series, `nuvec.backends.numpy.unary`)."""

from __future__ import annotations

from typing import Any, Callable

from nuvec.backends.common.unary import widen
from nuvec.ops import unary as u


CLASSES = (u.Erf, u.ErfInv)  # what `overrides` returns kernels for


def overrides(cupy: Any) -> dict[type, Callable]:
    """Kernels replacing the shared bodies on CuPy."""
    import cupyx.scipy.special as special  # here: imported with CuPy, on a GPU's first use

    return {
        u.Erf: lambda p, x: special.erf(widen(x)),
        u.ErfInv: lambda p, x: special.erfinv(widen(x)),
    }
