"""Transformation benchmarks: an MLP training step, a tanh-chain gradient, tracing overhead,
and the peak memory of a deep gradient with and without `checkpoint`.

Run: python benchmarks/bench_transforms.py [--quick]
nuvec is measured against hand-written NumPy forward and backward passes (and PyTorch eager
when it is installed) in the same run; ratios are nuvec / peer (lower is better).
"""

from __future__ import annotations

import argparse
import gc

import numpy as np

import nuvec as mx
from bench_engine import best_of, report  # benchmarks/ is the script's directory


def _torch():
    try:
        import torch

        torch.set_num_threads(1)
        return torch
    except ImportError:
        return None


def _mlp_data(rng):
    sizes = [784, 512, 512, 10]
    weights = [(rng.standard_normal((m, n)) * np.sqrt(2.0 / m)).astype(np.float32)
               for m, n in zip(sizes[:-1], sizes[1:])]
    biases = [np.zeros(n, np.float32) for n in sizes[1:]]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256).astype(np.int32)
    return weights, biases, x, y


def bench_mlp_step(repeats: int, lr: float = 0.01) -> None:
    """One SGD step of a 784-512-512-10 ReLU MLP on a batch of 256, cross-entropy loss."""
    weights, biases, x_np, y_np = _mlp_data(np.random.default_rng(0))

    params = [{"w": mx.array(w), "b": mx.array(b)} for w, b in zip(weights, biases)]
    x, y = mx.array(x_np), mx.array(y_np)

    def loss_fn(ps):
        h = x
        for layer in ps[:-1]:
            h = mx.maximum(mx.matmul(h, layer["w"]) + layer["b"], 0.0)
        logits = mx.matmul(h, ps[-1]["w"]) + ps[-1]["b"]
        picked = mx.take_along_axis(logits, mx.expand_dims(y, 1), axis=1)
        return mx.mean(mx.logsumexp(logits, axis=1) - mx.squeeze(picked, 1))

    step = mx.value_and_grad(loss_fn)
    state = {"params": params}

    def nuvec_step():
        loss, grads = step(state["params"])
        state["params"] = mx.utils.tree_map(lambda p, g: p - lr * g, state["params"], grads)
        mx.eval(state["params"], loss)

    np_state = {"w": [w.copy() for w in weights], "b": [b.copy() for b in biases]}

    def numpy_step():
        ws, bs = np_state["w"], np_state["b"]
        acts = [x_np]
        for w, b in zip(ws[:-1], bs[:-1]):
            acts.append(np.maximum(acts[-1] @ w + b, 0.0))
        logits = acts[-1] @ ws[-1] + bs[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        grad = probs
        grad[np.arange(len(y_np)), y_np] -= 1.0
        grad /= len(y_np)
        new_w, new_b = [], []
        for i in range(len(ws) - 1, -1, -1):
            new_w.append(ws[i] - lr * (acts[i].T @ grad))
            new_b.append(bs[i] - lr * grad.sum(axis=0))
            if i:
                grad = (grad @ ws[i].T) * (acts[i] > 0)
        np_state["w"], np_state["b"] = new_w[::-1], new_b[::-1]

    peers = {"numpy": best_of(numpy_step, repeats)}
    torch = _torch()
    if torch is not None:
        tw = [torch.tensor(w, requires_grad=True) for w in weights]
        tb = [torch.tensor(b, requires_grad=True) for b in biases]
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np.astype(np.int64))

        def torch_step():
            h = tx
            for w, b in zip(tw[:-1], tb[:-1]):
                h = torch.relu(h @ w + b)
            loss = torch.nn.functional.cross_entropy(h @ tw[-1] + tb[-1], ty)
            grads = torch.autograd.grad(loss, tw + tb)
            with torch.no_grad():
                for p, g in zip(tw + tb, grads):
                    p -= lr * g

        peers["torch"] = best_of(torch_step, repeats)
    report("MLP 784-512-512-10 SGD step (batch 256)", best_of(nuvec_step, repeats), peers)


