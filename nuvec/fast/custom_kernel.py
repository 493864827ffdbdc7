"""User CUDA kernels, as MLX's `mx.fast.cuda_kernel` and `mx.fast.precompiled_cuda_kernel`.

`cuda_kernel`: the body is wrapped in a generated `__global__` function whose parameters come
from the input and output names (plus `<name>_shape`, `<name>_strides`, `<name>_ndim` for the
inputs whose names the body uses). A call records one `CustomKernel` node: a GPU stream runs it
through CuPy (NVRTC), the CPU stream through the kernel emulator, so a kernel can be tested on a
machine without a GPU. Inputs are always passed row-contiguous.

`precompiled_cuda_kernel`: a function of a PTX or cubin image, recorded as one
`PrecompiledKernel` node on a GPU stream (a CPU cannot run it).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from nuvec import ops
from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record
from nuvec.graph.device import DeviceType, to_stream
from nuvec.graph.device import stream as stream_context
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, bool_flag

__all__ = ["CustomKernel", "PrecompiledKernel", "UserKernel", "cuda_kernel", "gpu_only",
           "precompiled_cuda_kernel"]

CTYPES = {
    "float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16", "float64": "double",
    "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
    "uint64": "unsigned long long", "bool": "bool",
}
_NAME = re.compile(r"[A-Za-z_]\w*$")
_INT32 = (-(2**31), 2**31 - 1)


def _ctype(dtype: dt.Dtype, what: str) -> str:
    if dtype.name not in CTYPES:
        raise DtypeError(f"cuda_kernel: {what} has unsupported dtype {dtype.name}")
    return CTYPES[dtype.name]


def _uses(body: str, name: str) -> bool:
    return re.search(rf"\b{name}\b", body) is not None


class UserKernel(Primitive):
    """A launch of a user kernel: grid and threadgroup in threads per dimension, dynamic shared
    memory in bytes, outputs `((shape, dtype), ...)` and their fill value (or None)."""

    abstract = True  # the launch both kinds of user kernel share
    __slots__ = ("grid", "init_value", "outputs", "shared_memory", "threadgroup")

    def __init__(self, grid, threadgroup, shared_memory, outputs, init_value):
        self.grid, self.threadgroup = tuple(grid), tuple(threadgroup)
        self.shared_memory, self.init_value = int(shared_memory), init_value
        self.outputs = tuple(outputs)

    def output_specs(self, inputs):
        return list(self.outputs)

    def vmap(self, inputs, axes):
        """One launch per batch element (the kernel knows nothing of a batch), stacked."""
        n = next(a.shape[ax] for a, ax in zip(inputs, axes) if ax is not None)
        per = []
        for i in range(n):
            sliced = [a if ax is None else ops.take(a, i, axis=ax) for a, ax in zip(inputs, axes)]
            per.append(record(self, sliced, to_stream(None)))
        outs = [ops.stack([p[k] for p in per]) for k in range(len(self.outputs))]
        return outs, [0] * len(outs)


class CustomKernel(UserKernel):
    """One call of a `cuda_kernel`: the generated source, its variant and the launch."""

    __slots__ = ("expression", "extras", "kernel_name", "source")

    def __init__(self, name, source, expression, grid, threadgroup, shared_memory, outputs,
                 init_value, extras):
        super().__init__(grid, threadgroup, shared_memory, outputs, init_value)
        self.kernel_name, self.source, self.expression = name, source, expression
        self.extras = tuple(extras)  # per input: which of shape, strides, ndim are passed

    def params(self):
        return (self.kernel_name, self.source, self.expression, self.grid, self.threadgroup,
                self.shared_memory, self.outputs, self.init_value, self.extras)


class PrecompiledKernel(UserKernel):
    """One call of `precompiled_cuda_kernel`: the function `kernel_name` of a PTX or cubin
    image, its scalar arguments (bool, int, float) and the launch."""

    __slots__ = ("binary", "ensure_row_contiguous", "kernel_name", "scalars")

    def __init__(self, name, binary, scalars, grid, threadgroup, shared_memory, outputs,
                 init_value, ensure_row_contiguous):
        super().__init__(grid, threadgroup, shared_memory, outputs, init_value)
        self.kernel_name, self.binary, self.scalars = name, binary, tuple(scalars)
        self.ensure_row_contiguous = ensure_row_contiguous

    def params(self):
        return (self.kernel_name, self.binary, self.scalars, self.grid, self.threadgroup,
                self.shared_memory, self.outputs, self.init_value, self.ensure_row_contiguous)


class CudaKernel:
    """A compiled-on-demand user kernel; call it with MLX's keywords (see `cuda_kernel`)."""

    def __init__(self, name, input_names, output_names, source, header, ensure_row_contiguous,
                 shared_memory):
        for n in [name, *input_names, *output_names]:
            if not isinstance(n, str) or not _NAME.match(n):
                raise ValueError(f"cuda_kernel: {n!r} is not a C identifier")
        if not isinstance(source, str) or not isinstance(header, str):
            raise TypeError("cuda_kernel: source and header must be strings")
        _check_shared_memory("cuda_kernel", shared_memory)
        self.name, self.input_names = name, list(input_names)
        self.output_names, self.body, self.header = list(output_names), source, header
        self.ensure_row_contiguous, self.shared_memory = ensure_row_contiguous, shared_memory

    def _template(self, template) -> tuple[str, str]:
        """(the `template <...>` line, the variant's arguments)."""
        if not template:
            return "", ""
        params, args = [], []
        for entry in template:
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
                raise TypeError(f"cuda_kernel: template entries are (name, value) pairs, got "
                                f"{entry!r}")
            key, value = entry
            if isinstance(value, dt.Dtype):
                params.append(f"typename {key}")
                args.append(_ctype(value, f"template argument {key}"))
            elif isinstance(value, bool):
                params.append(f"bool {key}")
                args.append("true" if value else "false")
            elif isinstance(value, int):
                params.append(f"int {key}")
                args.append(str(value))
            else:
                raise TypeError(f"cuda_kernel: template argument {key} must be a dtype, int or "
                                f"bool, got {type(value).__name__}")
        return f"template <{', '.join(params)}>\n", f"<{', '.join(args)}>"

    def source_for(self, inputs: Sequence[Array], dtypes: Sequence[dt.Dtype], template):
        """(the generated source, its name expression, the per-input extras)."""
        params, extras = [], []
        for n, a in zip(self.input_names, inputs):
            params.append(f"const {_ctype(a.dtype, f'input {n}')}* __restrict__ {n}")
            used = tuple(_uses(self.body, f"{n}_{k}") for k in ("shape", "strides", "ndim"))
            extras.append(used)
            if used[0]:
                params.append(f"const int* {n}_shape")
            if used[1]:
                params.append(f"const long long* {n}_strides")
            if used[2]:
                params.append(f"int {n}_ndim")
        for n, d in zip(self.output_names, dtypes):
            params.append(f"{_ctype(d, f'output {n}')}* __restrict__ {n}")
        head, args = self._template(template)
        kernel = f"custom_kernel_{self.name}"
        source = (
            "#ifndef NUVEC_EMULATOR\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#endif\n"
            f"{self.header}\n{head}__global__ void {kernel}({', '.join(params)}) {{\n"
            f"{self.body}\n}}\n")
        return source, kernel + args, extras

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup,
                 template=None, init_value=None, verbose=False, stream=None):
        with stream_context(to_stream(stream)):
            arrays = [as_array(a, "cuda_kernel") for a in inputs]
            if len(arrays) != len(self.input_names):
                raise ValueError(f"cuda_kernel: {self.name} takes {len(self.input_names)} inputs "
                                 f"({', '.join(self.input_names)}), got {len(arrays)}")
            if len(output_shapes) != len(self.output_names) or len(output_dtypes) != len(
                    self.output_names):
                raise ValueError(f"cuda_kernel: {self.name} has {len(self.output_names)} "
                                 f"outputs, got {len(output_shapes)} shapes and "
                                 f"{len(output_dtypes)} dtypes")
            outputs, grid, threadgroup = _launch("cuda_kernel", output_shapes, output_dtypes,
                                                 grid, threadgroup)
            source, expression, extras = self.source_for(arrays, output_dtypes, template)
            if verbose:
                print(source)
            node = CustomKernel(self.name, source, expression, grid, threadgroup,
                                self.shared_memory, outputs, _fill(init_value), extras)
            return record(node, arrays, to_stream(None))


