"""Data-parallel training of an MLP classifier with `nuvec.distributed` and `nuvec.nn`.

    mpiexec -n 2 python examples/data_parallel.py     # 2 processes, one shard of each batch
    python examples/data_parallel.py                  # 1 process: the same batches whole

Every step draws one global batch of the spirals of `mlp.py` (the same on every process),
each process takes its shard, computes gradients on it, and `nn.average_gradients` makes them
the gradients of the whole batch, so every process applies the same SGD update: the
parameters stay identical on all ranks and the loss curve is that of one process training on
the whole batches.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
from mlp import make_spirals

import nuvec as mx
import nuvec.nn as nn


def shard(batch: np.ndarray, rank: int, size: int) -> np.ndarray:
    """This process's equal share of a batch (the batch size must divide evenly)."""
    per = len(batch) // size
    return batch[rank * per:(rank + 1) * per]


def make_model(hidden: int, classes: int, seed: int) -> nn.Module:
    """Two ReLU hidden layers; seeded, so every process starts from the same parameters."""
    mx.random.seed(seed)
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def train(steps: int = 60, global_batch: int = 96, lr: float = 0.2, hidden: int = 64,
          seed: int = 0, verbose: bool = True) -> tuple[list[float], nn.Module]:
    """Trains for `steps` SGD steps; returns the global mean loss per step and the model."""
    world = mx.distributed.init()
    rank, size = world.rank(), world.size()
    if global_batch % size:
        raise ValueError(f"train: global_batch {global_batch} must be divisible by the number "
                         f"of processes {size}")
    features, labels = make_spirals(seed=seed)
    model = make_model(hidden, int(labels.max()) + 1, seed + 1)

    def loss_fn(x: mx.Array, y: mx.Array) -> mx.Array:
        return mx.mean(mx.fast.cross_entropy(model(x), y))

    step = nn.value_and_grad(model, loss_fn)
    order_rng = np.random.default_rng(seed + 2)  # the same batches on every process
    losses = []
    start = time.perf_counter()
    for k in range(steps):
        idx = shard(order_rng.choice(len(labels), global_batch, replace=False), rank, size)
        loss, grads = step(mx.array(features[idx]), mx.array(labels[idx]))
        grads = nn.average_gradients(grads)
        model.update(mx.utils.tree_map(lambda p, g: p - lr * g, model.trainable_parameters(),
                                       grads))
        loss = mx.distributed.all_sum(loss) / size  # the mean over the whole batch
        mx.eval(model.parameters(), loss)
        losses.append(loss.item())
        if verbose and rank == 0 and (k % 10 == 0 or k == steps - 1):
            print(f"step {k:4d}  loss {losses[-1]:.5f}")
    if verbose and rank == 0:
        elapsed = time.perf_counter() - start
        print(f"{size} process(es): {steps * global_batch / elapsed:.0f} samples/s "
              f"({elapsed / steps * 1e3:.1f} ms per step)")
    return losses, model


def flat_parameters(model: nn.Module) -> dict[str, np.ndarray]:
    return {name: np.asarray(value) for name, value in mx.utils.tree_flatten(model.parameters())}


def fingerprint(model: nn.Module) -> str:
    """A hash of the parameters' bytes (equal on every rank when they are identical)."""
    digest = hashlib.sha256()
    for name, value in sorted(flat_parameters(model).items()):
        digest.update(name.encode() + value.tobytes())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--global-batch", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--out", help="rank 0 saves the loss curve and parameters here (.npz)")
    args = parser.parse_args()
    losses, model = train(args.steps, args.global_batch, hidden=args.hidden)
    world = mx.distributed.init()
    print(f"rank {world.rank()} parameters {fingerprint(model)}")
    if args.out and world.rank() == 0:
        np.savez(args.out, losses=np.array(losses), **flat_parameters(model))


if __name__ == "__main__":
    main()
