"""Train a small MLP classifier on interleaved spirals with `value_and_grad` and plain SGD.

    python examples/mlp.py            # full run: reaches >= 95% training accuracy
    python examples/mlp.py --quick    # a few epochs (what the test suite runs)

The data set is made here, deterministically (NumPy's generator with a fixed seed): points on
three interleaved spiral arms, with a little noise.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nuvec as mx


def make_spirals(points_per_class: int = 300, classes: int = 3, noise: float = 0.2,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`classes` interleaved spiral arms in 2-D: (features float32 [n, 2], labels int32 [n])."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for k in range(classes):
        radius = np.linspace(0.05, 1.0, points_per_class)
        angle = np.linspace(k * 4.0, (k + 1) * 4.0, points_per_class)
        angle = angle + rng.standard_normal(points_per_class) * noise
        xs.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        ys.append(np.full(points_per_class, k))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int32)


def init_params(sizes: list[int], seed: int = 1) -> list[dict[str, mx.Array]]:
    """He-initialised weights and zero biases, one dict per layer."""
    rng = np.random.default_rng(seed)
    return [
        {"w": mx.array(rng.standard_normal((m, n)) * np.sqrt(2.0 / m)), "b": mx.zeros((n,))}
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def forward(params: list[dict[str, mx.Array]], x: mx.Array) -> mx.Array:
    """Logits of the MLP: ReLU hidden layers, linear output."""
    for layer in params[:-1]:
        x = mx.maximum(mx.matmul(x, layer["w"]) + layer["b"], 0.0)
    return mx.matmul(x, params[-1]["w"]) + params[-1]["b"]


def loss_fn(params, x, y):
    """Mean cross-entropy, and the logits as an auxiliary output."""
    logits = forward(params, x)
    picked = mx.take_along_axis(logits, mx.expand_dims(y, 1), axis=1)
    return mx.mean(mx.logsumexp(logits, axis=1) - mx.squeeze(picked, 1)), logits


def train(epochs: int = 100, batch_size: int = 90, lr: float = 0.2, hidden: int = 64,
          seed: int = 0, verbose: bool = True) -> list[tuple[float, float]]:
    """Trains on the spirals; returns (mean loss, training accuracy) per epoch."""
    features, labels = make_spirals(seed=seed)
    x_all, y_all = mx.array(features), mx.array(labels)
    params = init_params([2, hidden, hidden, int(labels.max()) + 1], seed=seed + 1)
    step = mx.value_and_grad(loss_fn)
    order_rng = np.random.default_rng(seed + 2)
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = order_rng.permutation(len(labels))
        total = 0.0
        for first in range(0, len(order), batch_size):
            idx = order[first:first + batch_size]
            (loss, _), grads = step(params, mx.array(features[idx]), mx.array(labels[idx]))
            params = mx.utils.tree_map(lambda p, g: p - lr * g, params, grads)
            mx.eval(params, loss)
            total += loss.item() * len(idx)
        logits = forward(params, x_all)
        accuracy = mx.mean(mx.argmax(logits, axis=1) == y_all).item()
        history.append((total / len(order), accuracy))
        if verbose:
            print(f"epoch {epoch:4d}  loss {history[-1][0]:.4f}  accuracy {accuracy:6.1%}  "
                  f"({(time.perf_counter() - start) * 1e3:.0f} ms)")
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="train for 10 epochs only")
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    history = train(epochs=10 if args.quick else args.epochs)
    print(f"final loss {history[-1][0]:.4f}, training accuracy {history[-1][1]:.1%}")


if __name__ == "__main__":
    main()
