"""`cuda_kernel`: user CUDA C kernels, as MLX's `mx.fast.cuda_kernel`.

The body is wrapped in a generated `__global__` function whose parameters come from the input
and output names (plus `<name>_shape`, `<name>_strides`, `<name>_ndim` for the inputs whose names
the body uses). A call records one `CustomKernel` node: a GPU stream runs it through CuPy
(NVRTC), the CPU stream through the kernel emulator, so a kernel can be tested on a machine
without a GPU. Inputs are always passed row-contiguous.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nuvec import ops
from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array

__all__ = ["CustomKernel", "cuda_kernel"]

CTYPES = {
    "float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16", "float64": "double",
    "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
    "uint64": "unsigned long long", "bool": "bool",
}
_NAME = re.compile(r"[A-Za-z_]\w*$")


def _ctype(dtype: dt.Dtype, what: str) -> str:
    if dtype.name not in CTYPES:
        raise DtypeError(f"cuda_kernel: {what} has unsupported dtype {dtype.name}")
    return CTYPES[dtype.name]


def _uses(body: str, name: str) -> bool:
    return re.search(rf"\b{name}\b", body) is not None


class CustomKernel(Primitive):
    """One call of a user kernel: the generated source, its variant and the launch."""

    __slots__ = (
        "expression",
        "extras",
        "grid",
        "init_value",
        "kernel_name",
        "outputs",
        "shared_memory",
        "source",
        "threadgroup",
    )

    def __init__(self, name, source, expression, grid, threadgroup, shared_memory, outputs,
                 init_value, extras):
        self.kernel_name, self.source, self.expression = name, source, expression
        self.grid, self.threadgroup = tuple(grid), tuple(threadgroup)
        self.shared_memory, self.init_value = int(shared_memory), init_value
        self.outputs = tuple(outputs)  # ((shape, dtype), ...)
        self.extras = tuple(extras)  # per input: which of shape, strides, ndim are passed

    def params(self):
        return (self.kernel_name, self.source, self.expression, self.grid, self.threadgroup,
                self.shared_memory, self.outputs, self.init_value, self.extras)

    def output_specs(self, inputs):
        return list(self.outputs)

    def vmap(self, inputs, axes):
        """One launch per batch element (the body knows nothing of a batch), stacked."""
        n = next(a.shape[ax] for a, ax in zip(inputs, axes) if ax is not None)
        per = []
        for i in range(n):
            sliced = [a if ax is None else ops.take(a, i, axis=ax) for a, ax in zip(inputs, axes)]
            per.append(record(self, sliced, to_stream(None)))
        outs = [ops.stack([p[k] for p in per]) for k in range(len(self.outputs))]
        return outs, [0] * len(outs)


class CudaKernel:
    """A compiled-on-demand user kernel; call it with MLX's keywords (see `cuda_kernel`)."""

    def __init__(self, name, input_names, output_names, source, header, ensure_row_contiguous,
                 shared_memory):
        for n in [name, *input_names, *output_names]:
            if not isinstance(n, str) or not _NAME.match(n):
                raise ValueError(f"cuda_kernel: {n!r} is not a C identifier")
        if not isinstance(source, str) or not isinstance(header, str):
            raise TypeError("cuda_kernel: source and header must be strings")
        if shared_memory < 0:
            raise ValueError(f"cuda_kernel: shared_memory must be >= 0, got {shared_memory}")
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
            grid, threadgroup = _dims(grid, "grid"), _dims(threadgroup, "threadgroup")
            if threadgroup[0] * threadgroup[1] * threadgroup[2] > 1024:
                raise ValueError(f"cuda_kernel: a threadgroup has at most 1024 threads, got "
                                 f"{threadgroup}")
            for d in output_dtypes:
                if not isinstance(d, dt.Dtype):
                    raise DtypeError(f"cuda_kernel: output dtypes must be dtypes, got {d!r}")
            source, expression, extras = self.source_for(arrays, output_dtypes, template)
            if verbose:
                print(source)
            outputs = [(tuple(int(n) for n in s), d) for s, d in zip(output_shapes,
                                                                     output_dtypes)]
            node = CustomKernel(self.name, source, expression, grid, threadgroup,
                                self.shared_memory, outputs,
                                None if init_value is None else float(init_value), extras)
            return record(node, arrays, to_stream(None))


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    dims = tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(n, int) or n < 1 for n in dims):
        raise ValueError(f"cuda_kernel: {what} must be 1 to 3 positive ints, got {value!r}")
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


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
