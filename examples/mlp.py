"""Train a small MLP classifier on interleaved spirals with `nuvec.nn` and `nuvec.optimizers`.

    python examples/mlp.py            # full run: reaches >= 95% training accuracy
    python examples/mlp.py --quick    # a few epochs (what the test suite runs)

The data set is made here, deterministically (NumPy's generator with a fixed seed): points on
three interleaved spiral arms, with a little noise. The model is an `nn.Module` of `nn.Linear`
layers, the loss `nn.losses.cross_entropy`, the gradients `nn.value_and_grad`'s and the
updates `optim.Adam`'s; the step is compiled with `mx.compile` (`--no-compile` runs it plain).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nuvec as mx
import nuvec.nn as nn
import nuvec.optimizers as optim


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


class MLP(nn.Module):
    """ReLU hidden layers and a linear output layer."""

    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.layers = [nn.Linear(m, n) for m, n in zip(sizes[:-1], sizes[1:])]

    def __call__(self, x: mx.array) -> mx.array:
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def train(epochs: int = 100, batch_size: int = 90, lr: float = 0.01, hidden: int = 64,
          seed: int = 0, verbose: bool = True, compiled: bool = True) -> list[tuple[float, float]]:
    """Trains on the spirals with Adam; returns (mean loss, training accuracy) per epoch.

    `compiled`: the training step runs through `mx.compile` (as MLX's examples do).
    """
    features, labels = make_spirals(seed=seed)
    x_all, y_all = mx.array(features), mx.array(labels)
    mx.random.seed(seed + 1)
    model = MLP([2, hidden, hidden, int(labels.max()) + 1])
    optimizer = optim.Adam(learning_rate=lr)

    def loss_fn(x: mx.array, y: mx.array) -> mx.array:
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    state = [model.state, optimizer.state]

    def step(x: mx.array, y: mx.array) -> mx.array:
        loss, grads = loss_and_grad(x, y)
        optimizer.update(model, grads)
        return loss

    if compiled:  # as MLX's examples: traced once, replayed; the state read and written back
        step = mx.compile(step, inputs=state, outputs=state)
    order_rng = np.random.default_rng(seed + 2)
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = order_rng.permutation(len(labels))
        total = 0.0
        for first in range(0, len(order), batch_size):
            idx = order[first:first + batch_size]
            loss = step(mx.array(features[idx]), mx.array(labels[idx]))
            mx.eval(state, loss)
            total += loss.item() * len(idx)
        accuracy = mx.mean(mx.argmax(model(x_all), axis=1) == y_all).item()
        history.append((total / len(order), accuracy))
        if verbose:
            print(f"epoch {epoch:4d}  loss {history[-1][0]:.4f}  accuracy {accuracy:6.1%}  "
                  f"({(time.perf_counter() - start) * 1e3:.0f} ms)")
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="train for 10 epochs only")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--no-compile", action="store_true", help="run the step uncompiled")
    args = parser.parse_args()
    history = train(epochs=10 if args.quick else args.epochs, compiled=not args.no_compile)
    print(f"final loss {history[-1][0]:.4f}, training accuracy {history[-1][1]:.1%}")


if __name__ == "__main__":
    main()
