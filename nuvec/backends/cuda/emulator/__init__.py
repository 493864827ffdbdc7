"""The kernel emulator: a CUDA C kernel file compiled by the system C++ compiler with
`prelude.h` and run on the CPU, a fiber per CUDA thread (see docs/dev/kernel_emulator.md).

    module = build("rms_norm", ["rms_norm<float, 256, 1>"])
    module.launch("rms_norm<float, 256, 1>", grid=(rows,), block=(256,), shared_mem=0,
                  args=[x, w, out, np.int32(d), np.float32(eps)])

Arrays are NumPy buffers passed by address (C-contiguous); scalars must be NumPy scalars of
the kernel parameter's exact type (`np.int32`, `np.float32`, ...). Builds are cached like the
NVRTC loader's (memory and disk). `sanitize="address"` or `"thread"` builds with that
sanitizer; such a library loads only in a process started with the sanitizer's runtime in
`LD_PRELOAD` (see `sanitizer_runtime`).
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends.cuda import cache
from nuvec.backends.cuda.loader import KERNEL_DIR, headers_text, kernel_source

__all__ = ["EmulatedModule", "EmulatorError", "build", "sanitizer_runtime"]

PRELUDE = Path(__file__).with_name("prelude.h")
SHARED_CAPACITY = 227 * 1024  # the largest dynamic shared memory of one block (sm_90)
_FORMAT = "nuvec-emulator-1"
_STACK = {None: 64 * 1024, "address": 256 * 1024, "thread": 256 * 1024}
_SANITIZE_FLAGS = {
    None: ["-O1"],
    "address": ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"],
    "thread": ["-O1", "-g", "-fsanitize=thread"],
}
_DYNAMIC = re.compile(
    r"extern\s+__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*|alignas\s*\(\s*\d+\s*\)\s*)*)"
    r"([A-Za-z_][\w:\s]*?)\s+([A-Za-z_]\w*)\s*\[\s*\]")
_STATIC = re.compile(
    r"__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*)?)([A-Za-z_][\w:<>,\s]*?)\s+"
    r"([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*);")
_modules: dict[str, EmulatedModule] = {}
_seed = [int(os.environ.get("NUVEC_EMU_SEED", "0"))]


class EmulatorError(RuntimeError):
    """An emulator build failed, or a launch deadlocked or was malformed."""


def compiler() -> str:
    """The C++ compiler: `$CXX`, else `g++`."""
    return os.environ.get("CXX", "g++")


@lru_cache(maxsize=None)
def _compiler_version() -> str:
    out = subprocess.run([compiler(), "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else compiler()


def sanitizer_runtime(sanitize: str) -> str:
    """The path of the compiler's `libasan.so` / `libtsan.so`, for `LD_PRELOAD`."""
    lib = {"address": "libasan.so", "thread": "libtsan.so"}[sanitize]
    out = subprocess.run([compiler(), f"-print-file-name={lib}"], capture_output=True,
                         text=True)
    return os.path.realpath(out.stdout.strip())


def translation_unit(source: str, name: str, expressions: Sequence[str]) -> str:
    """The C++ file the emulator compiles: prelude, rewritten source, entry points."""
    arrays: dict[str, str] = {}

    def dynamic(m: re.Match) -> str:
        kind, var = " ".join(m.group(2).split()), m.group(3)
        if arrays.setdefault(var, kind) != kind:
            raise EmulatorError(f"emulator: {name}: dynamic shared array {var} declared with "
                                f"two types ({arrays[var]}, {kind})")
        return f"extern {kind} {var}[]"

    body = _STATIC.sub(_static_shared, _DYNAMIC.sub(dynamic, source))
    defs = "".join(f"alignas(16) {k} {v}[{SHARED_CAPACITY} / sizeof({k})];\n"
                   for v, k in arrays.items())
    fill = "".join(f"  nuvec_emu::fill_garbage((unsigned char*){v}, nuvec_shared_bytes);\n"
                   for v in arrays)
    entries = ",\n".join(f"  [](void** a) {{ nuvec_emu::invoke(&{e}, a); }}" for e in expressions)
    return f"""#include "prelude.h"
#line 1 "{name}.cu"
{body}
#line 1 "emulator-entries"
{defs}static size_t nuvec_shared_bytes = 0;
static void nuvec_before_block() {{
{fill}}}
static void (*const nuvec_entries[])(void**) = {{
{entries}
}};
extern "C" int nuvec_emu_launch(int entry, const unsigned* grid, const unsigned* block,
                                unsigned long long shared, void** args,
                                unsigned long long seed, unsigned long long stack,
                                char* error, unsigned long long error_size) {{
  if (shared > {SHARED_CAPACITY}ull) {{
    std::snprintf(error, error_size,
                  "%llu bytes of dynamic shared memory (at most {SHARED_CAPACITY})", shared);
    return 1;
  }}
  nuvec_shared_bytes = shared;
  int rc = nuvec_emu::launch(nuvec_entries[entry], grid, block, args, seed, stack,
                             nuvec_before_block);
  if (rc) std::snprintf(error, error_size, "%s", nuvec_emu::state.error);
  return rc;
}}
"""


