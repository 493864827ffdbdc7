"""`RMSNorm`, `LayerNorm`, `GroupNorm`, `InstanceNorm` and `BatchNorm`, as `mlx.nn`.

`RMSNorm` and `LayerNorm` call `nuvec.fast` (fused kernels on a GPU); features are the last
axis everywhere.
"""

from __future__ import annotations

import math

import nuvec as mx
from nuvec.nn.layers.base import check_last_dim, check_ndim, input_array, size_arg
from nuvec.nn.module import Module

__all__ = ["RMSNorm", "LayerNorm", "GroupNorm", "InstanceNorm", "BatchNorm"]


class RMSNorm(Module):
    """Root-mean-square normalization over the last axis: `weight * x / rms(x)`.

    Args:
        dims: the feature size (the weight's size, initialized to ones).
        eps: added to the mean square.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.RMSNorm(4)(mx.full((2, 4), 2.0)).tolist()[0]
        [0.99999..., 0.99999..., 0.99999..., 0.99999...]
    """

    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = mx.ones((size_arg(dims, type(self).__name__, "dims", low=0),))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: mx.array) -> mx.array:
        x, weight = input_array(x, type(self).__name__), self["weight"]
        if not x.shape or x.shape[-1] != weight.shape[0]:
            check_last_dim(x, weight.shape[0], type(self).__name__, "dims")
        return mx.fast.rms_norm(x, weight, self.eps)


