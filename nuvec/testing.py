"""Checks for operations and their rules, used by nuvec's suite and open to users.

- `assert_allclose(actual, expected, dtype=None)`: shape, then dtype, then values with the
  per-dtype tolerance of `TOLERANCES`.
- `check_grads(f, args)`: reverse mode against central finite differences in float64
  (autograd's inner-product test: <J^T u, v> against <u, (f(x + h v) - f(x - h v)) / 2h>).
- `check_jvp_vjp(f, args)`: <u, J v> from `jvp` equals <J^T u, v> from `vjp`.
- `check_vmap(f, args, in_axes)`: `vmap(f)` against a Python loop stacked with NumPy.
- `OpSpec`, `run_grad_checks`, `run_vmap_checks`: the rule table's rows and its driver.

Complex values pair as real(sum(conj(x) * y)), as real pairs; integer and boolean values
count as zero-derivative floats.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.ops.creation import array
from nuvec.transforms import jvp, vjp, vmap

TOLERANCES: dict[str, tuple[float, float]] = {  # (rtol, atol)
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "complex64": (1e-5, 1e-6),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}


def to_numpy64(a: Any) -> np.ndarray:
    """An array's values as NumPy float64 (complex128 for complex, unchanged for ints/bools)."""
    data = np.asarray(a)
    if data.dtype.kind == "c":
        return data.astype(np.complex128)
    if data.dtype.kind in "fV" or data.dtype.name == "bfloat16":
        return data.astype(np.float64)
    return data


def assert_allclose(
    actual: Array,
    expected: Any,
    dtype: dt.Dtype | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
) -> None:
    """Checks `actual`'s shape, then dtype (if given), then values against `expected`."""
    assert isinstance(actual, Array), f"expected an Array, got {type(actual).__name__}"
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if dtype is not None:
        assert actual.dtype is dtype, f"dtype {actual.dtype} != expected {dtype}"
    default = TOLERANCES.get(actual.dtype.name, (0.0, 0.0))
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    got = to_numpy64(actual)
    want = expected.astype(got.dtype) if got.dtype.kind in "fc" else expected
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _random_like(rng: np.random.Generator, a: Array) -> np.ndarray:
    """Standard normal values of `a`'s shape, complex for a complex `a`."""
    if a.dtype is dt.complex64:
        return rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
    return rng.standard_normal(a.shape)


def _values(a: Any) -> np.ndarray:
    """Values as complex128 for complex arrays, float64 for all others (ints and bools too)."""
    data = to_numpy64(a)
    return data if data.dtype.kind == "c" else data.astype(np.float64)


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    """The real inner product real(sum(conj(x) * y)) (complex values as pairs of reals),
    under which `vjp` is the adjoint of `jvp` (MLX's convention: the cotangent u of
    z -> c z pulls back to conj(c) u)."""
    return float(sum(np.sum(np.conj(_values(x)) * _values(y)).real for x, y in zip(xs, ys)))


def _outputs(value: Any) -> list[Array]:
    return [value] if isinstance(value, Array) else list(value)


def check_grads(
    f: Callable[..., Any], args: Sequence[Array], eps: float = 1e-6, rtol: float = 1e-5,
    atol: float = 1e-7, seed: int = 0,
) -> None:
    """Checks `vjp(f)` against central differences on float64 inputs (inner-product test)."""

    rng = np.random.default_rng(seed)
    outs = _outputs(f(*args))
    us = [_random_like(rng, o) for o in outs]
    vs = [_random_like(rng, a) for a in args]
    _, grads = vjp(f, list(args), [array(u, o.dtype) for u, o in zip(us, outs)])
    reverse = _inner(grads, vs)
    plus = [array(to_numpy64(a) + eps * v, a.dtype) for a, v in zip(args, vs)]
    minus = [array(to_numpy64(a) - eps * v, a.dtype) for a, v in zip(args, vs)]
    f_plus = [_values(o) for o in _outputs(f(*plus))]
    f_minus = [_values(o) for o in _outputs(f(*minus))]
    numeric = _inner(us, [(p - m) / (2 * eps) for p, m in zip(f_plus, f_minus)])
    np.testing.assert_allclose(reverse, numeric, rtol=rtol, atol=atol,
                               err_msg="vjp disagrees with finite differences")


