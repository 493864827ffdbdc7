"""Backends: how primitives compute. `common/` holds the shared bodies (written once against
an array namespace), `numpy/` the CPU backend, `cupy/` the GPU backend (imported on first GPU
use), `cpu_route.py` the primitives a GPU computes on the CPU, `double.py` a NumPy-backed GPU
stand-in for tests. See docs/dev/backends.md."""
