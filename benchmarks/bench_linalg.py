"""Linear algebra and FFTs against NumPy in the same run.

Run: `python benchmarks/bench_linalg.py [--quick]`. Each case evaluates one nuvec call and the
NumPy call it stands for (LU, which NumPy lacks, against `np.linalg.solve`, whose LAPACK getrf
does the same factorization plus two triangular solves). Prints the best times and the ratio
nuvec / NumPy (lower is better). The forward and backward pass of a small batched `solve` show
what the rules cost next to the primal.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import best_of  # benchmarks/ is the script's directory

import nuvec as mx

L, F = mx.linalg, mx.fft


def report(name: str, ours: float, numpy_time: float) -> None:
    print(f"{name:44s} nuvec {ours * 1e3:9.2f} ms   numpy {numpy_time * 1e3:9.2f} ms   "
          f"ratio {ours / numpy_time:5.2f}")


def cases(n: int, rng: np.random.Generator):
    a = rng.standard_normal((n, n)).astype(np.float32) + n ** 0.5 * np.eye(n, dtype=np.float32)
    b = rng.standard_normal((n, 8)).astype(np.float32)
    spd = (a @ a.T).astype(np.float32)
    batch = rng.standard_normal((256, 8, 8)).astype(np.float32) + 3 * np.eye(8, dtype=np.float32)
    signal = rng.standard_normal((64, 4096)).astype(np.float32)
    image = rng.standard_normal((16, 256, 256)).astype(np.float32)
    x, y, s, sig, img, bt = (mx.array(v) for v in (a, b, spd, signal, image, batch))
    return [
        (f"inv [{n},{n}]", lambda: L.inv(x), lambda: np.linalg.inv(a)),
        (f"solve [{n},{n}] x [{n},8]", lambda: L.solve(x, y), lambda: np.linalg.solve(a, b)),
        (f"cholesky [{n},{n}]", lambda: L.cholesky(s), lambda: np.linalg.cholesky(spd)),
        (f"qr [{n},{n}]", lambda: L.qr(x), lambda: np.linalg.qr(a)),
        (f"svd [{n},{n}]", lambda: L.svd(x), lambda: np.linalg.svd(a)),
        (f"eigh [{n},{n}]", lambda: L.eigh(s), lambda: np.linalg.eigh(spd)),
        (f"lu [{n},{n}] (numpy: solve)", lambda: L.lu_factor(x), lambda: np.linalg.solve(a, b)),
        ("det batched [256,8,8]", lambda: L.det(bt), lambda: np.linalg.det(batch)),
        ("inv batched [256,8,8]", lambda: L.inv(bt), lambda: np.linalg.inv(batch)),
        ("lu batched [256,8,8] (numpy: solve)", lambda: L.lu_factor(bt),
         lambda: np.linalg.solve(batch, batch[..., :1])),
        ("fft [64,4096]", lambda: F.fft(sig), lambda: np.fft.fft(signal)),
        ("rfft2 [16,256,256]", lambda: F.rfft2(img), lambda: np.fft.rfft2(image)),
        ("irfft [64,4096]", lambda: F.irfft(F.rfft(sig)),
         lambda: np.fft.irfft(np.fft.rfft(signal))),
    ]


def bench_gradient(repeats: int, rng: np.random.Generator) -> None:
    a = rng.standard_normal((64, 32, 32)) + 6 * np.eye(32)
    b = rng.standard_normal((64, 32, 4))
    x, y = mx.array(a, mx.float64), mx.array(b, mx.float64)
    grad = mx.grad(lambda m, v: mx.sum(L.solve(m, v) ** 2), argnums=(0, 1))
    ours = best_of(lambda: mx.eval(grad(x, y)), repeats)

    def by_hand():
        sol = np.linalg.solve(a, b)
        b_bar = np.linalg.solve(np.swapaxes(a, -1, -2), 2 * sol)
        return -b_bar @ np.swapaxes(sol, -1, -2), b_bar

    report("grad solve [64,32,32] float64", ours, best_of(by_hand, repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    args = parser.parse_args()
    n, repeats = (128, 3) if args.quick else (512, 5)
    rng = np.random.default_rng(0)
    for name, ours, theirs in cases(n, rng):
        report(name, best_of(lambda: mx.eval(ours()), repeats), best_of(theirs, repeats))
    bench_gradient(repeats, rng)


if __name__ == "__main__":
    main()
