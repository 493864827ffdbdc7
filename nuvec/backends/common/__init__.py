"""Shared bodies: each primitive's computation written once against an array namespace `xp`
(NumPy on the CPU, CuPy on the GPU), one module per ops family. Importing this package
registers them all in `registry.SHARED`; backends bind them (`registry.bind`)."""

from nuvec.backends.common import (  # noqa: F401  (each module registers its bodies)
    binary,
    comparison,
    complex_parts,
    conv,
    creation,
    custom,
    fast,
    fft,
    indexing,
    join,
    linalg,
    matmul,
    matrices,
    misc,
    random,
    reduction,
    rounding,
    scan,
    shape,
    slicing,
    sorting,
    unary,
)
