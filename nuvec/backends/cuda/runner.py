"""Runners: what a kernel launcher needs from a device, so one launcher drives both the GPU
(`CupyRunner`, kernels from the NVRTC loader through `cupy.RawModule`) and the CPU
(`EmulatorRunner`, the kernel emulator).

A launcher computes the grid, block, dynamic shared memory and arguments of a kernel and calls
`runner.launch(kernel_file, expression, grid, block, shared_mem, args)`; it allocates its
outputs with `runner.empty(shape, dtype)`, reads input dtypes with `runner.dtype_of(a)`
(`"float32"`, `"float16"`, `"bfloat16"`, `"int32"`, ...), makes inputs C-contiguous with
`runner.contiguous(a)` and reads buffer addresses (for alignment) with `runner.address(a)`;
`runner.xp` is the array module (NumPy or CuPy) for copies and zero fills. Scalar arguments are
NumPy scalars of the kernel parameter's type. A `BinaryRunner` (CuPy's) also launches a function
of a PTX or cubin image: `runner.launch_binary(binary, symbol, grid, block, shared_mem, args)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import ml_dtypes
import numpy as np

from nuvec.backends.cuda import cache, emulator, loader

__all__ = ["BinaryRunner", "CupyRunner", "EmulatorRunner", "KernelFile", "Runner", "numpy_dtype"]
_BINARY_FORMAT = "nuvec-precompiled-1"


@dataclass(frozen=True)
class KernelFile:
    """A kernel file `nuvec/fast/kernels/<name>.cu` and every variant a launcher may use
    (the emulator builds them together; the compile check compiles them all), or a user
    kernel's `source`."""

    name: str
    variants: tuple[str, ...]
    source: str | None = None


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a dtype name (`bfloat16` is `ml_dtypes.bfloat16`)."""
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


class Runner(Protocol):
    """The device interface of the launchers."""

    xp: Any

    def empty(self, shape: Sequence[int], dtype: str) -> Any: ...

    def dtype_of(self, a: Any) -> str: ...

    def contiguous(self, a: Any) -> Any: ...

    def address(self, a: Any) -> int: ...

    def launch(self, kernel: KernelFile, expression: str, grid: Sequence[int],
               block: Sequence[int], shared_mem: int, args: Sequence[Any]) -> None: ...


class BinaryRunner(Runner, Protocol):
    """A runner that also launches functions of PTX or cubin images."""

    def launch_binary(self, binary: bytes, symbol: str, grid: Sequence[int],
                      block: Sequence[int], shared_mem: int, args: Sequence[Any]) -> None: ...


class EmulatorRunner:
    """Launches kernels in the CPU emulator on NumPy arrays.

    Args:
        seed: the scheduler seed of every launch (default: a fresh one per launch).
        sanitize: build the kernels with `"address"` or `"thread"` sanitizer.

    Example:
        >>> from nuvec.backends.cuda.runner import EmulatorRunner
        >>> EmulatorRunner().empty((2, 3), "bfloat16").dtype.name
        'bfloat16'
    """

    xp = np

    def __init__(self, seed: int | None = None, sanitize: str | None = None):
        self.seed, self.sanitize = seed, sanitize

    def empty(self, shape, dtype):
        return np.empty(tuple(shape), numpy_dtype(dtype))

    def dtype_of(self, a):
        return np.asarray(a).dtype.name

    def contiguous(self, a):
        a = np.asarray(a)
        return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)

    def address(self, a):
        return a.ctypes.data

    def launch(self, kernel, expression, grid, block, shared_mem, args):
        module = emulator.build(kernel.name, kernel.variants, source=kernel.source,
                                sanitize=self.sanitize)
        module.launch(expression, grid, block, shared_mem, args, seed=self.seed)


class CupyRunner:
    """Launches NVRTC-compiled kernels on CuPy arrays (bfloat16 stored as 2-byte `uint16`
    buffers, the GPU backend's convention), on CuPy's current stream."""

    def __init__(self):
        import cupy  # only when a GPU runner is made: `import nuvec` never imports CuPy

        self.xp = cupy
        self._functions: dict[tuple[str, str, str, str | None], Any] = {}
        self._binaries: dict[tuple[str, str], Any] = {}

    def empty(self, shape, dtype):
        return self.xp.empty(tuple(shape), np.uint16 if dtype == "bfloat16" else dtype)

    def dtype_of(self, a):
        name = a.dtype.name
        return "bfloat16" if name in ("uint16", "bfloat16") else name

    def contiguous(self, a):
        return a if a.flags.c_contiguous else self.xp.ascontiguousarray(a).reshape(a.shape)

    def address(self, a):
        return a.data.ptr

    def arch(self) -> str:
        """The current device's target, `sm_90` for compute capability "90"."""
        return f"sm_{self.xp.cuda.Device().compute_capability}"

    def function(self, kernel: KernelFile, expression: str) -> Any:
        """The `cupy.RawModule` function of one variant (compiled or fetched once)."""
        arch = self.arch()
        key = (kernel.name, expression, arch, kernel.source)
        if key not in self._functions:
            module = loader.load(kernel.name, [expression], arch, source=kernel.source)
            raw = self.xp.RawModule(path=str(module.path))
            self._functions[key] = raw.get_function(module.lowered[expression])
        return self._functions[key]

    def binary_function(self, binary: bytes, symbol: str) -> Any:
        """The `cupy.RawModule` function `symbol` of a PTX or cubin image, loaded once per
        image (CuPy loads the module once per device, from the image's file in the kernel
        cache, so the file stays there)."""
        key = cache.digest(_BINARY_FORMAT, binary)
        if (key, symbol) not in self._binaries:
            path = cache.write_entry(key, ".bin", binary, {})
            self._binaries[key, symbol] = self.xp.RawModule(path=str(path)).get_function(symbol)
        return self._binaries[key, symbol]

    def launch(self, kernel, expression, grid, block, shared_mem, args):
        _call(self.function(kernel, expression), grid, block, shared_mem, args)

    def launch_binary(self, binary, symbol, grid, block, shared_mem, args):
        _call(self.binary_function(binary, symbol), grid, block, shared_mem, args)


def _call(fn: Any, grid: Sequence[int], block: Sequence[int], shared_mem: int,
          args: Sequence[Any]) -> None:
    """Launches a `cupy.RawKernel` on CuPy's current stream, raising its dynamic shared memory
    limit first when `shared_mem` passes the default 48 KiB."""
    if shared_mem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = int(shared_mem)
    fn(tuple(grid), tuple(block), tuple(args), shared_mem=int(shared_mem))
