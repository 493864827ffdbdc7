"""CPU kernels of `nuvec.ops.rounding`: NumPy's ufuncs, 16-bit floats computed in float32."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.backends.numpy.unary import widened
from nuvec.ops import rounding as r

for _cls, _fn in (
    (r.Floor, np.floor), (r.Ceil, np.ceil), (r.Round, np.rint), (r.Trunc, np.trunc),
):  # fmt: skip
    kernel(_cls, out=True)(widened(_fn))
