"""The kernel loader: each (kernel file, variants, architecture) compiled once with NVRTC and
kept in memory and on disk.

A *variant* is a name expression such as `rms_norm<__nv_bfloat16, 256, 8>`: a kernel template
instantiated for a dtype and its template arguments. `load(file, expressions, arch)` returns a
`Module` holding the cubin, the mangled name of each variant and its resource use (registers,
spills, stack, static shared memory) read from ptxas's report in NVRTC's log.

Cache key: the source, the kernel headers (`*.cuh`), the variants, the options, NVRTC's version
and the architecture. The disk entry (see `nuvec.backends.cuda.cache`) makes a second process
compile nothing; a damaged entry is rebuilt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nuvec.backends.cuda import cache, nvrtc

__all__ = ["KERNEL_DIR", "KernelCompileError", "Module", "Resources", "kernel_source", "load",
           "stats"]

KERNEL_DIR = Path(__file__).resolve().parents[2] / "fast" / "kernels"
_FORMAT = "nuvec-loader-1"
_BASE_OPTIONS = ("-std=c++17", "--ptxas-options=-v", "-DNUVEC_NVRTC=1")
_modules: dict[str, Module] = {}
stats = {"compiled": 0, "from_disk": 0, "rebuilt": 0}


class KernelCompileError(RuntimeError):
    """A kernel source that NVRTC rejects; the message names the kernel, variant and log."""


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel: registers per thread, spills and stack in bytes,
    static shared memory in bytes, named barriers."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    shared: int
    barriers: int


@dataclass
class Module:
    """One compiled program: its cubin and, per variant, the mangled name and resources."""

    name: str
    arch: str
    cubin: bytes
    path: Path
    lowered: dict[str, str]
    resources: dict[str, Resources] = field(default_factory=dict)
    log: str = ""


def kernel_source(name: str) -> str:
    """The CUDA C source `nuvec/fast/kernels/<name>.cu`."""
    return (KERNEL_DIR / f"{name}.cu").read_text()


def headers_text() -> str:
    """The kernel headers (`nuvec/fast/kernels/*.cuh`), concatenated, for cache keys."""
    return "".join(p.name + p.read_text() for p in sorted(KERNEL_DIR.glob("*.cuh")))


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?"
                   r"(?:, \d+ bytes cumulative stack size)?(?:, (\d+) bytes smem)?")


def parse_resources(log: str) -> dict[str, Resources]:
    """ptxas's `-v` report in an NVRTC log, per mangled kernel name."""
    found: dict[str, Resources] = {}
    name, frame = None, (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            name, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and name:
            frame = tuple(int(v) for v in m.groups())
        elif (m := _USED.search(line)) and name:
            regs, barriers, smem = (int(v or 0) for v in m.groups())
            found[name] = Resources(regs, frame[1], frame[2], frame[0], smem, barriers)
            name = None
    return found


def _options(arch: str, extra: Sequence[str]) -> list[str]:
    return [f"--gpu-architecture={arch}", *_BASE_OPTIONS, *extra]


def load(
    name: str, expressions: Sequence[str], arch: str = "sm_90", *, source: str | None = None,
    options: Sequence[str] = (),
) -> Module:
    """Compiles (or fetches from the caches) the variants `expressions` of a kernel file.

    Args:
        name: the kernel file's name (`"rms_norm"` for `nuvec/fast/kernels/rms_norm.cu`), or
            the program name of `source`.
        expressions: the variants' name expressions.
        arch: the target, `"sm_80"`, `"sm_90"`, ...
        source: CUDA C source to compile instead of the file (user kernels).
        options: extra NVRTC options (`-D...`).

    Returns:
        The `Module`.

    Raises:
        KernelCompileError: when NVRTC rejects the source (names the kernel, the variants,
            the architecture and NVRTC's log).
        nvrtc.NvrtcError: when NVRTC is missing.
    """
    text = kernel_source(name) if source is None else source
    expressions = tuple(expressions)
    key = cache.digest(_FORMAT, text, headers_text(), *expressions, *_options(arch, options),
                       repr(nvrtc.version()), arch)
    if key in _modules:
        return _modules[key]
    module = _from_disk(key, name, arch) or _compile(key, name, text, expressions, arch, options)
    _modules[key] = module
    return module


def _from_disk(key: str, name: str, arch: str) -> Module | None:
    entry = cache.read_entry(key, ".cubin")
    if entry is None:
        if cache.payload_path(key, ".cubin").exists():
            stats["rebuilt"] += 1
        return None
    cubin, record = entry
    stats["from_disk"] += 1
    log = record.get("log", "")
    return Module(name, arch, cubin, cache.payload_path(key, ".cubin"), record["lowered"],
                  _by_expression(record["lowered"], log), log)


def _by_expression(lowered: dict[str, str], log: str) -> dict[str, Resources]:
    parsed = parse_resources(log)
    return {e: parsed[m] for e, m in lowered.items() if m in parsed}


def _compile(key, name, text, expressions, arch, options) -> Module:
    include = [f"--include-path={KERNEL_DIR}"]
    if nvrtc.include_dir():
        include.append(f"--include-path={nvrtc.include_dir()}")
    cubin, lowered, log = nvrtc.compile_program(text, f"{name}.cu", expressions,
                                                _options(arch, options) + include)
    if cubin is None:
        shown = ", ".join(expressions)
        raise KernelCompileError(
            f"nvrtc: kernel {name} (variants {shown}; {arch}) failed to compile:\n{log}")
    stats["compiled"] += 1
    path = cache.write_entry(key, ".cubin", cubin, {"name": name, "arch": arch,
                                                    "lowered": lowered, "log": log})
    return Module(name, arch, cubin, path, lowered, _by_expression(lowered, log), log)


def clear_memory_cache() -> None:
    """Forgets the modules loaded in this process (the disk cache stays)."""
    _modules.clear()
