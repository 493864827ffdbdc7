"""Numeric constants, as in `mlx.core`."""

import math

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
euler_gamma = 0.5772156649015329
newaxis = None
