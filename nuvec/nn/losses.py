"""Loss functions, as `mlx.nn.losses`; each takes `reduction` (`"none"`, `"mean"`, `"sum"`).

`cross_entropy` over class indices on the last axis of half or single precision logits calls
`nuvec.fast.cross_entropy` (one fused kernel on a GPU, a closed-form gradient everywhere).
"""

from __future__ import annotations

import math
from typing import Any

import nuvec as mx
from nuvec.graph.array import Array
from nuvec.nn.layers.base import input_array
from nuvec.ops.arguments import normalize_axis, real_number

__all__ = [
    "binary_cross_entropy", "cosine_similarity_loss", "cross_entropy", "gaussian_nll_loss",
    "hinge_loss", "huber_loss", "kl_div_loss", "l1_loss", "log_cosh_loss",
    "margin_ranking_loss", "mse_loss", "nll_loss", "smooth_l1_loss", "triplet_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _arrays(name: str, *values: Any) -> list[Array]:
    """The loss's inputs as arrays (lists and scalars converted; other objects raise the
    standard conversion error naming the loss)."""
    return [input_array(v, name) for v in values]


def _reduce(loss: mx.array, reduction: str, name: str) -> mx.array:
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: invalid reduction {reduction!r}; must be 'none', 'mean', or "
                     "'sum'.")


def _same_shape(a: mx.array, b: mx.array, name: str, what: str = "Inputs",
                other: str = "targets") -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name}: {what} shape {a.shape} does not match {other} shape "
                         f"{b.shape}.")


def _weighted(loss: mx.array, weights: Any, name: str) -> mx.array:
    if weights is None:
        return loss
    weights = mx.array(weights) if not isinstance(weights, mx.array) else weights
    if weights.shape != loss.shape:
        raise ValueError(f"{name}: weights with shape {weights.shape} is not the same as "
                         f"output loss with shape {loss.shape}.")
    return loss * weights


def cross_entropy(logits: mx.array, targets: mx.array, weights: Any = None, axis: int = -1,
                  label_smoothing: float = 0.0, reduction: str = "none") -> mx.array:
    """Cross-entropy between `logits` and class indices or probabilities `targets`.

    Args:
        logits: unnormalized log probabilities.
        targets: class indices (the logits' shape without `axis`) or probabilities (the
            logits' shape).
        weights: optional per-element weights of the unreduced loss.
        axis: the class axis.
        label_smoothing: in [0, 1): mixes the target with the uniform distribution.
        reduction: `"none"`, `"mean"` or `"sum"`.

    Returns:
        The loss.

    Raises:
        ValueError: for a bad label smoothing, mismatched shapes or a bad reduction.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.cross_entropy(mx.array([[0.0, 0.0]]), mx.array([1])).tolist()
        [0.6931...]
    """
    name = "cross_entropy"
    logits, targets = _arrays(name, logits, targets)
    label_smoothing = real_number(label_smoothing, name, "label_smoothing")
    if not 0 <= label_smoothing < 1:
        raise ValueError(f"{name}: label smoothing must be in [0, 1), got {label_smoothing}.")
    axis = normalize_axis(axis, logits.ndim, name)
    as_probs = targets.ndim == logits.ndim
    expected = list(logits.shape)
    if not as_probs:
        expected.pop(axis)
    if tuple(expected) != targets.shape:
        raise ValueError(f"{name}: targets shape {targets.shape} does not match logits shape "
                         f"{logits.shape}.")
    fused = logits.dtype in (mx.float32, mx.float16, mx.bfloat16)  # it computes in float32
    if fused and not as_probs and label_smoothing == 0 and axis == logits.ndim - 1:
        loss = mx.fast.cross_entropy(logits, targets).astype(logits.dtype)
    else:
        if as_probs:
            score = mx.sum(logits * targets, axis=axis)
        else:
            score = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis).squeeze(axis)
        lse = mx.logsumexp(logits, axis=axis)
        if label_smoothing > 0:
            mean_logits = mx.mean(logits, axis=axis)
            loss = lse - (1 - label_smoothing) * score - label_smoothing * mean_logits
        else:
            loss = lse - score
    return _reduce(_weighted(loss, weights, name), reduction, name)


