"""Each update rule of `nuvec.optimizers` against its formula in float64 over several steps;
the state tree (save/restore), schedules, `clip_grad_norm`, `MultiOptimizer`, the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.optimizers.muon import orthogonalized
from nuvec.utils import tree_flatten, tree_unflatten

STEPS = 5
LR = 0.125  # exactly representable: the learning rate is stored as a float32 array


def _grads(step: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(step)
    return {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}


def _run(optimizer: optim.Optimizer, steps: int = STEPS) -> dict[str, np.ndarray]:
    params = {k: mx.array(np.full(v.shape, 0.5) + 0.1 * np.arange(v.size).reshape(v.shape),
                          mx.float64) for k, v in _grads(0).items()}
    for t in range(1, steps + 1):
        grads = {k: mx.array(v, mx.float64) for k, v in _grads(t).items()}
        params = optimizer.apply_gradients(grads, params)
        mx.eval(params, optimizer.state)
    assert all(p.dtype == mx.float64 for p in params.values())
    assert optimizer.step.item() == steps and optimizer.step.dtype == mx.uint64
    return {k: np.asarray(v) for k, v in params.items()}


def _reference(rule, steps: int = STEPS) -> dict[str, np.ndarray]:
    """Applies `rule(t, grad, param, state) -> param` per parameter in float64."""
    out = {}
    for name, first in _grads(0).items():
        p = np.full(first.shape, 0.5) + 0.1 * np.arange(first.size).reshape(first.shape)
        state: dict = {}
        for t in range(1, steps + 1):
            p = rule(t, _grads(t)[name], p, state)
        out[name] = p
    return out


def _sgd(momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    def rule(t, g, p, s):
        g = g + weight_decay * p
        if momentum <= 0:
            return p - LR * g
        v = momentum * s.get("v", 0.0) + (1 - dampening) * g
        s["v"] = v
        return p - LR * (g + momentum * v if nesterov else v)
    return rule


def _adam(b1=0.9, b2=0.999, eps=1e-8, correct=False, decay=0.0):
    def rule(t, g, p, s):
        p = p * (1 - LR * decay)
        m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        if correct:
            return p - LR * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        return p - LR * m / (np.sqrt(v) + eps)
    return rule


def _rmsprop(alpha=0.99, eps=1e-8):
    def rule(t, g, p, s):
        v = s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
        return p - LR * g / (np.sqrt(v) + eps)
    return rule


def _adagrad(eps=1e-8):
    def rule(t, g, p, s):
        v = s["v"] = s.get("v", 0.0) + g * g
        return p - LR * g / (np.sqrt(v) + eps)
    return rule


def _adadelta(rho=0.9, eps=1e-6):
    def rule(t, g, p, s):
        v = s["v"] = rho * s.get("v", 0.0) + (1 - rho) * g * g
        d = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(v + eps) * g
        s["u"] = rho * s.get("u", 0.0) + (1 - rho) * d * d
        return p - LR * d
    return rule


def _adamax(b1=0.9, b2=0.999, eps=1e-8):
    def rule(t, g, p, s):
        m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        v = s["v"] = np.maximum(b2 * s.get("v", 0.0), np.abs(g))
        return p - LR * m / (v + eps)
    return rule


def _lion(b1=0.9, b2=0.99, decay=0.0):
    def rule(t, g, p, s):
        m = s.get("m", 0.0)
        c = b1 * m + (1 - b1) * g
        s["m"] = b2 * m + (1 - b2) * g
        return p * (1 - LR * decay) - LR * np.sign(c)
    return rule


def _adafactor(lr=None, eps=(1e-30, 1e-3), clip=1.0, decay=-0.8, beta_1=None, wd=0.0,
               scale=True, relative=True, warmup=False):
    rms = lambda x: np.sqrt(np.mean(x * x))  # noqa: E731

    def rule(t, g, p, s):
        size = min(1e-6 * t if warmup else 1e-2, 1 / math.sqrt(t)) if relative else lr
        if scale:
            size *= max(eps[1], rms(p))
        beta2 = 1 - t**decay
        u = g * g + eps[0]
        if g.ndim >= 2:
            row = s["row"] = beta2 * s.get("row", 0.0) + (1 - beta2) * u.mean(-1)
            col = s["col"] = beta2 * s.get("col", 0.0) + (1 - beta2) * u.mean(-2)
            v = np.outer(row / row.mean(), col)
        else:
            v = s["v"] = beta2 * s.get("v", 0.0) + (1 - beta2) * u
        update = g / np.sqrt(v)
        update = size * update / max(1.0, rms(update) / clip)
        if beta_1 is not None:
            update = s["m"] = beta_1 * s.get("m", 0.0) + (1 - beta_1) * update
        return p - wd * size * p - update
    return rule


def _newton_schulz(x, steps):
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def _muon(momentum=0.95, decay=0.01, nesterov=True, steps=5):
    def rule(t, g, p, s):
        g = g + decay * p
        v = s["v"] = momentum * s.get("v", 0.0) + (1 - momentum) * g
        u = (1 - momentum) * g + momentum * v if nesterov else v
        lr = LR
        if u.ndim >= 2:
            u = _newton_schulz(u.reshape(u.shape[0], -1), steps).reshape(u.shape)
            lr *= max(1.0, u.shape[-2] / u.shape[-1]) ** 0.5
        return p - lr * u
    return rule


CASES = [
    ("sgd", lambda: optim.SGD(LR), _sgd()),
    ("sgd_momentum", lambda: optim.SGD(LR, momentum=0.9), _sgd(0.9)),
    ("sgd_dampening_decay", lambda: optim.SGD(LR, momentum=0.8, weight_decay=0.1,
                                              dampening=0.3), _sgd(0.8, 0.1, 0.3)),
    ("sgd_nesterov", lambda: optim.SGD(LR, momentum=0.9, nesterov=True),
     _sgd(0.9, nesterov=True)),
    ("rmsprop", lambda: optim.RMSprop(LR, alpha=0.9), _rmsprop(0.9)),
    ("adagrad", lambda: optim.Adagrad(LR), _adagrad()),
    ("adadelta", lambda: optim.AdaDelta(LR, rho=0.8), _adadelta(0.8)),
    ("adam", lambda: optim.Adam(LR), _adam()),
    ("adam_corrected", lambda: optim.Adam(LR, betas=[0.8, 0.9], bias_correction=True),
     _adam(0.8, 0.9, correct=True)),
    ("adamw", lambda: optim.AdamW(LR, weight_decay=0.1), _adam(decay=0.1)),
    ("adamw_corrected", lambda: optim.AdamW(LR, weight_decay=0.1, bias_correction=True),
     _adam(decay=0.1, correct=True)),
    ("adamax", lambda: optim.Adamax(LR, betas=[0.8, 0.95]), _adamax(0.8, 0.95)),
    ("lion", lambda: optim.Lion(LR, weight_decay=0.1), _lion(decay=0.1)),
    ("adafactor", lambda: optim.Adafactor(), _adafactor()),
    ("adafactor_lr_beta1_wd", lambda: optim.Adafactor(LR, relative_step=False, beta_1=0.9,
                                                      weight_decay=0.01, clip_threshold=0.5),
     _adafactor(lr=LR, relative=False, beta_1=0.9, wd=0.01, clip=0.5)),
    ("adafactor_warmup_unscaled", lambda: optim.Adafactor(warmup_init=True,
                                                          scale_parameter=False),
     _adafactor(warmup=True, scale=False)),
    ("muon", lambda: optim.Muon(LR), _muon()),
    ("muon_plain_momentum", lambda: optim.Muon(LR, momentum=0.8, weight_decay=0.0,
                                               nesterov=False, ns_steps=3),
     _muon(0.8, 0.0, False, 3)),
]


@pytest.mark.parametrize("name,make,rule", CASES, ids=[c[0] for c in CASES])
def test_update_rule_matches_formula(name, make, rule) -> None:
    got = _run(make())
    expected = _reference(rule)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-14,
                                   err_msg=f"{name}: {key}")


def test_muon_orthogonalizes_tall_and_stacked_matrices() -> None:
    rng = np.random.default_rng(3)
    params = {"tall": rng.standard_normal((6, 2)), "conv": rng.standard_normal((2, 3, 2))}
    grads = {k: rng.standard_normal(v.shape) for k, v in params.items()}
    got = optim.Muon(LR).apply_gradients({k: mx.array(v, mx.float64) for k, v in grads.items()},
                                         {k: mx.array(v, mx.float64) for k, v in params.items()})
    rule = _muon()
    for key in params:
        np.testing.assert_allclose(np.asarray(got[key]), rule(1, grads[key], params[key], {}),
                                   rtol=1e-12, atol=1e-14, err_msg=key)
    # five steps leave the singular values of the update near 1 (between 0.6 and 1.2)
    singular = np.linalg.svd(np.asarray(orthogonalized(mx.array(rng.standard_normal((8, 5))),
                                                       5)), compute_uv=False)
    assert np.all((singular > 0.6) & (singular < 1.2)), singular
    with pytest.raises(ValueError, match="^Muon: ns_steps must be >= 0, got -1"):
        optim.Muon(LR, ns_steps=-1)


def test_state_tree_initial_contents() -> None:
    opt = optim.Adam(0.1)
    params = {"w": mx.zeros((2, 3)), "layers": [{"b": mx.zeros((3,))}]}
    opt.init(params)
    assert sorted(k for k, _ in tree_flatten(opt.state)) == [
        "layers.0.b.m", "layers.0.b.v", "learning_rate", "step", "w.m", "w.v"]
    assert opt.state["w"]["m"].shape == (2, 3) and opt.learning_rate.item() == pytest.approx(0.1)
    opt.learning_rate = 0.5
    assert opt.state["learning_rate"].item() == 0.5
    factored = optim.Adafactor(beta_1=0.9)
    factored.init({"w": mx.zeros((2, 3)), "b": mx.zeros((3,))})
    assert sorted(factored.state["w"]) == ["exp_avg", "exp_avg_sq_col", "exp_avg_sq_row"]
    assert factored.state["w"]["exp_avg_sq_row"].shape == (2,)
    assert sorted(factored.state["b"]) == ["exp_avg", "exp_avg_sq"]


def test_state_saves_and_restores(tmp_path) -> None:
    def train(opt, model, steps, start=0):
        for t in range(start, start + steps):
            grads = tree_unflatten([(k, mx.full(v.shape, 0.1 * (t + 1)))
                                    for k, v in tree_flatten(model.trainable_parameters())])
            opt.update(model, grads)
            mx.eval(model.parameters(), opt.state)

    mx.random.seed(0)
    model = nn.Linear(3, 2)
    reference = nn.Linear(3, 2)
    reference.update(model.parameters())
    opt, opt_ref = optim.Adam(0.01, bias_correction=True), optim.Adam(0.01, bias_correction=True)
    train(opt, model, 3)
    train(opt_ref, reference, 3)
    path = str(tmp_path / "opt.npz")
    mx.savez(path, **dict(tree_flatten(opt.state)))
    restored = optim.Adam(0.01, bias_correction=True)
    restored.state = tree_unflatten(list(mx.load(path).items()))
    assert restored.step.item() == 3 and restored.step.dtype == mx.uint64
    train(restored, model, 2, start=3)
    train(opt_ref, reference, 2, start=3)
    np.testing.assert_array_equal(np.asarray(model.weight), np.asarray(reference.weight))


def test_optimizer_updates_a_model_and_skips_frozen_parameters() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    model.layers[0].freeze()
    frozen = np.asarray(model.layers[0].weight).copy()
    x, y = mx.ones((4, 2)), mx.zeros((4, 1))
    loss_and_grad = nn.value_and_grad(model, lambda: nn.losses.mse_loss(model(x), y))
    opt = optim.SGD(0.1)
    first, grads = loss_and_grad()
    assert list(grads["layers"][0]) == []
    opt.update(model, grads)
    later, _ = loss_and_grad()
    assert later.item() < first.item()
    np.testing.assert_array_equal(np.asarray(model.layers[0].weight), frozen)


def test_schedules() -> None:
    steps = [0, 1, 5, 10, 25]
    s = [mx.array(t) for t in steps]
    np.testing.assert_allclose([optim.exponential_decay(0.1, 0.9)(t).item() for t in s],
                               [0.1 * 0.9**t for t in steps], rtol=1e-6)
    np.testing.assert_allclose([optim.step_decay(0.1, 0.5, 10)(t).item() for t in s],
                               [0.1 * 0.5 ** (t // 10) for t in steps], rtol=1e-6)
    np.testing.assert_allclose([optim.cosine_decay(0.1, 10, 0.01)(t).item() for t in s],
                               [0.01 + 0.5 * (1 + math.cos(math.pi * min(t, 10) / 10)) * 0.09
                                for t in steps], rtol=1e-6)
    np.testing.assert_allclose([optim.linear_schedule(0.0, 1.0, 10)(t).item() for t in s],
                               [min(t, 10) / 10 for t in steps], rtol=1e-6)
    joined = optim.join_schedules([optim.linear_schedule(0.0, 1.0, 5),
                                   optim.exponential_decay(1.0, 0.5)], [5])
    np.testing.assert_allclose([joined(t).item() for t in s],
                               [t / 5 if t < 5 else 0.5 ** (t - 5) for t in steps], rtol=1e-6)
    with pytest.raises(ValueError, match="join_schedules: received 2 boundaries but expected 1"):
        optim.join_schedules([joined, joined], [1, 2])
    with pytest.raises(ValueError, match="join_schedules: must provide at least 1 schedule"):
        optim.join_schedules([], [])
    with pytest.raises(ValueError, match="linear_schedule: steps must be greater than 0, but "
                                         "got 0"):
        optim.linear_schedule(0.0, 1.0, 0)
    with pytest.raises(ValueError, match="cosine_decay: decay_steps must be greater than 0, "
                                         "but got 0"):
        optim.cosine_decay(0.1, 0)
    with pytest.raises(ValueError, match="step_decay: step_size must be greater than 0, but "
                                         "got 0"):
        optim.step_decay(0.1, 0.5, 0)


def test_scheduled_learning_rate_is_evaluated_each_step() -> None:
    opt = optim.SGD(optim.exponential_decay(1.0, 0.5))
    assert opt.learning_rate.item() == 1.0
    p = {"w": mx.array([0.0], mx.float64)}
    for _ in range(3):
        p = opt.apply_gradients({"w": mx.array([1.0], mx.float64)}, p)
    # rates used: 0.5**0, 0.5**1, 0.5**2 (the schedule reads the step before the update)
    assert p["w"].item() == -1.75
    assert opt.learning_rate.item() == 0.25


def test_clip_grad_norm() -> None:
    grads = {"a": mx.array([3.0, 0.0], mx.float64), "b": [mx.array([[4.0]], mx.float64)]}
    clipped, norm = optim.clip_grad_norm(grads, 1.0)
    assert norm.item() == 5.0
    np.testing.assert_allclose(np.asarray(clipped["a"]), [3 / (5 + 1e-6), 0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(clipped["b"][0]), [[4 / (5 + 1e-6)]], rtol=1e-12)
    same, _ = optim.clip_grad_norm(grads, 10.0)
    assert np.asarray(same["a"]).tolist() == [3.0, 0.0]


def test_clip_grad_norm_sums_float16_in_float32() -> None:
    clipped, norm = optim.clip_grad_norm({"a": mx.array([300.0, 400.0], mx.float16)}, 1.0)
    assert norm.dtype == mx.float32 and norm.item() == 500.0  # float16 squares overflow
    assert clipped["a"].dtype == mx.float16
    np.testing.assert_allclose(np.asarray(clipped["a"]).astype(np.float32), [0.6, 0.8],
                               rtol=1e-3)
    tiny, _ = optim.clip_grad_norm({"a": mx.array([3.0, 4.0], mx.float16)}, 1e-5)
    assert tiny["a"].dtype == mx.float16 and np.asarray(tiny["a"]).min() > 0


def test_clip_grad_norm_rejects_a_negative_max_norm() -> None:
    with pytest.raises(ValueError, match=r"^clip_grad_norm: max_norm must be >= 0, got -1.0"):
        optim.clip_grad_norm({"a": mx.array([3.0, 4.0])}, -1.0)


def test_multi_optimizer() -> None:
    params = {"w": mx.ones((2,), mx.float64), "bias": mx.ones((2,), mx.float64)}
    grads = {"w": mx.full((2,), 2.0, mx.float64), "bias": mx.full((2,), 2.0, mx.float64)}
    opt = optim.MultiOptimizer([optim.SGD(0.5), optim.SGD(0.25)],
                               [lambda path, g: path.endswith("bias")])
    new = opt.apply_gradients(grads, params)
    assert np.asarray(new["bias"]).tolist() == [0.0, 0.0]
    assert np.asarray(new["w"]).tolist() == [0.5, 0.5]
    assert len(opt.state["states"]) == 2 and opt.learning_rate.item() == 0.5
    opt.learning_rate = 0.1
    assert [o.learning_rate.item() for o in opt.optimizers] == pytest.approx([0.1, 0.1])
    opt.state = opt.state
    with pytest.raises(ValueError, match="MultiOptimizer.state: invalid state provided"):
        opt.state = {"states": [{}]}
    with pytest.raises(ValueError, match="MultiOptimizer: given 0 filters but 1 needed"):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)])


def test_rejected_hyperparameters() -> None:
    with pytest.raises(ValueError, match="SGD: Nesterov momentum requires a momentum and zero "
                                         "dampening, got momentum=0.0"):
        optim.SGD(0.1, nesterov=True)
    with pytest.raises(ValueError, match="RMSprop: alpha should be >= 0, -0.1 was provided"):
        optim.RMSprop(0.1, alpha=-0.1)
    with pytest.raises(ValueError, match="Adagrad: epsilon should be >= 0, -1.0 was provided"):
        optim.Adagrad(0.1, eps=-1.0)
    with pytest.raises(ValueError, match="AdaDelta: rho should be >= 0, -0.5 was provided"):
        optim.AdaDelta(0.1, rho=-0.5)
    with pytest.raises(ValueError, match="Adamax: epsilon should be >= 0, -1.0 was provided"):
        optim.Adamax(0.1, eps=-1.0)
    with pytest.raises(TypeError, match="abstract"):
        optim.Optimizer()  # the base class has no update rule


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64],
                         ids=lambda d: d.name)
def test_sgd_step_is_the_cast_rate_times_the_gradient(dtype) -> None:
    # a computed learning rate enters as a weak scalar (no broadcast node): the same bits as
    # the rate cast to the gradient's dtype; a schedule's (lazy) rate as that cast array
    from nuvec.ops.shape import BroadcastTo

    p = {"w": mx.array(np.linspace(-1, 1, 7), dtype)}
    g = {"w": mx.array(np.linspace(0.3, -2, 7), dtype)}
    for rate in (0.1, lambda step: mx.array(0.1) + 0 * step):
        new = optim.SGD(rate).apply_gradients(g, p)["w"]
        want = np.asarray((p["w"] - mx.array(0.1).astype(dtype) * g["w"]).astype(mx.float64))
        assert new.dtype == dtype
        np.testing.assert_array_equal(np.asarray(new.astype(mx.float64)), want)
    new = optim.SGD(0.1).apply_gradients(g, p)["w"]
    assert not isinstance(new.inputs[1].inputs[0].primitive, BroadcastTo)


# Hyperparameters are checked by the constructors, not at the first update.
HYPERPARAMETER_ERRORS = [
    ("Adam-betas-length", lambda: optim.Adam(0.1, betas=(0.9,)), ValueError,
     r"^Adam: betas must hold 2 numbers, got 1: \[0.9\]"),
    ("Adam-beta-range", lambda: optim.Adam(0.1, betas=(0.9, 1.5)), ValueError,
     r"^Adam: betas\[1\] should be < 1, 1.5 was provided instead"),
    ("AdamW-betas-str", lambda: optim.AdamW(0.1, betas="ab"), TypeError,
     "^AdamW: betas must be a sequence of 2 numbers, got 'ab'"),
    ("Adam-eps-negative", lambda: optim.Adam(0.1, eps=-1), ValueError,
     "^Adam: epsilon should be >= 0, -1 was provided instead"),
    ("Lion-betas-length", lambda: optim.Lion(0.1, betas=(0.9,)), ValueError,
     "^Lion: betas must hold 2 numbers, got 1"),
    ("SGD-momentum-str", lambda: optim.SGD(0.1, momentum="x"), TypeError,
     "^SGD: momentum must be a real number, got 'x'"),
    ("SGD-lr-str", lambda: optim.SGD("x"), TypeError,
     "^SGD: learning_rate must be a real number, got 'x'"),
    ("SGD-lr-None", lambda: optim.SGD(None), TypeError,
     "^SGD: learning_rate must be a real number, got None"),
    ("RMSprop-alpha-nan", lambda: optim.RMSprop(0.1, alpha=float("nan")), ValueError,
     "^RMSprop: alpha must be finite, got nan"),
    ("Adagrad-eps-str", lambda: optim.Adagrad(0.1, eps="x"), TypeError,
     "^Adagrad: epsilon must be a real number, got 'x'"),
    ("AdaDelta-rho-None", lambda: optim.AdaDelta(0.1, rho=None), TypeError,
     "^AdaDelta: rho must be a real number, got None"),
    ("Muon-ns-steps-float", lambda: optim.Muon(0.1, ns_steps=1.5), TypeError,
     r"^Muon: ns_steps must be an int, got 1.5 \(float\)"),
    ("Adafactor-eps-length", lambda: optim.Adafactor(eps=(0.9,)), ValueError,
     "^Adafactor: eps must hold 2 numbers, got 1"),
    ("Adafactor-clip-0", lambda: optim.Adafactor(clip_threshold=0.0), ValueError,
     "^Adafactor: clip_threshold should be > 0, 0.0 was provided instead"),
    ("Adafactor-no-rate", lambda: optim.Adafactor(relative_step=False), ValueError,
     "^Adafactor: learning_rate is needed when relative_step is False"),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in HYPERPARAMETER_ERRORS],
                         ids=[c[0] for c in HYPERPARAMETER_ERRORS])
def test_constructor_rejects_bad_hyperparameters(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_constructors_accept_schedules_and_arrays() -> None:
    assert optim.SGD(optim.cosine_decay(0.1, 10)).learning_rate.item() == pytest.approx(0.1)
    assert optim.Adam(mx.array(0.01)).learning_rate.item() == pytest.approx(0.01)
    assert optim.Adam(0.1, betas=[0.5, 0.6]).betas == [0.5, 0.6]


def _linear(seed: int = 0) -> nn.Linear:
    mx.random.seed(seed)
    return nn.Linear(3, 2)


GRADIENT_ERRORS = [
    ("unknown-key", {"weight": mx.ones((2, 3)), "zzz": mx.ones((2,))}, ValueError,
     r"^SGD: the gradients hold 'zzz', which is not a parameter \(the parameters there: "
     r"\['bias', 'weight'\]\)"),
    ("list", [mx.ones((2, 3))], ValueError,
     "^SGD: the gradients hold a list of 1 at the root where the parameters hold a dict"),
    ("None", None, TypeError, "^SGD: gradients must be a dict, list or tuple of arrays"),
    ("shape", {"weight": mx.ones((4, 2, 3)), "bias": mx.ones((2,))}, ValueError,
     r"^SGD: the gradient of 'weight' has shape \(4, 2, 3\) but the parameter has shape "
     r"\(2, 3\)"),
    ("leaf-type", {"weight": [1.0], "bias": mx.ones((2,))}, ValueError,
     "^SGD: the gradients hold a list of 1 at 'weight' where the parameters hold an array"),
    ("leaf-number", {"bias": 1.0}, TypeError,
     "^SGD: the gradient at 'bias' must be an array, got float"),
]


@pytest.mark.parametrize("gradients,error,message", [c[1:] for c in GRADIENT_ERRORS],
                         ids=[c[0] for c in GRADIENT_ERRORS])
def test_update_rejects_gradients_that_do_not_fit(gradients, error, message) -> None:
    model, opt = _linear(), optim.SGD(0.1)
    before = {k: v.tolist() for k, v in model.parameters().items()}
    with pytest.raises(error, match=message):
        opt.update(model, gradients)
    assert {k: v.tolist() for k, v in model.parameters().items()} == before
    assert opt.step.item() == 0  # nothing was applied


def test_update_names_the_path_of_a_nested_parameter() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 2))
    grads = {"layers": [{}, {}, {"weight": mx.ones((3, 2))}]}
    with pytest.raises(ValueError, match=r"^Adam: the gradient of 'layers.2.weight' has shape "
                                         r"\(3, 2\) but the parameter has shape \(2, 2\)"):
        optim.Adam(0.1).update(model, grads)
    good = {"layers": [{}, {}, {"weight": mx.ones((2, 2))}]}  # partial trees still apply
    optim.Adam(0.1).update(model, good)
