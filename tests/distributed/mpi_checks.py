"""Checks run inside one MPI job (`mpiexec -n N python tests/distributed/mpi_checks.py`).

Every rank can regenerate every rank's input (seeded by rank), so the references are NumPy
computations needing no communication. Prints `ok <name>` per check; any failure raises (the
job then aborts with the traceback and a nonzero exit).
"""

from __future__ import annotations

import threading
import time

import numpy as np

import nuvec as mx
import nuvec.nn as nn
from nuvec.nn import average_gradients
from nuvec.nn.utils import clip_grad_norm_sharded
from nuvec.nn.layers.distributed import shard_inplace, shard_linear
from nuvec.utils import tree_flatten

world = mx.distributed.init(strict=True, backend="mpi")
RANK, SIZE = world.rank(), world.size()
DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.float32, mx.float64, mx.bfloat16, mx.complex64]
# fewer shapes with 4 processes (each collective costs more there); both sets hold a scalar,
# an empty array and odd sizes
SHAPES = [(), (0,), (7,), (3, 5), (2, 0, 3)] if SIZE <= 2 else [(), (2, 0, 3), (3, 5)]
TOLERANCE = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 1e-6, "float64": 1e-12,
             "complex64": 1e-6}


def data(rank: int, shape: tuple[int, ...], dtype: mx.Dtype, salt: int = 0) -> np.ndarray:
    """Rank `rank`'s input: small values so integer sums fit."""
    rng = np.random.default_rng([rank, len(shape), sum(shape), dtype.rank, salt])
    if dtype is mx.bool_:
        return rng.random(shape) < 0.4
    if dtype.kind in "ui":
        return rng.integers(0, 20, shape).astype(dtype.np)
    values = rng.uniform(-4, 4, shape)
    if dtype is mx.complex64:
        values = values + 1j * rng.uniform(-4, 4, shape)
    return values.astype(dtype.np)


def everyone(shape, dtype, salt=0) -> list[np.ndarray]:
    return [data(r, shape, dtype, salt) for r in range(SIZE)]


def check(name: str, got: mx.Array, want: np.ndarray, dtype: mx.Dtype) -> None:
    assert got.dtype is dtype, f"{name}: dtype {got.dtype} != {dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    tol = TOLERANCE.get(dtype.name, 0)
    actual = np.asarray(got).astype(np.complex128 if dtype.kind == "c" else np.float64)
    expected = want.astype(actual.dtype)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, err_msg=name)


def reference(op: str, arrays: list[np.ndarray], dtype: mx.Dtype) -> np.ndarray:
    stacked = np.stack(arrays).astype(np.complex128 if dtype.kind == "c" else np.float64)
    if dtype is mx.bool_:
        stacked = np.stack(arrays)
        return {"all_sum": np.any, "all_max": np.any, "all_min": np.all}[op](stacked, axis=0)
    if op == "all_sum":
        out = stacked.sum(axis=0)
    else:  # lexicographic order for complex values, as NumPy
        out = (np.max if op == "all_max" else np.min)(np.stack(arrays), axis=0)
    return np.asarray(out).astype(dtype.np)


def check_reductions() -> None:
    for dtype in DTYPES:
        for shape in SHAPES:
            mine = mx.array(data(RANK, shape, dtype), dtype=dtype)
            for op in ("all_sum", "all_max", "all_min"):
                got = getattr(mx.distributed, op)(mine)
                check(f"{op} {shape} {dtype.name}", got, reference(op, everyone(shape, dtype),
                                                                 dtype), dtype)
            gathered = mx.distributed.all_gather(mine)
            want = np.stack(everyone(shape, dtype)) if shape == () else np.concatenate(
                everyone(shape, dtype))
            check(f"all_gather {shape} {dtype.name}", gathered, want, dtype)
    print("ok reductions and gathers of every dtype and shape")


def check_sum_scatter() -> None:
    for dtype in DTYPES:
        for shape in [(SIZE * 3, 2), (SIZE,), (0, 4)]:
            mine = mx.array(data(RANK, shape, dtype, 1), dtype=dtype)
            total = reference("all_sum", everyone(shape, dtype, 1), dtype)
            block = shape[0] // SIZE
            check(f"sum_scatter {shape} {dtype.name}", mx.distributed.sum_scatter(mine),
                  total[RANK * block:(RANK + 1) * block], dtype)
    print("ok sum_scatter")


