"""Model parallelism as `mlx.nn.layers.distributed`: sharded linear layers and fully sharded
modules over a `nuvec.distributed` group.

- Tensor parallelism: `AllToShardedLinear` holds a block of output features (its input, the
  same on every process, gets its gradient summed over the group); `ShardedToAllLinear` holds
  a block of input features and sums the partial products over the group. A pair of them
  splits an MLP across processes. `shard_linear` builds them from an `nn.Linear` or
  `nn.QuantizedLinear`, `shard_inplace` shards any module's parameters by a rule.
- `fully_shard` (FSDP): each process keeps one block of axis 0 of every parameter; a call
  gathers the full parameters, and the backward pass averages the gradients over the group
  and scatters them back to the blocks (`sum_scatter / size`), so each process updates only
  its block.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import nuvec as mx
from nuvec.nn.layers.linear import Linear
from nuvec.nn.layers.quantized import QuantizedLinear, QuantizedModule, store_quantized
from nuvec.nn.module import Module
from nuvec.utils import tree_flatten, tree_map_with_path, tree_unflatten

__all__ = [
    "AllToShardedLinear", "ShardedToAllLinear", "QuantizedAllToShardedLinear",
    "QuantizedShardedToAllLinear", "FullyShardedModule", "fully_shard", "shard_linear",
    "shard_inplace", "sum_gradients",
]

Rule = Callable[[str, mx.array], Any]  # (path, weight) -> None, an axis or (axis, segments)
_SHARDINGS = ("all-to-sharded", "sharded-to-all")


@functools.lru_cache(maxsize=None)
def sum_gradients(group: Any) -> Callable[[mx.array], mx.array]:
    """The identity whose gradient is summed over `group` (`all_sum` of the cotangent).

    Example:
        >>> import nuvec.nn as nn
        >>> from nuvec.nn.layers.distributed import sum_gradients
        >>> f = sum_gradients(mx.distributed.init())
        >>> mx.grad(lambda x: f(x).sum())(mx.ones(2)).tolist()  # one process
        [1.0, 1.0]
    """
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def identity(x):
        return x

    @identity.vjp
    def identity_vjp(x, cotangent, output):
        return mx.distributed.all_sum(cotangent, group=group)

    return identity


def _segments(weight: mx.array, segments: Any, axis: int, op: str) -> list[mx.array]:
    """`weight` cut along `axis` into `segments`: a count, split points, or fractions."""
    size = weight.shape[axis]
    if isinstance(segments, int):
        if segments <= 0 or size % segments:
            raise ValueError(f"{op}: {segments} segments do not divide axis {axis} of shape "
                             f"{weight.shape}")
        return mx.split(weight, segments, axis=axis)
    points = [p if isinstance(p, int) else int(p * size) for p in segments]
    return mx.split(weight, points, axis=axis)


def _shard(parameters: Any, rule: Rule, group: Any, op: str) -> Any:
    """`parameters` with each array `rule` names cut into the group's blocks along its axis,
    each segment separately (a fused QKV weight keeps a block of each of Q, K and V)."""
    count, rank = group.size(), group.rank()

    def block(path: str, weight: Any) -> Any:
        if not isinstance(weight, mx.array):
            return weight
        choice = rule(path, weight)
        if choice is None:
            return weight
        if isinstance(choice, int):
            axis, segments = choice, 1
        elif isinstance(choice, tuple) and len(choice) == 2:
            axis, segments = choice
        else:
            raise ValueError(f"{op}: the sharding rule must return None, an axis or (axis, "
                             f"segments), got {choice!r} for {path}")
        parts = []
        for part in _segments(weight, segments, axis, op):
            if part.shape[axis] % count:
                raise ValueError(f"{op}: axis {axis} of {path} (shape {weight.shape}, a segment "
                                 f"of {part.shape[axis]}) is not divisible by the group size "
                                 f"{count}")
            parts.append(mx.split(part, count, axis=axis)[rank])
        return mx.contiguous(mx.concatenate(parts, axis=axis))

    return tree_map_with_path(block, parameters)


def _all_to_sharded(segments: Any) -> Rule:
    """Output features split: a weight's second-to-last axis (its rows), a bias's last."""
    return lambda path, w: (-1 if path.endswith("bias") else max(w.ndim - 2, 0), segments)


def _sharded_to_all(segments: Any) -> Rule:
    """Input features split: a weight's last axis; the bias stays whole."""
    return lambda path, w: None if path.endswith("bias") else (-1, segments)