class LayerNorm(Module):
    """Layer normalization over the last axis: `weight * (x - mean) / std + bias`.

    Args:
        dims: the feature size.
        eps: added to the variance.
        affine: whether to learn `weight` (ones) and, with `bias`, `bias` (zeros).
        bias: whether to learn a bias (when `affine`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.LayerNorm(2)(mx.array([[1.0, 3.0]])).tolist()
        [[-0.99999..., 0.99999...]]
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True,
                 bias: bool = True) -> None:
        super().__init__()
        dims = size_arg(dims, type(self).__name__, "dims", low=0)
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps, self.dims = eps, dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        if not x.shape or ("weight" in self and x.shape[-1] != self.dims):
            check_last_dim(x, self.dims, type(self).__name__, "dims")
        return mx.fast.layer_norm(x, self.get("weight"), self.get("bias"), self.eps)


class GroupNorm(Module):
    """Group normalization.

    Group normalization: features split into `num_groups` groups normalized over the
    spatial axes and the group's features (batch first, features last).

    Args:
        num_groups: the number of groups (dividing `dims`).
        dims: the feature size.
        eps: added to the variance.
        affine: whether to learn `weight` and `bias`.
        pytorch_compatible: groups of consecutive features (PyTorch's); otherwise MLX's
            default, features `f` with equal `f % num_groups` forming a group.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.GroupNorm(2, 4)(mx.random.normal((1, 3, 4))).shape
        (1, 3, 4)
    """

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-5, affine: bool = True,
                 pytorch_compatible: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        num_groups = size_arg(num_groups, name, "num_groups")
        dims = size_arg(dims, name, "dims")
        if dims % num_groups:
            raise ValueError(f"GroupNorm: dims ({dims}) must be a multiple of a positive "
                             f"num_groups, got num_groups={num_groups}")
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups, self.dims, self.eps = num_groups, dims, eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
                f"pytorch_compatible={self.pytorch_compatible}")

    def _pytorch_group_norm(self, x: mx.array) -> mx.array:
        batch, *rest, features = x.shape
        groups = self.num_groups
        size = features // groups
        x = x.reshape(batch, -1, groups, size).transpose(0, 2, 1, 3).reshape(batch, groups, -1)
        x = mx.fast.layer_norm(x, None, None, self.eps)
        x = x.reshape(batch, groups, -1, size).transpose(0, 2, 1, 3)
        return x.reshape(batch, *rest, features)

    def _group_norm(self, x: mx.array) -> mx.array:
        batch, *rest, features = x.shape
        x = x.reshape(batch, -1, self.num_groups)
        mean = mx.mean(x, axis=1, keepdims=True)
        var = mx.var(x, axis=1, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return x.reshape(batch, *rest, features)

    def __call__(self, x: mx.array) -> mx.array:
        name = type(self).__name__
        x = input_array(x, name)
        check_ndim(x, 2, None, name, "(N, ..., C)")
        if "weight" in self:
            check_last_dim(x, self.dims, name, "dims")
        elif x.shape[-1] % self.num_groups:
            raise ValueError(f"{name}: the last dimension of the input must be divisible by "
                             f"num_groups={self.num_groups}, got shape {x.shape}")
        norm = self._pytorch_group_norm if self.pytorch_compatible else self._group_norm
        x = norm(x)
        return self.weight * x + self.bias if "weight" in self else x


class InstanceNorm(Module):
    """Instance normalization.

    Instance normalization: each feature normalized over the spatial axes (all but the
    first and last) of each example.

    Args:
        dims: the feature size.
        eps: added to the variance.
        affine: whether to learn `weight` (ones) and `bias` (zeros).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.InstanceNorm(3)(mx.random.normal((2, 5, 3))).shape
        (2, 5, 3)
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False) -> None:
        super().__init__()
        dims = size_arg(dims, type(self).__name__, "dims")
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims, self.eps = dims, eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        name = type(self).__name__
        x = input_array(x, name)
        check_ndim(x, 3, None, name, "(N, ..., C)")
        if "weight" in self:
            check_last_dim(x, self.dims, name, "dims")
        axes = tuple(range(1, x.ndim - 1))
        mean = mx.mean(x, axis=axes, keepdims=True)
        var = mx.var(x, axis=axes, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return self.weight * x + self.bias if "weight" in self else x


class BatchNorm(Module):
    """Batch normalization over all axes but the last (inputs of 2 to 4 dimensions).

    In training mode it normalizes with the batch statistics and, with
    `track_running_stats`, updates `running_mean`/`running_var` (frozen members) by
    `momentum`; in eval mode it uses the running statistics.

    Args:
        num_features: the feature size.
        eps: added to the variance.
        momentum: the running statistics' update rate.
        affine: whether to learn `weight` and `bias`.
        track_running_stats: whether to keep running statistics.

    Example:
        >>> import nuvec.nn as nn
        >>> bn = nn.BatchNorm(2)
        >>> bn(mx.array([[0.0, 1.0], [2.0, 3.0]])).tolist()
        [[-0.99999..., -0.99999...], [0.99999..., 0.99999...]]
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        num_features = size_arg(num_features, type(self).__name__, "num_features")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs) -> Module:
        """Unfreezes as `Module.unfreeze`, keeping the running statistics frozen."""
        super().unfreeze(*args, **kwargs)
        if self.track_running_stats:
            self.freeze(keys=["running_mean", "running_var"], recurse=False)
        return self

    def _extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={'weight' in self}, track_running_stats={self.track_running_stats}")

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        if not 2 <= x.ndim <= 4:
            raise ValueError(f"BatchNorm: expected input to have 2, 3 or 4 dimensions, but got "
                             f"shape {x.shape}")
        if "weight" in self or self.track_running_stats:
            check_last_dim(x, self.num_features, type(self).__name__, "num_features")
        if self.training and math.prod(x.shape[:-1]) == 1:
            raise ValueError(f"BatchNorm: training requires more than one value per channel, "
                             f"got input of shape {x.shape}")
        if self.training or not self.track_running_stats:
            axes = tuple(range(x.ndim - 1))
            mean, var = mx.mean(x, axis=axes), mx.var(x, axis=axes)
            if self.training and self.track_running_stats:
                mu = self.momentum
                unbiased = mx.var(x, axis=axes, ddof=1)  # the running variance is unbiased
                self.running_mean = (1 - mu) * self.running_mean + mu * mean
                self.running_var = (1 - mu) * self.running_var + mu * unbiased
        else:
            mean, var = self.running_mean, self.running_var
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return self.weight * x + self.bias if "weight" in self else x
