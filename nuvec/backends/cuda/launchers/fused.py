"""The generated CUDA kernel of a `FusedElementwise` node: one thread per output element.

The source is generated per chain, dtypes and layout: each input is read at its offset (the
output's C-order index decomposed over the collapsed output shape, times the input's element
strides, 0 along broadcast axes; shape and strides are compile-time constants), converted to
float; each step computes in float and rounds to its own dtype (`round_to`), as the unfused
graph stores every step in that dtype; the last step is stored. Offsets are 32-bit: `takes`
sends larger arrays to the CPU kernel. Inputs are compacted first (broadcast axes dropped, other
strides copied to C order), so every buffer the kernel reads is C-contiguous. NVRTC compiles
each distinct source once (the loader's cache); the emulator runs the same source.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, OFFSET_LIMIT
from nuvec.backends.cuda.runner import KernelFile, Runner
from nuvec.fast.fused import FusedElementwise
from nuvec.graph.convert import AsType
from nuvec.ops import binary as b
from nuvec.ops import rounding as r
from nuvec.ops import unary as u

__all__ = [
    "BLOCK",
    "collapse",
    "compact",
    "covers",
    "element_strides",
    "fused_elementwise",
    "generate",
    "kernel_file",
    "takes",
]

BLOCK = 256
FLOATS = ("float32", "float16", "bfloat16")

# Each covered step as a C expression over its operands `{0}`, `{1}` (floats).
_UNARY: dict[type, str] = {
    u.Negative: "(-{0})", u.Abs: "fabsf({0})", u.Square: "({0} * {0})", u.Sqrt: "sqrtf({0})",
    u.Rsqrt: "(1.0f / sqrtf({0}))", u.Exp: "expf({0})", u.Expm1: "expm1f({0})",
    u.Log1p: "log1pf({0})", u.Sin: "sinf({0})", u.Cos: "cosf({0})", u.Tan: "tanf({0})",
    u.Tanh: "tanhf({0})", u.Sinh: "sinhf({0})", u.Cosh: "coshf({0})",
    u.ArcSin: "asinf({0})", u.ArcCos: "acosf({0})", u.ArcTan: "atanf({0})",
    u.ArcSinh: "asinhf({0})", u.ArcCosh: "acoshf({0})", u.ArcTanh: "atanhf({0})",
    u.Erf: "erff({0})", u.StopGradient: "{0}", AsType: "{0}",
    u.Sign: "({0} > 0.0f ? 1.0f : ({0} < 0.0f ? -1.0f : {0}))",
    u.Sigmoid: "(1.0f / (1.0f + expf(-{0})))",
    r.Floor: "floorf({0})", r.Ceil: "ceilf({0})", r.Trunc: "truncf({0})", r.Round: "rintf({0})",
}
_BINARY: dict[type, str] = {
    b.Add: "({0} + {1})", b.Subtract: "({0} - {1})", b.Multiply: "({0} * {1})",
    b.Divide: "({0} / {1})", b.Power: "powf({0}, {1})", b.ArcTan2: "atan2f({0}, {1})",
    # NumPy's maximum and minimum propagate NaN (fmaxf would drop it)
    b.Maximum: "(({0} > {1} || {0} != {0}) ? {0} : {1})",
    b.Minimum: "(({0} < {1} || {0} != {0}) ? {0} : {1})",
}
_LOGS = {2.0: "log2f({0})", 10.0: "log10f({0})"}
# `DerivativeProduct` by (kind, scaled): the cotangent `{0}` and the output last
_DERIVATIVES = {
    ("tanh", True): "({0} * (1.0f - {1} * {1}))", ("tanh", False): "(1.0f - {0} * {0})",
    ("sigmoid", True): "({0} * ({1} * (1.0f - {1})))",
    ("sigmoid", False): "({0} * (1.0f - {0}))",
    ("relu", True): "({0} * ({1} > 0.0f ? 1.0f : 0.0f))",
    ("relu", False): "({0} > 0.0f ? 1.0f : 0.0f)",
}


def _expression(primitive: Any) -> str | None:
    cls = type(primitive)
    if cls is u.Log:
        return _LOGS.get(primitive.base, "logf({0})")
    if cls is AsType:
        return _UNARY[cls] if primitive.dtype.name in FLOATS else None
    if cls is u.DerivativeProduct:
        return _DERIVATIVES.get((primitive.kind, primitive.scaled))
    return _UNARY.get(cls) or _BINARY.get(cls)


def covers(primitive: Any, dtype: Any) -> bool:
    """Whether the generated kernel computes `primitive` with a `dtype` result (`primitive`
    None: whether it reads or writes `dtype`).

    Example:
        >>> import nuvec as mx
        >>> from nuvec.backends.cuda.launchers.fused import covers
        >>> covers(mx.exp(mx.ones(1)).primitive, mx.float16), covers(None, mx.int32)
        (True, False)
    """
    if dtype.name not in FLOATS:
        return False
    return primitive is None or _expression(primitive) is not None


def element_strides(a: Any, shape: tuple[int, ...]) -> list[int]:
    """`a`'s strides in elements over `shape` (right-aligned), 0 along broadcast axes."""
    lead = len(shape) - a.ndim
    strides = [0] * lead + [s // a.itemsize for s in a.strides]
    dims = [1] * lead + list(a.shape)
    return [0 if d == 1 else s for d, s in zip(dims, strides)]


def collapse(shape: tuple[int, ...], strides: Sequence[Sequence[int]]
             ) -> tuple[list[int], list[list[int]]]:
    """The output shape with size-1 axes dropped and neighbouring axes merged wherever every
    input's strides allow; the inputs' strides over it.

    Example:
        >>> from nuvec.backends.cuda.launchers.fused import collapse
        >>> collapse((4, 1, 8), [[8, 0, 1], [0, 0, 1]])
        ([4, 8], [[8, 1], [0, 1]])
        >>> collapse((4, 8), [[8, 1]])
        ([32], [[1]])
    """
    keep = [i for i, d in enumerate(shape) if d != 1]
    dims = [shape[i] for i in keep]
    steps = [[s[i] for i in keep] for s in strides]
    i = len(dims) - 1
    while i > 0:
        if all(s[i - 1] == s[i] * dims[i] for s in steps):
            dims[i - 1] *= dims[i]
            del dims[i]
            for s in steps:
                s[i - 1] = s[i]
                del s[i]
        i -= 1
    return dims, steps


def _offsets(dims: list[int], steps: list[list[int]]) -> list[str]:
    """C statements computing `unsigned o<k>` for every input from the index `i`."""
    lines = [f"  unsigned o{k} = 0u;" for k in range(len(steps))]
    if dims:
        lines.append("  unsigned rest = i, c;")
    for axis in reversed(range(len(dims))):
        lines.append(f"  c = rest % {dims[axis]}u; rest /= {dims[axis]}u;"
                     if axis else "  c = rest;")
        lines += [f"  o{k} += c * {s[axis]}u;" for k, s in enumerate(steps) if s[axis]]
    return lines


def generate(p: FusedElementwise, dtypes: Sequence[str], dims: list[int],
             steps: list[list[int]]) -> tuple[str, str]:
    """The kernel's name and CUDA C source for `p` over inputs of `dtypes` read with element
    `steps` over the collapsed output shape `dims`."""
    n = len(dtypes)
    out_type = CTYPES[p.steps[-1][2].name]
    params = [f"const {CTYPES[d]}* __restrict__ x{k}" for k, d in enumerate(dtypes)]
    body = _offsets(dims, steps)
    body += [f"  float v{k} = to_float(x{k}[o{k}]);" for k in range(n)]
    for j, (primitive, refs, dtype) in enumerate(p.steps):
        expression = _expression(primitive).format(*(f"v{r}" for r in refs))
        body.append(f"  float v{n + j} = round_to<{CTYPES[dtype.name]}>({expression});")
    body.append(f"  out[i] = from_float<{out_type}>(v{n + len(p.steps) - 1});")
    text = "\n".join(body)
    name = "fused_" + hashlib.sha256(("|".join(params) + text).encode()).hexdigest()[:16]
    source = "\n".join([
        '#include "common.cuh"',
        "using namespace nuvec;",
        f"__global__ void __launch_bounds__({BLOCK}) {name}(",
        "    " + ",\n    ".join([*params, f"{out_type}* __restrict__ out", "unsigned n"]) + ") {",
        "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (i >= n) return;",
        text,
        "}",
        "",
    ])
    return name, source


_FILES: dict[tuple, KernelFile] = {}


def kernel_file(p: FusedElementwise, inputs: Sequence[Any], dtype_of: Callable[[Any], str]
                ) -> KernelFile:
    """The generated kernel of `p` for these inputs (generated once per chain and layout)."""
    strides = [element_strides(a, p.shape) for a in inputs]
    dims, steps = collapse(p.shape, strides)
    dtypes = [dtype_of(a) for a in inputs]
    key = (p, tuple(dtypes), tuple(dims), tuple(map(tuple, steps)))
    found = _FILES.get(key)
    if found is None:
        name, source = generate(p, dtypes, dims, steps)
        found = _FILES[key] = KernelFile(name, (name,), source)
    return found


def takes(p: FusedElementwise, inputs: Sequence[Any]) -> bool:
    """Whether the generated kernel takes the node: 32-bit offsets, covered dtypes, and a
    bfloat16 result only with a bfloat16 input (the backend's 2-byte buffers)."""
    out_dtype = p.steps[-1][2].name
    names = ["bfloat16" if str(a.dtype) in ("uint16", "bfloat16") else str(a.dtype)
             for a in inputs]
    if out_dtype == "bfloat16" and "bfloat16" not in names:
        return False
    return 0 < math.prod(p.shape) < OFFSET_LIMIT and all(d in FLOATS for d in names)


def compact(runner: Runner, a: Any) -> Any:
    """`a` without its broadcast copies (a stride-0 axis becomes size 1), C-contiguous (copied
    only where other strides remain, such as a transposed view)."""
    index = tuple(slice(0, 1) if t == 0 and d > 1 else slice(None)
                  for d, t in zip(a.shape, a.strides))
    return runner.contiguous(a[index])


def fused_elementwise(runner: Runner, p: FusedElementwise, *inputs: Any) -> Any:
    """`FusedElementwise(steps, shape)`: inputs broadcast to `shape`, any strides."""
    inputs = tuple(compact(runner, a) for a in inputs)
    kernel = kernel_file(p, inputs, runner.dtype_of)
    out = runner.empty(p.shape, p.steps[-1][2].name)
    total = out.size
    runner.launch(kernel, kernel.name, (-(-total // BLOCK),), (BLOCK,), 0,
                  [*inputs, out, np.uint32(total)])
    return out
