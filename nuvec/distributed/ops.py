"""The collective operations and their primitives: all_sum, all_max, all_min, all_gather,
sum_scatter, send, recv, recv_like, as MLX's `mlx.core.distributed`.

Each public function checks its arguments at the call and records one primitive (a group of
size 1 returns its input, as MLX). The primitives' rules follow MLX: each process
differentiates its own copy of the program with respect to its own inputs, the other
processes' inputs held fixed (`vjp`); `jvp` pushes every process's tangent through the
collective. The kernels live in `kernels.py` (CPU, MPI) and `nccl.py` (GPU).
"""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import DeviceType, Stream, default_stream, to_stream
from nuvec.graph.primitive import Primitive, TransformError
from nuvec.ops import astype, expand_dims, moveaxis, pad, stack, where
from nuvec.ops.arguments import as_array, check_shape, fresh
from nuvec.distributed.group import Group, world_group

__all__ = ["all_sum", "all_max", "all_min", "all_gather", "sum_scatter", "send", "recv",
           "recv_like"]

Shape = tuple[int, ...]


class Collective(Primitive):
    """A communication over a group; `sequence` numbers the group's collectives in the order
    they were recorded, which every rank checks before moving data."""

    __slots__ = ("group", "sequence", "dtype")

    def __init__(self, group: Group, sequence: int, dtype: dt.Dtype):
        self.group = group
        self.sequence = sequence
        self.dtype = dtype  # of the data moved (a GPU buffer of bfloat16 is uint16)

    def params(self) -> tuple[Any, ...]:
        return (id(self.group.communicator), self.sequence)


class AllReduce(Collective):
    """`all_sum`, `all_max` or `all_min` (its `operation`) over the group, elementwise.

    vjp (this process's input, the others fixed): the cotangent itself for a sum; for max/min
    the cotangent where this process holds the extreme value, else zero. jvp: the sum of the
    tangents for a sum; for max/min the tangent of the process holding the extreme (the mean
    over ties).
    """

    __slots__ = ("operation",)

    def __init__(self, group: Group, sequence: int, dtype: dt.Dtype, operation: str):
        super().__init__(group, sequence, dtype)
        self.operation = operation

    def params(self):
        return (*super().params(), self.operation)

    def __repr__(self) -> str:
        return f"AllReduce({self.operation}, #{self.sequence})"

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        if self.operation == "all_sum":
            return [cotangents[0]]
        holds = primals[0] == outputs[0]
        return [where(holds, cotangents[0], 0.0)]

    def jvp(self, primals, tangents, outputs):
        tangent = tangents[0]
        if self.operation == "all_sum":
            return [all_sum(tangent, group=self.group)]
        holds = astype(primals[0] == outputs[0], tangent.dtype)
        both = all_sum(stack([tangent * holds, holds]), group=self.group)
        return [both[0] / both[1]]

    def vmap(self, inputs, axes):
        return [_all_reduce(self.operation, inputs[0], self.group, None)], [axes[0]]


