"""Runs a `nuvec.fast.custom_kernel.CustomKernel` node on a runner (CuPy or the emulator)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["custom_kernel"]


def _host_or_device(runner: Runner, values: Any, dtype: Any) -> Any:
    data = np.asarray(values if len(values) else [0], dtype)
    return data if runner.xp is np else runner.xp.asarray(data)


def custom_kernel(runner: Runner, p: Any, *inputs: Any) -> tuple[Any, ...]:
    """Launches the node's kernel over `ceil(grid / threadgroup)` blocks; returns the outputs."""
    args = []
    for a, (shape, strides, ndim) in zip(inputs, p.extras):
        a = runner.contiguous(a)
        args.append(a)
        if shape:
            args.append(_host_or_device(runner, a.shape, np.int32))
        if strides:
            steps = [s // a.itemsize for s in a.strides]
            args.append(_host_or_device(runner, steps, np.int64))
        if ndim:
            args.append(np.int32(a.ndim))
    outputs = []
    for shape, dtype in p.outputs:
        out = runner.empty(shape, dtype.name)
        if p.init_value is not None:
            out[...] = p.init_value
        outputs.append(out)
    blocks = [-(-g // t) for g, t in zip(p.grid, p.threadgroup)]
    kernel = KernelFile(f"custom_kernel_{p.kernel_name}", (p.expression,), p.source)
    runner.launch(kernel, p.expression, blocks, p.threadgroup, p.shared_memory,
                  [*args, *outputs])
    return tuple(outputs)
