"""Every loss of `nn.losses` against its float64 formula, with each reduction, weights,
gradients and the rejected inputs."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
from nuvec.testing import check_grads

L = nn.losses
RNG = np.random.default_rng(0)


def a64(x) -> mx.array:
    return mx.array(np.asarray(x, np.float64), mx.float64)


def _lse(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis, keepdims=True))).squeeze(axis)


LOGITS = RNG.standard_normal((4, 5))
CLASSES = np.array([0, 3, 4, 1])
PROBS = np.exp(RNG.standard_normal((4, 5)))
PROBS /= PROBS.sum(-1, keepdims=True)


def test_cross_entropy_indices_probabilities_smoothing_weights() -> None:
    base = _lse(LOGITS) - LOGITS[np.arange(4), CLASSES]
    logits = a64(LOGITS)
    np.testing.assert_allclose(np.asarray(L.cross_entropy(logits, mx.array(CLASSES))), base,
                               rtol=1e-12)
    np.testing.assert_allclose(L.cross_entropy(logits, mx.array(CLASSES), reduction="mean")
                               .item(), base.mean(), rtol=1e-12)
    np.testing.assert_allclose(L.cross_entropy(logits, mx.array(CLASSES), reduction="sum")
                               .item(), base.sum(), rtol=1e-12)
    probs = _lse(LOGITS) - (LOGITS * PROBS).sum(-1)
    np.testing.assert_allclose(np.asarray(L.cross_entropy(logits, a64(PROBS))), probs,
                               rtol=1e-12)
    smooth = _lse(LOGITS) - 0.9 * LOGITS[np.arange(4), CLASSES] - 0.1 * LOGITS.mean(-1)
    np.testing.assert_allclose(np.asarray(L.cross_entropy(logits, mx.array(CLASSES),
                                                          label_smoothing=0.1)), smooth,
                               rtol=1e-12)
    weights = RNG.uniform(size=4)
    np.testing.assert_allclose(np.asarray(L.cross_entropy(logits, mx.array(CLASSES),
                                                          weights=a64(weights))),
                               base * weights, rtol=1e-12)
    axis0 = _lse(LOGITS.T, 0) - LOGITS.T[CLASSES, np.arange(4)]
    np.testing.assert_allclose(np.asarray(L.cross_entropy(a64(LOGITS.T), mx.array(CLASSES),
                                                          axis=0)), axis0, rtol=1e-12)
    check_grads(lambda x: L.cross_entropy(x, mx.array(CLASSES)), [logits])
    check_grads(lambda x: L.cross_entropy(x, mx.array(CLASSES), label_smoothing=0.2), [logits])


def test_cross_entropy_errors() -> None:
    logits = a64(LOGITS)
    with pytest.raises(ValueError, match=r"cross_entropy: targets shape \(3,\) does not match "
                                         r"logits shape \(4, 5\)"):
        L.cross_entropy(logits, mx.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"cross_entropy: label smoothing must be in \[0, 1\), "
                                         "got 1.0"):
        L.cross_entropy(logits, mx.array(CLASSES), label_smoothing=1.0)
    with pytest.raises(ValueError, match=r"cross_entropy: weights with shape \(3,\) is not the "
                                         r"same as output loss with shape \(4,\)"):
        L.cross_entropy(logits, mx.array(CLASSES), weights=mx.ones((3,)))
    with pytest.raises(ValueError, match="cross_entropy: invalid reduction 'avg'; must be "
                                         "'none', 'mean', or 'sum'"):
        L.cross_entropy(logits, mx.array(CLASSES), reduction="avg")


def test_binary_cross_entropy() -> None:
    logits = RNG.standard_normal(6)
    targets = RNG.uniform(size=6)
    p = 1 / (1 + np.exp(-logits))
    expected = -(targets * np.log(p) + (1 - targets) * np.log(1 - p))
    np.testing.assert_allclose(L.binary_cross_entropy(a64(logits), a64(targets)).item(),
                               expected.mean(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(L.binary_cross_entropy(
        a64(p), a64(targets), with_logits=False, reduction="none")), expected, rtol=1e-10)
    clipped = L.binary_cross_entropy(a64([0.0, 1.0]), a64([1.0, 0.0]), with_logits=False,
                                     reduction="none")
    assert np.asarray(clipped).tolist() == [100.0, 100.0]
    weights = RNG.uniform(size=6)
    np.testing.assert_allclose(L.binary_cross_entropy(a64(logits), a64(targets), a64(weights),
                                                      reduction="sum").item(),
                               (expected * weights).sum(), rtol=1e-12)
    check_grads(lambda x: L.binary_cross_entropy(x, a64(targets)), [a64(logits)])
    with pytest.raises(ValueError, match=r"binary_cross_entropy: Inputs shape \(6,\) does not "
                                         r"match targets shape \(5,\)"):
        L.binary_cross_entropy(a64(logits), a64(targets[:5]))


X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))


@pytest.mark.parametrize("name,kwargs,formula,default", [
    ("l1_loss", {}, lambda x, y: np.abs(x - y), "mean"),
    ("mse_loss", {}, lambda x, y: (x - y) ** 2, "mean"),
    ("smooth_l1_loss", {"beta": 0.5},
     lambda x, y: np.where(np.abs(x - y) < 0.5, 0.5 * (x - y) ** 2 / 0.5, np.abs(x - y) - 0.25),
     "mean"),
    ("huber_loss", {"delta": 0.7},
     lambda x, y: np.where(np.abs(x - y) <= 0.7, 0.5 * (x - y) ** 2,
                           0.7 * (np.abs(x - y) - 0.35)), "none"),
    ("log_cosh_loss", {}, lambda x, y: np.log(np.cosh(x - y)), "none"),
    ("hinge_loss", {}, lambda x, y: np.maximum(1 - x * y, 0), "none"),
])
def test_elementwise_losses(name, kwargs, formula, default) -> None:
    fn = getattr(L, name)
    expected = formula(X, Y)
    default_value = {"mean": expected.mean(), "none": expected}[default]
    np.testing.assert_allclose(np.asarray(fn(a64(X), a64(Y), **kwargs)), default_value,
                               rtol=1e-10)
    for reduction, value in [("none", expected), ("sum", expected.sum()),
                             ("mean", expected.mean())]:
        np.testing.assert_allclose(np.asarray(fn(a64(X), a64(Y), **kwargs, reduction=reduction)),
                                   value, rtol=1e-10)
    if name != "hinge_loss":
        check_grads(lambda x: fn(x, a64(Y), **kwargs, reduction="sum"), [a64(X)], rtol=1e-6)


def test_shape_checks_of_regression_losses() -> None:
    for fn in (L.l1_loss, L.mse_loss, L.smooth_l1_loss):
        with pytest.raises(ValueError, match=fr"{fn.__name__}: Predictions shape \(3, 4\) does "
                                             r"not match targets shape \(4,\)"):
            fn(a64(X), a64(Y[0]))


def test_nll_kl_gaussian() -> None:
    logp = LOGITS - _lse(LOGITS)[:, None]
    np.testing.assert_allclose(np.asarray(L.nll_loss(a64(logp), mx.array(CLASSES))),
                               -logp[np.arange(4), CLASSES], rtol=1e-12)
    logq = np.log(PROBS)
    np.testing.assert_allclose(np.asarray(L.kl_div_loss(a64(logp), a64(logq))),
                               (PROBS * (logq - logp)).sum(-1), rtol=1e-10)
    var = RNG.uniform(0.1, 2, size=(3, 4))
    expected = 0.5 * (np.log(var) + (Y - X) ** 2 / var)
    np.testing.assert_allclose(L.gaussian_nll_loss(a64(X), a64(Y), a64(var)).item(),
                               expected.mean(), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(L.gaussian_nll_loss(a64(X), a64(Y), a64(var), full=True,
                                                              reduction="none")),
                               expected + 0.5 * np.log(2 * np.pi), rtol=1e-10)
    check_grads(lambda m, v: L.gaussian_nll_loss(m, a64(Y), v), [a64(X), a64(var)], rtol=1e-6)
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: Inputs shape \(3, 4\) does not "
                                         r"match vars shape \(4,\)"):
        L.gaussian_nll_loss(a64(X), a64(Y), a64(var[0]))


def test_triplet_cosine_margin_ranking() -> None:
    a, p, n = (RNG.standard_normal((3, 4)) for _ in range(3))
    for norm in (1, 2, 3):  # the p-norm distance: (sum |u - v|**p + eps)**(1/p)
        dist = lambda u, v: (np.abs(u - v) ** norm).sum(-1) + 1e-6  # noqa: E731
        loss = np.maximum(dist(a, p) ** (1 / norm) - dist(a, n) ** (1 / norm) + 0.5, 0)
        np.testing.assert_allclose(
            np.asarray(L.triplet_loss(a64(a), a64(p), a64(n), p=norm, margin=0.5)), loss,
            rtol=1e-10)
    cos = (X * Y).sum(1) / (np.linalg.norm(X, axis=1) * np.linalg.norm(Y, axis=1))
    np.testing.assert_allclose(np.asarray(L.cosine_similarity_loss(a64(X), a64(Y))), cos,
                               rtol=1e-10)
    check_grads(lambda u: L.cosine_similarity_loss(u, a64(Y)), [a64(X)], rtol=1e-6)
    t = np.sign(RNG.standard_normal(4))
    np.testing.assert_allclose(np.asarray(L.margin_ranking_loss(a64(X[0]), a64(Y[0]), a64(t),
                                                                margin=0.2)),
                               np.maximum(0, -t * (X[0] - Y[0]) + 0.2), rtol=1e-12)
    with pytest.raises(ValueError, match=r"margin_ranking_loss: the shapes of the arguments do "
                                         r"not match: inputs1 \(4,\), inputs2 \(3, 4\)"):
        L.margin_ranking_loss(a64(X[0]), a64(Y), a64(t))


_A, _T = mx.ones((2, 3)), mx.array([1, 2])
LOSS_ERRORS = [
    ("cross_entropy-0d", lambda: nn.losses.cross_entropy(mx.array(1.0), mx.array(1)),
     ValueError, "^cross_entropy: axis -1 is out of bounds for an array with 0 dimensions"),
    ("cross_entropy-axis-5", lambda: nn.losses.cross_entropy(_A, _T, axis=5), ValueError,
     "^cross_entropy: axis 5 is out of bounds for an array with 2 dimensions"),
    ("cross_entropy-axis-float", lambda: nn.losses.cross_entropy(_A, _T, axis=1.5), TypeError,
     r"^cross_entropy: axis must be an int, got 1.5 \(float\)"),
    ("cross_entropy-axis-bool", lambda: nn.losses.cross_entropy(_A, _T, axis=True), TypeError,
     r"^cross_entropy: axis must be an int, got True \(bool\)"),
    ("cross_entropy-smoothing-str",
     lambda: nn.losses.cross_entropy(_A, _T, label_smoothing="x"), TypeError,
     "^cross_entropy: label_smoothing must be a real number, got 'x'"),
    ("cross_entropy-None", lambda: nn.losses.cross_entropy(None, _T), TypeError,
     "^cross_entropy: cannot convert NoneType to an array"),
    ("mse_loss-None", lambda: nn.losses.mse_loss(None, mx.ones((2,))), TypeError,
     "^mse_loss: cannot convert NoneType to an array"),
    ("l1_loss-str", lambda: nn.losses.l1_loss(mx.ones((2,)), "a"), TypeError,
     "^l1_loss: cannot convert str to an array"),
    ("triplet_loss-p-0", lambda: nn.losses.triplet_loss(_A, _A, _A, p=0), ValueError,
     "^triplet_loss: p must be positive, got 0.0"),
    ("kl_div_loss-None", lambda: nn.losses.kl_div_loss(None, _A), TypeError,
     "^kl_div_loss: cannot convert NoneType to an array"),
    ("margin_ranking_loss-None", lambda: nn.losses.margin_ranking_loss(_A, _A, None),
     TypeError, "^margin_ranking_loss: cannot convert NoneType to an array"),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in LOSS_ERRORS],
                         ids=[c[0] for c in LOSS_ERRORS])
def test_loss_rejects_bad_arguments(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_losses_convert_lists_and_take_positive_axes() -> None:
    assert nn.losses.mse_loss([1.0, 2.0], [1.0, 3.0]).item() == 0.5
    logits = mx.array([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    by_rows = nn.losses.cross_entropy(logits.T, mx.array([1, 0, 1]), axis=0)
    np.testing.assert_allclose(np.asarray(by_rows),
                               np.asarray(nn.losses.cross_entropy(logits, mx.array([1, 0, 1]))),
                               rtol=1e-6)
