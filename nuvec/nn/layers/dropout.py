"""`Dropout`, `Dropout2d` and `Dropout3d`, as `mlx.nn`: active in training mode only."""

from __future__ import annotations

import nuvec as mx
from nuvec.nn.module import Module

__all__ = ["Dropout", "Dropout2d", "Dropout3d"]


class _DropoutBase(Module):
    def __init__(self, p: float, name: str) -> None:
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(f"{name}: the dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def _drop(self, x: mx.array, mask_shape: list[int]) -> mx.array:
        if self._p_1 == 1 or not self.training:
            return x
        mask = mx.random.bernoulli(self._p_1, mask_shape)
        return (mask * x) * (1 / self._p_1)


class Dropout(_DropoutBase):
    """Zeroes each element with probability `p` and scales the rest by `1 / (1 - p)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Dropout(0.5).eval()(mx.ones((3,))).tolist()
        [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(p, "Dropout")

    def __call__(self, x: mx.array) -> mx.array:
        return self._drop(x, list(x.shape))


class Dropout2d(_DropoutBase):
    """Zeroes whole channels of `(N, H, W, C)` or `(H, W, C)` inputs with probability `p`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Dropout2d(0.5)(mx.ones((2, 4, 4, 3))).shape
        (2, 4, 4, 3)
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(p, "Dropout2d")

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim not in (3, 4):
            raise ValueError(f"Dropout2d: received input with {x.ndim} dimensions. Expected 3 "
                             "or 4 dimensions.")
        shape = list(x.shape)
        shape[-2] = shape[-3] = 1
        return self._drop(x, shape)


class Dropout3d(_DropoutBase):
    """Zeroes whole channels of `(N, D, H, W, C)` or `(D, H, W, C)` inputs with probability `p`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Dropout3d(0.5)(mx.ones((2, 2, 4, 4, 3))).shape
        (2, 2, 4, 4, 3)
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(p, "Dropout3d")

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim not in (4, 5):
            raise ValueError(f"Dropout3d: received input with {x.ndim} dimensions. Expected 4 "
                             "or 5 dimensions.")
        shape = list(x.shape)
        shape[-2] = shape[-3] = shape[-4] = 1
        return self._drop(x, shape)
