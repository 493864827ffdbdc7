"""Fixtures of the fused-op tests: a fake GPU backend computing with NumPy."""

from __future__ import annotations

import types

import pytest

import nuvec as mx
from nuvec.fast.base import FastOp, cpu_fallback_kernel
from nuvec.graph.device import DeviceType, register_backend


@pytest.fixture
def fake_gpu():
    """A GPU backend whose ordinary kernels are NumPy's and whose fused kernels cannot take
    their inputs (they compute through the fallback on the CPU); yields the GPU stream."""
    import nuvec.backends.numpy as cpu

    kernels = {
        cls: (cpu_fallback_kernel if issubclass(cls, FastOp) else fn)
        for cls, fn in cpu.kernels.items()
    }
    backend = types.SimpleNamespace(
        kernels=kernels, to_host=cpu.to_host, from_host=cpu.from_host, coerce=cpu.coerce,
        synchronize=cpu.synchronize, available=lambda: True,
    )
    register_backend(DeviceType.gpu, backend)
    try:
        yield mx.default_stream(mx.gpu)
    finally:
        register_backend(DeviceType.gpu, None)
