"""nuvec.random: Threefry bits, determinism of keys, samplers' statistics and their errors.

Statistical tests use fixed keys and generous thresholds (several standard errors), so they test
the distributions, not particular numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.common.random import threefry2x32

N = 20_000


def _np(a):
    return np.asarray(a).astype(np.float64)


def _ks(samples: np.ndarray, cdf) -> float:
    """The Kolmogorov-Smirnov statistic of `samples` against `cdf`."""
    x = np.sort(samples)
    f = cdf(x)
    n = x.size
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


KS_LIMIT = 1.95 / math.sqrt(N)  # well above the 1% critical value 1.63 / sqrt(N)
_erf = np.vectorize(math.erf)


def _normal_cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


@pytest.mark.parametrize(
    "key, counter, expected",
    [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
    ids=["zeros", "ones", "pi"],
)
def test_threefry_known_answers(key, counter, expected):
    # The known-answer vectors of Random123's threefry2x32_20.
    k0, k1, x0, x1 = (np.array([v], np.uint32) for v in (*key, *counter))
    y0, y1 = threefry2x32(np, k0, k1, x0, x1)
    assert (int(y0[0]), int(y1[0])) == expected


def test_key_holds_the_seed_bits():
    k = mx.random.key((5 << 32) + 7)
    assert k.dtype == mx.uint32 and k.shape == (2,)
    assert k.tolist() == [5, 7]


def test_same_key_same_numbers_whatever_the_order():
    k = mx.random.key(42)
    a = mx.random.uniform(shape=(5, 7), key=k)
    b = mx.random.normal((3,), key=k)
    mx.eval(b)  # evaluate in the other order, on another stream
    c = mx.random.uniform(shape=(5, 7), key=k, stream=mx.new_stream(mx.cpu))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    assert not np.array_equal(np.asarray(a)[0, :3], np.asarray(b))


def test_split_gives_distinct_independent_keys():
    keys = mx.random.split(mx.random.key(0), 3)
    assert keys.shape == (3, 2) and keys.dtype == mx.uint32
    draws = [_np(mx.random.uniform(shape=(N,), key=keys[i])) for i in range(3)]
    assert len({tuple(np.asarray(keys[i]).tolist()) for i in range(3)}) == 3
    for i in range(3):
        for j in range(i):
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 4 / math.sqrt(N)


def test_seed_repeats_the_global_sequence_and_calls_advance_it():
    mx.random.seed(7)
    first = [_np(mx.random.uniform(shape=(4,))) for _ in range(2)]
    mx.random.seed(7)
    again = [_np(mx.random.uniform(shape=(4,))) for _ in range(2)]
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], first[1])


def test_global_key_draws_do_not_depend_on_evaluation_order_or_stream():
    mx.random.seed(11)
    first, second = mx.random.uniform(shape=(6,)), mx.random.normal((6,))
    mx.eval(second)  # evaluated in the order opposite to the calls
    expected = [_np(first), _np(second)]
    mx.random.seed(11)
    first = mx.random.uniform(shape=(6,), stream=mx.new_stream(mx.cpu))
    second = mx.random.normal((6,))
    mx.eval(first, second)
    np.testing.assert_array_equal(_np(first), expected[0])
    np.testing.assert_array_equal(_np(second), expected[1])


@pytest.mark.parametrize("width, dtype", [(1, mx.uint8), (2, mx.uint16), (4, mx.uint32)])
def test_bits_widths_are_uniform_bytes(width, dtype):
    b = mx.random.bits((N,), width, key=mx.random.key(1))
    assert b.dtype == dtype and b.shape == (N,)
    low_byte = np.asarray(b).astype(np.int64) & 0xFF
    counts = np.bincount(low_byte, minlength=256)
    chi2 = float(np.sum((counts - N / 256) ** 2 / (N / 256)))
    assert chi2 < 255 + 6 * math.sqrt(2 * 255)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32, mx.float64])
def test_uniform_range_moments_and_fit(dtype):
    x = mx.random.uniform(-2, 3, (N,), dtype, key=mx.random.key(2))
    assert x.dtype == dtype
    v = _np(x)
    assert v.min() >= -2 and v.max() < 3
    assert abs(v.mean() - 0.5) < 5 * 5 / math.sqrt(12 * N)
    if dtype in (mx.float32, mx.float64):
        assert _ks(v, lambda t: (t + 2) / 5) < KS_LIMIT


def test_uniform_broadcasts_array_bounds():
    low = mx.array([0.0, 10.0])
    x = _np(mx.random.uniform(low, low + 1, (1000, 2), key=mx.random.key(3)))
    assert x[:, 0].min() >= 0 and x[:, 0].max() < 1
    assert x[:, 1].min() >= 10 and x[:, 1].max() < 11


def test_uniform_with_high_below_low_samples_between_them():
    # as MLX: low + u * (high - low), in (high, low]
    key = mx.random.key(2)
    x = _np(mx.random.uniform(3.0, 2.0, (2000,), key=key))
    assert x.min() > 2 and x.max() <= 3 and abs(x.mean() - 2.5) < 0.05
    np.testing.assert_allclose(x, 3 - _np(mx.random.uniform(0.0, 1.0, (2000,), key=key)),
                               atol=1e-6)
    bounds = _np(mx.random.uniform(mx.array([0.0, 5.0]), mx.array([1.0, 4.0]), (500, 2),
                                   key=key))
    assert bounds[:, 0].min() >= 0 and bounds[:, 0].max() < 1
    assert bounds[:, 1].min() > 4 and bounds[:, 1].max() <= 5


def test_streams_of_every_length_match_mlx():
    # MLX 0.32's bits: word i and word i + ceil(n/2) hash the counter pair (i, i + ceil(n/2));
    # of an odd count, the middle word hashes (n // 2, 0). Values printed by MLX.
    key = mx.random.key(7)
    expected = {1: [0.844107], 2: [0.045413, 0.945806], 3: [0.224985, 0.42616, 0.453609],
                5: [0.064386, 0.200692, 0.650459, 0.382276, 0.675417]}
    for n, values in expected.items():
        np.testing.assert_allclose(_np(mx.random.uniform(shape=(n,), key=key)), values,
                                   atol=1e-6)
    laplace = [0.740081, 3.805909, -0.238875, 0.401069]  # sign(u) * log1p(-|u|), as MLX's
    np.testing.assert_allclose(_np(mx.random.laplace((4,), key=mx.random.key(3))), laplace,
                               atol=1e-5)


def test_uniform_stays_in_its_interval_when_the_bounds_meet():
    assert mx.random.uniform(-1.0, -1.0, (3,), key=mx.random.key(0)).tolist() == [-1.0] * 3
    low = np.float32(1.0)
    high = np.nextafter(low, np.float32(2.0))  # the interval holds one float32: low
    assert set(np.asarray(mx.random.uniform(low, high, (50,), key=mx.random.key(1)))) == {low}


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
@pytest.mark.parametrize("low, high", [(0, 1), (-1, 1), (0.5, 0.5), (-3e38, 3e38), (0, math.inf),
                                       (-1e-45, 1e-45), (-0.0, 1), (-5, -4.9999), (True, 3),
                                       (2.0, 3.0), (-7, 0), (1e30, 1.0000001e30)])
def test_uniform_of_number_bounds_is_the_formula_of_array_bounds(low, high, dtype):
    # Number bounds take their constants on the host and leave out the operations that
    # change nothing; array bounds record the whole formula. Both give the same bits.
    key = mx.random.key(11)
    numbers = np.asarray(mx.random.uniform(low, high, (4000,), dtype, key))
    arrays = np.asarray(mx.random.uniform(mx.array(low, dtype), mx.array(high, dtype), (4000,),
                                          dtype, key))
    assert numbers.dtype == arrays.dtype
    np.testing.assert_array_equal(numbers.view(np.uint8), arrays.view(np.uint8))


def test_uniform_empty_and_scalar_shapes():
    assert mx.random.uniform(shape=(0, 3), key=mx.random.key(0)).shape == (0, 3)
    assert mx.random.uniform(key=mx.random.key(0)).shape == ()


def test_normal_moments_and_fit():
    v = _np(mx.random.normal((N,), key=mx.random.key(4)))
    assert abs(v.mean()) < 5 / math.sqrt(N)
    assert abs(v.std() - 1) < 0.03
    assert _ks(v, _normal_cdf) < KS_LIMIT


def test_normal_loc_scale_and_float64():
    x = mx.random.normal((N,), mx.float64, loc=3.0, scale=2.0, key=mx.random.key(5))
    assert x.dtype == mx.float64
    v = _np(x)
    assert abs(v.mean() - 3) < 5 * 2 / math.sqrt(N)
    assert abs(v.std() - 2) < 0.06


def test_randint_range_and_chi_square():
    x = mx.random.randint(-3, 7, (N,), key=mx.random.key(6))
    assert x.dtype == mx.int32
    v = np.asarray(x)
    assert v.min() == -3 and v.max() == 6
    counts = np.bincount(v + 3, minlength=10)
    chi2 = float(np.sum((counts - N / 10) ** 2 / (N / 10)))
    assert chi2 < 9 + 6 * math.sqrt(18)


def test_randint_dtype():
    assert mx.random.randint(0, 3, (4,), mx.uint8, key=mx.random.key(0)).dtype == mx.uint8


def test_bernoulli_mean_shape_and_dtype():
    x = mx.random.bernoulli(0.3, (N,), key=mx.random.key(7))
    assert x.dtype == mx.bool_
    assert abs(_np(x).mean() - 0.3) < 5 * math.sqrt(0.21 / N)
    p = mx.array([[0.0, 1.0]])
    y = np.asarray(mx.random.bernoulli(p, key=mx.random.key(8)))
    assert y.shape == (1, 2) and y.tolist() == [[False, True]]
    for p in (mx.array([0, 1]), 0, True):  # MLX refuses an integer or bool p
        with pytest.raises(ValueError, match="^bernoulli: the probability p must be floating"):
            mx.random.bernoulli(p, key=mx.random.key(9))


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32])
@pytest.mark.parametrize("sampler", ["normal", "laplace"])
def test_half_samples_are_scaled_and_shifted_in_their_dtype(sampler, dtype):
    # as MLX: the unit sample is rounded to `dtype` first, then scaled and shifted in it
    f, key = getattr(mx.random, sampler), mx.random.key(0)
    a = f(shape=(1000,), dtype=dtype, loc=1.0, scale=2.0, key=key)
    b = mx.array(2.0, dtype) * f(shape=(1000,), dtype=dtype, key=key) + mx.array(1.0, dtype)
    assert a.dtype == dtype and mx.array_equal(a, b).item()


def test_truncated_normal_bounds_and_mean():
    v = _np(mx.random.truncated_normal(-1.0, 2.0, (N,), key=mx.random.key(9)))
    assert v.min() >= -1 and v.max() <= 2

    def phi(t):
        return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)

    mass = _normal_cdf(2.0) - _normal_cdf(-1.0)
    assert abs(v.mean() - (phi(-1) - phi(2)) / mass) < 0.03
    # far in a tail (float32 erf rounds to -1 below about -5.4) the distribution holds
    for lo, hi in ((5.0, 6.0), (-8.0, -7.0)):
        tail = _np(mx.random.truncated_normal(lo, hi, (N,), key=mx.random.key(13)))
        mass = 0.5 * (math.erf(hi / math.sqrt(2)) - math.erf(lo / math.sqrt(2)))
        assert lo <= tail.min() and tail.max() <= hi
        # the truncated mean; its standard deviation here is below 0.2
        assert abs(tail.mean() - (phi(lo) - phi(hi)) / mass) < 5 * 0.2 / math.sqrt(N)
    # without a shape, the bounds' broadcast shape; each entry within its own bounds
    w = _np(mx.random.truncated_normal(mx.array([[-1.0], [0.0]]), mx.array([0.5, 1.0, 3.0]),
                                       key=mx.random.key(12)))
    assert w.shape == (2, 3) and (w >= [[-1.0], [0.0]]).all() and (w <= [0.5, 1.0, 3.0]).all()


def test_gumbel_moments_and_fit():
    v = _np(mx.random.gumbel((N,), key=mx.random.key(10)))
    assert abs(v.mean() - np.euler_gamma) < 0.05
    assert abs(v.var() - math.pi**2 / 6) < 0.1
    assert _ks(v, lambda t: np.exp(-np.exp(-t))) < KS_LIMIT


def test_laplace_moments():
    v = _np(mx.random.laplace((N,), loc=1.0, scale=2.0, key=mx.random.key(11)))
    assert abs(v.mean() - 1) < 0.1
    assert abs(v.var() - 8) < 0.6


def test_categorical_frequencies():
    probs = np.array([0.2, 0.3, 0.5])
    x = mx.random.categorical(mx.array(np.log(probs)), shape=(N,), key=mx.random.key(12))
    assert x.dtype == mx.uint32
    counts = np.bincount(np.asarray(x), minlength=3)
    chi2 = float(np.sum((counts - N * probs) ** 2 / (N * probs)))
    assert chi2 < 2 + 6 * 2


def test_categorical_num_samples_and_axis():
    logits = mx.array([[0.0, 50.0], [50.0, 0.0]])
    s = mx.random.categorical(logits, num_samples=4, key=mx.random.key(13))
    assert s.tolist() == [[1, 1, 1, 1], [0, 0, 0, 0]]
    t = mx.random.categorical(logits, axis=0, key=mx.random.key(13))
    assert t.tolist() == [1, 0]


_P = [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]
_INF, _NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    "logits, kwargs, seed, expected",
    [
        (_P, dict(num_samples=5), 8, [[2, 1, 0, 2, 1], [1, 0, 1, 0, 1]]),
        (np.array(_P).T, dict(axis=0, num_samples=5), 8, [[2, 2, 0, 1, 2], [0, 0, 2, 0, 0]]),
        (_P, dict(shape=(4, 2)), 8, [[0, 2], [1, 1], [2, 1], [1, 0]]),
        ([_P, _P[::-1]], dict(axis=1, num_samples=3), 9,
         [[[1, 0, 1], [1, 0, 1], [1, 0, 0]], [[0, 0, 0], [1, 0, 0], [1, 1, 0]]]),
        # one distribution: inverse-CDF sampling
        (_P[0], dict(num_samples=8), 8, [2, 2, 2, 1, 1, 0, 2, 1]),
        (_P[0], dict(shape=(8,)), 8, [2, 2, 2, 1, 1, 0, 2, 1]),
        (np.reshape(_P[0], (1, 3, 1)), dict(axis=1, shape=(2, 4, 1)), 8,
         [[[2], [2], [2], [1]], [[1], [0], [2], [1]]]),
        (_P[0], {}, 8, 1),
    ],
    ids=["num-samples", "axis-0", "shape", "3-d", "one-num-samples", "one-shape",
         "one-middle-axis", "one-0-d"],
)
@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_categorical_draws_match_mlx(logits, kwargs, seed, expected, dtype):
    # Values printed by MLX 0.32 for the same keys (float32 Gumbel noise for float64 logits).
    lg = mx.array(np.log(np.asarray(logits)), dtype)
    assert mx.random.categorical(lg, key=mx.random.key(seed), **kwargs).tolist() == expected


@pytest.mark.parametrize(
    "logits, expected",
    [([-_INF] * 3, [1, 2, 2, 1, 0, 2]), ([_INF, 0.0, _INF], [0, 2, 2, 2, 0, 2]),
     ([0.0, _INF, _NAN], [2] * 6)],
    ids=["all-minus-inf", "two-inf", "nan"],
)
def test_categorical_of_one_distribution_with_nonfinite_logits_matches_mlx(logits, expected):
    # Equal infinities weigh alike; a nan gives the last class (MLX 0.32).
    x = mx.random.categorical(mx.array(logits), shape=(6,), key=mx.random.key(2))
    assert x.tolist() == expected


def test_normal_without_a_shape_broadcasts_one_draw_over_the_parameters():
    # MLX draws `shape` (here one value) and broadcasts it with loc and scale.
    k = mx.random.key(4)
    z = mx.random.normal(key=k).item()
    loc, scale = np.array([[0.0], [10.0]]), np.array([1.0, 2.0, 3.0])
    x = mx.random.normal(loc=mx.array(loc), scale=mx.array(scale), key=k)
    np.testing.assert_array_equal(np.asarray(x), (np.float32(z) * scale + loc).astype(np.float32))
    np.testing.assert_allclose(np.asarray(mx.random.normal(loc=mx.array([0.0, 10.0]), key=k)),
                               [-0.985658348, 9.014341354], rtol=1e-6)  # MLX's values
    assert mx.random.normal((1,), loc=mx.zeros((3,)), key=k).shape == (3,)


def test_truncated_normal_with_lower_above_upper_gives_lower():
    k = mx.random.key(4)
    assert mx.random.truncated_normal(2.0, -1.0, (4,), key=k).tolist() == [2.0] * 4
    x = mx.random.truncated_normal(mx.array([2.0, -1.0, 0.5]), mx.array([-1.0, 1.0, 0.4]), key=k)
    assert x[0].item() == 2.0 and x[2].item() == 0.5 and -1.0 <= x[1].item() <= 1.0


@pytest.mark.parametrize("dtype", [mx.float16, mx.float32, mx.float64])
def test_uniform_with_infinite_bounds_follows_the_formula(dtype):
    # low + u * (high - low), as MLX: an infinite high gives inf; -inf with +inf gives nan.
    k = mx.random.key(4)
    assert mx.random.uniform(0.0, _INF, (3,), dtype, key=k).tolist() == [_INF] * 3
    assert mx.random.uniform(1.0, _INF, (3,), dtype, key=k).tolist() == [_INF] * 3
    for low, high in ((-_INF, 0.0), (-_INF, _INF), (_INF, 0.0)):
        assert np.isnan(_np(mx.random.uniform(low, high, (3,), dtype, key=k))).all()


def test_categorical_empty_outputs():
    assert mx.random.categorical(mx.zeros((2, 3)), num_samples=0).shape == (2, 0)
    assert mx.random.categorical(mx.zeros((0, 3))).shape == (0,)


def test_multivariate_normal_covariance():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    x = mx.random.multivariate_normal(mx.array([1.0, -1.0]), mx.array(cov), (N,),
                                      key=mx.random.key(14))
    assert x.shape == (N, 2) and x.dtype == mx.float32
    v = _np(x)
    np.testing.assert_allclose(v.mean(axis=0), [1, -1], atol=0.05)
    np.testing.assert_allclose(np.cov(v.T), cov, atol=0.08)


@pytest.mark.parametrize(
    "cov, expected",
    [([[1.0, 0.5], [0.5, 2.0]], [1.68873918, 12.42312431]),
     ([[1.0, 2.0], [2.0, 1.0]], [2.59154177, 12.46926761]),  # not PSD: |eigenvalues|
     ([[1.0, 0.0], [0.0, -4.0]], [1.39979279, 6.95586634])],
    ids=["psd", "indefinite", "negative-diagonal"],
)
def test_multivariate_normal_matches_mlx(cov, expected):
    # z @ (U sqrt(S) Vt) from the SVD, as MLX; values printed by MLX 0.32 for the same key.
    x = mx.random.multivariate_normal(mx.array([0.0, 10.0]), mx.array(cov),
                                      key=mx.random.key(11))
    assert x.dtype == mx.float32
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6, atol=1e-6)


def test_multivariate_normal_keeps_float64_parameters():
    mean, cov = mx.array([0.0, 1.0], mx.float64), mx.array([[2.0, 0.3], [0.3, 1.0]], mx.float64)
    x = mx.random.multivariate_normal(mean, cov, (3,), key=mx.random.key(3))
    assert x.dtype == mx.float64 and x.shape == (3, 2)
    z = _np(mx.random.normal((3, 2), key=mx.random.key(3)))
    w, v = np.linalg.eigh(np.asarray(cov))
    np.testing.assert_allclose(_np(x), z @ (v * np.sqrt(w)) @ v.T + [0.0, 1.0], rtol=1e-12)


def test_permutation_of_int_and_array_axis():
    p = np.asarray(mx.random.permutation(50, key=mx.random.key(15)))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    a = np.arange(12).reshape(3, 4)
    q = np.asarray(mx.random.permutation(mx.array(a), axis=1, key=mx.random.key(16)))
    assert sorted(q[0].tolist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(q, a[:, q[0]])  # whole columns move together


def test_permutation_orderings_are_equally_likely():
    keys = mx.random.split(mx.random.key(18), 6000)
    orders = np.asarray(mx.vmap(lambda k: mx.random.permutation(4, key=k))(keys))
    _, counts = np.unique(orders @ np.array([64, 16, 4, 1]), return_counts=True)
    assert counts.size == 24  # every ordering of 4 elements appears
    expected = 6000 / 24
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 23 + 6 * math.sqrt(46)  # 23 degrees of freedom, six standard deviations


def test_vmap_over_keys_matches_a_loop():
    keys = mx.random.split(mx.random.key(17), 4)
    batched = mx.vmap(lambda k: mx.random.normal((3,), key=k))(keys)
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(batched[i]),
                                      np.asarray(mx.random.normal((3,), key=keys[i])))


def test_gradient_flows_through_parameters_not_keys():
    k = mx.random.key(18)

    def f(low):
        return mx.sum(mx.random.uniform(low, low + 2.0, (5,), key=k))

    g = mx.grad(f)(mx.array(1.0))
    assert abs(g.item() - 5.0) < 1e-5


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mx.random.uniform(key=mx.array([1, 2])), ValueError, "^uniform: expected a key"),
        (lambda: mx.random.normal(key=mx.zeros((3,), mx.uint32)), ValueError, "^normal: expected"),
        (lambda: mx.random.split(mx.array([1.0, 2.0])), ValueError, "^split: expected a key"),
        (lambda: mx.random.key(1.5), TypeError, "^key: seed must be an int, got float"),
        (lambda: mx.random.seed(True), TypeError, "^seed: seed must be an int, got bool"),
        (lambda: mx.random.split(mx.random.key(0), -1), ValueError, "^split: num"),
        (lambda: mx.random.bits((2,), 3), ValueError, "^bits: width"),
        (lambda: mx.random.bits((-1,)), ValueError, "^bits: negative"),
        (lambda: mx.random.uniform(shape=(2,), dtype=mx.int32), TypeError, "^uniform: can only"),
        (lambda: mx.random.uniform(mx.zeros((3,)), 1, (2,)), ValueError, "^uniform: "),
        (lambda: mx.random.normal((2,), loc=mx.zeros((3,))), ValueError,
         r"^normal: shapes \(2,\) and \(3,\) cannot be broadcast"),
        (lambda: mx.random.normal((2,), mx.int32), TypeError, "^normal: can only"),
        (lambda: mx.random.randint(0, 2, (2,), mx.float32), TypeError, "^randint: dtype"),
        (lambda: mx.random.bernoulli(mx.zeros((3,)), (2,)), ValueError, "^bernoulli: "),
        (lambda: mx.random.truncated_normal(0, 1, (2,), mx.int8), TypeError,
         "^truncated_normal: can only"),
        (lambda: mx.random.gumbel((2,), mx.uint8), TypeError, "^gumbel: can only"),
        (lambda: mx.random.laplace((2,), mx.int32), TypeError, "^laplace: can only"),
        (lambda: mx.random.categorical(mx.zeros((2, 3)), shape=(2,), num_samples=2), ValueError,
         "^categorical: at most one"),
        (lambda: mx.random.categorical(mx.zeros((2, 3)), shape=(3,)), ValueError,
         "^categorical: shape"),
        (lambda: mx.random.categorical(mx.zeros((2, 3)), shape=(1,)), ValueError,
         r"^categorical: shape \(1,\) does not broadcast"),
        (lambda: mx.random.categorical(mx.array(1.0)), ValueError, "^categorical: logits"),
        (lambda: mx.random.categorical(mx.zeros((2, 0))), ValueError, "^categorical: axis -1"),
        (lambda: mx.random.categorical(mx.zeros((2, 3)), axis=2), ValueError, "^categorical: axis"),
        (lambda: mx.random.categorical(mx.zeros((2, 3)), num_samples=-1), ValueError,
         "^categorical: num_samples"),
        (lambda: mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(3)), ValueError,
         "^multivariate_normal: mean"),
        (lambda: mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), dtype=mx.float16),
         TypeError, "^multivariate_normal: dtype"),
        (lambda: mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), dtype=mx.float64),
         ValueError, "^multivariate_normal: dtype must be float32, got float64"),
        (lambda: mx.random.multivariate_normal(mx.zeros((2,), mx.complex64), mx.eye(2)),
         TypeError, "^multivariate_normal: mean and cov must be real"),
        (lambda: mx.random.permutation(-1), ValueError, "^permutation: length"),
        (lambda: mx.random.permutation(mx.array(3)), ValueError, "^permutation: cannot"),
        (lambda: mx.random.permutation(mx.zeros((2,)), axis=1), ValueError,
         "^permutation: axis"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_rejected_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("axis, error, message", [
    ("0", TypeError, r"^permutation: axis must be an int, got '0' \(str\)"),
    (1.5, TypeError, r"^permutation: axis must be an int, got 1.5"),
    (7, ValueError, r"^permutation: axis 7 is out of bounds for an array with 1 dimensions"),
])
def test_permutation_of_a_length_checks_its_axis(axis, error, message):
    with pytest.raises(error, match=message):
        mx.random.permutation(5, axis=axis)


def test_permutation_length_is_an_int32_at_the_call():
    with pytest.raises(ValueError, match=r"^permutation: x must be <= 2147483647, got 2147483648"):
        mx.random.permutation(2**31)
    assert sorted(mx.random.permutation(4, axis=-1).tolist()) == [0, 1, 2, 3]
