"""The gated delta rule (linear attention with a decaying, delta-updated state).

Per step `t` and value head: `S = S * g_t`, `S += k_t (beta_t (v_t - S k_t))^T`, `y_t = S q_t`,
with `S` of shape `[Dv, Dk]`. `gated_delta` returns the outputs and the final state,
`gated_delta_steps` every step's state, `gated_delta_slots` reads and writes states in a pool.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.fast.base import KERNEL_FLOATS, NODE_FLOATS, FastOp, floating, mx, on_gpu, wide
from nuvec.ops.arguments import as_array, bool_flag

__all__ = ["gated_delta", "gated_delta_steps", "gated_delta_slots", "gated_delta_update",
           "gated_delta_from_projections"]


def gated_delta_graph(inputs, steps: bool) -> list[Array]:
    """The rule step by step from ordinary operations (mlx-lm's `gated_delta_ops`)."""
    ops = mx()
    q, k, v, g, beta, state = inputs
    b, t, hk, dk = q.shape
    hv, dv = v.shape[2], v.shape[3]

    def heads(x: Array) -> Array:
        # Each key head serves `Hv / Hk` consecutive value heads.
        if hv == hk:
            return x
        wide_x = ops.broadcast_to(ops.expand_dims(x, 3), (b, t, hk, hv // hk, dk))
        return ops.reshape(wide_x, (b, t, hv, dk))

    qh, kh = heads(wide(q)), heads(wide(k))
    vw, gw, bw = wide(v), wide(g), wide(beta)
    s = wide(state)
    ys, states = [], []
    for i in range(t):
        qt, kt, vt = (ops.take(a, i, axis=1) for a in (qh, kh, vw))
        kt = ops.expand_dims(kt, 2)
        s = ops.multiply(s, ops.reshape(ops.take(gw, i, axis=1), (b, hv, 1, 1)))
        kv_mem = ops.sum(ops.multiply(s, kt), axis=-1)
        delta = ops.multiply(ops.subtract(vt, kv_mem),
                             ops.expand_dims(ops.take(bw, i, axis=1), -1))
        s = ops.add(s, ops.multiply(kt, ops.expand_dims(delta, -1)))
        y = ops.sum(ops.multiply(s, ops.expand_dims(qt, 2)), axis=-1)
        ys.append(ops.astype(y, q.dtype))
        if steps:
            states.append(ops.astype(s, state.dtype))
    y = ops.stack(ys, axis=1) if ys else ops.zeros((b, 0, hv, dv), q.dtype)
    if not steps:
        return [y, ops.astype(s, state.dtype)]
    s = ops.stack(states, axis=1) if states else ops.zeros((b, 0, hv, dv, dk), state.dtype)
    return [y, s]


class _Delta(FastOp):
    __slots__ = ()
    abstract = True
    op = "gated_delta"

    def state_ok(self, inputs, b, hv, dv, dk) -> bool:
        state = inputs[5]
        return state.shape == (b, hv, dv, dk) and state.dtype in NODE_FLOATS

    def valid(self, inputs):
        q, k, v, g, beta = inputs[:5]
        if q.ndim != 4 or v.ndim != 4 or q.shape != k.shape:
            raise ValueError("gated_delta: q and k must be [B, T, Hk, Dk] and v [B, T, Hv, Dv]")
        b, t, hk, dk = q.shape
        hv, dv = v.shape[2], v.shape[3]
        return (
            k.dtype is q.dtype and v.dtype is q.dtype
            and v.shape[:2] == (b, t)
            and hk > 0 and hv % hk == 0 and dk % 32 == 0
            and g.shape == (b, t, hv) and beta.shape == (b, t, hv)
            and g.dtype in NODE_FLOATS and beta.dtype in NODE_FLOATS
            and self.state_ok(inputs, b, hv, dv, dk)
        )


class GatedDelta(_Delta):
    """`(q, k, v, g, beta, state)`: the outputs and the final state (or every step's)."""

    __slots__ = ("steps",)

    def __init__(self, steps: bool):
        self.steps = bool(steps)

    def params(self):
        return (self.steps,)

    def arity(self, inputs):
        return 6

    def specs(self, inputs):
        q, v, state = inputs[0], inputs[2], inputs[5]
        shape = (state.shape[0], q.shape[1], *state.shape[1:]) if self.steps else state.shape
        return [(v.shape, q.dtype), (shape, state.dtype)]

    def fallback(self, inputs):
        return gated_delta_graph(inputs, self.steps)


class GatedDeltaSlots(_Delta):
    """`(q, k, v, g, beta, pool, slots)`: the outputs and the pool with updated slot states."""

    __slots__ = ()

    def arity(self, inputs):
        return 7

    def state_ok(self, inputs, b, hv, dv, dk):
        pool, slots = inputs[5], inputs[6]
        return (pool.ndim == 4 and pool.shape[1:] == (hv, dv, dk) and slots.shape == (b,)
                and slots.dtype is dt.int32 and pool.dtype in NODE_FLOATS)

    def specs(self, inputs):
        q, v, pool = inputs[0], inputs[2], inputs[5]
        return [(v.shape, q.dtype), (pool.shape, pool.dtype)]

    def fallback(self, inputs):
        ops = mx()
        pool, slots = inputs[5], inputs[6]
        states = ops.take(pool, slots, axis=0)
        y, new = gated_delta_graph([*inputs[:5], states], False)
        at = ops.broadcast_to(ops.reshape(slots, (-1, 1, 1, 1)), new.shape)
        return [y, ops.put_along_axis(pool, at, new, axis=0)]


def _kernel(q, v, others) -> bool:
    return (on_gpu(q.dtype, q.size) and q.dtype is v.dtype and q.shape[3] % 32 == 0
            and all(a.dtype in KERNEL_FLOATS for a in others))


def _run(op: FastOp, inputs: list[Array]) -> tuple[Array, Array]:
    q, v = inputs[0], inputs[2]
    if _kernel(q, v, inputs[3:6]):
        y, s = record(op, inputs, to_stream(None))
    else:
        y, s = op.fallback(inputs)
    return y, s


def _checked(q, k, v, g, beta, state, op: str = "gated_delta") -> list[Array]:
    """The inputs as arrays, checked; a `state` of None becomes float32 zeros (once the shapes
    are known to fit)."""
    arrays = [as_array(a, op) for a in (q, k, v, g, beta)]
    if state is not None:
        arrays.append(as_array(state, op))
    for a in arrays:
        floating(op, a.dtype)
    q, k, v, g, beta = arrays[:5]
    if q.ndim != 4 or q.shape != k.shape or v.ndim != 4:
        raise ValueError(f"{op}: q and k must be [B, T, Hk, Dk] and v [B, T, Hv, Dv], "
                         f"got {q.shape}, {k.shape}, {v.shape}")
    b, t, hk, dk = q.shape
    hv, dv = v.shape[2], v.shape[3]
    if v.shape[:2] != (b, t) or hk == 0 or hv % hk:
        raise ValueError(f"{op}: v must be [{b}, {t}, Hv, Dv] with Hv a multiple of "
                         f"{hk}, got {v.shape}")
    if g.shape != (b, t, hv) or beta.shape != (b, t, hv):
        raise ValueError(f"{op}: g and beta must be [{b}, {t}, {hv}], got {g.shape} "
                         f"and {beta.shape}")
    if state is None:
        arrays.append(mx().zeros((b, hv, dv, dk), dt.float32))
    elif arrays[5].shape != (b, hv, dv, dk):
        raise ValueError(f"{op}: state must be [{b}, {hv}, {dv}, {dk}], got "
                         f"{arrays[5].shape}")
    return arrays


def gated_delta(q: Any, k: Any, v: Any, g: Any, beta: Any, state: Any, *,
                stream: Any = None) -> tuple[Array, Array]:
    """The gated delta rule over `T` steps from `state`.

    Args:
        q, k: `[B, T, Hk, Dk]` queries and keys.
        v: `[B, T, Hv, Dv]` values, `Hv` a multiple of `Hk` (each key head serves
            `Hv / Hk` consecutive value heads).
        g: `[B, T, Hv]` decays.
        beta: `[B, T, Hv]` update strengths.
        state: `[B, Hv, Dv, Dk]` initial state.
        stream: stream or device.

    Returns:
        `(y, state)`: outputs `[B, T, Hv, Dv]` in `q`'s dtype and the final state in the
        state's dtype (computed in float32 at least).

    Raises:
        ValueError: if the shapes do not fit.
        TypeError: if an input is not floating-point.

    Example:
        >>> import nuvec as mx
        >>> q = k = mx.ones((1, 2, 1, 4)); v = mx.ones((1, 2, 1, 3)); g = beta = mx.ones((1, 2, 1))
        >>> y, state = mx.fast.gated_delta(q, k, v, g, beta, mx.zeros((1, 1, 3, 4)))
        >>> y.shape, state.shape
        ((1, 2, 1, 3), (1, 1, 3, 4))
    """
    with stream_context(to_stream(stream)):
        return _run(GatedDelta(False), _checked(q, k, v, g, beta, state))


def gated_delta_steps(q: Any, k: Any, v: Any, g: Any, beta: Any, state: Any, *,
                      stream: Any = None) -> tuple[Array, Array]:
    """As `gated_delta`, returning the state after every step, `[B, T, Hv, Dv, Dk]`.

    Args:
        q, k, v, g, beta, state: as `gated_delta`.
        stream: stream or device.

    Returns:
        `(y, states)`: outputs `[B, T, Hv, Dv]` and the state after every step
            `[B, T, Hv, Dv, Dk]`.

    Raises:
        ValueError: if the shapes do not fit.
        TypeError: if an input is not floating-point.

    Example:
        >>> import nuvec as mx
        >>> q = k = mx.ones((1, 2, 1, 4)); v = mx.ones((1, 2, 1, 3)); g = beta = mx.ones((1, 2, 1))
        >>> y, states = mx.fast.gated_delta_steps(q, k, v, g, beta, mx.zeros((1, 1, 3, 4)))
        >>> y.shape, states.shape
        ((1, 2, 1, 3), (1, 2, 1, 3, 4))
    """
    with stream_context(to_stream(stream)):
        return _run(GatedDelta(True), _checked(q, k, v, g, beta, state, "gated_delta_steps"))


def gated_delta_slots(q: Any, k: Any, v: Any, g: Any, beta: Any, pool: Any, slots: Any, *,
                      stream: Any = None) -> tuple[Array, Array]:
    """As `gated_delta`, with sequence `b`'s state read from and written to `pool[slots[b]]`.

    Args:
        q, k, v, g, beta: as `gated_delta`.
        pool: `[S, Hv, Dv, Dk]` states.
        slots: `[B]` integer slots.
        stream: stream or device.

    Returns:
        `(y, pool)`: the outputs and the pool with the slots' final states.

    Raises:
        ValueError, TypeError: as `gated_delta`, or for a bad pool or slots.

    Example:
        >>> import nuvec as mx
        >>> q = k = mx.ones((1, 2, 1, 4)); v = mx.ones((1, 2, 1, 3)); g = beta = mx.ones((1, 2, 1))
        >>> out = mx.fast.gated_delta_slots(q, k, v, g, beta, mx.zeros((3, 1, 3, 4)), mx.array([2]))
        >>> [a.shape for a in out]  # y and the updated pool
        [(1, 2, 1, 3), (3, 1, 3, 4)]
    """
    with stream_context(to_stream(stream)):
        ops = mx()
        q, pool, slots = (as_array(a, "gated_delta_slots") for a in (q, pool, slots))
        b = q.shape[0] if q.ndim else 0
        if pool.ndim != 4 or slots.shape != (b,) or not slots.dtype.is_integer:
            raise ValueError(
                f"gated_delta_slots: pool must be [slots, Hv, Dv, Dk] and slots [{b}] "
                f"integers, got {pool.shape} and {slots.dtype.name} {slots.shape}"
            )
        slots = ops.astype(slots, dt.int32)
        arrays = _checked(q, k, v, g, beta, ops.take(pool, slots, axis=0), "gated_delta_slots")
        return _run(GatedDeltaSlots(), [*arrays[:5], pool, slots])


def _masked_update(op: str, q: Array, k: Array, v: Array, g: Array, beta: Array, state: Any,
                   mask: Any) -> tuple[Array, Array]:
    """`gated_delta` from `state` (None: float32 zeros); a masked step (`mask` `[B, T]`,
    true where a step is real) neither decays nor updates the state and outputs zeros."""
    ops = mx()
    if mask is not None:
        mask = as_array(mask, op)
        if mask.shape != q.shape[:2]:
            raise ValueError(f"{op}: mask must be [B, T] = {list(q.shape[:2])}, got "
                             f"{mask.shape}")
    if mask is not None:
        m = ops.expand_dims(mask, -1)
        g = ops.where(m, g, ops.ones_like(g))
        beta = ops.where(m, beta, ops.zeros_like(beta))
    y, state = _run(GatedDelta(False), _checked(q, k, v, g, beta, state, op))
    if mask is None:
        return y, state
    return ops.where(ops.expand_dims(m, -1), y, ops.zeros_like(y)), state


def gated_delta_update(q: Any, k: Any, v: Any, gamma: Any, beta: Any, initial_state: Any = None,
                       mask: Any = None, *, stream: Any = None) -> tuple[Array, Array]:
    """MLX 0.32's gated delta update: `gated_delta` with an optional state and mask.

    Args:
        q, k: `[B, T, Hk, Dk]`.
        v: `[B, T, Hv, Dv]`.
        gamma: `[B, T, Hv]` decays (linear, in (0, 1]).
        beta: `[B, T, Hv]` update rates.
        initial_state: `[B, Hv, Dv, Dk]`, or None for float32 zeros.
        mask: optional `[B, T]` boolean mask: a masked step leaves the state unchanged and
            outputs zeros.
        stream: stream or device.

    Returns `(y, state)` and raises as `gated_delta`.

    Example:
        >>> import nuvec as mx
        >>> q = k = v = mx.ones((1, 2, 1, 4)); g = beta = mx.ones((1, 2, 1))
        >>> y, state = mx.fast.gated_delta_update(q, k, v, g, beta)
        >>> y.shape, state.shape, state.dtype
        ((1, 2, 1, 4), (1, 1, 4, 4), nuvec.float32)
    """
    op = "gated_delta_update"
    with stream_context(to_stream(stream)):
        q, k, v, gamma, beta = (as_array(x, op) for x in (q, k, v, gamma, beta))
        return _masked_update(op, q, k, v, gamma, beta, initial_state, mask)


def gated_delta_from_projections(q: Any, k: Any, v: Any, a: Any, b: Any, A_log: Any,
                                 dt_bias: Any, state: Any = None, mask: Any = None,
                                 use_kernel: bool = True, lower_bound: float | None = None, *,
                                 stream: Any = None) -> tuple[Array, Array]:
    """mlx-lm's gated delta update (`mlx_lm.models.gated_delta.gated_delta_update`), from the
    gate projections.

    `beta = sigmoid(b)` and `g = exp(-exp(A_log) * softplus(a + dt_bias))`, or with a
    `lower_bound`, `g = exp(lower_bound * sigmoid(exp(A_log) * (a + dt_bias)))`; the gates
    are float32, as mlx-lm's; then `gated_delta_update(q, k, v, g, beta, state, mask)`.

    Args:
        q, k: `[B, T, Hk, Dk]`.
        v: `[B, T, Hv, Dv]`.
        a, b: `[B, T, Hv]` gate projections.
        A_log, dt_bias: `[Hv]` per-head parameters.
        state: `[B, Hv, Dv, Dk]`, or `None` for float32 zeros.
        mask: optional `[B, T]` boolean mask (as `gated_delta_update`'s).
        use_kernel: accepted for mlx-lm compatibility (the fused node is chosen where a
            kernel exists).
        lower_bound: the decay's bound in the sigmoid form, or `None`.
        stream: stream or device.

    Returns `(y, state)` and raises as `gated_delta_update`.

    Example:
        >>> import nuvec as mx
        >>> q = k = mx.ones((1, 2, 1, 4)); v = mx.ones((1, 2, 1, 3)); a = b = mx.zeros((1, 2, 1))
        >>> y, state = mx.fast.gated_delta_from_projections(q, k, v, a, b, mx.zeros((1,)),
        ...                                                 mx.zeros((1,)))
        >>> y.shape, state.shape, state.dtype
        ((1, 2, 1, 3), (1, 1, 3, 4), nuvec.float32)
    """
    op = "gated_delta_from_projections"
    bool_flag(use_kernel, op, "use_kernel")  # accepted for mlx-lm, unused
    with stream_context(to_stream(stream)):
        ops = mx()
        q, k, v, a, b = (as_array(x, op) for x in (q, k, v, a, b))
        if (q.ndim != 4 or q.shape != k.shape or v.ndim != 4 or a.shape != v.shape[:3]
                or b.shape != a.shape):
            raise ValueError(f"{op}: q and k must be [B, T, Hk, Dk], v [B, T, Hv, Dv] and a "
                             f"and b [B, T, Hv], got {q.shape}, {k.shape}, {v.shape}, "
                             f"{a.shape} and {b.shape}")
        A_log, dt_bias = (as_array(x, op) for x in (A_log, dt_bias))
        hv = v.shape[2]
        for name, param in (("A_log", A_log), ("dt_bias", dt_bias)):
            if param.shape not in ((hv,), (1,), ()):
                raise ValueError(f"{op}: {name} must be [{hv}] (one per value head), got "
                                 f"{param.shape}")
        beta = ops.sigmoid(b)
        decay_rate = ops.exp(ops.astype(A_log, dt.float32))
        if lower_bound is None:
            softplus = ops.logaddexp(ops.add(a, dt_bias), 0.0)
            g = ops.exp(ops.negative(ops.multiply(decay_rate, softplus)))
        else:
            shifted = ops.add(ops.astype(a, dt.float32), dt_bias)
            g = ops.exp(ops.multiply(lower_bound, ops.sigmoid(ops.multiply(decay_rate, shifted))))
        return _masked_update(op, q, k, v, g, beta, state, mask)