def check_jvp_vjp(
    f: Callable[..., Any], args: Sequence[Array], rtol: float = 1e-8, atol: float = 1e-10,
    seed: int = 0,
) -> None:
    """Checks <u, J v> (forward mode) against <J^T u, v> (reverse mode), after checking that
    each tangent has its output's shape and dtype and each cotangent its input's (a float64
    rule that drops to float32 fails here)."""

    rng = np.random.default_rng(seed)
    vs = [_random_like(rng, a) for a in args]
    outs, tangents = jvp(f, list(args), [array(v, a.dtype) for v, a in zip(vs, args)])
    us = [_random_like(rng, o) for o in outs]
    _, grads = vjp(f, list(args), [array(u, o.dtype) for u, o in zip(us, outs)])
    for kind, got, like in (("tangent", tangents, outs), ("cotangent", grads, args)):
        for g, a in zip(got, like):
            assert g.shape == a.shape and g.dtype is a.dtype, (
                f"{kind} {g.shape} {g.dtype} does not match {a.shape} {a.dtype}")
    forward_value = _inner(us, tangents)
    reverse_value = _inner(grads, vs)
    np.testing.assert_allclose(forward_value, reverse_value, rtol=rtol, atol=atol,
                               err_msg="jvp and vjp disagree")


def check_vmap(
    f: Callable[..., Any], args: Sequence[Array], in_axes: Sequence[int | None] | int = 0,
    out_axes: int = 0, rtol: float | None = None, atol: float | None = None,
) -> None:
    """Checks `vmap(f, in_axes, out_axes)(*args)` against a loop over the batch, stacked.

    The tolerances default to each output dtype's entry of `TOLERANCES` (float64: 1e-10), so a
    batching rule that loses float64 precision fails.
    """

    axes = [in_axes] * len(args) if isinstance(in_axes, int) or in_axes is None else list(in_axes)
    size = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    batched = _outputs(vmap(f, in_axes=tuple(axes), out_axes=out_axes)(*args))
    per_item: list[list[np.ndarray]] = []
    for i in range(size):
        sliced = [
            a if ax is None else array(np.take(np.asarray(a), i, axis=ax), a.dtype)
            for a, ax in zip(args, axes)
        ]
        per_item.append([to_numpy64(o) for o in _outputs(f(*sliced))])
    for k, out in enumerate(batched):
        expected = np.stack([item[k] for item in per_item], axis=out_axes)
        assert out.shape == expected.shape, f"vmap shape {out.shape} != loop {expected.shape}"
        default = TOLERANCES.get(out.dtype.name, (0.0, 0.0))
        np.testing.assert_allclose(
            to_numpy64(out), expected, rtol=default[0] if rtol is None else rtol,
            atol=default[1] if atol is None else atol, err_msg="vmap disagrees with a loop")


