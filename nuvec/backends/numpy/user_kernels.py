"""The CPU kernels of the user kernels: `mx.fast.cuda_kernel` nodes run their CUDA C in the
kernel emulator; `mx.fast.precompiled_cuda_kernel` nodes (PTX or cubin) cannot run here."""

from __future__ import annotations

from nuvec.backends.cuda.custom import user_kernel
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.backends.numpy.registry import kernel
from nuvec.fast.custom_kernel import CustomKernel, PrecompiledKernel, gpu_only

_RUNNER = EmulatorRunner()


@kernel(CustomKernel)
def cuda_kernel(p, *inputs):
    return user_kernel(_RUNNER, p, *inputs)


@kernel(PrecompiledKernel)
def precompiled_cuda_kernel(p, *inputs):
    # reached by a GPU-stream node whose backend computes fused nodes on the host (the test
    # double): the CPU has no way to run PTX or cubin
    raise gpu_only(f"kernel {p.kernel_name} computed on the host")