def _rule(op: str, sharding: Any, segments: Any) -> Rule:
    if callable(sharding):
        return sharding
    if sharding not in _SHARDINGS:
        raise ValueError(f"{op}: sharding must be 'all-to-sharded', 'sharded-to-all' or a "
                         f"callable, got {sharding!r}")
    return (_all_to_sharded if sharding == "all-to-sharded" else _sharded_to_all)(segments)


def shard_inplace(module: Module, sharding: str | Rule, *, segments: int | Sequence = 1,
                  group: Any = None) -> None:
    """Replaces `module`'s parameters by this process's blocks of them.

    The module's computation is unchanged: it must itself communicate where needed. A string
    `sharding` shards as the sharded linear layers do; a callable `rule(path, weight)` returns
    None (keep whole), an axis, or `(axis, segments)`.

    Args:
        module: the module to shard.
        sharding: "all-to-sharded", "sharded-to-all" or a rule.
        segments: how many parts (or which split points or fractions) a weight is made of, so
            that each part is sharded on its own (3 for a fused QKV projection).
        group: the group to shard over; default the global one.

    Raises:
        ValueError: for an unknown sharding or an axis the group size does not divide.

    Example:
        >>> import nuvec.nn as nn
        >>> from nuvec.nn.layers.distributed import shard_inplace
        >>> layer = nn.Linear(4, 6)
        >>> shard_inplace(layer, "all-to-sharded")  # one process: the whole weight
        >>> layer.weight.shape
        (6, 4)
    """
    group = group or mx.distributed.init()
    rule = _rule("shard_inplace", sharding, segments)
    module.update(_shard(module.parameters(), rule, group, "shard_inplace"))


def shard_linear(module: Module, sharding: str, *, segments: int | Sequence = 1,
                 group: Any = None) -> Module:
    """A sharded copy of a `Linear` or `QuantizedLinear` that communicates as it must.

    Args:
        module: the layer to shard (left unchanged).
        sharding: "all-to-sharded" (`AllToShardedLinear`) or "sharded-to-all"
            (`ShardedToAllLinear`), or their quantized forms for a `QuantizedLinear`.
        segments: as `shard_inplace`'s.
        group: the group to shard over; default the global one.

    Returns:
        The new layer holding this process's block of the parameters.

    Raises:
        ValueError: for an unknown sharding or a size the group size does not divide.
        TypeError: if `module` is not a `Linear` or `QuantizedLinear`.

    Example:
        >>> import nuvec.nn as nn
        >>> from nuvec.nn.layers.distributed import shard_linear
        >>> shard_linear(nn.Linear(4, 6), "sharded-to-all")
        ShardedToAllLinear(input_dims=4, output_dims=6, bias=True)
    """
    if sharding not in _SHARDINGS:
        raise ValueError(f"shard_linear: sharding must be 'all-to-sharded' or "
                         f"'sharded-to-all', got {sharding!r}")
    forward = sharding == "all-to-sharded"
    if isinstance(module, QuantizedLinear):
        cls = QuantizedAllToShardedLinear if forward else QuantizedShardedToAllLinear
        return cls.from_quantized_linear(module, segments=segments, group=group)
    if isinstance(module, Linear):
        cls = AllToShardedLinear if forward else ShardedToAllLinear
        return cls.from_linear(module, segments=segments, group=group)
    raise TypeError(f"shard_linear: expected a Linear or QuantizedLinear, got "
                    f"{type(module).__name__}")


def _divided(op: str, what: str, size: int, group: Any) -> int:
    count = group.size()
    if size % count:
        raise ValueError(f"{op}: the {what} ({size}) cannot be sharded across {count} "
                         "processes")
    return size // count


