"""The device fixture (op, transform and fused-op tests run once per device) and `num_threads`.

`tests/ops`, `tests/transforms` and `tests/fast` use it through an autouse fixture, so every
test there runs with each device as the default; the GPU cases carry the `gpu` marker and skip
with the reason where CuPy finds no GPU (`python -m pytest -m gpu` runs only them).
"""

from __future__ import annotations

import pytest

import nuvec as mx
from nuvec.graph.device import backend_for

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)]


def gpu_unavailable_reason() -> str:
    """'' where nuvec computes on a GPU here, else why not."""
    try:
        backend_for(mx.gpu)
    except RuntimeError as exc:
        return str(exc)
    return ""


@pytest.fixture(params=DEVICES)
def device(request):
    """Makes the parameter's device the default for the test; yields it."""
    if request.param == "gpu":
        reason = gpu_unavailable_reason()
        if reason:
            pytest.skip(reason)
    dev = mx.Device(mx.gpu if request.param == "gpu" else mx.cpu)
    saved = mx.default_device()
    if dev == saved:
        yield dev
        return
    mx.set_default_device(dev)
    try:
        yield dev
    finally:
        mx.set_default_device(saved)


@pytest.fixture
def num_threads():
    """Sets the thread count for one test: `num_threads(n)`; restored afterwards."""
    before = mx.get_num_threads()
    yield mx.set_num_threads
    mx.set_num_threads(before)