def check_large_and_odd() -> None:
    n = 1_000_003  # over the evaluator's buffer-reuse size and not a multiple of anything
    for dtype in (mx.float32, mx.bfloat16, mx.int32):
        mine = mx.array(data(RANK, (n,), dtype, 2), dtype=dtype)
        check(f"all_sum ({n},) {dtype.name}", mx.distributed.all_sum(mine),
              reference("all_sum", everyone((n,), dtype, 2), dtype), dtype)
    # outputs come from a pool of reused buffers: one held must never be overwritten
    held = [mx.distributed.all_sum(mx.full((70_000,), float(k))) for k in range(6)]
    mx.eval(held)
    view = np.asarray(held[0])
    again = [mx.distributed.all_sum(mx.full((70_000,), -1.0)) for _ in range(6)]
    mx.eval(again)
    for k, h in enumerate(held):
        assert np.all(np.asarray(h) == k * SIZE), (k, np.asarray(h)[:3])
    assert np.all(view == 0) and np.all(np.asarray(again[-1]) == -SIZE)
    print("ok large odd sizes")


def check_split() -> None:
    color = RANK % 2
    sub = world.split(color)
    members = [r for r in range(SIZE) if r % 2 == color]
    assert sub.size() == len(members) and sub.rank() == members.index(RANK), sub
    got = mx.distributed.all_sum(mx.array([float(RANK)]), group=sub)
    assert got.tolist() == [float(sum(members))], got
    reverse = world.split(0, key=SIZE - RANK)  # keys reverse the order
    assert reverse.rank() == SIZE - 1 - RANK, reverse
    gathered = mx.distributed.all_gather(mx.array([RANK]), group=reverse).tolist()
    assert gathered == list(range(SIZE))[::-1], gathered
    alone = world.split(-1 if RANK == 0 else 1)
    if RANK == 0:
        assert (alone.rank(), alone.size()) == (-1, 0)
        try:
            mx.distributed.all_sum(mx.array([1.0]), group=alone)
        except ValueError as exc:
            assert "not a member" in str(exc), exc
        else:
            raise AssertionError("a collective on a group without this process ran")
    else:
        assert alone.size() == SIZE - 1
        assert mx.distributed.all_sum(mx.array([1]), group=alone).item() == SIZE - 1
    print("ok split groups")


def check_send_recv() -> None:
    nxt, prv = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    for dtype in DTYPES:
        for shape in [(3, 2), (0,), ()]:
            mine = mx.array(data(RANK, shape, dtype, 3), dtype=dtype)
            sent = mx.distributed.send(mine, nxt)
            got = mx.distributed.recv(shape, dtype, prv)
            mx.eval(sent, got)  # every rank sends first: sends must not wait for receivers
            check(f"ring {shape} {dtype.name}", got, data(prv, shape, dtype, 3), dtype)
    big = mx.array(data(RANK, (300_000,), mx.float32, 4))  # beyond MPI's eager size
    got = mx.distributed.recv_like(big, prv)
    mx.eval(mx.distributed.send(big, nxt), got)  # a recv evaluated first would wait for ever
    check("ring large", got, data(prv, (300_000,), mx.float32, 4), mx.float32)
    print("ok send/recv rings")


def f64(x: np.ndarray) -> mx.Array:
    return mx.array(x, dtype=mx.float64)


