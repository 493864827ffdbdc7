"""One launcher per fused operation: grid, block, shared memory and arguments of its CUDA
kernels, written against a `nuvec.backends.cuda.runner.Runner`, so the same launcher drives
CuPy on a GPU and the kernel emulator on the CPU.

`LAUNCHERS` maps each fused primitive class to `launcher(runner, primitive, *inputs)`;
`takes(primitive, inputs)` says whether the kernels cover the inputs (else the node computes
through its fallback); the launchers of `WRITES_INTO` also take `out=` (a donated buffer) and
then update a cache in place; `KERNEL_FILES` lists every kernel file with its variants (the compile
check compiles them all); `register(table, runner, fallback)` fills a backend's kernel table.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from nuvec.backends.cuda.custom import USER_KERNELS, user_kernel
from nuvec.backends.cuda.launchers import (attention, attention_tiled, elementwise, fused,
                                          gated_delta, gather, norms, packed_attention, rope,
                                          softmax)
from nuvec.backends.cuda.launchers.rows import fits
from nuvec.backends.cuda.runner import KernelFile, Runner
from nuvec.fast.attention import Attention
from nuvec.fast.attention_grad import AttentionVjp
from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.fused import FusedElementwise
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.fast.rope import NormRope, Rope
from nuvec.fast.softmax import LogSumExp, Softmax
from nuvec.ops.quantized import QuantizedMatmul

__all__ = ["KERNEL_FILES", "LAUNCHERS", "WRITES_INTO", "register", "takes"]

LAUNCHERS: dict[type, Callable[..., Any]] = {
    RmsNorm: norms.rms_norm,
    AddRmsNorm: norms.add_rms_norm,
    RmsNormVjp: norms.rms_norm_vjp,
    LayerNorm: norms.layer_norm,
    LayerNormVjp: norms.layer_norm_vjp,
    Softmax: softmax.softmax,
    LogSumExp: softmax.logsumexp,
    CrossEntropy: softmax.cross_entropy,
    CrossEntropyVjp: softmax.cross_entropy_vjp,
    Rope: rope.rope,
    NormRope: rope.norm_rope,
    DepthwiseConv1d: elementwise.depthwise_conv1d,
    PagedWrite: elementwise.paged_write,
    PackedAttention: packed_attention.forward_node,
    PackedAttentionVjp: packed_attention.backward_node,
    Attention: attention.attention,
    AttentionVjp: attention_tiled.attend_back,
    PagedAttention: attention.paged_attention,
    GatherMm: gather.gather_mm,
    GatherQmm: gather.gather_qmm,
    QuantizedMatmul: gather.quantized_matmul,
    GatedDelta: gated_delta.gated_delta,
    GatedDeltaSlots: gated_delta.gated_delta_slots,
    FusedElementwise: fused.fused_elementwise,  # generated per chain (no kernel file)
}
KERNEL_FILES: list[KernelFile] = [norms.RMS_NORM, norms.LAYER_NORM, softmax.SOFTMAX,
                                  softmax.CROSS_ENTROPY, rope.ROPE, rope.NORM_ROPE,
                                  elementwise.CONV1D, elementwise.PAGED_WRITE,
                                  packed_attention.KERNEL, attention.ATTENTION,
                                  attention.PAGED_ATTENTION, gated_delta.GATED_DELTA,
                                  gather.KERNEL, attention_tiled.TILED]
# The launchers that take `out=` (a buffer of the output's shape and dtype the caller gives up,
# as the evaluator's `writes_into`) and then write a cache in place instead of copying it.
WRITES_INTO = frozenset({PagedWrite, NormRope})
# Extra conditions beyond 32-bit offsets, per primitive class: (primitive, inputs) -> bool.
_CONDITIONS: dict[type, Callable[[Any, Sequence[Any]], bool]] = {
    PackedAttention: packed_attention.takes,
    PackedAttentionVjp: packed_attention.takes,
    Attention: attention.takes,
    AttentionVjp: lambda p, inputs: attention_tiled.takes(inputs),
    GatherMm: gather.takes,
    GatherQmm: gather.takes,
    QuantizedMatmul: gather.takes,
    GatedDelta: gated_delta.takes,
    GatedDeltaSlots: gated_delta.takes,
    FusedElementwise: fused.takes,
}


def takes(p: Any, inputs: Sequence[Any]) -> bool:
    """Whether the kernels of `p` take `inputs` (float16/bfloat16/float32 data whose offsets
    fit in 32 bits, and the op's own bounds)."""
    if type(p) not in LAUNCHERS or not inputs or not fits(*inputs):
        return False
    if str(inputs[0].dtype) not in ("float32", "float16", "bfloat16", "uint16"):
        return False
    check = _CONDITIONS.get(type(p))
    return check is None or check(p, inputs)


def register(table: MutableMapping[type, Callable[..., Any]], runner: Runner,
             fallback: Callable[..., Any]) -> None:
    """Installs a kernel for every launcher, and for the user kernels' nodes
    (`mx.fast.cuda_kernel`, `mx.fast.precompiled_cuda_kernel`), into a backend's kernel `table`.

    Args:
        table: primitive class -> kernel `(primitive, *inputs) -> output(s)`.
        runner: the runner the launchers use (`CupyRunner()` on a GPU).
        fallback: the kernel for inputs the launchers do not take (the GPU backend's
            route through `cpu_fallback_kernel`).
    """
    for cls, launcher in LAUNCHERS.items():
        table[cls] = _kernel(launcher, runner, fallback)

    def launch_user_kernel(p, *inputs):
        return user_kernel(runner, p, *inputs)

    table.update(dict.fromkeys(USER_KERNELS, launch_user_kernel))


def _kernel(launcher, runner, fallback):
    def kernel(p, *inputs, **out):
        if not takes(p, inputs):
            return fallback(p, *inputs)
        return launcher(runner, p, *inputs, **out)

    kernel.__name__ = launcher.__name__
    return kernel