def _static_shared(m: re.Match) -> str:
    """`__shared__ T v[N];` as a per-declaration slot of the block's shared arena."""
    kind, var, dims = " ".join(m.group(2).split()), m.group(3), m.group(4).strip()
    return (f"static nuvec_emu::Shared<{kind} {dims}> nuvec_shared_{var}; "
            f"auto& {var} = *nuvec_shared_{var}.get();")


def build(
    name: str, expressions: Sequence[str], *, source: str | None = None,
    sanitize: str | None = None,
) -> EmulatedModule:
    """Compiles the variants `expressions` of a kernel file (or of `source`) for the CPU.

    Args:
        name: the kernel file's name (`nuvec/fast/kernels/<name>.cu`) or `source`'s name.
        expressions: the variants' name expressions.
        source: CUDA C source to build instead of the file.
        sanitize: `None`, `"address"` or `"thread"`.

    Returns:
        The `EmulatedModule`.

    Raises:
        EmulatorError: when the compiler rejects the source (with its messages).
    """
    text = kernel_source(name) if source is None else source
    expressions = tuple(expressions)
    flags = ["-std=c++17", "-shared", "-fPIC", "-fno-strict-aliasing", *_SANITIZE_FLAGS[sanitize]]
    key = cache.digest(_FORMAT, PRELUDE.read_text(), headers_text(), text, *expressions,
                       *flags, _compiler_version())
    if key not in _modules:
        entry = cache.read_entry(key, ".so")
        path = cache.payload_path(key, ".so")
        if entry is None:
            path = _compile(key, name, translation_unit(text, name, expressions), flags)
        _modules[key] = EmulatedModule(name, expressions, path, _STACK[sanitize])
    return _modules[key]


def built() -> list[EmulatedModule]:
    """The modules built or loaded in this process."""
    return list(_modules.values())


def _compile(key: str, name: str, unit: str, flags: list[str]) -> Path:
    def command(source: Path, out: Path) -> list[str]:
        return [compiler(), *flags, f"-I{PRELUDE.parent}", f"-I{KERNEL_DIR}", str(source), "-o",
                str(out)]

    try:
        return cache.build_entry(key, f"{name}.cpp", unit, command)
    except cache.BuildError as e:
        raise EmulatorError(f"emulator: kernel {name} failed to compile:\n{e}") from None


class EmulatedModule:
    """A built kernel file: `launch(expression, grid, block, shared_mem, args)` runs one."""

    def __init__(self, name: str, expressions: Sequence[str], path: Path, stack: int):
        self.name, self.expressions, self.path, self.stack = name, tuple(expressions), path, stack
        self._lib = ctypes.CDLL(str(path))
        fn = self._lib.nuvec_emu_launch
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong,
                       ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_ulonglong,
                       ctypes.c_char_p, ctypes.c_ulonglong]
        self._launch = fn

    def launch(self, expression: str, grid: Sequence[int], block: Sequence[int],
               shared_mem: int, args: Sequence[Any], seed: int | None = None) -> None:
        """Runs variant `expression` over `grid` blocks of `block` threads.

        Args:
            expression: one of the module's name expressions.
            grid, block: up to three sizes each (missing ones are 1).
            shared_mem: bytes of dynamic shared memory per block.
            args: the kernel's arguments in order: C-contiguous NumPy arrays (by address)
                and NumPy scalars (by value).
            seed: the scheduler's seed (default: a per-process sequence from
                `$NUVEC_EMU_SEED`).

        Raises:
            EmulatorError: for a deadlock, a bad launch shape or argument.
        """
        if expression not in self.expressions:
            raise EmulatorError(f"emulator: {self.name} has no variant {expression}")
        g3, b3 = (np.array((*dims, 1, 1, 1)[:3], np.uint32) for dims in (grid, block))
        if g3.min() == 0:
            return
        keep, pointers = [], (ctypes.c_void_p * max(len(args), 1))()
        for i, a in enumerate(args):
            raw = _argument(a, self.name, i)
            keep.append(raw)
            pointers[i] = raw.ctypes.data
        if seed is None:
            _seed[0] += 1
            seed = _seed[0]
        error = ctypes.create_string_buffer(512)
        rc = self._launch(self.expressions.index(expression), g3.ctypes.data, b3.ctypes.data,
                          int(shared_mem), ctypes.addressof(pointers), seed, self.stack,
                          error, len(error))
        if rc:
            raise EmulatorError(f"emulator: {expression}: {error.value.decode()}")


def _argument(a: Any, name: str, i: int) -> np.ndarray:
    """The bytes a kernel parameter points at: an array's address or a scalar's value."""
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise EmulatorError(f"emulator: {name}: argument {i} is not C-contiguous")
        return np.array([a.ctypes.data], np.uintp)
    if isinstance(a, np.generic):
        return np.array([a])
    raise EmulatorError(f"emulator: {name}: argument {i} must be a NumPy array or NumPy scalar, "
                        f"got {type(a).__name__}")