def _dims(op: str, value: Any, what: str) -> tuple[int, int, int]:
    dims = tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(n, int) or n < 1 for n in dims):
        raise ValueError(f"{op}: {what} must be 1 to 3 positive ints, got {value!r}")
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


def _launch(op: str, output_shapes, output_dtypes, grid, threadgroup):
    """The checked outputs `((shape, dtype), ...)`, grid and threadgroup of a user kernel's
    call."""
    if len(output_shapes) != len(output_dtypes):
        raise ValueError(f"{op}: got {len(output_shapes)} output shapes and "
                         f"{len(output_dtypes)} output dtypes")
    grid, threadgroup = _dims(op, grid, "grid"), _dims(op, threadgroup, "threadgroup")
    if threadgroup[0] * threadgroup[1] * threadgroup[2] > 1024:
        raise ValueError(f"{op}: a threadgroup has at most 1024 threads, got {threadgroup}")
    for d in output_dtypes:
        if not isinstance(d, dt.Dtype):
            raise DtypeError(f"{op}: output dtypes must be dtypes, got {d!r}")
    outputs = tuple((tuple(int(n) for n in s), d) for s, d in zip(output_shapes, output_dtypes))
    return outputs, grid, threadgroup


def _check_shared_memory(op: str, shared_memory: Any) -> None:
    if not isinstance(shared_memory, int) or shared_memory < 0:
        raise ValueError(f"{op}: shared_memory must be an int >= 0, got {shared_memory!r}")