class _Sharded(Module):
    """What the sharded layers share: the group, the sharded dimension and its repr."""

    _outputs_split = True  # which features the group splits

    def __init__(self, input_dims: int, output_dims: int, group: Any) -> None:
        super().__init__()
        self.group = group or mx.distributed.init()
        name = type(self).__name__
        if self._outputs_split:
            shape = (_divided(name, "output size", output_dims, self.group), input_dims)
        else:
            shape = (output_dims, _divided(name, "input size", input_dims, self.group))
        # plain attributes (a tuple member would be a child)
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_dims", (input_dims, output_dims))

    def _extra_repr(self) -> str:
        return f"input_dims={self._dims[0]}, output_dims={self._dims[1]}, bias={'bias' in self}"

    def _bias_shape(self) -> tuple[int]:
        return (self._shape[0],) if self._outputs_split else (self._dims[1],)

    def _finish(self, y: mx.array) -> mx.array:
        if not self._outputs_split:
            y = mx.distributed.all_sum(y, group=self.group)
        return y + self["bias"] if "bias" in self else y

    def _rule(self, segments: Any) -> Rule:
        return (_all_to_sharded if self._outputs_split else _sharded_to_all)(segments)


class _ShardedLinear(_Sharded):
    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Any = None) -> None:
        super().__init__(input_dims, output_dims, group)
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, self._shape)
        if bias:
            self.bias = mx.random.uniform(-scale, scale, self._bias_shape())

    def __call__(self, x: mx.array) -> mx.array:
        if self._outputs_split:
            x = sum_gradients(self.group)(x)
        return self._finish(x @ self["weight"].T)

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: int | Sequence = 1,
                    group: Any = None) -> "_ShardedLinear":
        """This process's block of `linear_layer` (see `shard_linear`)."""
        group = group or mx.distributed.init()
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, "bias" in linear_layer, group)
        layer.update(_shard(linear_layer.parameters(), layer._rule(segments), group,
                            cls.__name__))
        return layer


class AllToShardedLinear(_ShardedLinear):
    """A `Linear` whose output features are split over the group: each process computes its
    block of them from the whole input, whose gradient is summed over the group.

    Args:
        input_dims: input features.
        output_dims: output features of the whole layer (divisible by the group size).
        bias: whether to learn a bias.
        group: the group; default the global one.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.AllToShardedLinear(4, 6)(mx.ones((2, 4))).shape  # one process
        (2, 6)
    """


class ShardedToAllLinear(_ShardedLinear):
    """A `Linear` whose input features are split over the group: each process multiplies its
    block of the input, and the partial products are summed over the group (every process
    gets the whole output). Arguments as `AllToShardedLinear`'s, except that the group size
    must divide `input_dims`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ShardedToAllLinear(4, 6)(mx.ones((2, 4))).shape  # one process
        (2, 6)
    """

    _outputs_split = False


class _ShardedQuantizedLinear(QuantizedModule, _Sharded):
    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int | None = None, bits: int | None = None, mode: str = "affine",
                 group: Any = None) -> None:
        super().__init__(input_dims, output_dims, group)
        scale = math.sqrt(1.0 / input_dims)
        store_quantized(self, mx.random.uniform(-scale, scale, self._shape), group_size, bits,
                        mode)
        if bias:
            self.bias = mx.zeros(self._bias_shape())
        self.freeze()

    def _extra_repr(self) -> str:
        return (f"{super()._extra_repr()}, group_size={self.group_size}, bits={self.bits}, "
                f"mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        if self._outputs_split:
            x = sum_gradients(self.group)(x)
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return self._finish(y)

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *,
                              segments: int | Sequence = 1,
                              group: Any = None) -> "_ShardedQuantizedLinear":
        """This process's block of `quantized_linear_layer` (see `shard_linear`)."""
        group = group or mx.distributed.init()
        layer_in = quantized_linear_layer
        output_dims = layer_in.weight.shape[0]
        input_dims = layer_in.weight.shape[1] * 32 // layer_in.bits
        layer = cls(input_dims, output_dims, "bias" in layer_in, layer_in.group_size,
                    layer_in.bits, getattr(layer_in, "mode", "affine"), group)
        layer.update(_shard(layer_in.parameters(), layer._rule(segments), group, cls.__name__))
        return layer


class QuantizedAllToShardedLinear(_ShardedQuantizedLinear):
    """`AllToShardedLinear` with a quantized weight (frozen, as `QuantizedLinear`'s).

    Args:
        input_dims, output_dims, bias, group: as `AllToShardedLinear`'s.
        group_size, bits, mode: the quantization, as `mx.quantize`'s.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.QuantizedAllToShardedLinear(64, 8)(mx.ones((1, 64))).shape  # one process
        (1, 8)
    """