def binary_cross_entropy(inputs: mx.array, targets: mx.array, weights: Any = None,
                         with_logits: bool = True, reduction: str = "mean") -> mx.array:
    """Binary cross-entropy, from probabilities or logits.

    Binary cross-entropy of probabilities (or logits, `with_logits`) against targets in
    [0, 1]; log probabilities are clipped at -100 as MLX (and PyTorch) do.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.binary_cross_entropy(mx.array([0.0]), mx.array([1.0])).item()
        0.6931...
    """
    inputs, targets = _arrays("binary_cross_entropy", inputs, targets)
    name = "binary_cross_entropy"
    _same_shape(inputs, targets, name)
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.maximum(mx.log(inputs), -100)
        log_q = mx.maximum(mx.log(1 - inputs), -100)
        loss = -(targets * log_p + (1 - targets) * log_q)
    return _reduce(_weighted(loss, weights, name), reduction, name)


def l1_loss(predictions: mx.array, targets: mx.array, reduction: str = "mean") -> mx.array:
    """The mean (or summed) absolute error `|predictions - targets|`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.l1_loss(mx.array([1.0, 2.0]), mx.array([0.0, 0.0])).item()
        1.5
    """
    predictions, targets = _arrays("l1_loss", predictions, targets)
    _same_shape(predictions, targets, "l1_loss", "Predictions")
    return _reduce(mx.abs(predictions - targets), reduction, "l1_loss")


def mse_loss(predictions: mx.array, targets: mx.array, reduction: str = "mean") -> mx.array:
    """The mean (or summed) squared error `(predictions - targets)**2`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.mse_loss(mx.array([1.0, 2.0]), mx.array([0.0, 0.0])).item()
        2.5
    """
    predictions, targets = _arrays("mse_loss", predictions, targets)
    _same_shape(predictions, targets, "mse_loss", "Predictions")
    return _reduce(mx.square(predictions - targets), reduction, "mse_loss")


def nll_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
             reduction: str = "none") -> mx.array:
    """The negative log likelihood of class indices `targets` under log probabilities `inputs`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.nll_loss(mx.array([[-1.0, -2.0]]), mx.array([1])).tolist()
        [2.0]
    """
    inputs, targets = _arrays("nll_loss", inputs, targets)
    picked = mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis).squeeze(axis)
    return _reduce(-picked, reduction, "nll_loss")


def gaussian_nll_loss(inputs: mx.array, targets: mx.array, vars: mx.array, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> mx.array:
    """Gaussian negative log likelihood.

    The Gaussian negative log likelihood `0.5 * (log(var) + (targets - inputs)**2 / var)`
    (plus `0.5 * log(2 pi)` when `full`), `var` clipped below at `eps`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.gaussian_nll_loss(mx.array([0.0]), mx.array([2.0]), mx.array([1.0])).item()
        2.0
    """
    inputs, targets, vars = _arrays("gaussian_nll_loss", inputs, targets, vars)
    name = "gaussian_nll_loss"
    _same_shape(inputs, targets, name)
    _same_shape(inputs, vars, name, other="vars")
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, name)


def kl_div_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
                reduction: str = "none") -> mx.array:
    """Kullback-Leibler divergence of log probabilities.

    The Kullback-Leibler divergence `sum(exp(targets) * (targets - inputs))` of log
    probabilities along `axis`.

    Example:
        >>> import nuvec.nn as nn
        >>> p = mx.log(mx.array([[0.5, 0.5]]))
        >>> nn.losses.kl_div_loss(p, p).tolist()
        [0.0]
    """
    inputs, targets = _arrays("kl_div_loss", inputs, targets)
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis=axis)
    return _reduce(loss, reduction, "kl_div_loss")