def local_fd(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f_rank / d x_rank by central differences, the other ranks' inputs fixed: the ranks
    take turns perturbing (every rank runs every evaluation, since f communicates)."""
    out = np.zeros_like(x)
    for owner in range(SIZE):
        for i in range(x.size):
            values = []
            for sign in (1, -1):
                shifted = x.copy()
                if owner == RANK:
                    shifted.reshape(-1)[i] += sign * eps
                values.append(f(f64(shifted)).item())
            if owner == RANK:
                out.reshape(-1)[i] = (values[0] - values[1]) / (2 * eps)
    return out


def check_gradients() -> None:
    w = f64(data(RANK, (SIZE, 3), mx.float64, 5))
    losses = {
        "all_sum": lambda x: mx.sum(mx.sin(mx.distributed.all_sum(x)) * w[:1]),
        "all_max": lambda x: mx.sum(mx.distributed.all_max(x) * w[:1]),
        "all_min": lambda x: mx.sum(mx.distributed.all_min(x) ** 2 * w[:1]),
        "all_gather": lambda x: mx.sum(mx.cos(mx.distributed.all_gather(x)) * w),
        "sum_scatter": lambda x: mx.sum(mx.distributed.sum_scatter(x) ** 2),
    }
    for name, f in losses.items():
        shape = (SIZE, 1) if name == "sum_scatter" else (1, 3)
        x = data(RANK, shape, mx.float64, 6)
        grad = np.asarray(mx.grad(f)(f64(x)))
        np.testing.assert_allclose(grad, local_fd(f, x), rtol=1e-6, atol=1e-7, err_msg=name)
        t = data(RANK, shape, mx.float64, 7)  # every rank perturbs along its own tangent
        _, tangent = mx.jvp(lambda x: mx.sin(f(x)), [f64(x)], [f64(t)])
        eps = 1e-6
        plus = mx.sin(f(f64(x + eps * t))).item()
        minus = mx.sin(f(f64(x - eps * t))).item()
        np.testing.assert_allclose(tangent[0].item(), (plus - minus) / (2 * eps), rtol=1e-5,
                                   atol=1e-7, err_msg=f"jvp {name}")
    print("ok gradients (vjp vs local finite differences, jvp vs global ones)")


def check_vmap() -> None:
    x = data(RANK, (4, 3), mx.float32, 8)
    others = everyone((4, 3), mx.float32, 8)
    for axis in (0, 1):
        got = mx.vmap(mx.distributed.all_sum, in_axes=axis)(mx.array(x))
        want = np.moveaxis(sum(others), axis, 0)
        check(f"vmap all_sum axis {axis}", got, want, mx.float32)
        gathered = mx.vmap(mx.distributed.all_gather, in_axes=axis)(mx.array(x))
        want = np.stack([np.concatenate([np.take(o, i, axis) for o in others])
                         for i in range(x.shape[axis])])
        check(f"vmap all_gather axis {axis}", gathered, want, mx.float32)
    y = data(RANK, (2, SIZE * 2), mx.float32, 9)
    got = mx.vmap(mx.distributed.sum_scatter)(mx.array(y))
    total = sum(everyone((2, SIZE * 2), mx.float32, 9))
    check("vmap sum_scatter", got, total[:, RANK * 2:(RANK + 1) * 2], mx.float32)
    print("ok vmap")


def check_streams() -> None:
    """A recv waiting on one stream leaves work on another stream free to run (2 ranks)."""
    if SIZE != 2:
        return
    if RANK == 1:
        time.sleep(1.5)
        mx.eval(mx.distributed.send(mx.ones((3,)), 0))
        return
    waiting = mx.distributed.recv((3,), mx.float32, 1, stream=mx.new_stream(mx.cpu))
    finished = {}

    def receive() -> None:
        mx.eval(waiting)
        finished["recv"] = time.monotonic()

    thread = threading.Thread(target=receive)
    start = time.monotonic()
    thread.start()
    with mx.stream(mx.new_stream(mx.cpu)):
        work = mx.sum(mx.ones((100, 100)) @ mx.ones((100, 100)))
    assert work.item() == 100 ** 3
    finished["work"] = time.monotonic()
    thread.join()
    assert finished["work"] < finished["recv"], (finished, start)
    assert waiting.tolist() == [1.0, 1.0, 1.0]
    print("ok a waiting collective does not hold up other streams")


def check_average_gradients() -> None:
    def tree(rank):
        return {"a": data(rank, (3, 4), mx.float32, 10), "b": [data(rank, (5,), mx.float32, 11),
                data(rank, (), mx.float32, 12)], "c": data(rank, (7,), mx.float32, 13)}

    mine = mx.utils.tree_map(mx.array, tree(RANK))
    trees = [tree(r) for r in range(SIZE)]
    means = {"a": sum(t["a"] for t in trees) / SIZE, "c": sum(t["c"] for t in trees) / SIZE,
             "b": [sum(t["b"][i] for t in trees) / SIZE for i in range(2)]}
    for size, wire in [(32 * 1024**2, None), (40, None), (0, None), (1 << 20, mx.bfloat16)]:
        got = average_gradients(mine, all_reduce_size=size, communication_type=wire,
                                communication_stream=mx.new_stream(mx.cpu))
        tol = 2e-2 if wire is mx.bfloat16 else 1e-6
        for key in ("a", "c"):
            np.testing.assert_allclose(np.asarray(got[key]), means[key], rtol=tol, atol=tol)
        for i in range(2):
            np.testing.assert_allclose(np.asarray(got["b"][i]), means["b"][i], rtol=tol,
                                       atol=tol)
        assert got["a"].dtype is mx.float32
    print("ok average_gradients")


def check_clip_grad_norm_sharded() -> None:
    shards = [data(r, (6,), mx.float32, 14) for r in range(SIZE)]  # the shards of one tree
    norm = np.sqrt(sum(float(np.sum(np.square(s.astype(np.float64)))) for s in shards))
    clipped, got = clip_grad_norm_sharded({"w": mx.array(shards[RANK])}, 0.5)
    np.testing.assert_allclose(got.item(), norm, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(clipped["w"]), shards[RANK] * 0.5 / (norm + 1e-6),
                               rtol=1e-5)
    print("ok clip_grad_norm_sharded")


def close(name: str, got: mx.Array, want: mx.Array, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol,
                               err_msg=name)


def check_sharded_linears() -> None:
    """An MLP split over the ranks (all-to-sharded, then sharded-to-all) against the whole
    MLP, which every rank builds from the same seed: outputs, the input's gradient (summed
    over the ranks) and each rank's block of the parameters' gradients."""
    mx.random.seed(5)
    full = nn.Sequential(nn.Linear(6, 4 * SIZE), nn.tanh, nn.Linear(4 * SIZE, 3))
    split = nn.Sequential(shard_linear(full.layers[0], "all-to-sharded"), nn.tanh,
                          shard_linear(full.layers[2], "sharded-to-all"))
    x = mx.array(data(0, (5, 6), mx.float32, 20))  # the same input on every rank
    close("sharded mlp", split(x), full(x))
    loss = lambda model: lambda v: (model(v) ** 2).sum()  # noqa: E731
    close("input gradient", mx.grad(loss(split))(x), mx.grad(loss(full))(x), 1e-4)
    _, mine = nn.value_and_grad(split, loss(split))(x)
    _, whole = nn.value_and_grad(full, loss(full))(x)
    block = slice(RANK * 4, (RANK + 1) * 4)
    close("first weight", mine["layers"][0]["weight"], whole["layers"][0]["weight"][block], 1e-4)
    close("first bias", mine["layers"][0]["bias"], whole["layers"][0]["bias"][block], 1e-4)
    close("second weight", mine["layers"][2]["weight"], whole["layers"][2]["weight"][:, block],
          1e-4)
    close("second bias", mine["layers"][2]["bias"], whole["layers"][2]["bias"], 1e-4)
    # a fused projection of three parts: each rank holds its block of every part
    fused = nn.Linear(6, 3 * 2 * SIZE)
    parts = mx.split(fused(x), 3, axis=-1)
    want = mx.concatenate([p[:, RANK * 2:(RANK + 1) * 2] for p in parts], axis=-1)
    close("segments", shard_linear(fused, "all-to-sharded", segments=3)(x), want)
    copy = nn.Linear(6, 3 * 2 * SIZE)
    copy.update(fused.parameters())
    shard_inplace(copy, "all-to-sharded", segments=3)
    close("shard_inplace", copy(x), want)
    # quantized: each rank's block of the input holds whole groups of 64
    quantized = nn.QuantizedLinear(64 * SIZE, 8 * SIZE)
    xq = mx.array(data(0, (2, 64 * SIZE), mx.float32, 21))
    columns = slice(RANK * 64, (RANK + 1) * 64)
    close("quantized sharded-to-all", shard_linear(quantized, "sharded-to-all")(xq[:, columns]),
          quantized(xq), 1e-4)
    close("quantized all-to-sharded", shard_linear(quantized, "all-to-sharded")(xq),
          quantized(xq)[:, RANK * 8:(RANK + 1) * 8], 1e-4)
    print("ok sharded linears")


def check_fully_sharded() -> None:
    """FSDP: each rank trains on its own data; outputs equal the whole model's and each
    rank's gradient block is its block of the gradients averaged over the ranks."""
    def model():
        mx.random.seed(6)
        return nn.Sequential(nn.Linear(6, 2 * SIZE), nn.tanh, nn.Linear(2 * SIZE, 3 * SIZE))

    full, sharded = model(), nn.fully_shard(model())
    assert isinstance(sharded, nn.FullyShardedModule)
    x = mx.array(data(RANK, (4, 6), mx.float32, 30))
    close("fsdp output", sharded(x), full(x))
    _, mine = nn.value_and_grad(sharded, lambda v: (sharded(v) ** 2).sum())(x)
    total = None
    for rank in range(SIZE):
        xr = mx.array(data(rank, (4, 6), mx.float32, 30))
        grads = dict(tree_flatten(nn.value_and_grad(full, lambda v: (full(v) ** 2).sum())(xr)[1]))
        total = grads if total is None else {k: total[k] + g for k, g in grads.items()}
    for path, g in tree_flatten(mine["module"]):
        rows = total[path].shape[0] // SIZE
        close(f"fsdp {path}", g, total[path][RANK * rows:(RANK + 1) * rows] / SIZE, 1e-4)
    try:
        nn.fully_shard(nn.Linear(6, 2 * SIZE + 1))
    except ValueError as exc:
        assert "cannot shard parameter 'weight'" in str(exc), exc
    else:
        raise AssertionError("fully_shard of an indivisible axis did not raise")
    print("ok fully_shard")


