"""`nuvec.testing`'s checks catch the mistakes they exist for: a wrong derivative, jvp and vjp
that disagree, a wrong batching rule, float32 precision where float64 is due, and a complex
rule transposed under the wrong pairing; the rule-table driver honours each row's settings."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import (
    OpSpec,
    check_grads,
    check_jvp_vjp,
    check_vmap,
    run_grad_checks,
    run_vmap_checks,
)


def a64(x) -> mx.Array:
    return mx.array(np.asarray(x, np.float64), mx.float64)


X = a64([0.3, -0.7, 1.1])


def sin_with(vjp=None, jvp=None, vmap=None):
    """sin as a custom function whose given rules replace the derived ones (one argument:
    MLX passes it, its tangent and its axis to the rules unwrapped)."""
    f = mx.custom_function(mx.sin)
    for attach, rule in ((f.vjp, vjp), (f.jvp, jvp), (f.vmap, vmap)):
        if rule is not None:
            attach(rule)
    return f


def test_checks_pass_on_correct_rules() -> None:
    f = sin_with(vjp=lambda x, c, out: c * mx.cos(x), jvp=lambda x, t: t * mx.cos(x))
    check_grads(f, [X])
    check_jvp_vjp(f, [X])
    check_vmap(f, [a64(np.ones((2, 3)))], in_axes=1, out_axes=-1)


def test_a_wrong_vjp_fails_the_gradient_check() -> None:
    f = sin_with(vjp=lambda x, c, out: c * mx.cos(x) * 1.001)
    with pytest.raises(AssertionError, match="vjp disagrees with finite differences"):
        check_grads(f, [X])


def test_jvp_and_vjp_that_disagree_fail() -> None:
    f = sin_with(jvp=lambda x, t: t * mx.cos(x) * (1 + 1e-6))
    with pytest.raises(AssertionError, match="jvp and vjp disagree"):
        check_jvp_vjp(f, [X])


def test_a_wrong_batching_rule_fails_the_vmap_check() -> None:
    f = sin_with(vmap=lambda x, axis: (mx.sin(mx.roll(x, 1, axis)), axis))
    with pytest.raises(AssertionError, match="vmap disagrees with a loop"):
        check_vmap(f, [a64(np.arange(6.0).reshape(3, 2))])


def test_float32_precision_fails_the_float64_vmap_check() -> None:
    def in_float32(x, axis):
        return mx.astype(mx.sin(mx.astype(x, mx.float32)), mx.float64), axis

    f = sin_with(vmap=in_float32)
    x = a64(np.linspace(0.1, 1.0, 6).reshape(3, 2))
    with pytest.raises(AssertionError, match="vmap disagrees with a loop"):
        check_vmap(f, [x])
    check_vmap(f, [x], rtol=1e-6, atol=1e-7)


def test_complex_rules_are_checked_under_the_real_pairing() -> None:
    z = mx.array(np.array([0.5 + 1j, -1.0 + 0.25j]), mx.complex64)
    # imag(z) = real(-i z): its vjp multiplies a cotangent by conj(-i) = +i (MLX's
    # convention); -i, the transpose without conjugation, is the wrong sign
    wrong = mx.custom_function(mx.imag)
    wrong.vjp(lambda p, c, out: mx.astype(c, mx.complex64) * -1j)
    check_grads(mx.imag, [z], eps=1e-3, rtol=2e-3, atol=2e-3)
    with pytest.raises(AssertionError, match="vjp disagrees with finite differences"):
        check_grads(wrong, [z], eps=1e-3, rtol=2e-3, atol=2e-3)


def test_run_grad_checks_uses_the_row_jvp_tolerances() -> None:
    # a jvp off by 1e-6 (relative) passes only where the row allows it
    f = sin_with(jvp=lambda x, t: t * mx.cos(x) * (1 + 1e-6))
    make = lambda rng: [rng.uniform(-1, 1, 4)]  # noqa: E731
    with pytest.raises(AssertionError, match="jvp and vjp disagree"):
        run_grad_checks(OpSpec("tight", f, make, []))
    run_grad_checks(OpSpec("loose", f, make, [], jvp_rtol=1e-5))


def test_run_vmap_checks_uses_first_last_and_negative_axes() -> None:
    seen = []

    def record(x, axis):
        seen.append((x.shape, axis))
        return mx.sin(x), axis

    f = sin_with(vmap=record)
    run_vmap_checks(OpSpec("sin", f, lambda rng: [rng.uniform(-1, 1, (2, 4))], []))
    # batch of 3, on axis 0, 2 (last) and -2 (normalized to 1)
    assert seen == [((3, 2, 4), 0), ((2, 4, 3), 2), ((2, 3, 4), 1)]


def test_a_rule_computing_in_float32_fails_the_float64_jvp_check() -> None:
    # the transform casts the cotangent back to float64, but the digits are gone
    f = sin_with(vjp=lambda x, c, out: mx.astype(c * mx.cos(x), mx.float32))
    with pytest.raises(AssertionError, match="jvp and vjp disagree"):
        check_jvp_vjp(f, [X])