class QuantizedShardedToAllLinear(_ShardedQuantizedLinear):
    """`ShardedToAllLinear` with a quantized weight, arguments as
    `QuantizedAllToShardedLinear`'s; each block of input features must hold whole
    quantization groups.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.QuantizedShardedToAllLinear(64, 8)(mx.ones((1, 64))).shape  # one process
        (1, 8)
    """

    _outputs_split = False


def _gatherer(group: Any, shapes: list[tuple[int, ...]], compute_dtype: Any) -> Callable:
    """`gather(blocks) -> full parameters`: one `all_gather` of every block at once; its
    vjp averages the full gradients over the group and returns this process's blocks."""
    count = group.size()
    sizes = [math.prod(s) // count for s in shapes]
    points = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]

    def cast(x: mx.array, dtype: Any) -> mx.array:
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @mx.custom_function
    def gather(blocks):
        flat = mx.concatenate([cast(b.reshape(1, -1), compute_dtype) for b in blocks], axis=1)
        rows = mx.split(mx.distributed.all_gather(flat, group=group), points, axis=1)
        return [r.reshape(s) for r, s in zip(rows, shapes)]

    @gather.vjp
    def gather_vjp(blocks, cotangents, outputs):
        flat = mx.concatenate([c.reshape(count, -1) for c in cotangents], axis=1)
        mine = mx.distributed.sum_scatter(flat, group=group) / count
        return [cast(part.reshape(b.shape), b.dtype)
                for part, b in zip(mx.split(mine, points, axis=1), blocks)]

    return gather


def _own_parameters(module: Module, key: str, value: Any) -> bool:
    """Parameters not already held by a nested `FullyShardedModule`."""
    return not isinstance(value, FullyShardedModule) and Module.valid_parameter_filter(
        module, key, value)


class FullyShardedModule(Module):
    """`module` with every parameter split along axis 0 over the group (FSDP).

    A call gathers the full parameters into the module, runs it and puts the blocks back; the
    gradient of a block is the group's average of the full gradient's block. Use
    `fully_shard` to make one.

    Args:
        module: the module to shard (its parameters are replaced by this process's blocks).
        group: the group; default the global one.
        compute_dtype: the dtype of the gathered parameters (default: their own).

    Raises:
        ValueError: for a scalar parameter or an axis 0 the group size does not divide.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.FullyShardedModule(nn.Linear(4, 2))(mx.ones((1, 4))).shape  # one process
        (1, 2)
    """

    def __init__(self, module: Module, group: Any = None, compute_dtype: Any = None) -> None:
        super().__init__()
        group = group or mx.distributed.init()
        count = group.size()
        owned = tree_flatten(module.filter_and_map(_own_parameters))
        for path, a in owned:
            if a.ndim == 0 or a.shape[0] % count:
                raise ValueError(f"FullyShardedModule: cannot shard parameter {path!r} of shape "
                                 f"{a.shape} across {count} processes: axis 0 must be "
                                 f"divisible by {count}")
        # plain attributes: neither parameters nor children
        object.__setattr__(self, "_paths", [path for path, _ in owned])
        object.__setattr__(self, "_gather", _gatherer(group, [a.shape for _, a in owned],
                                                      compute_dtype))
        module.update(_shard(module.filter_and_map(_own_parameters), lambda p, w: 0, group,
                             "FullyShardedModule"))
        self.module = module

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _gathered(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        blocks = self.module.filter_and_map(_own_parameters)
        full = self._gather([a for _, a in tree_flatten(blocks)])
        self.module.update(tree_unflatten(list(zip(self._paths, full))))
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(blocks)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._gathered(self.module, *args, **kwargs)

    def as_linear(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's `as_linear` (a tied embedding) with gathered parameters."""
        return self._gathered(self.module.as_linear, *args, **kwargs)


def fully_shard(module: Module, *, group: Any = None, compute_dtype: Any = None) -> Module:
    """`module` wrapped in a `FullyShardedModule`, or `module` itself when there is nothing
    to shard (one process, no parameters of its own, or already wrapped).

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.Linear(4, 2)
        >>> nn.fully_shard(layer) is layer  # one process
        True
    """
    group = group or mx.distributed.init()
    if group.size() == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
