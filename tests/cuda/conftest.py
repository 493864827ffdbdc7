"""The sanitizer runs (`sanitize` marker) are opt-in: `NUVEC_SANITIZE=1 python -m pytest
tests/cuda -m sanitize`. Without it they are deselected, not skipped."""

import os


def pytest_collection_modifyitems(config, items):
    if os.environ.get("NUVEC_SANITIZE") == "1":
        return
    keep = [i for i in items if i.get_closest_marker("sanitize") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