def _fill(init_value: Any) -> float | None:
    return None if init_value is None else float(init_value)


def cuda_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str],
                source: str, header: str = "", ensure_row_contiguous: bool = True,
                shared_memory: int = 0) -> CudaKernel:
    """A custom CUDA C kernel from the body of its `__global__` function, as MLX's.

    The signature is generated: `const T* <input>` per input (T from its dtype), then
    `const int* <input>_shape`, `const long long* <input>_strides` and `int <input>_ndim` when
    the body names them, then `T* <output>` per output. Call the result with `inputs`,
    `output_shapes`, `output_dtypes`, `grid` (threads, per dimension), `threadgroup` (threads
    per block), and optionally `template` (`[("T", mx.float32), ("N", 4)]`), `init_value`
    (fills the outputs first), `verbose` (prints the source) and `stream`. Blocks are
    `ceil(grid / threadgroup)` per dimension, so the body checks its index. On a GPU stream it
    runs through CuPy; on the CPU stream through nuvec's kernel emulator.

    Args:
        name: kernel name (a C identifier).
        input_names, output_names: parameter names.
        source: the kernel body (CUDA C).
        header: code placed before the kernel (helpers, includes).
        ensure_row_contiguous: accepted for MLX compatibility; inputs are always passed
            row-contiguous (strides describe that layout).
        shared_memory: bytes of dynamic shared memory per block (`extern __shared__`).

    Returns:
        A callable returning the list of outputs.

    Raises:
        ValueError: for names that are not identifiers or a negative `shared_memory` (and, at
            the call, for mismatched inputs, outputs, grid or threadgroup).
        TypeError: for non-string sources (and, at the call, unsupported dtypes or template
            values).

    Example:
        >>> import nuvec as mx
        >>> k = mx.fast.cuda_kernel("twice", ["x"], ["y"], '''
        ...     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < x_shape[0]) y[i] = 2 * x[i];''')
        >>> x = mx.array([1.0, 2.0, 3.0])
        >>> k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(3, 1, 1),
        ...   threadgroup=(32, 1, 1))[0].tolist()
        [2.0, 4.0, 6.0]
    """
    return CudaKernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                      shared_memory)


def gpu_only(where: str) -> ValueError:
    """The error of a `precompiled_cuda_kernel` asked to run `where` (not on a CUDA GPU)."""
    return ValueError(
        f"precompiled_cuda_kernel: compiled PTX/cubin runs only on a GPU stream (CUDA, through "
        f"CuPy), got {where}; mx.fast.cuda_kernel with CUDA C source runs on the CPU too "
        "(through the kernel emulator)")


