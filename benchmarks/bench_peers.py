"""Twelve CPU workloads: nuvec against PyTorch eager, JAX `jit` and plain NumPy.

Run: python benchmarks/bench_peers.py [--quick] [--repeats N] [--rounds R] [--threads N]
                                     [--only LIB ...] [--compiled]

Each library runs in its own process (this script started again with `--worker LIB`), one
process per workload and library, the libraries taking turns on each workload, on the same
inputs (NumPy's generator, fixed seeds), with its own default threading (`--threads N` sets
every library to N threads: the usual environment variables, and `torch.set_num_threads`).
Every output is checked against the same formula computed in float64 NumPy (on one thread,
then a pause: see SETTLE) before it is timed; a mismatch is printed next to the time. Times are
the best of N runs after a warm-up (nuvec: recording and evaluation; JAX: a jitted function
and `block_until_ready`). The table shows each time, nuvec / peer ratios (lower is better)
and their geometric means. The nuvec measured is the one of the checkout this script lives in.
The whole sequence runs three times by default (`--rounds`): on a shared virtual machine one
process can run a workload 1.5x slower than the next one for every library alike, and the best
of several processes removes that. The header names NumPy's BLAS and the kernels it picked.
`--compiled` runs nuvec's MLP step and tanh gradient as MLX code writes them: the step under
`mx.compile` with the model's and the optimizer's state as `inputs` and `outputs`, the
gradient as `grad(compile(f))` (the other libraries run as without it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = ("nuvec", "torch", "jax", "numpy")
CHAIN = 256  # ops in the dispatch chain
EPS = 1e-5
LR = 0.01
# Seconds a worker waits between its check against float64 NumPy and its timing. NumPy's
# OpenBLAS keeps its threads spinning for a while after a call from several threads: the
# reference, computed on one thread, starts none, and the wait lets those of the library's
# own first run go idle, so a library with other threads (PyTorch's and MKL's OpenMP) is not
# timed against a spinning OpenBLAS thread (which took PyTorch's 1024^3 matmul from about
# 5.5 ms to 10 on two cores).
SETTLE = 0.3


# -- inputs and float64 references -----------------------------------------------------------

def shapes(quick: bool) -> dict[str, tuple[int, ...]]:
    """The workloads' shapes (`--quick`: about a quarter of the work)."""
    if quick:
        return {"big": (1024, 1024), "matmul": (512,), "norm": (2, 512, 4096),
                "softmax": (8, 512, 512), "attention": (1, 8, 512, 64),
                "rope": (1, 8, 512, 128), "mlp": (256,), "tanh": (256, 512),
                "ce": (512, 8192)}
    return {"big": (2048, 2048), "matmul": (1024,), "norm": (8, 512, 4096),
            "softmax": (32, 512, 512), "attention": (1, 8, 1024, 64),
            "rope": (1, 32, 512, 128), "mlp": (256,), "tanh": (256, 512),
            "ce": (2048, 8192)}