class AllGather(Collective):
    """Every process's input concatenated along the first axis in rank order (a scalar input
    gives a vector). vjp: this process's block of the cotangent; jvp: the gathered tangents."""

    __slots__ = ()

    def output_specs(self, inputs):
        shape = inputs[0].shape
        n = self.group.size()
        return (((n * shape[0], *shape[1:]) if shape else (n,), inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        shape, rank = primals[0].shape, self.group.rank()
        if not shape:
            return [cotangents[0][rank]]
        return [cotangents[0][rank * shape[0]:(rank + 1) * shape[0]]]

    def jvp(self, primals, tangents, outputs):
        return [all_gather(tangents[0], group=self.group)]

    def vmap(self, inputs, axes):
        x, axis = inputs[0], axes[0]
        if x.ndim == 1:  # a batch of scalars: gather rows of one
            x, axis = expand_dims(x, 0), 1
        return [all_gather(moveaxis(x, axis, 1), group=self.group)], [1]


class ReduceScatter(Collective):
    """The sum over the group, split along the first axis: this process gets block `rank`.

    vjp: the cotangent placed in this process's block, zeros elsewhere; jvp: the scattered sum
    of the tangents."""

    __slots__ = ()

    def output_specs(self, inputs):
        shape = inputs[0].shape
        return (((shape[0] // self.group.size(), *shape[1:]), inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        block, rank = outputs[0].shape[0], self.group.rank()
        after = (self.group.size() - 1 - rank) * block
        widths = [(rank * block, after)] + [(0, 0)] * (primals[0].ndim - 1)
        return [pad(cotangents[0], widths)]

    def jvp(self, primals, tangents, outputs):
        return [sum_scatter(tangents[0], group=self.group)]

    def vmap(self, inputs, axes):
        if inputs[0].ndim < 2:
            raise TransformError("vmap: sum_scatter of a batch of scalars has no first axis")
        return [sum_scatter(moveaxis(inputs[0], axes[0], 1), group=self.group)], [1]


class Send(Collective):
    """Sends its input to process `dst`; its output is the input (so it can be evaluated)."""

    __slots__ = ("dst",)

    def __init__(self, group: Group, dtype: dt.Dtype, dst: int):
        super().__init__(group, -1, dtype)
        self.dst = dst

    def params(self):
        return (*super().params(), self.dst, id(self))  # every send is its own message

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vmap(self, inputs, axes):
        return [send(inputs[0], self.dst, group=self.group)], [axes[0]]


class Recv(Collective):
    """An array of `shape` and `dtype` received from process `src`."""

    __slots__ = ("shape", "src")

    def __init__(self, group: Group, shape: Shape, dtype: dt.Dtype, src: int):
        super().__init__(group, -1, dtype)
        self.shape, self.src = shape, src

    def params(self):
        return (*super().params(), self.shape, self.dtype.name, self.src, id(self))

    def output_specs(self, inputs):
        return ((self.shape, self.dtype),)


def _group(op: str, group: Any) -> Group:
    """The group to use (the world's if None); raises if this process is not in it."""
    if group is None:
        group = world_group()
    elif not isinstance(group, Group):
        raise TypeError(f"{op}: group must be a nuvec.distributed.Group or None, "
                        f"got {type(group).__name__}")
    if not group.is_member():
        raise ValueError(f"{op}: this process is not a member of the group (it passed a "
                         "negative color to split)")
    return group


def _stream(group: Group, stream: Any) -> Stream:
    """Where the collective runs: the given stream if the backend computes on its device,
    else the default stream of the backend's device (the evaluator moves the data)."""
    s = to_stream(stream)
    wanted = DeviceType.gpu if group.backend == "nccl" else DeviceType.cpu
    return s if s.device.type is wanted else default_stream(wanted)


def _record(primitive: Collective, inputs: Sequence[Array], group: Group, stream: Any) -> Array:
    return record1(primitive, inputs, _stream(group, stream))


def _all_reduce(operation: str, x: Any, group: Any, stream: Any) -> Array:
    x = as_array(x, operation)
    group = _group(operation, group)
    if group.size() == 1:
        return fresh(x)
    sequence = group.communicator.next_sequence()
    return _record(AllReduce(group, sequence, x.dtype, operation), (x,), group, stream)


def all_sum(x: Any, *, group: Group | None = None, stream: Any = None) -> Array:
    """The elementwise sum of `x` over the processes of the group, as MLX's `all_sum`.

    float16 and bfloat16 are summed in float32 and rounded once; bool sums are logical ors.

    Args:
        x: the array to sum (every process passes the same shape and dtype).
        group: the processes taking part; default the group of `init()`.
        stream: where to run it (a CPU stream for MPI, a GPU stream for NCCL).

    Returns:
        The sum, of `x`'s shape and dtype (on a group of size 1, `x`).

    Raises:
        TypeError: if `x` is not array-like or `group` is not a `Group`.
        ValueError: if this process is not in the group.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.all_sum(mx.array([1.0, 2.0])).tolist()  # one process
        [1.0, 2.0]
    """
    return _all_reduce("all_sum", x, group, stream)


def all_max(x: Any, *, group: Group | None = None, stream: Any = None) -> Array:
    """The elementwise maximum of `x` over the processes of the group, as MLX's `all_max`.

    Args:
        x: the array (every process passes the same shape and dtype).
        group: the processes taking part; default the group of `init()`.
        stream: where to run it.

    Returns:
        The maximum, of `x`'s shape and dtype.

    Raises:
        TypeError: if `x` is not array-like or `group` is not a `Group`.
        ValueError: if this process is not in the group.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.all_max(mx.array([3, 1])).tolist()
        [3, 1]
    """
    return _all_reduce("all_max", x, group, stream)


def all_min(x: Any, *, group: Group | None = None, stream: Any = None) -> Array:
    """The elementwise minimum of `x` over the processes of the group, as MLX's `all_min`.

    Args:
        x: the array (every process passes the same shape and dtype).
        group: the processes taking part; default the group of `init()`.
        stream: where to run it.

    Returns:
        The minimum, of `x`'s shape and dtype.

    Raises:
        TypeError: if `x` is not array-like or `group` is not a `Group`.
        ValueError: if this process is not in the group.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.all_min(mx.array([3, 1])).tolist()
        [3, 1]
    """
    return _all_reduce("all_min", x, group, stream)


def all_gather(x: Any, *, group: Group | None = None, stream: Any = None) -> Array:
    """Every process's `x` concatenated along the first axis in rank order, as MLX.

    Args:
        x: the array (every process passes the same shape and dtype); a scalar gathers to a
            vector.
        group: the processes taking part; default the group of `init()`.
        stream: where to run it.

    Returns:
        An array of shape `(size * x.shape[0], *x.shape[1:])` (`(size,)` for a scalar).

    Raises:
        TypeError: if `x` is not array-like or `group` is not a `Group`.
        ValueError: if this process is not in the group.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.all_gather(mx.array([[1, 2]])).shape
        (1, 2)
    """
    x = as_array(x, "all_gather")
    group = _group("all_gather", group)
    if group.size() == 1:
        return fresh(x)
    sequence = group.communicator.next_sequence()
    return _record(AllGather(group, sequence, x.dtype), (x,), group, stream)


def sum_scatter(x: Any, *, group: Group | None = None, stream: Any = None) -> Array:
    """The sum of `x` over the group, split along the first axis: this process gets block
    `rank` (`all_sum(x)[rank * n:(rank + 1) * n]`, `n = x.shape[0] // size`), as MLX.

    Args:
        x: an array whose first axis the group size divides.
        group: the processes taking part; default the group of `init()`.
        stream: where to run it.

    Returns:
        An array of shape `(x.shape[0] // size, *x.shape[1:])`.

    Raises:
        TypeError: if `x` is not array-like or `group` is not a `Group`.
        ValueError: in a group of several processes, if `x` is a scalar or its first axis is
            not divisible by the group size; if this process is not in the group.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.sum_scatter(mx.array([1.0, 2.0])).tolist()
        [1.0, 2.0]
    """
    x = as_array(x, "sum_scatter")
    group = _group("sum_scatter", group)
    if group.size() == 1:  # (a scalar too, as MLX)
        return fresh(x)
    if x.ndim == 0 or x.shape[0] % group.size():
        raise ValueError(f"sum_scatter: the first axis of x must be divisible by the group size "
                         f"{group.size()}, got shape {x.shape}")
    sequence = group.communicator.next_sequence()
    return _record(ReduceScatter(group, sequence, x.dtype), (x,), group, stream)


def _peer(op: str, name: str, value: Any, group: Group) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__}")
    if group.size() == 1:
        raise ValueError(f"{op}: cannot {op.split('_')[0]} within a group of size 1")
    if not 0 <= value < group.size():
        raise ValueError(f"{op}: {name} must be a rank in [0, {group.size()}), got {value}")
    return value


def send(x: Any, dst: int, *, group: Group | None = None, stream: Any = None) -> Array:
    """Sends `x` to the process of rank `dst`, as MLX's `send`.

    The message leaves when the result is evaluated; the result is `x` itself.

    Args:
        x: the array to send.
        dst: the receiving rank in the group.
        group: the group; default the group of `init()`.
        stream: where to run it.

    Returns:
        `x` (evaluate it to send).

    Raises:
        TypeError: if `x` is not array-like, `dst` not an int or `group` not a `Group`.
        ValueError: if the group has size 1, `dst` is not one of its ranks, or this process
            is not in it.

    Example:
        >>> import nuvec as mx
        >>> try: mx.distributed.send(mx.array([1.0]), 0)
        ... except ValueError as e: print(e)
        send: cannot send within a group of size 1
    """
    x = as_array(x, "send")
    group = _group("send", group)
    dst = _peer("send", "dst", dst, group)
    return _record(Send(group, x.dtype, dst), (x,), group, stream)


def recv(shape: Sequence[int], dtype: dt.Dtype, src: int, *, group: Group | None = None,
         stream: Any = None) -> Array:
    """An array of `shape` and `dtype` received from the process of rank `src`, as MLX.

    Args:
        shape: the shape the sender sends.
        dtype: its dtype.
        src: the sending rank in the group.
        group: the group; default the group of `init()`.
        stream: where to run it.

    Returns:
        The received array (the message is read when it is evaluated).

    Raises:
        TypeError: if `dtype` is not a dtype, `src` not an int or `group` not a `Group`.
        ValueError: if `shape` is not a valid shape, the group has size 1, `src` is not one
            of its ranks, or this process is not in it.

    Example:
        >>> import nuvec as mx
        >>> try: mx.distributed.recv((2,), mx.float32, 0)
        ... except ValueError as e: print(e)
        recv: cannot recv within a group of size 1
    """
    shape = check_shape(shape, "recv")
    if not isinstance(dtype, dt.Dtype):
        raise TypeError(f"recv: dtype must be a nuvec dtype, got {type(dtype).__name__}")
    group = _group("recv", group)
    src = _peer("recv", "src", src, group)
    return _record(Recv(group, shape, dtype, src), (), group, stream)


def recv_like(x: Any, src: int, *, group: Group | None = None, stream: Any = None) -> Array:
    """An array of `x`'s shape and dtype received from the process of rank `src`, as MLX.

    Args:
        x: an array whose shape and dtype the message has.
        src: the sending rank in the group.
        group: the group; default the group of `init()`.
        stream: where to run it.

    Returns:
        The received array.

    Raises:
        TypeError: if `x` is not array-like, `src` not an int or `group` not a `Group`.
        ValueError: if the group has size 1, `src` is not one of its ranks, or this process
            is not in it.

    Example:
        >>> import nuvec as mx
        >>> try: mx.distributed.recv_like(mx.zeros((2,)), 0)
        ... except ValueError as e: print(e)
        recv_like: cannot recv within a group of size 1
    """
    x = as_array(x, "recv_like")
    group = _group("recv_like", group)
    src = _peer("recv_like", "src", src, group)
    return _record(Recv(group, x.shape, x.dtype, src), (), group, stream)
