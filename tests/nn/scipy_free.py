"""`erf` in float64 without SciPy (math.erf, elementwise)."""

from __future__ import annotations

import math

import numpy as np

erf = np.vectorize(math.erf, otypes=[np.float64])