def check_mismatches() -> None:
    """Ranks calling different shapes, dtypes or operations all raise, naming them; the group
    stays usable afterwards."""
    cases = [
        ("shape", lambda: mx.distributed.all_sum(mx.zeros((3 + (RANK == 1),)))),
        ("dtype", lambda: mx.distributed.all_sum(
            mx.zeros((3,), mx.float16 if RANK == 1 else mx.float32))),
        ("operation", lambda: (mx.distributed.all_max if RANK == 1 else mx.distributed.all_sum)(
            mx.zeros((3,)))),
    ]
    for what, make in cases:
        try:
            mx.eval(make())
        except mx.distributed.DistributedError as exc:
            text = str(exc)
            assert "disagree" in text and "rank 1" in text and "rank 0" in text, text
            if what == "shape":
                assert "(4,) float32" in text and "(3,) float32" in text, text
            if what == "dtype":
                assert "(3,) float16" in text, text
            if what == "operation":
                assert "all_max" in text and "all_sum" in text, text
        else:
            raise AssertionError(f"a collective of mismatched {what} ran")
    # same shapes, evaluated in another order on rank 0: the sequence numbers differ
    first, second = mx.distributed.all_sum(mx.ones((3,))), mx.distributed.all_sum(mx.ones((3,)))
    try:
        mx.eval(second if RANK == 0 else first)
    except mx.distributed.DistributedError as exc:
        assert "disagree" in str(exc) and "all_sum #" in str(exc), exc
    else:
        raise AssertionError("collectives evaluated in different orders were paired")
    if SIZE >= 2 and RANK < 2:
        peer = 1 - RANK
        sent = mx.distributed.send(mx.zeros((2, 2)), peer)
        got = mx.distributed.recv((5,), mx.float32, peer)
        try:
            mx.eval(sent, got)
        except mx.distributed.DistributedError as exc:
            assert "expected (5,) float32" in str(exc) and "sent (2, 2) float32" in str(exc), exc
        else:
            raise AssertionError("a recv of the wrong shape ran")
    assert mx.distributed.all_sum(mx.array([1])).item() == SIZE
    for call, message in [
        (lambda: mx.distributed.send(mx.zeros((1,)), SIZE),
         f"send: dst must be a rank in [0, {SIZE}), got {SIZE}"),
        (lambda: mx.distributed.recv((1,), mx.float32, -1),
         f"recv: src must be a rank in [0, {SIZE}), got -1"),
        (lambda: mx.distributed.sum_scatter(mx.zeros((SIZE + 1, 2))),
         (f"sum_scatter: the first axis of x must be divisible by the group size {SIZE}, "
          f"got shape ({SIZE + 1}, 2)")),
    ]:
        try:
            call()
        except ValueError as exc:
            assert str(exc) == message, exc
        else:
            raise AssertionError(message)
    print("ok mismatches raise")


if __name__ == "__main__":
    check_reductions()
    check_sum_scatter()
    check_large_and_odd()
    check_split()
    check_send_recv()
    check_gradients()
    check_vmap()
    check_streams()
    check_average_gradients()
    check_clip_grad_norm_sharded()
    check_sharded_linears()
    check_fully_sharded()
    check_mismatches()
    print(f"rank {RANK} of {SIZE}: all checks passed")
