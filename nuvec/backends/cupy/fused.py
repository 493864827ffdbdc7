"""GPU overrides that launch the CUDA C kernels of the fused ops (`nuvec/backends/cuda/launchers`)
and the user kernels (`mx.fast.cuda_kernel`, `mx.fast.precompiled_cuda_kernel`).

Their nodes get their inputs unchanged (the table's `RAW` classes): bfloat16 reaches the
kernels as the 2-byte bits they read, and 2-byte outputs of a bfloat16 node come back as
`Bfloat16Buffer`s. Inputs the kernels do not take (offsets past 32 bits, other dtypes) compute
through the node's CPU kernel on host copies, as the seed's `run_on_cpu` does. Fused ops
without a CUDA kernel yet are in `nuvec.backends.cpu_route`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nuvec.backends.cuda.custom import USER_KERNELS, user_kernel
from nuvec.backends.cuda.launchers import LAUNCHERS, takes
from nuvec.backends.cuda.runner import CupyRunner, Runner
from nuvec.backends.cupy.bfloat16 import Bfloat16Buffer
from nuvec.backends.cupy.table import host_route
from nuvec.graph.backend import KernelTable


def _bits(x: Any) -> Any:
    return x.bits if type(x) is Bfloat16Buffer else x


def _wrap(result: Any, half: bool) -> Any:
    """Results of a bfloat16 launch: 2-byte outputs are bfloat16 bits."""
    if isinstance(result, tuple):
        return tuple(_wrap(r, half) for r in result)
    return Bfloat16Buffer(result) if half and result.dtype == np.uint16 else result


def _launching(launcher: Callable, runner: Runner, fallback: Callable) -> Callable:
    def kernel(p, *inputs):
        bits = [_bits(x) for x in inputs]
        if not takes(p, bits):
            return fallback(p, *inputs)
        half = any(type(x) is Bfloat16Buffer for x in inputs)
        return _wrap(launcher(runner, p, *bits), half)

    kernel.__name__ = launcher.__name__
    return kernel


def overrides(cpu_kernels: KernelTable, to_host: Callable, from_host: Callable
              ) -> dict[type, Callable]:
    """Kernels launching the CUDA sources on CuPy's current stream, one per fused class.

    Args:
        cpu_kernels: the CPU table, whose kernel computes a node the CUDA kernels do not take.
        to_host: one device buffer as a NumPy array.
        from_host: one NumPy array as a device buffer.
    """
    runner = CupyRunner()
    kernels = {
        cls: _launching(launcher, runner,
                        host_route(cpu_kernels.kernels[cls], to_host, from_host))
        for cls, launcher in LAUNCHERS.items()
    }

    def launch_user_kernel(p, *inputs):
        half = any(type(x) is Bfloat16Buffer for x in inputs)
        return _wrap(user_kernel(runner, p, *[_bits(x) for x in inputs]), half)

    kernels.update(dict.fromkeys(USER_KERNELS, launch_user_kernel))
    return kernels
