"""The CPU kernel of `mx.fast.cuda_kernel` nodes: the user's CUDA C in the kernel emulator."""

from __future__ import annotations

from nuvec.backends.cuda.custom import custom_kernel
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.backends.numpy.registry import kernel
from nuvec.fast.custom_kernel import CustomKernel

_RUNNER = EmulatorRunner()


@kernel(CustomKernel)
def cuda_kernel(p, *inputs):
    outputs = custom_kernel(_RUNNER, p, *inputs)
    return outputs[0] if len(outputs) == 1 else outputs