def _scalar(index: int, value: Any) -> bool | int | float:
    """A kernel's scalar argument as the Python value of its C type (bool, int, float)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        if not _INT32[0] <= int(value) <= _INT32[1]:
            raise ValueError(f"precompiled_cuda_kernel: scalar {index} ({value}) does not fit "
                             "in a 32-bit int")
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"precompiled_cuda_kernel: scalar {index} must be a bool, int or float, "
                    f"got {type(value).__name__}")


def precompiled_cuda_kernel(
    *, name: str, compiled_source: bytes, inputs: Sequence[Any],
    output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[dt.Dtype],
    scalars: Sequence[bool | int | float], grid: Sequence[int], threadgroup: Sequence[int],
    shared_memory: int = 0, init_value: float | None = None, ensure_row_contiguous: bool = False,
    stream: Any = None,
) -> list[Array]:
    """Runs the function `name` of a PTX or cubin image on a GPU stream, as MLX's.

    The kernel gets a pointer per input, then a pointer per output, then each scalar (a bool
    as a C `bool`, an int as a 32-bit `int`, a float as a 32-bit `float`), in that order. It
    runs over `ceil(grid / threadgroup)` blocks per dimension (`grid` counts threads, as in
    `cuda_kernel`) of `threadgroup` threads, with `shared_memory` bytes of dynamic shared
    memory. The image is loaded once per process; `name` is its symbol as the PTX or cubin
    spells it (an `extern "C"` name, or a mangled one). Make the image with
    `nvcc -ptx -arch=sm_80 kernel.cu` (PTX, which the driver compiles for the GPU it runs on) or
    `nvcc -cubin -arch=sm_90 kernel.cu` (one architecture). A CPU cannot run it: use
    `cuda_kernel` with the CUDA C source there (it runs in nuvec's kernel emulator).

    Args:
        name: the kernel's symbol in the image.
        compiled_source: the PTX or cubin image.
        inputs: arrays (or values convertible to arrays) passed as pointers.
        output_shapes, output_dtypes: one shape and dtype per output.
        scalars: bool, int (32-bit) or float (passed as 32-bit float) arguments.
        grid: threads per dimension (1 to 3 positive ints).
        threadgroup: threads per block (at most 1024 in all).
        shared_memory: bytes of dynamic shared memory per block (`extern __shared__`).
        init_value: fills the outputs before the launch (they are uninitialized otherwise).
        ensure_row_contiguous: copy inputs that are not row-contiguous first (otherwise the
            kernel gets each input's data as it lies in memory).
        stream: the stream or device (default: the default stream).

    Returns:
        The list of outputs.

    Raises:
        ValueError: on a CPU stream; for an empty `name` or image, mismatched output shapes
            and dtypes, a bad grid or threadgroup, a negative `shared_memory`, an int scalar
            outside 32 bits.
        TypeError: for an image that is not bytes, output dtypes that are not dtypes, a scalar
            that is not a bool, int or float.

    Example:
        >>> import nuvec as mx
        >>> # scale.ptx: nvcc -ptx -arch=sm_80 of
        >>> # extern "C" __global__ void scale(const float* x, float* y, float s, int n) {
        >>> #     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = s * x[i]; }
        >>> ptx = open("scale.ptx", "rb").read()  # doctest: +SKIP
        >>> x = mx.arange(4, dtype=mx.float32)
        >>> (y,) = mx.fast.precompiled_cuda_kernel(  # doctest: +SKIP
        ...     name="scale", compiled_source=ptx, inputs=[x], output_shapes=[x.shape],
        ...     output_dtypes=[x.dtype], scalars=[2.0, x.size], grid=(x.size, 1, 1),
        ...     threadgroup=(256, 1, 1), stream=mx.gpu)
        >>> y.tolist()  # doctest: +SKIP
        [0.0, 2.0, 4.0, 6.0]
    """
    op = "precompiled_cuda_kernel"
    target = to_stream(stream)
    with stream_context(target):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{op}: name must be a kernel's symbol, got {name!r}")
        if not isinstance(compiled_source, (bytes, bytearray, memoryview)):
            raise TypeError(f"{op}: compiled_source must be bytes (PTX or cubin), got "
                            f"{type(compiled_source).__name__}")
        if not len(compiled_source):
            raise ValueError(f"{op}: compiled_source is empty")
        _check_shared_memory(op, shared_memory)
        arrays = [as_array(a, op) for a in inputs]
        outputs, grid, threadgroup = _launch(op, output_shapes, output_dtypes, grid, threadgroup)
        values = [_scalar(i, s) for i, s in enumerate(scalars)]
        ensure_row_contiguous = bool_flag(ensure_row_contiguous, op, "ensure_row_contiguous")
        if target.device.type is not DeviceType.gpu:
            raise gpu_only(str(target))
        node = PrecompiledKernel(name, bytes(compiled_source), values, grid, threadgroup,
                                 shared_memory, outputs, _fill(init_value),
                                 ensure_row_contiguous)
        return record(node, arrays, target)
