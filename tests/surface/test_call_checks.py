"""The checks the generated surface check exposed, one test each, with the message checked."""

from __future__ import annotations

import pytest

import nuvec as mx


class Opaque:
    """An arbitrary object no function accepts."""

    def __repr__(self) -> str:
        return "<Opaque>"


Q = K = mx.ones((1, 2, 1, 4))
V = mx.ones((1, 2, 1, 3))
G = BETA = mx.ones((1, 2, 1))
BAD = mx.ones((5, 7, 3))


@pytest.mark.parametrize("call,message", [
    (lambda: mx.fast.gated_delta_steps(Q, BAD, V, G, BETA, mx.zeros((1, 1, 3, 4))),
     r"^gated_delta_steps: q and k must be \[B, T, Hk, Dk\].*\(5, 7, 3\)"),
    (lambda: mx.fast.gated_delta_steps(Q, K, V, G, BETA, BAD),
     r"^gated_delta_steps: state must be \[1, 1, 3, 4\], got \(5, 7, 3\)"),
    (lambda: mx.fast.gated_delta_slots(Q, K, V, BAD, BETA, mx.zeros((3, 1, 3, 4)), mx.array([2])),
     r"^gated_delta_slots: g and beta must be \[1, 2, 1\], got \(5, 7, 3\)"),
    (lambda: mx.fast.gated_delta_from_projections(Q, K, BAD, G, G, mx.zeros((1,)),
                                                  mx.zeros((1,))),
     r"^gated_delta_from_projections: q and k must be .*\(5, 7, 3\)"),
    (lambda: mx.fast.gated_delta_from_projections(Q, K, V, BAD, G, mx.zeros((1,)),
                                                  mx.zeros((1,))),
     r"^gated_delta_from_projections: q and k must be .*\(5, 7, 3\) and \(1, 2, 1\)"),
    (lambda: mx.fast.gated_delta_update(Q, K, V, BAD, G),
     r"^gated_delta_update: g and beta must be \[1, 2, 1\], got \(5, 7, 3\)"),
    (lambda: mx.fast.add_rms_norm(mx.ones((2, 8)), mx.ones((2, 8)), BAD, 1e-5),
     r"^add_rms_norm: weight must be 1-D with 8 elements, got shape \(5, 7, 3\)"),
    (lambda: mx.gather_mm(mx.ones((2, 3, 4)), BAD),
     r"^gather_mm: the last dimension of the first input with shape \(2, 3, 4\)"),
    (lambda: mx.full_like(mx.ones((4,)), BAD),
     r"^full_like: cannot broadcast shape \(5, 7, 3\) to \(4,\)"),
    (lambda: mx.fast.scaled_dot_product_attention(Q, Q, Q, scale=0.5, window=2**70),
     r"^scaled_dot_product_attention: window must be <= 2147483647, got 1180591620717411303424"),
    (lambda: mx.fast.scaled_dot_product_attention(Q, Q, Q, scale=0.5, window=2),
     r"^scaled_dot_product_attention: a window needs the causal mask, got window=2 and "
     r"mask=None"),
    (lambda: mx.fast.scaled_dot_product_attention(Q, Q, Q, scale=0.5, max_score_bytes=2**70),
     r"^scaled_dot_product_attention: max_score_bytes must be <= 9223372036854775807"),
    (lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((4, 4)), block_size=16),
     r"^block_masked_mm: block_size must be 32 or 64, got 16"),
    (lambda: mx.fast.packed_attention(mx.ones((5, 24)), [3, 2], mx.ones((3, 2)), mx.zeros((3, 2)),
                                      heads=2, window=2**40),
     r"^packed_attention: window must be < 2\*\*31, got 1099511627776"),
    (lambda: mx.grad(lambda x: x, argnames="y"),
     r"^grad: argnames 'y' is not a keyword parameter of the function, whose parameters are "
     r"\['x'\]"),
    (lambda: mx.value_and_grad(lambda x, /: x, argnames="x"),
     r"^value_and_grad: argnames 'x' is not a keyword parameter"),
])
def test_bad_arguments_raise_value_errors_naming_the_function(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: mx.fast.plan_attention((1, 8, 1, 128), (1, 8, 64, 128), (1, 8, 64, 128),
                                    mx.float16, max_score_bytes=1.5),
     r"^plan_attention: max_score_bytes must be an int, got 1.5"),
    (lambda: mx.linalg.norm(mx.ones((3, 3)), axis=1.5),
     r"^norm: axis must be an int or a sequence of ints, got 1.5"),
    (lambda: mx.linalg.cross(mx.ones((3,)), mx.ones((3,)), axis="0"),
     r"^cross: axis must be an int, got '0' \(str\)"),
    (lambda: mx.depends(Opaque(), [mx.ones((2,))]),
     r"^depends: inputs must be an array or a list or tuple of arrays, got <Opaque>"),
    (lambda: mx.depends([mx.ones((2,))], Opaque()),
     r"^depends: dependencies must be an array or a list or tuple of arrays, got <Opaque>"),
    (lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((4, 4)), block_size=1.5),
     r"^block_masked_mm: block_size must be an int, got 1.5"),
    (lambda: mx.fast.paged_attention(Q, mx.ones((2, 1, 2, 4)), mx.ones((2, 1, 2, 4)),
                                     mx.array([[0, 1]]), mx.array([3]), scale="x"),
     r"^paged_attention: scale must be a real number, got 'x' \(str\)"),
    (lambda: mx.linalg.norm(mx.ones((3, 3)), axis=Opaque()),
     r"^norm: axis must be an int or a sequence of ints, got <Opaque>"),
    (lambda: mx.linalg.cross(mx.ones((3,)), mx.ones((3,)), axis=Opaque()),
     r"^cross: axis must be an int, got <Opaque>"),
    (lambda: mx.fast.plan_attention((1, 8, 1, 128), BAD, (1, 8, 64, 128), mx.float16),
     r"^plan_attention: k_shape must be an int or a sequence of ints"),
    (lambda: mx.fast.plan_attention("x", (1, 8, 64, 128), (1, 8, 64, 128), mx.float16),
     r"^plan_attention: q_shape must be an int or a sequence of ints, got 'x'"),
    (lambda: mx.fast.plan_attention((1, 8, 1, 128), (1, 8, 64, 128), (1, 8, 64, 128),
                                    mx.float16, window="3"),
     r"^plan_attention: window must be an int, got '3'"),
])
def test_bad_argument_types_raise_type_errors_naming_the_function(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_valid_argnames_and_block_sizes_pass():
    assert mx.grad(lambda x, *, y: (x * y).sum(), argnames="y")(mx.ones(2), y=mx.ones(2))[1][
        "y"].tolist() == [1.0, 1.0]
    assert mx.grad(lambda **kw: kw["y"].sum(), argnums=None, argnames="y")(
        y=mx.ones(2))[1]["y"].tolist() == [1.0, 1.0]
    out = mx.block_masked_mm(mx.ones((2, 2)), mx.ones((2, 2)), block_size=64)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    (y,) = mx.depends((mx.array(1.0),), (mx.array(2.0),))
    assert y.item() == 1.0
