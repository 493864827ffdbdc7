"""The `FastOp` primitive family: input checks, kernel-or-fallback recording, default rules.

A fused operation is recorded as one node when a kernel takes it (a GPU stream with a
float16/bfloat16/float32 input, or a CPU stream for the ops with a direct NumPy kernel); anywhere
else its fallback graph of ordinary operations is built. Rules not written by a subclass
differentiate or batch that fallback graph; `run_on_cpu` computes a node through it.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, leaf, record
from nuvec.graph.caller import public_caller
from nuvec.graph.device import DeviceType, default_stream, stream as stream_context, to_stream
from nuvec.graph.evaluator import eval as evaluate
from nuvec.graph.primitive import Primitive
from nuvec import ops
from nuvec.ops.families import batch_size, move_batch_to_front
from nuvec.transforms.autodiff import backward, forward
from nuvec.transforms.batching import vmap as batched
from nuvec.transforms.trace import mark, release, trace

KERNEL_FLOATS = (dt.float16, dt.bfloat16, dt.float32)
# The dtypes a recorded node takes: the GPU kernels' and float64 (computed with NumPy).
NODE_FLOATS = (*KERNEL_FLOATS, dt.float64)
_U32_MAX = 2**32 - 1


def mx() -> Any:
    """The ordinary operations, `nuvec.ops` (the fallback graphs are written with them)."""
    return ops


def floating(op: str, dtype: dt.Dtype) -> None:
    """Raises TypeError unless `dtype` is a floating-point type."""
    if not dtype.is_floating:
        raise DtypeError(f"{public_caller(op)}: unsupported dtype {dtype.name}, expected a "
                         "floating-point type")


def check_param(op: str, what: str, p: Array, x: Array) -> None:
    """Raises ValueError unless `p` is 1-D with the size of `x`'s last axis."""
    if p.ndim != 1 or p.size != x.shape[-1]:
        raise ValueError(f"{public_caller(op)}: {what} must be 1-D with {x.shape[-1]} elements, "
                         f"got shape {p.shape}")


def as_f32_bits(value: float) -> float:
    """`value` rounded to float32, as the seed stores parameters (`f32::to_bits`)."""
    return float(np.float32(value))


def wide(x: Array) -> Array:
    """`x` in float32 at least (float64 stays float64), as the fallbacks compute."""
    return x if x.dtype in (dt.float32, dt.float64) else mx().astype(x, dt.float32)


def on_gpu(dtype: dt.Dtype, size: int, stream: Any = None) -> bool:
    """Whether a GPU kernel covers `dtype` on `stream` (default: the current stream)."""
    return (
        to_stream(stream).device.type is DeviceType.gpu
        and dtype in KERNEL_FLOATS
        and 0 < size < _U32_MAX
    )


def kernel_takes(op: FastOp, x: Array, stream: Any = None) -> bool:
    """Whether `op` on `x` is recorded as one node on `stream` (default: the current
    stream)."""
    s = to_stream(stream)
    if on_gpu(x.dtype, x.size, s):
        return True
    return (
        s.device.type is DeviceType.cpu
        and op.cpu_fused
        and x.dtype.is_floating
        and x.size > 0
    )


def record_or_fallback(op: FastOp, inputs: Sequence[Array], stream: Any = None
                       ) -> list[Array]:
    """Records `op` as one node for a kernel, or builds its fallback graph.

    Args:
        op: the fused primitive.
        inputs: its inputs, already checked.
        stream: where to record (default: the current stream).

    Returns:
        The outputs: the node's, or the fallback graph's.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.softmax import SOFTMAX
        >>> mx.fast.record_or_fallback(SOFTMAX, [mx.zeros((1, 2))])[0].tolist()
        [[0.5, 0.5]]
    """
    inputs = list(inputs)
    s = to_stream(stream)
    if kernel_takes(op, inputs[0], s):
        return record(op, inputs, s)
    if stream is None:
        return op.fallback(inputs)
    with stream_context(s):  # (the fallback's ops record on the current stream)
        return op.fallback(inputs)


def one(op: FastOp, inputs: Sequence[Array], stream: Any = None) -> Array:
    """The only output of `record_or_fallback(op, inputs, stream)`."""
    return record_or_fallback(op, inputs, stream)[0]


def front(inputs: Sequence[Array], axes: Sequence[int | None], i: int) -> Array:
    """Input `i` with its batch axis first (broadcast along a new one when unbatched)."""
    return move_batch_to_front(inputs[i], axes[i], batch_size(inputs, axes))


