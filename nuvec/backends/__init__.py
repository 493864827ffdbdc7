"""Backends: how primitives compute, one package per device (NumPy for the CPU, CuPy for the GPU)."""
