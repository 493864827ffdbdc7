"""`nuvec.random`: MLX's `mlx.core.random` namespace (keys, split and the samplers).

The operations live in `nuvec.ops.random`; this module only re-exports them.
"""

from nuvec.ops.random import (
    bernoulli,
    bits,
    categorical,
    gumbel,
    key,
    laplace,
    multivariate_normal,
    normal,
    permutation,
    randint,
    seed,
    split,
    truncated_normal,
    uniform,
)

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
    "truncated_normal",
    "uniform",
]
