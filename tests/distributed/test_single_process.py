"""nuvec.distributed in one process without a launcher: the group of size 1, whose
collectives return their input, and the errors every public function raises at the call."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
import nuvec.optimizers as optimizers
from nuvec.distributed import Group

dist = mx.distributed
COLLECTIVES = [dist.all_sum, dist.all_max, dist.all_min, dist.all_gather, dist.sum_scatter]


def test_import_nuvec_does_not_import_mpi4py_or_cupy() -> None:
    code = ("import sys, nuvec; assert nuvec.distributed.init().size() == 1; "
            "print(sorted(m for m in ('mpi4py', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "."})
    assert out.stdout.strip() == "[]"


def test_init_without_launcher_is_a_group_of_one() -> None:
    world = dist.init()
    assert (world.rank(), world.size(), world.backend) == (0, 1, "none")
    assert dist.init() is world
    assert "size=1" in repr(world)


@pytest.mark.parametrize("op", COLLECTIVES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.int8, mx.bool_, mx.complex64],
                         ids=lambda d: d.name)
def test_collectives_of_a_group_of_one_return_the_input(op, dtype) -> None:
    data = np.arange(6).reshape(3, 2).astype(dtype.np)
    x = mx.array(data, dtype=dtype)
    y = op(x)
    assert y is not x and y.dtype is dtype and y.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(y), data)
    y[0] = 0  # a new handle: updating it leaves x alone
    np.testing.assert_array_equal(np.asarray(x), data)


def test_collectives_take_group_and_stream() -> None:
    world = dist.init()
    s = mx.new_stream(mx.cpu)
    assert dist.all_sum(mx.array([1.0]), group=world, stream=s).tolist() == [1.0]
    assert dist.all_gather(mx.array(3), group=world).tolist() == 3


def test_gradients_through_a_group_of_one() -> None:
    x = mx.array([0.5, -1.0, 2.0])
    for op in COLLECTIVES:
        g = mx.grad(lambda x: mx.sum(mx.sin(op(x))))(x)
        np.testing.assert_allclose(np.asarray(g), np.cos([0.5, -1.0, 2.0]), rtol=1e-6)
        _, t = mx.jvp(lambda x: op(x) * 2, [x], [mx.ones((3,))])
        assert t[0].tolist() == [2.0, 2.0, 2.0]
        assert mx.vmap(op)(mx.ones((2, 3))).shape == (2, 3)


def test_split_of_a_group_of_one() -> None:
    world = dist.init()
    assert world.split(3).size() == 1
    outside = world.split(-1)
    assert (outside.rank(), outside.size(), outside.is_member()) == (-1, 0, False)
    with pytest.raises(ValueError, match="all_sum: this process is not a member of the group"):
        dist.all_sum(mx.array([1.0]), group=outside)
    with pytest.raises(ValueError, match="split: this process is not a member"):
        outside.split(0)
    with pytest.raises(TypeError, match="split: color must be an int, got str"):
        world.split("a")
    with pytest.raises(TypeError, match="split: key must be an int, got float"):
        world.split(0, 1.5)


def test_average_gradients_of_a_group_of_one_is_the_input() -> None:
    grads = {"w": mx.array([1.0, 2.0]), "b": [mx.array(3.0)]}
    assert nn.average_gradients(grads) is grads
    with pytest.raises(TypeError, match="average_gradients: communication_type must be a "
                                        "nuvec dtype or None, got str"):
        nn.average_gradients(grads, communication_type="bfloat16")
    with pytest.raises(TypeError, match="average_gradients: group must be a "
                                        "nuvec.distributed.Group or None, got int"):
        nn.average_gradients(grads, group=1)
    with pytest.raises(TypeError, match="average_gradients: communication_stream must be a "
                                        "Stream, Device or None, got 'x'"):
        nn.average_gradients(grads, communication_stream="x")
    assert nn.average_gradients(grads, communication_stream=mx.cpu) is grads


def test_is_available() -> None:
    assert isinstance(dist.is_available(), bool)
    assert dist.is_available("mpi") == (
        __import__("importlib").util.find_spec("mpi4py") is not None)
    with pytest.raises(ValueError, match="is_available: backend must be one of 'any', 'mpi', "
                                         "'nccl', 'ring', 'jaccl', got 'gloo'"):
        dist.is_available("gloo")


@pytest.mark.parametrize("backend", ["ring", "jaccl"])
def test_mlx_backends_nuvec_does_not_build(backend) -> None:
    # MLX code naming them runs in one process (MLX's own examples use backend="ring")
    assert dist.is_available(backend) is False
    assert dist.init(backend=backend).size() == 1
    with pytest.raises(RuntimeError, match=f"init: cannot initialise backend '{backend}': "
                                           "nuvec does not build it"):
        dist.init(strict=True, backend=backend)


def test_nn_utils_has_mlx_s_distributed_helpers() -> None:
    from nuvec.nn.utils import average_gradients, clip_grad_norm_sharded

    grads = {"a": mx.array([3.0, 4.0], mx.float16), "b": [mx.array([0.0])]}
    assert average_gradients(grads) is grads
    clipped, norm = clip_grad_norm_sharded(grads, 1.0)  # one process: the whole tree
    want, want_norm = optimizers.clip_grad_norm(grads, 1.0)
    assert norm.item() == want_norm.item() == 5.0 and norm.dtype == mx.float32
    assert clipped["a"].dtype == mx.float16
    assert clipped["a"].tolist() == want["a"].tolist()
    with pytest.raises(ValueError, match=r"^clip_grad_norm_sharded: max_norm must be >= 0"):
        clip_grad_norm_sharded(grads, -1.0)
    with pytest.raises(TypeError, match="^clip_grad_norm_sharded: group must be a "):
        clip_grad_norm_sharded(grads, 1.0, group="g")


def test_init_errors() -> None:
    with pytest.raises(ValueError, match="init: backend must be one of .* got 'gloo'"):
        dist.init(backend="gloo")
    with pytest.raises(TypeError, match="init: backend must be a str, got int"):
        dist.init(backend=1)
    with pytest.raises(ValueError, match="init: timeout must be positive, got 0"):
        dist.init(timeout=0)
    with pytest.raises(TypeError, match="init: timeout must be a number of seconds, got str"):
        dist.init(timeout="1")


def test_init_timeout_from_the_environment(monkeypatch) -> None:
    from nuvec.distributed.group import resolve_timeout

    monkeypatch.setenv("NUVEC_DISTRIBUTED_TIMEOUT", "7.5")
    assert resolve_timeout(None) == 7.5
    assert resolve_timeout(2) == 2.0
    monkeypatch.setenv("NUVEC_DISTRIBUTED_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="init: NUVEC_DISTRIBUTED_TIMEOUT must be a number of "
                                         "seconds, got 'soon'"):
        resolve_timeout(None)


def test_strict_init_without_a_backend_raises(monkeypatch) -> None:
    import nuvec.distributed.group as group_module

    monkeypatch.setattr(group_module, "_world", None)
    monkeypatch.setattr(group_module, "_candidates", lambda backend: [])
    with pytest.raises(RuntimeError, match="init: cannot initialise backend 'any'"):
        dist.init(strict=True)


@pytest.mark.parametrize("op", COLLECTIVES, ids=lambda f: f.__name__)
def test_collective_argument_errors(op) -> None:
    name = op.__name__
    with pytest.raises(TypeError, match=f"{name}: group must be a nuvec.distributed.Group or "
                                        "None, got str"):
        op(mx.array([1.0]), group="world")
    with pytest.raises(TypeError, match=f"{name}: cannot convert object to an array"):
        op(object())


def test_sum_scatter_in_one_process_returns_its_input() -> None:
    # as MLX, a scalar too (several processes need a first axis divisible by their count:
    # mpi_checks.py checks that error)
    assert dist.sum_scatter(mx.array(2.5)).item() == 2.5
    assert dist.sum_scatter(3).item() == 3


def test_point_to_point_errors() -> None:
    x = mx.zeros((2,))
    with pytest.raises(ValueError, match="send: cannot send within a group of size 1"):
        dist.send(x, 0)
    with pytest.raises(ValueError, match="recv: cannot recv within a group of size 1"):
        dist.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match="recv_like: cannot recv within a group of size 1"):
        dist.recv_like(x, 0)
    with pytest.raises(TypeError, match="send: dst must be an int, got str"):
        dist.send(x, "0")
    with pytest.raises(TypeError, match="recv: dtype must be a nuvec dtype, got type"):
        dist.recv((2,), np.float32, 0)
    with pytest.raises(TypeError, match="recv_like: src must be an int, got float"):
        dist.recv_like(x, 0.0)
    with pytest.raises(ValueError, match="recv"):
        dist.recv((-1,), mx.float32, 0)


def test_group_is_exported() -> None:
    assert isinstance(dist.init(), Group)
    assert issubclass(dist.DistributedError, mx.EvaluationError)


# MLX's `mlx.core.distributed` bindings; nuvec's `timeout` comes after MLX's parameters
SIGNATURES = {
    "all_sum": "(x, *, group=None, stream=None)",
    "all_max": "(x, *, group=None, stream=None)",
    "all_min": "(x, *, group=None, stream=None)",
    "all_gather": "(x, *, group=None, stream=None)",
    "sum_scatter": "(x, *, group=None, stream=None)",
    "send": "(x, dst, *, group=None, stream=None)",
    "recv": "(shape, dtype, src, *, group=None, stream=None)",
    "recv_like": "(x, src, *, group=None, stream=None)",
    "init": "(strict=False, backend='any', *, timeout=None)",
    "is_available": "(backend='any')",
    "average_gradients": "(gradients, group=None, all_reduce_size=33554432, "
                         "communication_type=None, communication_stream=None)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_mlx(name) -> None:
    sig = inspect.signature(getattr(nn if name == "average_gradients" else dist, name))
    text = str(sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                       for p in sig.parameters.values()],
                           return_annotation=inspect.Signature.empty))
    assert text == SIGNATURES[name]
    assert str(inspect.signature(Group.split)) == "(self, color: 'int', key: 'int' = -1) -> 'Group'"
