"""`nuvec.random`: MLX's `mlx.core.random` namespace (keys, split and the samplers).

The operations live in `nuvec.ops.random` and `nuvec.ops.distributions`; this module only
re-exports them.
"""

from nuvec.ops.distributions import (
    bernoulli,
    categorical,
    gumbel,
    laplace,
    multivariate_normal,
    normal,
    permutation,
    randint,
    truncated_normal,
)
from nuvec.ops.random import bits, key, seed, split, state, uniform

__all__ = [
    "bernoulli",
    "bits",
    "categorical",
    "gumbel",
    "key",
    "laplace",
    "multivariate_normal",
    "normal",
    "permutation",
    "randint",
    "seed",
    "split",
    "state",
    "truncated_normal",
    "uniform",
]
