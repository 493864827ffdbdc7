"""`average_gradients`, as MLX's `mlx.nn.average_gradients`: the mean of a tree of gradients
over a group of processes, batched into few `nuvec.distributed.all_sum` calls."""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops import astype, concatenate, reshape, split, sqrt
from nuvec.utils import tree_flatten, tree_map, tree_unflatten
from nuvec.distributed import Group, all_sum, init
from nuvec.optimizers.base import check_max_norm, clipped, squared_norm


def average_gradients(gradients: Any, group: Group | None = None,
                      all_reduce_size: int = 32 * 1024**2,
                      communication_type: dt.Dtype | None = None,
                      communication_stream: Any = None) -> Any:
    """The mean of `gradients` (a tree of arrays) over the processes of `group`, as MLX.

    Arrays of one dtype are flattened and concatenated into buffers of at most
    `all_reduce_size` bytes, each summed with one `all_sum`, so a model of many small
    parameters makes few collectives. With `communication_type` the buffers travel in that
    dtype (e.g. `bfloat16` to halve the traffic) and are cast back.

    Args:
        gradients: a tree (nested dicts, lists, tuples) of arrays, the same on every process.
        group: the processes to average over; default the group of `init()`.
        all_reduce_size: the most bytes per `all_sum`; 0 or less sums each array alone.
        communication_type: the dtype to communicate in; default each array's own (MLX
            before 0.32).
        communication_stream: the stream (or device) the `all_sum` calls are recorded on
            (MLX 0.32); default the current one.

    Returns:
        A tree of the same structure holding the means (`gradients` itself on a group of
        size 1).

    Raises:
        TypeError: if `communication_type` is not a dtype, `group` not a `Group` or
            `communication_stream` not a stream or device.

    Example:
        >>> import nuvec as mx
        >>> import nuvec.nn as nn
        >>> g = {"w": mx.array([1.0, 2.0])}
        >>> nn.average_gradients(g)["w"].tolist()  # one process: unchanged
        [1.0, 2.0]
    """
    if communication_type is not None and not isinstance(communication_type, dt.Dtype):
        raise TypeError("average_gradients: communication_type must be a nuvec dtype or None, "
                        f"got {type(communication_type).__name__}")
    if group is not None and not isinstance(group, Group):
        raise TypeError("average_gradients: group must be a nuvec.distributed.Group or None, "
                        f"got {type(group).__name__}")
    try:
        stream = to_stream(communication_stream)
    except TypeError:
        raise TypeError(f"average_gradients: communication_stream must be a Stream, Device or "
                        f"None, got {communication_stream!r}") from None
    group = group if group is not None else init()
    size = group.size()
    if size == 1:
        return gradients

    def average(x: Array) -> Array:
        wire = x if communication_type is None else astype(x, communication_type)
        return astype(all_sum(wire, group=group, stream=stream), x.dtype) / size

    if all_reduce_size <= 0:
        return tree_map(average, gradients)
    flat = tree_flatten(gradients)
    if not flat:
        return gradients
    keys, values = zip(*flat)
    if len({v.dtype for v in values}) > 1:
        return average_gradients(gradients, group, 0, communication_type, stream)
    itemsize = (communication_type or values[0].dtype).size
    averaged: list[Array] = []
    for batch in _batches(values, itemsize, all_reduce_size):
        averaged += _average_batch(batch, average)
    return tree_unflatten(list(zip(keys, averaged)))


def _batches(values: tuple[Array, ...], itemsize: int, limit: int) -> list[list[Array]]:
    """Consecutive runs of `values` of at most `limit` bytes (an array larger alone)."""
    batches: list[list[Array]] = []
    current: list[Array] = []
    nbytes = 0
    for v in values:
        if current and nbytes + v.size * itemsize > limit:
            batches.append(current)
            current, nbytes = [], 0
        current.append(v)
        nbytes += v.size * itemsize
    if current:
        batches.append(current)
    return batches


def _average_batch(batch: list[Array], average: Any) -> list[Array]:
    if len(batch) == 1:
        return [average(batch[0])]
    flat = average(concatenate([reshape(v, (-1,)) for v in batch]))
    offsets, total = [], 0
    for v in batch[:-1]:
        total += v.size
        offsets.append(total)
    return [reshape(part, v.shape) for part, v in zip(split(flat, offsets), batch)]


def clip_grad_norm_sharded(gradients: Any, max_norm: float,
                           group: Group | None = None) -> tuple[Any, Array]:
    """Scales gradients sharded over `group` so that their global L2 norm is at most
    `max_norm` (MLX's `nn.utils.clip_grad_norm_sharded`): each process holds one shard (as
    with `fully_shard`), so the squared norms are summed over the group with one `all_sum`.

    Args:
        gradients: this process's shard of the gradients, a tree of arrays.
        max_norm: the largest global norm allowed.
        group: the processes the gradients are sharded over; default the group of `init()`.

    Returns:
        `(clipped_shard, global_norm)`, the norm before clipping; float16 gradients are
        squared and summed in float32, as `optimizers.clip_grad_norm` does.

    Raises:
        ValueError: for a negative `max_norm`.
        TypeError: if `group` is not a `Group`.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.nn.utils import clip_grad_norm_sharded
        >>> clipped, norm = clip_grad_norm_sharded({"a": mx.array([3.0, 4.0])}, 1.0)
        >>> norm.item()  # one process: the shard is the whole tree
        5.0
    """
    check_max_norm("clip_grad_norm_sharded", max_norm)
    if group is not None and not isinstance(group, Group):
        raise TypeError("clip_grad_norm_sharded: group must be a nuvec.distributed.Group or "
                        f"None, got {type(group).__name__}")
    total = sqrt(all_sum(squared_norm(gradients), group=group))
    return clipped(gradients, total, max_norm), total
