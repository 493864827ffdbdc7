"""Runs the user kernels of `nuvec.fast.custom_kernel` on a runner: `CustomKernel` nodes (CUDA
C, on CuPy or the emulator) and `PrecompiledKernel` nodes (PTX or cubin, on CuPy only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nuvec.backends.cuda.runner import BinaryRunner, KernelFile, Runner
from nuvec.fast.custom_kernel import CustomKernel, PrecompiledKernel

__all__ = ["USER_KERNELS", "custom_kernel", "precompiled_kernel", "user_kernel"]

# the C type of each kind of scalar argument of a precompiled kernel
_SCALAR_TYPES = {bool: np.bool_, int: np.int32, float: np.float32}


def _host_or_device(runner: Runner, values: Any, dtype: Any) -> Any:
    data = np.asarray(values if len(values) else [0], dtype)
    return data if runner.xp is np else runner.xp.asarray(data)


def _outputs(runner: Runner, p: Any) -> list[Any]:
    """The node's outputs, filled with its `init_value` when it has one."""
    outputs = []
    for shape, dtype in p.outputs:
        out = runner.empty(shape, dtype.name)
        if p.init_value is not None:
            out[...] = p.init_value
        outputs.append(out)
    return outputs


def _blocks(p: Any) -> list[int]:
    return [-(-g // t) for g, t in zip(p.grid, p.threadgroup)]


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
    outputs = _outputs(runner, p)
    kernel = KernelFile(f"custom_kernel_{p.kernel_name}", (p.expression,), p.source)
    runner.launch(kernel, p.expression, _blocks(p), p.threadgroup, p.shared_memory,
                  [*args, *outputs])
    return tuple(outputs)


def precompiled_kernel(runner: BinaryRunner, p: Any, *inputs: Any) -> tuple[Any, ...]:
    """Launches the node's PTX/cubin function with the inputs, the outputs and the scalars (as
    NumPy scalars of their C types) over `ceil(grid / threadgroup)` blocks; returns the
    outputs."""
    arrays = [runner.contiguous(a) if p.ensure_row_contiguous else a for a in inputs]
    scalars = [_SCALAR_TYPES[type(s)](s) for s in p.scalars]
    outputs = _outputs(runner, p)
    runner.launch_binary(p.binary, p.kernel_name, _blocks(p), p.threadgroup, p.shared_memory,
                         [*arrays, *outputs, *scalars])
    return tuple(outputs)


# each user kernel's primitive class and its launch `(runner, primitive, *inputs) -> outputs`
USER_KERNELS: dict[type, Callable[..., tuple[Any, ...]]] = {
    CustomKernel: custom_kernel,
    PrecompiledKernel: precompiled_kernel,
}


def user_kernel(runner: Runner, p: Any, *inputs: Any) -> Any:
    """Launches a user kernel's node (see `USER_KERNELS`); returns its output, or a tuple of
    its outputs when it has several (the kernel tables' convention)."""
    outputs = USER_KERNELS[type(p)](runner, p, *inputs)
    return outputs[0] if len(outputs) == 1 else outputs