def normal(seed: int, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mlp_data(batch: int) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    sizes = [784, 512, 512, 10]
    ws = [(rng.standard_normal((n, m)) * np.sqrt(2.0 / m)).astype(np.float32)
          for m, n in zip(sizes[:-1], sizes[1:])]  # (out, in), as nn.Linear and torch store
    bs = [(rng.standard_normal(n) * 0.1).astype(np.float32) for n in sizes[1:]]
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    return {"w": ws, "b": bs, "x": x, "y": y}


def inputs(quick: bool, name: str) -> dict[str, Any]:
    """Workload `name`'s inputs as float32/int32 NumPy arrays (the same in every process)."""
    s = shapes(quick)
    n, m, norm, sm = s["big"], s["matmul"][0], s["norm"], s["softmax"]
    att, ce = s["attention"], s["ce"]
    make = {
        "dispatch": lambda: {"x": np.linspace(0.1, 1.0, 16, dtype=np.float32)},
        "exp(x)*w+b": lambda: {"x": normal(1, n), "w": normal(2, n), "b": normal(3, n[-1:])},
        "matmul": lambda: {"a": normal(4, (m, m)), "b": normal(5, (m, m))},
        "rms_norm": lambda: {"x": normal(6, norm), "w": normal(7, norm[-1:])},
        "layer_norm": lambda: {"x": normal(6, norm), "w": normal(7, norm[-1:]),
                               "b": normal(8, norm[-1:])},
        "softmax": lambda: {"x": normal(10, sm)},
        "attention": lambda: {"q": normal(11, att), "k": normal(12, att), "v": normal(13, att)},
        "rope": lambda: {"x": normal(14, s["rope"])},
        "mlp_step": lambda: mlp_data(s["mlp"][0]),
        "tanh_grad": lambda: {"x": normal(15, s["tanh"], 0.05),
                              "w": normal(16, (512, 512), 0.05)},
        "logsumexp": lambda: {"x": normal(10, sm)},
        "cross_entropy": lambda: {"x": normal(17, ce), "t": np.random.default_rng(9).integers(
            0, ce[1], ce[0]).astype(np.int32)},
    }
    return make[name]()


TITLES = {
    "dispatch": "per-op dispatch (us/op)", "exp(x)*w+b": "exp(x) * w + b", "matmul": "matmul",
    "rms_norm": "rms_norm", "layer_norm": "layer_norm", "softmax": "softmax",
    "attention": "causal attention", "rope": "rope", "mlp_step": "MLP 784-512-512-10 step",
    "tanh_grad": "grad sum(tanh^3(x @ W))", "logsumexp": "logsumexp",
    "cross_entropy": "cross_entropy",
}


def rope_angles(length: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
    half = dims // 2
    theta = (np.arange(length)[:, None] * 10000.0 ** (-np.arange(half) / half))
    return np.cos(theta), np.sin(theta)


def mlp_reference(d: dict[str, Any]) -> list[np.ndarray]:
    """Loss and the updated weights of one SGD step, in float64 (hand-written backward)."""
    ws = [w.astype(np.float64) for w in d["w"]]
    bs = [b.astype(np.float64) for b in d["b"]]
    y = d["y"]
    acts = [d["x"].astype(np.float64)]
    for w, b in zip(ws[:-1], bs[:-1]):
        acts.append(np.maximum(acts[-1] @ w.T + b, 0.0))
    logits = acts[-1] @ ws[-1].T + bs[-1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=1))
    loss = np.mean(lse - shifted[np.arange(len(y)), y])
    grad = np.exp(shifted - lse[:, None])
    grad[np.arange(len(y)), y] -= 1.0
    grad /= len(y)
    new = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        new[i] = ws[i] - LR * (grad.T @ acts[i])
        if i:
            grad = (grad @ ws[i]) * (acts[i] > 0)
    return [np.array(loss), *new]


def affine_chain(y: Any, scale: Any = 1.0001, shift: Any = 0.5) -> Any:
    """The dispatch workload: `CHAIN` ops, `y * scale + shift` repeated."""
    for _ in range(CHAIN // 2):
        y = y * scale + shift
    return y


def reference(name: str, d: dict[str, Any]) -> Any:
    """`name`'s expected output, computed in float64 NumPy."""
    f = {k: v.astype(np.float64) for k, v in d.items() if isinstance(v, np.ndarray)}
    if name == "dispatch":
        return affine_chain(f["x"])
    if name == "exp(x)*w+b":
        return np.exp(f["x"]) * f["w"] + f["b"]
    if name == "matmul":
        return f["a"] @ f["b"]
    if name in ("rms_norm", "layer_norm"):
        x = f["x"] - (f["x"].mean(-1, keepdims=True) if name == "layer_norm" else 0.0)
        out = x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS) * f["w"]
        return out + f["b"] if name == "layer_norm" else out
    if name in ("softmax", "logsumexp"):
        m = f["x"].max(-1, keepdims=True)
        e = np.exp(f["x"] - m)
        return e / e.sum(-1, keepdims=True) if name == "softmax" else np.log(e.sum(-1)) + m[..., 0]
    if name == "attention":
        q, k, v = f["q"], f["k"], f["v"]
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        n = q.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v
    if name == "rope":
        x = f["x"]
        c, s = rope_angles(x.shape[-2], x.shape[-1])
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
    if name == "mlp_step":
        return mlp_reference(d)
    if name == "tanh_grad":
        t1 = np.tanh(f["x"] @ f["w"])
        t2 = np.tanh(t1)
        t3 = np.tanh(t2)
        g = (1 - t3**2) * (1 - t2**2) * (1 - t1**2)
        return f["x"].T @ g
    if name == "cross_entropy":
        x, t = f["x"], d["t"]
        m = x.max(-1, keepdims=True)
        return np.log(np.exp(x - m).sum(-1)) + m[:, 0] - x[np.arange(len(t)), t]
    raise KeyError(name)


def rel_error(out: Any, ref: Any) -> float:
    """The largest error relative to the reference's largest magnitude (over every output)."""
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    if len(outs) != len(refs):
        return math.inf
    worst = 0.0
    for o, r in zip(outs, refs):
        o = np.asarray(o, dtype=np.float64)
        if o.shape != r.shape:
            return math.inf
        worst = max(worst, float(np.max(np.abs(o - r)) / max(np.max(np.abs(r)), 1e-30)))
    return worst


# -- the workers -----------------------------------------------------------------------------

def best_of(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run_worker(lib: str, names: list[str], quick: bool, repeats: int, compiled: bool) -> None:
    """Builds `lib`'s workloads `names` (nuvec's `compiled` ones with `compiled`), checks each
    against float64 NumPy, times it; prints the results as JSON."""
    if lib == "nuvec":
        sys.path.insert(0, ROOT)
    threads = os.environ.get("OMP_NUM_THREADS")
    if lib == "torch" and threads:
        import torch

        torch.set_num_threads(int(threads))
    build = (nuvec_workloads(compiled) if lib == "nuvec" else
             {"torch": torch_workloads, "jax": jax_workloads, "numpy": numpy_workloads}[lib]())
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            data = inputs(quick, name)
            fn, fetch = build[name](data)
            with threadpool_limits(limits=1, user_api="blas"):  # see SETTLE
                expected = reference(name, data)
            error = rel_error(fetch(fn()), expected)
            time.sleep(SETTLE)
            seconds = best_of(fn, repeats)
            if name == "dispatch":
                seconds /= CHAIN
            results[name] = {"seconds": seconds, "error": error}
        except Exception as exc:  # a library lacking an op: reported, not fatal
            results[name] = {"failed": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def numpy_rope(x: np.ndarray, xp: Any = np) -> Any:
    """Non-traditional RoPE (rotated halves) with base 10000, angles computed each call."""
    length, dims = x.shape[-2], x.shape[-1]
    half = dims // 2
    theta = xp.arange(length, dtype=xp.float32)[:, None] * \
        (10000.0 ** (-xp.arange(half, dtype=xp.float32) / half))
    c, s = xp.cos(theta), xp.sin(theta)
    x1, x2 = x[..., :half], x[..., half:]
    return xp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def formulas(xp: Any) -> dict[str, Callable[..., Any]]:
    """The workloads written with an array namespace (NumPy, or jax.numpy under `jit`)."""

    def norm(x, w, b=None):
        if b is not None:
            x = x - x.mean(-1, keepdims=True)
        out = x / xp.sqrt(xp.mean(x * x, -1, keepdims=True) + EPS) * w
        return out if b is None else out + b

    def softmax(x):
        e = xp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def logsumexp(x):
        m = x.max(-1, keepdims=True)
        return xp.log(xp.exp(x - m).sum(-1)) + m[..., 0]

    def attention(q, k, v):
        n = q.shape[-2]
        scores = q @ xp.swapaxes(k, -1, -2) * (1.0 / math.sqrt(q.shape[-1]))
        scores = xp.where(xp.tril(xp.ones((n, n), bool)), scores, -xp.inf)
        return softmax(scores) @ v

    def cross_entropy(x, t):
        picked = xp.take_along_axis(x, t[:, None], axis=-1)[:, 0]
        return logsumexp(x) - picked

    return {"exp(x)*w+b": lambda x, w, b: xp.exp(x) * w + b, "matmul": lambda a, b: a @ b,
            "rms_norm": norm, "layer_norm": norm, "softmax": softmax, "logsumexp": logsumexp,
            "attention": attention, "rope": lambda x: numpy_rope(x, xp),
            "cross_entropy": cross_entropy}


ARGS = {"exp(x)*w+b": "xwb", "matmul": "ab", "rms_norm": "xw", "layer_norm": "xwb",
        "softmax": "x", "logsumexp": "x", "attention": "qkv", "rope": "x", "cross_entropy": "xt"}


def numpy_workloads() -> dict[str, Callable]:
    def plain(f, names):
        return lambda d: ((lambda: f(*[d[k] for k in names])), np.asarray)

    def dispatch(d):
        scale, shift = np.float32(1.0001), np.float32(0.5)  # float32 results, as the others'
        return (lambda: affine_chain(d["x"], scale, shift)), np.asarray

    def tanh_grad(d):
        x, w = d["x"], d["w"]

        def run():
            t1 = np.tanh(x @ w)
            t2 = np.tanh(t1)
            t3 = np.tanh(t2)
            return x.T @ ((1 - t3 * t3) * (1 - t2 * t2) * (1 - t1 * t1))
        return run, np.asarray

    out = {"dispatch": dispatch, "tanh_grad": tanh_grad, "mlp_step": numpy_mlp}
    out.update({k: plain(f, ARGS[k]) for k, f in formulas(np).items()})
    return out


def numpy_mlp(d):
    state = {"w": [w.copy() for w in d["w"]], "b": [b.copy() for b in d["b"]]}
    x, y = d["x"], d["y"]
    rows = np.arange(len(y))

    def run():
        ws, bs = state["w"], state["b"]
        acts = [x]
        for w, b in zip(ws[:-1], bs[:-1]):
            acts.append(np.maximum(acts[-1] @ w.T + b, 0.0))
        logits = acts[-1] @ ws[-1].T + bs[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(shifted).sum(axis=1))
        loss = np.mean(lse - shifted[rows, y])
        grad = np.exp(shifted - lse[:, None])
        grad[rows, y] -= 1.0
        grad /= len(y)
        new_w, new_b = list(ws), list(bs)
        for i in range(len(ws) - 1, -1, -1):
            new_w[i] = ws[i] - LR * (grad.T @ acts[i])
            new_b[i] = bs[i] - LR * grad.sum(axis=0)
            if i:
                grad = (grad @ ws[i]) * (acts[i] > 0)
        state["w"], state["b"] = new_w, new_b
        return [loss, *new_w]
    return run, lambda outs: outs


def nuvec_workloads(compiled: bool = False) -> dict[str, Callable]:
    """nuvec's workloads; with `compiled`, the MLP step and the tanh gradient compiled as MLX
    code compiles them."""
    import nuvec as mx
    import nuvec.nn as nn
    import nuvec.optimizers as optim

    def evaluated(f):
        def make(d):
            arrays = {k: mx.array(v) for k, v in d.items()}

            def run():
                out = f(arrays)
                mx.eval(out)
                return out
            return run, lambda out: np.asarray(out)
        return make

    def dispatch(a):
        return affine_chain(a["x"])

    fast = mx.fast
    grad_w = {}

    def tanh_grad(a):
        if "f" not in grad_w:
            x = a["x"]
            def f(w):
                return mx.sum(mx.tanh(mx.tanh(mx.tanh(x @ w))))

            grad_w["f"] = mx.grad(mx.compile(f) if compiled else f)
        return grad_w["f"](a["w"])

    table = {
        "dispatch": dispatch,
        "exp(x)*w+b": lambda a: mx.exp(a["x"]) * a["w"] + a["b"],
        "matmul": lambda a: a["a"] @ a["b"],
        "rms_norm": lambda a: fast.rms_norm(a["x"], a["w"], EPS),
        "layer_norm": lambda a: fast.layer_norm(a["x"], a["w"], a["b"], EPS),
        "softmax": lambda a: mx.softmax(a["x"], axis=-1),
        "attention": lambda a: fast.scaled_dot_product_attention(
            a["q"], a["k"], a["v"], scale=1.0 / math.sqrt(a["q"].shape[-1]), mask="causal"),
        "rope": lambda a: fast.rope(a["x"], a["x"].shape[-1], traditional=False, base=10000.0,
                                    scale=1.0, offset=0),
        "tanh_grad": tanh_grad,
        "logsumexp": lambda a: mx.logsumexp(a["x"], axis=-1),
        "cross_entropy": lambda a: fast.cross_entropy(a["x"], a["t"]),
    }
    out = {k: evaluated(f) for k, f in table.items()}

    def mlp_step(d):
        layers = [nn.Linear(w.shape[1], w.shape[0]) for w in d["w"]]
        for layer, w, b in zip(layers, d["w"], d["b"]):
            layer.weight, layer.bias = mx.array(w), mx.array(b)
        model = nn.Sequential(layers[0], nn.ReLU(), layers[1], nn.ReLU(), layers[2])
        optimizer = optim.SGD(learning_rate=LR)
        x, y = mx.array(d["x"]), mx.array(d["y"])
        loss_and_grad = nn.value_and_grad(
            model, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean"))

        def step():
            loss, grads = loss_and_grad(model, x, y)
            optimizer.update(model, grads)
            return loss

        state = [model.state, optimizer.state]
        if compiled:
            step = mx.compile(step, inputs=state, outputs=state)

        def run():
            loss = step()
            mx.eval(state, loss)
            return [loss, *[layer.weight for layer in layers]]
        return run, lambda outs: [np.asarray(o) for o in outs]

    out["mlp_step"] = mlp_step
    return out


def torch_workloads() -> dict[str, Callable]:
    import torch
    import torch.nn.functional as F

    def tensors(f):
        def make(d):
            t = {k: torch.from_numpy(v) for k, v in d.items()}
            return (lambda: f(t)), lambda out: out.detach().numpy()
        return make

    def dispatch(t):
        return affine_chain(t["x"])

    def tanh_grad(t):
        w = t["w"].requires_grad_(True)
        return torch.autograd.grad(torch.tanh(torch.tanh(torch.tanh(t["x"] @ w))).sum(), [w])[0]

    def rope(t):  # as `numpy_rope`, in torch
        x = t["x"]
        length, half = x.shape[-2], x.shape[-1] // 2
        theta = torch.arange(length, dtype=torch.float32)[:, None] * \
            (10000.0 ** (-torch.arange(half, dtype=torch.float32) / half))
        c, s = torch.cos(theta), torch.sin(theta)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)

    table = {
        "dispatch": dispatch,
        "exp(x)*w+b": lambda t: torch.exp(t["x"]) * t["w"] + t["b"],
        "matmul": lambda t: t["a"] @ t["b"],
        "rms_norm": lambda t: F.rms_norm(t["x"], t["x"].shape[-1:], t["w"], EPS),
        "layer_norm": lambda t: F.layer_norm(t["x"], t["x"].shape[-1:], t["w"], t["b"], EPS),
        "softmax": lambda t: torch.softmax(t["x"], -1),
        "attention": lambda t: F.scaled_dot_product_attention(t["q"], t["k"], t["v"],
                                                              is_causal=True),
        "rope": rope,
        "tanh_grad": tanh_grad,
        "logsumexp": lambda t: torch.logsumexp(t["x"], -1),
        "cross_entropy": lambda t: F.cross_entropy(t["x"], t["t"].long(), reduction="none"),
    }
    out = {k: tensors(f) for k, f in table.items()}
    out["mlp_step"] = torch_mlp
    return out


def torch_mlp(d):
    import torch

    layers = [torch.nn.Linear(w.shape[1], w.shape[0]) for w in d["w"]]
    with torch.no_grad():
        for layer, w, b in zip(layers, d["w"], d["b"]):
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b))
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"].astype(np.int64))

    def run():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return [loss.detach(), *[layer.weight.detach() for layer in layers]]
    return run, lambda outs: [o.numpy().copy() for o in outs]


def jax_workloads() -> dict[str, Callable]:
    import jax
    import jax.numpy as jnp

    def jitted(f, names):
        g = jax.jit(f)

        def make(d):
            args = [jnp.asarray(d[k]) for k in names]
            return (lambda: g(*args).block_until_ready()), np.asarray
        return make

    def dispatch(d):
        step = jax.jit(lambda y: y * 1.0001 + 0.5)  # one call per two ops: JAX's dispatch
        x = jnp.asarray(d["x"])

        def run():
            y = x
            for _ in range(CHAIN // 2):
                y = step(y)
            return y.block_until_ready()
        return run, np.asarray

    def tanh_grad(d):
        x, w = jnp.asarray(d["x"]), jnp.asarray(d["w"])
        g = jax.jit(jax.grad(lambda w: jnp.sum(jnp.tanh(jnp.tanh(jnp.tanh(x @ w))))))
        return (lambda: g(w).block_until_ready()), np.asarray

    out = {"dispatch": dispatch, "tanh_grad": tanh_grad, "mlp_step": jax_mlp}
    out.update({k: jitted(f, ARGS[k]) for k, f in formulas(jnp).items()})
    return out


def jax_mlp(d):
    import jax
    import jax.numpy as jnp

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w.T + b)
        w, b = params[-1]
        logits = h @ w.T + b
        picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked)

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return loss, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)

    state = {"p": [(jnp.asarray(w), jnp.asarray(b)) for w, b in zip(d["w"], d["b"])]}
    x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"])

    def run():
        loss, state["p"] = step(state["p"], x, y)
        loss.block_until_ready()
        return [loss, *[w for w, _ in state["p"]]]
    return run, lambda outs: [np.asarray(o) for o in outs]


