"""`mx.compile` against the same functions uncompiled: a 256-op elementwise chain on small and
large arrays, and an SGD step of a 784-512-512-10 ReLU MLP (batch 256), with NumPy (and
`jax.jit`, when importable; never a dependency of nuvec) on the same work.

Run: python benchmarks/bench_compile.py [--repeats N] [--quick]
Times are medians of N runs, evaluation included; ratios are compiled / uncompiled and
compiled / NumPy (lower is better). nuvec's compile replays the traced, simplified graph
without running the function's Python; it does not fuse elementwise chains yet, so the gain is
the Python and tracing time saved per call.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from bench_fast import medians  # benchmarks/ is the script's directory

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


def _mlp(rng):
    sizes = [784, 512, 512, 10]
    params = [(mx.array(rng.standard_normal((i, o)).astype(np.float32) / np.sqrt(i)),
               mx.zeros((o,))) for i, o in itertools.pairwise(sizes)]
    x = mx.array(rng.standard_normal((256, 784)).astype(np.float32))
    y = mx.array(rng.integers(0, 10, 256).astype(np.int32))
    return params, x, y


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
    report("MLP 784-512-512-10 SGD step (batch 256)",
           medians([lambda: mx.eval(step(params)), lambda: mx.eval(compiled(params))], repeats))


def report(name: str, times: list) -> None:
    plain, compiled, *peers = times
    line = (f"{name}: uncompiled {plain * 1e3:.3f} ms, compiled {compiled * 1e3:.3f} ms, "
            f"compiled/uncompiled {compiled / plain:.2f}")
    for peer, t in zip(["NumPy", "jax.jit"], peers):
        line += f", {peer} {t * 1e3:.3f} ms (compiled/{peer} {compiled / t:.2f})"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    bench_chain(16, repeats)
    bench_chain(1 << 14 if args.quick else 1 << 20, repeats)
    bench_mlp(repeats)


if __name__ == "__main__":
    main()
