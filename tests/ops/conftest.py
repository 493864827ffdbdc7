"""Every test here runs on each available device (see `tests/conftest.py`)."""

import pytest


@pytest.fixture(autouse=True)
def _on_each_device(device):
    yield device
