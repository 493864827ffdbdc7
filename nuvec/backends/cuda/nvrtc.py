"""NVRTC through ctypes, from the `nvidia-cuda-nvrtc` wheel (no GPU and no CuPy needed).

`compile_program` turns one CUDA C source into a cubin for one architecture (or PTX, as
`mx.fast.precompiled_cuda_kernel` takes it), with the mangled name of each requested name
expression and the compiler's log (which holds ptxas's resource report when
`--ptxas-options=-v` is passed).
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

__all__ = ["NvrtcError", "available", "compile_program", "include_dir", "version"]


class NvrtcError(RuntimeError):
    """NVRTC is missing, or one of its calls failed."""


def _wheel_roots() -> list[Path]:
    try:
        import nvidia  # the namespace package of NVIDIA's pip wheels
    except ImportError:
        return []
    return [Path(p) for p in getattr(nvidia, "__path__", [])]


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    names = [os.environ["NUVEC_NVRTC"]] if os.environ.get("NUVEC_NVRTC") else []
    for root in _wheel_roots():
        names += sorted(glob.glob(str(root / "*" / "lib" / "libnvrtc.so.*")), reverse=True)
    names += ["libnvrtc.so"]
    for name in names:
        if "builtins" in name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        _declare(lib)
        return lib
    raise NvrtcError(
        "nvrtc: libnvrtc not found (pip install nvidia-cuda-nvrtc, or set NUVEC_NVRTC)"
    )


def _declare(lib: ctypes.CDLL) -> None:
    p, c = ctypes.c_void_p, ctypes.c_char_p
    pp, sz = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)
    lib.nvrtcGetErrorString.restype = c
    lib.nvrtcCreateProgram.argtypes = [pp, c, c, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.nvrtcAddNameExpression.argtypes = [p, c]
    lib.nvrtcCompileProgram.argtypes = [p, ctypes.c_int, ctypes.POINTER(c)]
    lib.nvrtcGetProgramLogSize.argtypes = [p, sz]
    lib.nvrtcGetProgramLog.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetCUBINSize.argtypes = [p, sz]
    lib.nvrtcGetCUBIN.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetPTXSize.argtypes = [p, sz]
    lib.nvrtcGetPTX.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetLoweredName.argtypes = [p, c, ctypes.POINTER(c)]
    lib.nvrtcDestroyProgram.argtypes = [pp]


def available() -> bool:
    """Whether NVRTC can be loaded here."""
    try:
        _library()
    except NvrtcError:
        return False
    return True


@lru_cache(maxsize=1)
def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(_library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


@lru_cache(maxsize=1)
def include_dir() -> str | None:
    """The CUDA runtime wheel's include directory (`cuda_fp16.h`, `cuda_bf16.h`), if any."""
    for root in _wheel_roots():
        for found in sorted(glob.glob(str(root / "*" / "include" / "cuda_fp16.h"))):
            return str(Path(found).parent)
    return None


def _check(result: int, call: str) -> None:
    if result != 0:
        text = _library().nvrtcGetErrorString(result).decode()
        raise NvrtcError(f"nvrtc: {call} failed: {text}")


def _log(lib: ctypes.CDLL, prog: ctypes.c_void_p) -> str:
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(max(n.value, 1))
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode(errors="replace")


def compile_program(
    source: str, name: str, expressions: Sequence[str], options: Sequence[str],
    ptx: bool = False,
) -> tuple[bytes | None, dict[str, str], str]:
    """Compiles `source` with NVRTC.

    Args:
        source: CUDA C source.
        name: the program's file name (shown in the log).
        expressions: name expressions (`"rms_norm<float, 256>"`) whose kernels to keep.
        options: NVRTC options; `--gpu-architecture=sm_XX` makes a cubin,
            `--gpu-architecture=compute_XX` only PTX.
        ptx: return the PTX (NUL-terminated, as the driver loads it) instead of the cubin.

    Returns:
        `(cubin or PTX, or None on a compile error; {expression: mangled name}; log)`.
    """
    lib = _library()
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None,
                                  None), "nvrtcCreateProgram")
    try:
        for e in expressions:
            _check(lib.nvrtcAddNameExpression(prog, e.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in options]
        result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        log = _log(lib, prog)
        if result != 0:
            return None, {}, log
        lowered = {}
        for e in expressions:
            out = ctypes.c_char_p()
            _check(lib.nvrtcGetLoweredName(prog, e.encode(), ctypes.byref(out)),
                   "nvrtcGetLoweredName")
            lowered[e] = out.value.decode()
        size, get = ((lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if ptx
                     else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN))
        n = ctypes.c_size_t()
        _check(size(prog, ctypes.byref(n)), size.__name__)
        buf = ctypes.create_string_buffer(n.value)
        _check(get(prog, buf), get.__name__)
        return buf.raw, lowered, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
