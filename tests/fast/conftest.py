"""Fixtures of the fused-op tests: the NumPy-backed GPU double (`nuvec.backends.double`),
whose fused nodes take the listed CPU route as on a GPU without their CUDA kernels."""

from __future__ import annotations

import pytest

import nuvec as mx
from nuvec.backends.double import DoubleBackend
from nuvec.graph.device import DeviceType, register_backend


@pytest.fixture
def fake_gpu():
    """Installs the GPU double; yields the GPU stream."""
    register_backend(DeviceType.gpu, DoubleBackend())
    try:
        yield mx.default_stream(mx.gpu)
    finally:
        register_backend(DeviceType.gpu, None)


@pytest.fixture(autouse=True)
def _on_each_device(device):
    """Every test here runs on each available device (see `tests/conftest.py`)."""
    yield device