def smooth_l1_loss(predictions: mx.array, targets: mx.array, beta: float = 1.0,
                   reduction: str = "mean") -> mx.array:
    """Smooth L1 loss.

    The smooth L1 loss: `0.5 d**2 / beta` where `d = |predictions - targets| < beta`, else
    `d - 0.5 beta`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.smooth_l1_loss(mx.array([0.5, 3.0]), mx.array([0.0, 0.0])).item()
        1.3125
    """
    predictions, targets = _arrays("smooth_l1_loss", predictions, targets)
    _same_shape(predictions, targets, "smooth_l1_loss", "Predictions")
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def triplet_loss(anchors: mx.array, positives: mx.array, negatives: mx.array, axis: int = -1,
                 p: int = 2, margin: float = 1.0, eps: float = 1e-6,
                 reduction: str = "none") -> mx.array:
    """Triplet margin loss.

    The triplet margin loss `max(d(a, pos) - d(a, neg) + margin, 0)`, with
    the p-norm distance `d(x, y) = (sum(|x - y|**p) + eps)**(1/p)` along `axis`.

    Example:
        >>> import nuvec.nn as nn
        >>> a = mx.array([[0.0, 0.0]])
        >>> nn.losses.triplet_loss(a, a, mx.array([[3.0, 4.0]])).tolist()
        [0.0]
    """
    anchors, positives, negatives = _arrays("triplet_loss", anchors, positives, negatives)
    p = real_number(p, "triplet_loss", "p", positive=True)

    def distance(x: mx.array, y: mx.array) -> mx.array:
        return mx.power(mx.sum(mx.power(mx.abs(x - y), p), axis=axis) + eps, 1.0 / p)

    loss = mx.maximum(distance(anchors, positives) - distance(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction, "triplet_loss")


def hinge_loss(inputs: mx.array, targets: mx.array, reduction: str = "none") -> mx.array:
    """The hinge loss `max(1 - inputs * targets, 0)` for targets in {-1, 1}.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.hinge_loss(mx.array([0.5, 2.0]), mx.array([1.0, 1.0])).tolist()
        [0.5, 0.0]
    """
    inputs, targets = _arrays("hinge_loss", inputs, targets)
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction, "hinge_loss")


def huber_loss(inputs: mx.array, targets: mx.array, delta: float = 1.0,
               reduction: str = "none") -> mx.array:
    """The Huber loss: `0.5 e**2` for `|e| <= delta`, `delta * (|e| - 0.5 delta)` beyond.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.huber_loss(mx.array([0.5, 3.0]), mx.array([0.0, 0.0])).tolist()
        [0.125, 2.5]
    """
    inputs, targets = _arrays("huber_loss", inputs, targets)
    errors = mx.abs(inputs - targets)
    quadratic = mx.minimum(errors, delta)
    loss = 0.5 * mx.square(quadratic) + delta * (errors - quadratic)
    return _reduce(loss, reduction, "huber_loss")


def log_cosh_loss(inputs: mx.array, targets: mx.array, reduction: str = "none") -> mx.array:
    """The log-cosh loss `log(cosh(inputs - targets))`, computed stably.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.losses.log_cosh_loss(mx.array([0.0]), mx.array([0.0])).tolist()
        [0.0]
    """
    inputs, targets = _arrays("log_cosh_loss", inputs, targets)
    errors = inputs - targets
    loss = mx.logaddexp(errors, -errors) - math.log(2)
    return _reduce(loss, reduction, "log_cosh_loss")


def cosine_similarity_loss(x1: mx.array, x2: mx.array, axis: int = 1, eps: float = 1e-8,
                           reduction: str = "none") -> mx.array:
    """The cosine similarity `x1 . x2 / max(|x1| |x2|, eps)` along `axis`.

    Example:
        >>> import nuvec.nn as nn
        >>> x = mx.array([[1.0, 0.0]])
        >>> nn.losses.cosine_similarity_loss(x, 2 * x).tolist()
        [1.0]
    """
    x1, x2 = _arrays("cosine_similarity_loss", x1, x2)
    norms = mx.linalg.norm(x1, axis=axis) * mx.linalg.norm(x2, axis=axis)
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(norms, eps)
    return _reduce(loss, reduction, "cosine_similarity_loss")


def margin_ranking_loss(inputs1: mx.array, inputs2: mx.array, targets: mx.array,
                        margin: float = 0.0, reduction: str = "none") -> mx.array:
    """The margin ranking loss `max(0, -targets * (inputs1 - inputs2) + margin)`.

    Raises:
        ValueError: if the three shapes differ.

    Example:
        >>> import nuvec.nn as nn
        >>> a, b = mx.array([1.0]), mx.array([2.0])
        >>> nn.losses.margin_ranking_loss(a, b, mx.array([1.0])).tolist()
        [1.0]
    """
    inputs1, inputs2, targets = _arrays("margin_ranking_loss", inputs1, inputs2, targets)
    if not inputs1.shape == inputs2.shape == targets.shape:
        raise ValueError(f"margin_ranking_loss: the shapes of the arguments do not match: "
                         f"inputs1 {inputs1.shape}, inputs2 {inputs2.shape}, targets "
                         f"{targets.shape}.")
    loss = mx.maximum(0, -targets * (inputs1 - inputs2) + margin)
    return _reduce(loss, reduction, "margin_ranking_loss")
