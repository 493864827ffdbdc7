"""The on-disk cache shared by the NVRTC loader, the emulator's builds and the CPU's own C
(`nuvec.backends.native`).

Entries live under `cache_dir()`: `NUVEC_KERNEL_CACHE` when set, else `set_cache_dir`'s
argument, else `~/.cache/nuvec/kernels`. An entry is a payload file and a JSON record holding
the payload's SHA-256, written atomically (temporary file, then rename), so a torn or damaged
entry is detected and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["BuildError", "build_entry", "cache_dir", "digest", "read_entry", "set_cache_dir",
           "write_entry"]

ENV = "NUVEC_KERNEL_CACHE"
BUILD_SECONDS = 600  # a compiler still running then is stopped: the build fails
_chosen: list[Path | None] = [None]


def cache_dir() -> Path:
    """The directory of compiled kernels (created on first use).

    Returns:
        `$NUVEC_KERNEL_CACHE`, or the directory given to `set_cache_dir`, or
        `~/.cache/nuvec/kernels`.

    Example:
        >>> from nuvec.backends.cuda.cache import cache_dir
        >>> cache_dir().is_dir()
        True
    """
    env = os.environ.get(ENV)
    path = Path(env) if env else _chosen[0] or Path.home() / ".cache" / "nuvec" / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Sets the kernel cache directory (`None`: the default). `NUVEC_KERNEL_CACHE` wins.

    Args:
        path: a directory, created when missing, or `None`.

    Example:
        >>> from nuvec.backends.cuda.cache import set_cache_dir
        >>> set_cache_dir(None)
    """
    _chosen[0] = None if path is None else Path(path)


def digest(*parts: str | bytes) -> str:
    """SHA-256 over `parts` (length-prefixed, so no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def payload_path(key: str, suffix: str) -> Path:
    """Where the payload of entry `key` lives."""
    return cache_dir() / f"{key}{suffix}"


def write_entry(key: str, suffix: str, payload: bytes, record: dict[str, Any]) -> Path:
    """Stores `payload` and `record` under `key`; returns the payload's path."""
    path = payload_path(key, suffix)
    _atomic_write(path, payload)
    full = dict(record, sha256=hashlib.sha256(payload).hexdigest())
    _atomic_write(cache_dir() / f"{key}.json", json.dumps(full).encode())
    return path


def read_entry(key: str, suffix: str) -> tuple[bytes, dict[str, Any]] | None:
    """The payload and record of `key`, or None when missing or damaged."""
    try:
        record = json.loads((cache_dir() / f"{key}.json").read_text())
        payload = payload_path(key, suffix).read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return payload, record


class BuildError(RuntimeError):
    """A compiler rejected a source; the message holds its diagnostics."""


def build_entry(key: str, filename: str, text: str,
                command: Callable[[Path, Path], list[str]]) -> Path:
    """Compiles `text` into a shared library stored as entry `key` (`.so`); returns its path.

    Args:
        key: the entry's key (a `digest` of everything the library depends on).
        filename: the source file's name (its suffix tells the compiler the language).
        text: the source.
        command: the compiler's command line for a source path and an output path.

    Raises:
        BuildError: when the compiler fails (its diagnostics as the message).
    """
    work = Path(tempfile.mkdtemp(dir=cache_dir(), prefix=f"{key}.build."))  # (one a process)
    source, out = work / filename, work / (Path(filename).stem + ".so")
    try:
        source.write_text(text)
        try:
            done = subprocess.run(command(source, out), capture_output=True, text=True,
                                  timeout=BUILD_SECONDS)
        except subprocess.TimeoutExpired:
            raise BuildError(f"the compiler ran past {BUILD_SECONDS} s") from None
        if done.returncode != 0:
            raise BuildError(done.stderr)
        return write_entry(key, ".so", out.read_bytes(), {"name": Path(filename).stem})
    finally:
        for p in (source, out):
            p.unlink(missing_ok=True)
        work.rmdir()
