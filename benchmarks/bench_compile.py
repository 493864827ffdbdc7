"""`mx.compile` against the same functions uncompiled: a 256-op elementwise chain on small and
large arrays, an 8-op chain `tanh(exp(x) * w + b) * 0.5 + sin(x) - 1` on [2048, 2048], an
SGD step of a 784-512-512-10 ReLU MLP (batch 256) written with `mx.value_and_grad` and as MLX
code writes it (`nn.value_and_grad`, `optimizer.update`, the state compiled as `inputs` and
`outputs`), and `grad(compile(f))` of `sum(tanh(tanh(tanh(x @ W))))`, with NumPy (the MLP
steps: `bench_peers.py`'s NumPy formula of the same step) and `jax.jit` (when importable; never
a dependency of nuvec) on the same work.

Run: python benchmarks/bench_compile.py [--repeats N] [--quick] [--blocks]
Times are medians of N runs, evaluation included; ratios are compiled / uncompiled and
compiled / NumPy (lower is better). nuvec's compile replays the traced, simplified graph
without running the function's Python and fuses elementwise chains: on the CPU a fused chain
runs block by block in cache instead of one full-size temporary per op. `--blocks` times the
8-op chain for several block sizes (elements per block of the CPU's fused kernel).
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from bench_fast import medians  # benchmarks/ is the script's directory
from bench_peers import mlp_data, numpy_mlp

import nuvec as mx

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # JAX is an optional peer
    jax = None


def chain(lib, x):
    """256 elementwise ops: 64 rounds of multiply, add, sin, multiply."""
    for _ in range(64):
        x = lib.sin(x * 0.9 + 0.1) * 1.01
    return x


def bench_chain(n: int, repeats: int) -> None:
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x = mx.array(data)
    compiled = mx.compile(lambda a: chain(mx, a))
    fns = [lambda: mx.eval(chain(mx, x)), lambda: mx.eval(compiled(x)),
           lambda: chain(np, data)]
    if jax is not None:
        jitted, xj = jax.jit(lambda a: chain(jnp, a)), jnp.asarray(data)
        fns.append(lambda: jitted(xj).block_until_ready())
    np.testing.assert_allclose(np.array(compiled(x)), chain(np, data), rtol=1e-4, atol=1e-5)
    report(f"256-op elementwise chain on [{n}]", medians(fns, repeats))


def chain8(lib, x, w, b):
    """8 elementwise ops: exp, multiply, add, tanh, multiply, sin, add, subtract."""
    return lib.tanh(lib.exp(x) * w + b) * 0.5 + lib.sin(x) - 1


def _chain8_data(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    return [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(n, n), (n,), (n,)]]


def bench_chain8(n: int, repeats: int) -> None:
    data = _chain8_data(n)
    arrays = [mx.array(d) for d in data]
    compiled = mx.compile(lambda *a: chain8(mx, *a))
    fns = [lambda: mx.eval(chain8(mx, *arrays)), lambda: mx.eval(compiled(*arrays)),
           lambda: chain8(np, *data)]
    if jax is not None:
        jitted = jax.jit(lambda *a: chain8(jnp, *a))
        peers = [jnp.asarray(d) for d in data]
        fns.append(lambda: jitted(*peers).block_until_ready())
    np.testing.assert_allclose(np.array(compiled(*arrays)), chain8(np, *data), rtol=1e-5,
                               atol=1e-5)
    report(f"8-op chain tanh(exp(x) * w + b) * 0.5 + sin(x) - 1 on [{n}, {n}]",
           medians(fns, repeats))


def bench_blocks(n: int, repeats: int) -> None:
    from nuvec.backends.numpy import fused  # the CPU's fused kernel, whose block size varies

    arrays = [mx.array(d) for d in _chain8_data(n)]
    compiled = mx.compile(lambda *a: chain8(mx, *a))
    saved, sizes = fused.BLOCK, [1 << k for k in range(12, 19)]

    def run(size: int) -> None:
        fused.BLOCK = size
        mx.eval(compiled(*arrays))

    try:
        times = medians([lambda s=s: run(s) for s in sizes], repeats)
    finally:
        fused.BLOCK = saved
    print(f"8-op chain on [{n}, {n}], elements per block: " + ", ".join(
        f"{s // 1024}K {t * 1e3:.2f} ms" for s, t in zip(sizes, times)))


def _mlp(rng):
    sizes = [784, 512, 512, 10]
    params = [(mx.array(rng.standard_normal((i, o)).astype(np.float32) / np.sqrt(i)),
               mx.zeros((o,))) for i, o in itertools.pairwise(sizes)]
    x = mx.array(rng.standard_normal((256, 784)).astype(np.float32))
    y = mx.array(rng.integers(0, 10, 256).astype(np.int32))
    return params, x, y


def _jax_mlp_step(params, x, y):
    """The same SGD step in JAX, jitted (None without JAX)."""
    if jax is None:
        return None
    ps = [(jnp.asarray(np.asarray(w)), jnp.asarray(np.asarray(b))) for w, b in params]
    xj, yj = jnp.asarray(np.asarray(x)), jnp.asarray(np.asarray(y))

    def loss_fn(ps):
        h = xj
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            h = jnp.maximum(h, 0) if i < len(ps) - 1 else h
        picked = jnp.take_along_axis(h, yj[:, None], -1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(h, axis=-1) - picked)

    @jax.jit
    def step(ps):
        loss, grads = jax.value_and_grad(loss_fn)(ps)
        return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(ps, grads)]

    return lambda: jax.block_until_ready(step(ps))


def bench_mlp(repeats: int) -> None:
    params, x, y = _mlp(np.random.default_rng(1))

    def loss_fn(ps):
        h = x
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            h = mx.maximum(h, 0) if i < len(ps) - 1 else h
        return mx.mean(mx.logsumexp(h, axis=-1) - mx.take_along_axis(h, y[:, None], -1)[:, 0])

    def step(ps):
        loss, grads = mx.value_and_grad(loss_fn)(ps)
        return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(ps, grads)]

    compiled = mx.compile(step)
    plain_loss, compiled_loss = step(params)[0].item(), compiled(params)[0].item()
    assert abs(plain_loss - compiled_loss) <= 1e-5 * abs(plain_loss), (plain_loss, compiled_loss)
    fns = [lambda: mx.eval(step(params)), lambda: mx.eval(compiled(params)),
           numpy_mlp(mlp_data(256))[0], _jax_mlp_step(params, x, y)]
    report("MLP 784-512-512-10 SGD step (batch 256)", medians(fns, repeats))


def bench_module_step(repeats: int) -> None:
    """The step as MLX code writes it: `nn.value_and_grad` of a model, `optimizer.update`,
    compiled with the model's and the optimizer's state as `inputs` and `outputs`."""
    import nuvec.nn as nn
    import nuvec.optimizers as optim

    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal((256, 784)).astype(np.float32))
    y = mx.array(rng.integers(0, 10, 256).astype(np.int32))

    def build(compiled: bool):
        mx.random.seed(0)
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        optimizer = optim.SGD(learning_rate=0.01)
        loss_and_grad = nn.value_and_grad(
            model, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean"))

        def step(x, y):
            loss, grads = loss_and_grad(model, x, y)
            optimizer.update(model, grads)
            return loss

        state = [model.state, optimizer.state]
        run = mx.compile(step, inputs=state, outputs=state) if compiled else step
        return lambda: mx.eval(run(x, y), state)

    plain, compiled = build(False), build(True)
    for _ in range(3):  # both models take the same steps: the compiled one gives equal weights
        plain(), compiled()
    report("nn.Sequential MLP step, value_and_grad + SGD.update, state compiled",
           medians([plain, compiled, numpy_mlp(mlp_data(256))[0]], repeats))


def bench_tanh_grad(repeats: int) -> None:
    """`grad(compile(f))`: the compiled function's reverse mode is traced once and fused."""
    rng = np.random.default_rng(3)
    xd = (rng.standard_normal((256, 512)) * 0.05).astype(np.float32)
    wd = (rng.standard_normal((512, 512)) * 0.05).astype(np.float32)
    x, w = mx.array(xd), mx.array(wd)

    def f(w):
        return mx.sum(mx.tanh(mx.tanh(mx.tanh(x @ w))))

    plain, compiled = mx.grad(f), mx.grad(mx.compile(f))
    np.testing.assert_allclose(np.array(compiled(w)), np.array(plain(w)), rtol=1e-4, atol=1e-6)
    fns = [lambda: mx.eval(plain(w)), lambda: mx.eval(compiled(w)), None]
    if jax is not None:
        xj, wj = jnp.asarray(xd), jnp.asarray(wd)
        jitted = jax.jit(jax.grad(lambda w: jnp.sum(jnp.tanh(jnp.tanh(jnp.tanh(xj @ w))))))
        fns.append(lambda: jitted(wj).block_until_ready())
    report("grad of sum(tanh(tanh(tanh(x @ W)))), [256, 512] x [512, 512]",
           medians(fns, repeats))


def report(name: str, times: list) -> None:
    plain, compiled, *peers = times
    line = (f"{name}: uncompiled {plain * 1e3:.3f} ms, compiled {compiled * 1e3:.3f} ms, "
            f"compiled/uncompiled {compiled / plain:.2f}")
    for peer, t in zip(["NumPy", "jax.jit"], peers):
        if t is not None:
            line += f", {peer} {t * 1e3:.3f} ms (compiled/{peer} {compiled / t:.2f})"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--blocks", action="store_true", help="only the block-size sweep")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    if args.blocks:
        bench_blocks(512 if args.quick else 2048, repeats)
        return
    bench_chain8(512 if args.quick else 2048, repeats)
    bench_chain(16, repeats)
    bench_chain(1 << 14 if args.quick else 1 << 20, repeats)
    bench_mlp(repeats)
    bench_module_step(repeats)
    bench_tanh_grad(repeats)


if __name__ == "__main__":
    main()
