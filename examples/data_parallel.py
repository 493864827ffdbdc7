"""Data-parallel training of the MLP of `mlp.py` with `nuvec.distributed`.

    mpiexec -n 2 python examples/data_parallel.py     # 2 processes, one shard of each batch
    python examples/data_parallel.py                  # 1 process: the same batches whole

Every step draws one global batch (the same on every process), each process takes its shard,
computes gradients on it, and `average_gradients` makes them the gradients of the whole
batch, so every process applies the same update: the parameters stay identical on all ranks
and the loss curve is that of one process training on the whole batches.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

import nuvec as mx
from mlp import init_params, loss_fn, make_spirals


def shard(batch: np.ndarray, rank: int, size: int) -> np.ndarray:
    """This process's equal share of a batch (the batch size must divide evenly)."""
    per = len(batch) // size
    return batch[rank * per:(rank + 1) * per]


def train(steps: int = 60, global_batch: int = 96, lr: float = 0.2, hidden: int = 64,
          seed: int = 0, verbose: bool = True) -> tuple[list[float], list[dict[str, mx.Array]]]:
    """Trains for `steps` SGD steps; returns the global mean loss per step and the parameters."""
    world = mx.distributed.init()
    rank, size = world.rank(), world.size()
    if global_batch % size:
        raise ValueError(f"train: global_batch {global_batch} must be divisible by the number "
                         f"of processes {size}")
    features, labels = make_spirals(seed=seed)
    params = init_params([2, hidden, hidden, int(labels.max()) + 1], seed=seed + 1)
    step = mx.value_and_grad(loss_fn)
    order_rng = np.random.default_rng(seed + 2)  # the same batches on every process
    losses = []
    start = time.perf_counter()
    for k in range(steps):
        idx = shard(order_rng.choice(len(labels), global_batch, replace=False), rank, size)
        (loss, _), grads = step(params, mx.array(features[idx]), mx.array(labels[idx]))
        grads = mx.distributed.average_gradients(grads)
        params = mx.utils.tree_map(lambda p, g: p - lr * g, params, grads)
        loss = mx.distributed.all_sum(loss) / size  # the mean over the whole batch
        mx.eval(params, loss)
        losses.append(loss.item())
        if verbose and rank == 0 and (k % 10 == 0 or k == steps - 1):
            print(f"step {k:4d}  loss {losses[-1]:.5f}")
    if verbose and rank == 0:
        elapsed = time.perf_counter() - start
        print(f"{size} process(es): {steps * global_batch / elapsed:.0f} samples/s "
              f"({elapsed / steps * 1e3:.1f} ms per step)")
    return losses, params


def fingerprint(params: list[dict[str, mx.Array]]) -> str:
    """A hash of the parameters' bytes (equal on every rank when they are identical)."""
    digest = hashlib.sha256()
    for layer in params:
        for key in sorted(layer):
            digest.update(np.asarray(layer[key]).tobytes())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--global-batch", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--out", help="rank 0 saves the loss curve and parameters here (.npz)")
    args = parser.parse_args()
    losses, params = train(args.steps, args.global_batch, hidden=args.hidden)
    world = mx.distributed.init()
    print(f"rank {world.rank()} parameters {fingerprint(params)}")
    if args.out and world.rank() == 0:
        flat = {f"{i}_{k}": np.asarray(v) for i, layer in enumerate(params)
                for k, v in layer.items()}
        np.savez(args.out, losses=np.array(losses), **flat)


if __name__ == "__main__":
    main()