# -- the driver ------------------------------------------------------------------------------

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUVEC_NUM_THREADS")


def measure(lib: str, names: list[str], args: argparse.Namespace) -> dict[str, Any] | str:
    """`lib`'s results on workloads `names` from a worker process, or why there are none."""
    env = dict(os.environ)
    if args.threads:
        env.update({k: str(args.threads) for k in THREAD_VARIABLES})
        multi = "true" if args.threads > 1 else "false"
        env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + f" --xla_cpu_multi_thread_eigen={multi}"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--repeats",
           str(args.repeats), "--workloads", *names] + (["--quick"] if args.quick else []) + (
           ["--compiled"] if args.compiled else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"worker failed: {last}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def interleaved(args: argparse.Namespace) -> dict[str, Any]:
    """Every library's results, one process per (workload, library), the libraries taking
    turns on each workload (so a change in the machine's load hits them alike); with
    `--rounds R` the whole sequence runs R times and each time is the best over the rounds."""
    results: dict[str, Any] = {lib: {} for lib in args.only}
    for _ in range(args.rounds):
        for name in TITLES:
            for lib in args.only:
                got = measure(lib, [name], args)
                if isinstance(got, str):
                    results[lib] = got
                    continue
                if isinstance(results[lib], dict):
                    old = results[lib].get(name)
                    new = got[name]
                    if old is None or old.get("seconds", math.inf) > new.get("seconds", math.inf):
                        results[lib][name] = new
    return results


def cell(entry: dict[str, Any] | None, name: str) -> str:
    if entry is None:
        return f"{'-':>10s}"
    if "failed" in entry:
        return f"{'failed':>10s}"
    t = entry["seconds"] * (1e6 if name == "dispatch" else 1e3)
    flag = "" if entry["error"] <= TOLERANCE else "!"
    return f"{t:9.3f}{flag or ' '}"


TOLERANCE = 2e-3  # relative to the reference's largest magnitude, float32 against float64


def table(results: dict[str, Any]) -> None:
    """Prints times (ms; dispatch in us/op), nuvec / peer ratios and their geometric means."""
    libs = [lib for lib in LIBRARIES if isinstance(results.get(lib), dict)]
    peers = [lib for lib in libs if lib != "nuvec"]
    print(f"{'workload':28s}" + "".join(f"{lib:>10s}" for lib in libs) +
          "".join(f"{'nuvec/' + p:>13s}" for p in peers))
    logs: dict[str, list[float]] = {p: [] for p in peers}
    for name in TITLES:
        row = f"{TITLES[name]:28s}" + "".join(cell(results[lib].get(name), name) for lib in libs)
        ours = results.get("nuvec", {}).get(name, {}) if "nuvec" in libs else {}
        for p in peers:
            theirs = results[p].get(name, {})
            if "seconds" in ours and "seconds" in theirs:
                ratio = ours["seconds"] / theirs["seconds"]
                logs[p].append(math.log(ratio))
                row += f"{ratio:13.2f}"
            else:
                row += f"{'-':>13s}"
        print(row)
    print(f"{'geometric mean':28s}" + " " * 10 * len(libs) + "".join(
        f"{math.exp(sum(v) / len(v)):13.2f}" if v else f"{'-':>13s}" for v in logs.values()))
    for lib in libs:
        for name, entry in results[lib].items():
            if "failed" in entry:
                print(f"{lib} {name}: {entry['failed']}")
            elif entry["error"] > TOLERANCE:
                print(f"{lib} {name}: ! relative error {entry['error']:.2e} against float64")
    for lib in LIBRARIES:
        if isinstance(results.get(lib), str):
            print(f"{lib}: {results[lib]}")


def blas_line() -> str:
    """Which BLAS NumPy (and so nuvec's CPU backend) runs, with its kernels and threads: OpenBLAS
    picks its kernels from the CPU model at load (`OPENBLAS_CORETYPE` overrides it)."""
    from threadpoolctl import threadpool_info

    found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not found:
        return "NumPy's BLAS: not found by threadpoolctl"
    i = found[0]
    return (f"NumPy's BLAS: {i.get('internal_api')} {i.get('version')}, "
            f"{i.get('architecture') or 'unknown'} kernels, {i.get('num_threads')} threads")


def mkl_line() -> str:
    """Whether nuvec's workers compute with MKL's products and vector math (the `mkl` extra,
    `NUVEC_MKL`) and with C compiled on this machine (`NUVEC_NATIVE`), asked of a process with
    this one's environment."""
    code = ("from nuvec.backends.numpy import mkl; from nuvec.backends import native;"
            "from nuvec.backends import vector_math as v;"
            "print(mkl.available(), v.in_use(), native.compiler() is not None)")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        return "nuvec's MKL use: unknown (the check failed)"
    products, vector_math, compiled = run.stdout.split()
    exp = {"vml": "MKL's vector math", "c": "nuvec's C"}.get(vector_math, "NumPy's")
    return (f"nuvec: MKL's products {'on' if products == 'True' else 'off'}, exp {exp}, "
            f"generated C chains {'on' if compiled == 'True' else 'off'} "
            f"(NUVEC_MKL={os.environ.get('NUVEC_MKL', '1')}, "
            f"NUVEC_NATIVE={os.environ.get('NUVEC_NATIVE', '1')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="threads for every library")
    parser.add_argument("--only", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    parser.add_argument("--rounds", type=int, default=3,
                        help="repeat the whole sequence (each time: the best over the rounds)")
    parser.add_argument("--compiled", action="store_true",
                        help="nuvec's MLP step and tanh gradient under mx.compile")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--workloads", nargs="+", default=list(TITLES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.repeats = args.repeats or (3 if args.quick else 10)
    if args.worker:
        run_worker(args.worker, args.workloads, args.quick, args.repeats, args.compiled)
        return
    results = interleaved(args)
    print(blas_line())
    print(mkl_line())
    if args.compiled:
        print("nuvec's MLP step and tanh gradient compiled (mx.compile), as MLX code writes them")
    print(f"times in ms (dispatch: us per op), best of {args.repeats} x {args.rounds} "
          f"round(s); '!' marks an output off float64 NumPy by more than {TOLERANCE:g}")
    table(results)


if __name__ == "__main__":
    main()
