"""`atleast_1d`, `atleast_2d`, `atleast_3d`: inputs given a minimum number of dimensions.

Compositions of `reshape` (`nuvec.ops.shape`), placing the new size-1 axes as MLX and NumPy do.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import as_array, fresh
from nuvec.ops.shape import reshape

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d"]


def _atleast(ndim: int, arys: tuple[Any, ...], stream: Any) -> Array | list[Array]:
    op = f"atleast_{ndim}d"
    stream = to_stream(stream)  # checked even when nothing is recorded
    out = []
    for x in arys:
        x = as_array(x, op)
        if x.ndim < ndim:
            # MLX/NumPy: 0-d -> (1,..); 1-D (n,) -> (1, n) / (1, n, 1); 2-D (m, n) -> (m, n, 1)
            shape = {0: (1,) * ndim, 1: ((1, *x.shape) if ndim == 2 else (1, *x.shape, 1)),
                     2: (*x.shape, 1)}[x.ndim]
            x = reshape(x, shape, stream=stream)
        else:
            x = fresh(x)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any, stream: Any = None) -> Array | list[Array]:
    """Each input with at least one dimension (0-d becomes `(1,)`).

    Args:
        *arys: arrays or scalars.

    Returns:
        One array for one input, else a list of arrays.

    Example:
        >>> import nuvec as mx
        >>> mx.atleast_1d(mx.array(5)).shape
        (1,)
    """
    return _atleast(1, arys, stream)


def atleast_2d(*arys: Any, stream: Any = None) -> Array | list[Array]:
    """Each input with at least two dimensions (`(n,)` becomes `(1, n)`).

    Args:
        *arys: arrays or scalars.

    Returns:
        One array for one input, else a list of arrays.

    Example:
        >>> import nuvec as mx
        >>> mx.atleast_2d(mx.array([1, 2])).shape
        (1, 2)
    """
    return _atleast(2, arys, stream)


def atleast_3d(*arys: Any, stream: Any = None) -> Array | list[Array]:
    """Each input with at least three dimensions: `(n,)` -> `(1, n, 1)`, `(m, n)` -> `(m, n, 1)`.

    Args:
        *arys: arrays or scalars.

    Returns:
        One array for one input, else a list of arrays.

    Example:
        >>> import nuvec as mx
        >>> mx.atleast_3d(mx.array([1, 2])).shape
        (1, 2, 1)
    """
    return _atleast(3, arys, stream)