class OpSpec:
    """One row of the rule table: an operation, how to make inputs, which primitives it covers.

    Args:
        name: a readable id (the pytest id).
        fn: the function under test, taking nuvec arrays (close over non-array parameters).
        make_args: `rng -> list of NumPy arrays` in the op's safe domain; float arrays are
            passed as float64 nuvec arrays, others keep their dtype.
        covers: the primitive classes this row exercises (for the completeness test).
        argnums: the inputs to differentiate (default: every float input); `()` for none.
        grad: run the numerical-gradient and jvp/vjp checks.
        vmap: run the vmap-against-loop checks (batch axis first, last and negative).
        eps, rtol, atol: finite-difference step and tolerances of the gradient check.
        jvp_rtol, jvp_atol: tolerances of the jvp-against-vjp check (float64 by default; a
            row computing in float32 or complex64 loosens them).
    """

    def __init__(
        self, name: str, fn: Callable[..., Any], make_args: Callable[[np.random.Generator], list],
        covers: Sequence[type], argnums: Sequence[int] | None = None, grad: bool = True,
        vmap: bool = True, eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7,
        jvp_rtol: float = 1e-8, jvp_atol: float = 1e-10,
    ):
        self.name, self.fn, self.make_args, self.covers = name, fn, make_args, tuple(covers)
        self.argnums, self.grad, self.vmap = argnums, grad, vmap
        self.eps, self.rtol, self.atol = eps, rtol, atol
        self.jvp_rtol, self.jvp_atol = jvp_rtol, jvp_atol

    def __repr__(self) -> str:
        return f"OpSpec({self.name})"

    def arrays(self, rng: np.random.Generator) -> list[Array]:

        out = []
        for x in self.make_args(rng):
            x = np.asarray(x)
            out.append(array(x, dt.float64) if x.dtype.kind == "f" else array(x))
        return out

    def differentiable(self, args: Sequence[Array]) -> list[int]:
        if self.argnums is not None:
            return list(self.argnums)
        return [i for i, a in enumerate(args) if a.dtype.is_inexact]


def _partial(fn: Callable[..., Any], args: Sequence[Array], argnums: Sequence[int]):
    """`fn` as a function of the args in `argnums` only, the others fixed."""

    def call(*chosen: Array) -> Any:
        full = list(args)
        for i, a in zip(argnums, chosen):
            full[i] = a
        return fn(*full)

    return call


def run_grad_checks(spec: OpSpec, seed: int = 0) -> None:
    """Numerical gradient and jvp-against-vjp checks of one spec row, in float64."""
    args = spec.arrays(np.random.default_rng(seed))
    nums = spec.differentiable(args)
    if not spec.grad or not nums:
        return
    f = _partial(spec.fn, args, nums)
    chosen = [args[i] for i in nums]
    check_grads(f, chosen, eps=spec.eps, rtol=spec.rtol, atol=spec.atol, seed=seed)
    check_jvp_vjp(f, chosen, rtol=spec.jvp_rtol, atol=spec.jvp_atol, seed=seed)


def _vmap_axis(where: str, ndim: int) -> int:
    """The batch axis of an input of `ndim` unbatched axes: first (0), last (`ndim`), or
    negative (-2, one before the last, where there is such an axis; else -1)."""
    if where == "first":
        return 0
    if where == "last":
        return ndim
    return -2 if ndim >= 1 else -1


def run_vmap_checks(spec: OpSpec, seed: int = 0, size: int = 3) -> None:
    """vmap against a loop with the batch axis first (out_axes 0), last (out_axes -1) and
    negative (in_axes -2, out_axes 0), then with every input but the first unbatched."""

    if not spec.vmap:
        return
    rng = np.random.default_rng(seed)
    samples = [spec.arrays(rng) for _ in range(size)]
    for where in ("first", "last", "negative"):
        batched, axes = [], []
        for k, a in enumerate(samples[0]):
            stacked = np.stack([np.asarray(s[k]) for s in samples], axis=0)
            axis = _vmap_axis(where, a.ndim)
            batched.append(array(np.moveaxis(stacked, 0, axis), a.dtype))
            axes.append(axis)
        check_vmap(spec.fn, batched, in_axes=tuple(axes), out_axes=-1 if where == "last" else 0)
    # one unbatched input, where there are several
    if len(samples[0]) > 1:
        first = array(np.stack([np.asarray(s[0]) for s in samples]), samples[0][0].dtype)
        check_vmap(spec.fn, [first, *samples[0][1:]],
                   in_axes=(0, *([None] * (len(samples[0]) - 1))))