class FastOp(Primitive):
    """A fused operation: checks, output specs, a fallback graph and rules.

    Subclasses define `op` (the public name used in messages), `arity(inputs)` (the expected
    input count), `valid(inputs)` (the seed's `check`: whether kernels and fallbacks take the
    inputs), `specs(inputs)` and `fallback(inputs)`. `cpu_fused` marks ops with a direct NumPy
    kernel, which the CPU records as one node; `row_wise` ops batch as one node (batch first).

    Example:
        >>> import nuvec as mx
        >>> from nuvec.fast.softmax import SOFTMAX
        >>> isinstance(SOFTMAX, mx.fast.FastOp), SOFTMAX.fallback([mx.zeros((2,))])[0].tolist()
        (True, [0.5, 0.5])
    """

    __slots__ = ()
    abstract = True
    op = "fast"
    cpu_fused = False
    row_wise = False

    def valid(self, inputs: Sequence[Array]) -> bool:
        return True

    def specs(self, inputs: Sequence[Array]) -> list[tuple[tuple[int, ...], dt.Dtype]]:
        x = inputs[0]
        return [(x.shape, x.dtype)]

    def output_specs(self, inputs):
        n = self.arity(inputs)
        if len(inputs) != n or inputs[0].ndim == 0:
            raise ValueError(f"{self.op}: {n} inputs expected, got {len(inputs)}")
        floating(self.op, inputs[0].dtype)
        if not self.valid(inputs):
            shown = [(a.dtype.name, a.shape) for a in inputs]
            raise ValueError(f"{self.op}: invalid inputs {shown}")
        return self.specs(inputs)

    # -- rules through the fallback graph ----------------------------------------------
    def _traced(self, inputs: Sequence[Array], active: list[int]):
        starts = mark([inputs[i] for i in active])

        def run(*ps: Array) -> list[Array]:
            full = list(inputs)
            for p, i in zip(ps, active):
                full[i] = p
            return self.fallback(full)

        return starts, trace(run, starts)

    def vjp(self, primals, cotangents, argnums, outputs):
        return self.fallback_vjp(primals, cotangents, argnums)

    def fallback_vjp(self, primals, cotangents, argnums) -> list[Array | None]:
        """Reverse mode through the fallback graph, for the wanted floating inputs."""
        active = [i for i in argnums if primals[i].dtype.is_inexact]
        if not active:
            return [None] * len(argnums)
        starts, outs = self._traced(primals, active)
        grads = backward(outs, list(cotangents), starts)
        release(outs, starts)
        found = dict(zip(active, grads))
        return [found.get(i) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        active = [
            i for i, t in enumerate(tangents) if t is not None and primals[i].dtype.is_inexact
        ]
        if not active:
            return [None] * len(outputs)
        starts, outs = self._traced(primals, active)
        tangents_out = forward(outs, starts, [tangents[i] for i in active])
        release(outs, starts)
        return tangents_out

    def batch_first(self, inputs: Sequence[Array], axes: Sequence[int | None]) -> list[int]:
        """The inputs that go batch-first into one node, or [] to batch the fallback."""
        if self.row_wise and all(a is None for a in axes[1:]):
            return [0]
        return []

    def vmap(self, inputs, axes):
        moved = self.batch_first(inputs, axes)
        if moved:
            full = list(inputs)
            for i in moved:
                full[i] = front(inputs, axes, i)
            outs = record_or_fallback(self, full)
            return outs, [0] * len(outs)
        outs = batched(lambda *xs: self.fallback(list(xs)), in_axes=tuple(axes))(*inputs)
        return list(outs), [0] * len(outs)


def run_on_cpu(
    operands: Sequence[np.ndarray], f: Callable[[list[Array]], Sequence[Array]]
) -> list[np.ndarray]:
    """Builds a graph with `f` over evaluated `operands` on the CPU stream and computes it.

    The caller's default stream is restored afterwards, even when `f` or the evaluation
    raises.

    Args:
        operands: the evaluated input data.
        f: builds the output arrays from leaves holding `operands`.

    Returns:
        The outputs' data as NumPy arrays.

    Example:
        >>> import nuvec as mx
        >>> import numpy as np
        >>> mx.fast.run_on_cpu([np.array([1.0, 2.0])], lambda xs: [xs[0] * 2])[0].tolist()
        [2.0, 4.0]
    """
    # (np.ascontiguousarray alone would turn a 0-d operand into shape (1,).)
    leaves = [leaf(np.ascontiguousarray(a).reshape(np.shape(a)),
                   dt.from_numpy_dtype(np.asarray(a).dtype)) for a in operands]
    with stream_context(default_stream(DeviceType.cpu)):
        outputs = list(f(leaves))
    evaluate(outputs)
    return [np.asarray(o) for o in outputs]


def cpu_fallback_kernel(p: FastOp, *operands: np.ndarray) -> Any:
    """A fused node computed through its fallback graph on the CPU."""
    outs = run_on_cpu(operands, p.fallback)
    return outs[0] if len(outs) == 1 else tuple(outs)