def bench_tanh_chain(repeats: int) -> None:
    """d/dW sum(tanh(tanh(tanh(x @ W)))) for x [256, 512], W [512, 512]."""
    rng = np.random.default_rng(1)
    x_np = (rng.standard_normal((256, 512)) * 0.05).astype(np.float32)
    w_np = (rng.standard_normal((512, 512)) * 0.05).astype(np.float32)
    x, w = mx.array(x_np), mx.array(w_np)
    gradient = mx.grad(lambda w_: mx.sum(mx.tanh(mx.tanh(mx.tanh(mx.matmul(x, w_))))))

    def nuvec_grad():
        mx.eval(gradient(w))

    def numpy_grad():
        t1 = np.tanh(x_np @ w_np)
        t2 = np.tanh(t1)
        t3 = np.tanh(t2)
        g = (1 - t3 * t3)
        g *= 1 - t2 * t2
        g *= 1 - t1 * t1
        return x_np.T @ g

    np.testing.assert_allclose(np.asarray(gradient(w)), numpy_grad(), rtol=1e-4, atol=1e-5)
    peers = {"numpy": best_of(numpy_grad, repeats)}
    torch = _torch()
    if torch is not None:
        tx, tw = torch.from_numpy(x_np), torch.tensor(w_np, requires_grad=True)

        def torch_grad():
            torch.autograd.grad(torch.tanh(torch.tanh(torch.tanh(tx @ tw))).sum(), [tw])

        peers["torch"] = best_of(torch_grad, repeats)
    report("grad sum(tanh^3(x @ W)) [256,512]x[512,512]", best_of(nuvec_grad, repeats), peers)


def bench_tracing_overhead(repeats: int) -> None:
    """What `grad` adds to a 256-op scalar chain, per op (forward alone vs value_and_grad)."""
    ops = 256
    x = mx.array(0.5)

    def chain(a):
        for _ in range(ops // 2):
            a = mx.sin(a * 1.0001)
        return a

    def forward_only():
        mx.eval(chain(x))

    value_and_grad = mx.value_and_grad(chain)

    def with_grad():
        mx.eval(value_and_grad(x))

    def trace_only():
        value_and_grad(x)

    t_forward = best_of(forward_only, repeats)
    t_grad = best_of(with_grad, repeats)
    t_trace = best_of(trace_only, repeats)
    print(f"{'grad tracing overhead, 256-op scalar chain':44s} forward {t_forward / ops * 1e6:6.1f}"
          f" us/op, value_and_grad {t_grad / ops * 1e6:6.1f} us/op, grad adds "
          f"{(t_grad - t_forward) / ops * 1e6:6.1f} us/op (of which building the graphs "
          f"{t_trace / ops * 1e6:6.1f} us/op)")


def bench_checkpoint_memory(depth: int = 32, width: int = 256, batch: int = 2048) -> None:
    """Peak memory of a deep tanh MLP's gradient, plain and with each 4-layer block checkpointed."""
    rng = np.random.default_rng(2)
    x = mx.array(rng.standard_normal((batch, width)) * 0.1)
    ws = [mx.array(rng.standard_normal((width, width)) / np.sqrt(width)) for _ in range(depth)]
    mx.eval(x, ws)

    def block(h, block_ws):
        for w in block_ws:
            h = mx.tanh(mx.matmul(h, w))
        return h

    saved = mx.checkpoint(block)

    def plain(params):
        return mx.sum(block(x, params))

    def checkpointed(params):
        h = x
        for i in range(0, depth, 4):
            h = saved(h, params[i:i + 4])
        return mx.sum(h)

    peaks = {}
    for name, fn in (("plain", plain), ("checkpoint", checkpointed)):
        gc.collect()
        base = mx.get_active_memory()
        mx.reset_peak_memory()
        grads = mx.grad(fn)(ws)
        mx.eval(grads)
        peaks[name] = mx.get_peak_memory() - base
        del grads
    activation = batch * width * 4
    print(f"{'peak memory of a deep MLP gradient':44s} plain {peaks['plain'] / 2**20:7.1f} MiB, "
          f"checkpoint {peaks['checkpoint'] / 2**20:7.1f} MiB ({depth} layers {width} wide, "
          f"batch {batch}; one activation {activation / 2**20:.1f} MiB, weights' gradients "
          f"{depth * width * width * 4 / 2**20:.1f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    bench_mlp_step(repeats)
    bench_tanh_chain(repeats)
    bench_tracing_overhead(repeats)
    bench_checkpoint_memory()


if __name__ == "__main__":
    main()
