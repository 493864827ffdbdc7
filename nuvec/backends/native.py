"""The CPU's own C, compiled on the machine it runs on.

`library(filename, text)` compiles C source with the system C compiler (`$CC`, else `cc`) into
a shared library for this machine's processor (`-O3 -march=native`, loops vectorized through
`#pragma omp simd`; no fast-math and no contraction: every operation rounds as the source
writes it), keeps it in the kernel cache (`nuvec.backends.cuda.cache`, keyed by the source,
the flags, the compiler and the processor) and loads it through `ctypes`, whose calls release
the GIL, so that the thread pool runs them on several cores. Its users: float32 `exp`
(`nuvec.backends.vector_math`, from `vector_math.c`) and the CPU's fused elementwise chains
(`nuvec.backends.numpy.native_fused`).

Without a compiler on the PATH, or with `NUVEC_NATIVE=0` in the environment, `library`
returns None and its users compute with NumPy; so they do where a build fails (a warning
quotes the compiler, once per source). A tool chain that cannot build at all (no
`-march=native`, an unwritable cache) is found by a probe built once a process, and warns
once.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import threading
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, TypeVar

from nuvec.backends.cuda import cache

__all__ = ["FLAGS", "address", "bound", "compiler", "library"]

FLAGS = ("-O3", "-march=native", "-fopenmp-simd", "-ffp-contract=off", "-fno-math-errno",
         "-shared", "-fPIC")
_FORMAT = "nuvec-native-1"
_ENABLED = os.environ.get("NUVEC_NATIVE", "1") != "0"
# the lines of /proc/cpuinfo that say what `-march=native` compiles for
_PROCESSOR_LINES = ("vendor_id", "model name", "flags", "Features", "CPU implementer",
                    "CPU part")

_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL | None] = {}


def address(a: Any) -> int | None:
    """The address of a NumPy array's first element, as a C function takes it (None: None).

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.native import address
        >>> x = np.zeros(4)
        >>> address(x[1:]) - address(x), address(None)
        (8, None)
    """
    if a is None:
        return None
    flags = a.flags
    # 0.6 us, against 2-3 for the dict; NumPy's own numeric dtypes only (it exports no buffer
    # of ml_dtypes' bfloat16 or of datetimes)
    if flags.c_contiguous and flags.writeable and a.nbytes and a.dtype.kind in "biufc":
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    return a.__array_interface__["data"][0]


@lru_cache(maxsize=None)
def compiler() -> str | None:
    """The C compiler's path: `$CC`, else `cc`, where it is on the PATH; None without one or
    with `NUVEC_NATIVE=0`.

    Example:
        >>> from nuvec.backends.native import compiler
        >>> compiler() is None or compiler().startswith("/")
        True
    """
    return shutil.which(os.environ.get("CC", "cc")) if _ENABLED else None


@lru_cache(maxsize=None)
def _identity(cc: str) -> str:
    """The compiler's version and the processor's description (`-march=native`'s target)."""
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    lines = [platform.machine()]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # (the first processor's lines are enough)
                if line.startswith(_PROCESSOR_LINES):
                    lines.append(line.strip())
    except OSError:
        lines.append(platform.processor())
    return version + "\n".join(lines)


def library(filename: str, text: str) -> ctypes.CDLL | None:
    """The C source `text` compiled for this machine and loaded (built once, then read from
    the kernel cache); None without a compiler or where the build fails.

    Args:
        filename: the source's file name (`.c`), for the compiler and its messages.
        text: the C source.

    Example:
        >>> from nuvec.backends.native import library
        >>> lib = library("answer.c", "int answer(void) { return 42; }")
        >>> lib is None or lib.answer() == 42
        True
    """
    cc = compiler()
    if cc is None or not _works(cc):
        return None
    return _library(cc, filename, text)


T = TypeVar("T")
_bound: dict[str, Any] = {}  # source path -> what `bind` made of its library (`bound`)
_bind_lock = threading.Lock()


def bound(source: Path | tuple[Path, ...], bind: Callable[[ctypes.CDLL], T]) -> T | None:
    """`bind(library)` for the C file `source` (built and loaded by `library`), made on first
    use and kept for the process; None where it does not build. A tuple of files builds as
    one source, their texts in order (a file using another's `static` functions), named by
    the last.

    Example:
        >>> from pathlib import Path
        >>> from nuvec.backends.native import bound
        >>> source = Path(__import__("nuvec").backends.__file__).with_name("vector_math.c")
        >>> functions = bound(source, lambda lib: {"exp": lib.nuvec_exp_f32})
        >>> functions is None or "exp" in functions
        True
    """
    sources = source if isinstance(source, tuple) else (source,)
    key = ";".join(map(str, sources))
    if key not in _bound:
        with _bind_lock:
            if key not in _bound:
                lib = library(sources[-1].name, "".join(f.read_text() for f in sources))
                _bound[key] = None if lib is None else bind(lib)
    return _bound[key]


def _library(cc: str, filename: str, text: str) -> ctypes.CDLL | None:
    key = cache.digest(_FORMAT, text, *FLAGS, _identity(cc))
    if key not in _libraries:
        with _lock:  # (one build per source, whichever threads ask)
            if key not in _libraries:
                _libraries[key] = _load(key, filename, text, cc)
    return _libraries[key]


@lru_cache(maxsize=None)
def _works(cc: str) -> bool:
    """Whether `cc` builds and this process loads a library at all (a compiler without
    `-march=native`, an unwritable cache): checked once a process (its library cached like
    any other), so that a broken tool chain warns once rather than once per chain."""
    return _library(cc, "probe.c", "int nuvec_probe(void) { return 1; }\n") is not None


def _load(key: str, filename: str, text: str, cc: str) -> ctypes.CDLL | None:
    try:
        if cache.read_entry(key, ".so") is None:
            path = cache.build_entry(key, filename, text,
                                     lambda source, out: [cc, *FLAGS, str(source), "-o", str(out)])
        else:
            path = cache.payload_path(key, ".so")
        return ctypes.CDLL(str(Path(path)))
    except (cache.BuildError, OSError) as e:
        warnings.warn(f"nuvec: {filename} failed to build with {cc}; NumPy computes instead:\n"
                      f"{e}", RuntimeWarning, stacklevel=3)
        return None
