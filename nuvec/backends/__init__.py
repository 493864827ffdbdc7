"""Backends: how primitives compute, one package per device. Only the NumPy (CPU) backend
exists; a GPU backend would be `nuvec.backends.cupy` (see docs/dev/adding_a_kernel.md)."""
