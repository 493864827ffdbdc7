"""The NCCL backend on one GPU: a communicator of size 1 through `init(backend="nccl")`, and
its collectives called directly on CuPy buffers of every dtype (a group of size 1 returns
its input without communicating, so the test calls the communicator itself)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx

pytestmark = pytest.mark.gpu


def _gpu_or_skip():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no NVIDIA GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no NVIDIA GPU (CUDA driver not found)")
    if not mx.is_available(mx.gpu):
        pytest.skip("nuvec has no GPU backend here")
    return cupy


@pytest.fixture(scope="module")
def nccl_group():
    _gpu_or_skip()
    group = mx.distributed.init(strict=True, backend="nccl")
    assert (group.rank(), group.size(), group.backend) == (0, 1, "nccl")
    return group


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int16", "bool", "int64",
                                  "complex64"])
@pytest.mark.parametrize("operation", ["all_sum", "all_max", "all_min"])
def test_nccl_all_reduce_of_one_gpu_is_the_input(nccl_group, name, operation) -> None:
    cupy = _gpu_or_skip()
    host = (np.arange(6) % 3 - 1).astype(name if name != "bfloat16" else "float32")
    if name == "bfloat16":  # bfloat16 lives in uint16 buffers on the GPU
        import ml_dtypes

        device = cupy.asarray(host.astype(ml_dtypes.bfloat16).view(np.uint16))
    else:
        device = cupy.asarray(host)
    out = nccl_group.communicator.all_reduce(operation, 0, device, name)
    cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out).view(cupy.asnumpy(device).dtype),
                                  cupy.asnumpy(device))


def test_nccl_gather_and_scatter_of_one_gpu(nccl_group) -> None:
    cupy = _gpu_or_skip()
    x = cupy.arange(12, dtype=cupy.float32).reshape(4, 3)
    gathered = nccl_group.communicator.all_gather(0, x, "float32")
    scattered = nccl_group.communicator.sum_scatter(1, x, "float32")
    np.testing.assert_array_equal(cupy.asnumpy(gathered).reshape(4, 3), cupy.asnumpy(x))
    np.testing.assert_array_equal(cupy.asnumpy(scattered), cupy.asnumpy(x))


def test_nccl_group_collectives_on_gpu_arrays(nccl_group) -> None:
    x = mx.array([1.0, 2.0])
    y = mx.distributed.all_sum(x, group=nccl_group, stream=mx.gpu)
    assert y.tolist() == [1.0, 2.0]
