"""The tile tuner: a kernel's usable schedules timed once per (device, shape bucket), the
fastest kept on disk, so a later process launches it without timing (the seed's `tune`).

The key is the device, the source version of the kernels, and the op's own fields (packed
attention: dtype, heads, window, the token count and the longest length, both rounded up to a
power of two). A cache written for another device or another source version is ignored. A
user can force a schedule (`force`). The timing function is passed in, so the key and cache
logic run without a GPU; the CPU and the kernel emulator never call the tuner.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = ["Pick", "Tuner", "bucket", "force", "forced"]

FORMAT = 1
_forced: dict[str, str] = {}


def force(op: str, name: str | None) -> None:
    """Makes every launch of `op` use schedule `name` (None: the tuner's pick again).

    Args:
        op: the kernel family, e.g. `"packed_attention"` or `"packed_attention_back"`.
        name: a schedule name (`"m64_c64"`, `"c32"`, ...) or None.

    Example:
        >>> from nuvec.fast import tuner
        >>> tuner.force("packed_attention", "r32_c32"); tuner.forced("packed_attention")
        'r32_c32'
        >>> tuner.force("packed_attention", None)
    """
    if name is None:
        _forced.pop(op, None)
    else:
        _forced[op] = str(name)


def forced(op: str) -> str | None:
    """The schedule `force` set for `op`, if any.

    Example:
        >>> from nuvec.fast import tuner
        >>> tuner.forced("packed_attention") is None
        True
    """
    return _forced.get(op)


def bucket(n: int) -> int:
    """`n` rounded up to a power of two (0 stays 0), as the seed's `next_power_of_two`.

    Example:
        >>> from nuvec.fast.tuner import bucket
        >>> bucket(4016), bucket(191), bucket(0)
        (4096, 256, 0)
    """
    return 0 if n <= 0 else 1 << (int(n) - 1).bit_length()


def cache_dir() -> Path:
    """`$NUVEC_TUNE_CACHE`, else `~/.cache/nuvec/tuning`."""
    env = os.environ.get("NUVEC_TUNE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "nuvec" / "tuning"


@dataclass
class Pick:
    """The chosen schedule, whether it came from the cache (or was forced), and the times
    measured for it (ms per launch; empty when nothing was timed).

    Example:
        >>> from nuvec.fast.tuner import Pick
        >>> Pick("m64_c64", from_cache=True).forced
        False
    """

    name: str
    from_cache: bool
    forced: bool = False
    times: dict[str, float] = field(default_factory=dict)


class Tuner:
    """Picks and caches the fastest schedule of one kernel family.

    Args:
        op: the kernel family (the cache file's name and the `force` key).
        version: the kernels' source version (a hash of the `.cu` file); entries of another
            version are ignored.
        path: the cache file (default: `cache_dir() / f"{op}.json"`).

    Example:
        >>> import tempfile, pathlib
        >>> from nuvec.fast.tuner import Tuner
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "demo.json"
        >>> t = Tuner("demo", "v1", path)
        >>> t.pick("gpu0", {"heads": 2}, ["a", "b"], {"a": 2.0, "b": 1.0}.get).name
        'b'
        >>> Tuner("demo", "v1", path).pick("gpu0", {"heads": 2}, ["a", "b"], None).from_cache
        True
    """

    def __init__(self, op: str, version: str, path: Path | None = None):
        self.op, self.version = op, version
        self.path = Path(path) if path is not None else cache_dir() / f"{op}.json"
        self._picks: dict[str, dict[str, Any]] | None = None

    def key(self, device: str, fields: Mapping[str, Any]) -> str:
        """The cache key: the device and the fields in a fixed order."""
        parts = [f"device={device}"] + [f"{k}={fields[k]}" for k in sorted(fields)]
        return "|".join(parts)

    def load(self) -> dict[str, dict[str, Any]]:
        """The cached picks of this version (nothing for another version or a bad file)."""
        if self._picks is None:
            self._picks = {}
            try:
                data = json.loads(self.path.read_text())
            except (OSError, ValueError):
                data = None
            if (isinstance(data, dict) and data.get("format") == FORMAT
                    and data.get("version") == self.version
                    and isinstance(data.get("picks"), dict)):
                self._picks = dict(data["picks"])
        return self._picks

    def store(self, key: str, entry: dict[str, Any]) -> None:
        """Adds one pick and writes the file atomically (merging what another process wrote)."""
        self._picks = None
        picks = self.load()
        picks[key] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"format": FORMAT, "version": self.version, "picks": picks},
                          indent=1, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.replace(tmp, self.path)

    def pick(self, device: str, fields: Mapping[str, Any], candidates,
             time: Callable[[str], float] | None) -> Pick:
        """The schedule for `fields` on `device` among `candidates` (names).

        A forced schedule wins (it must be a candidate); then a cached pick of this device
        and version that is still a candidate; else every candidate is timed with
        `time(name) -> ms` and the fastest is cached.

        Raises:
            ValueError: for a forced schedule that is not a candidate, or no candidates.
        """
        names = list(candidates)
        if not names:
            raise ValueError(f"tuner: {self.op} has no usable schedule")
        chosen = forced(self.op)
        if chosen is not None:
            if chosen not in names:
                raise ValueError(f"tuner: the forced {self.op} schedule {chosen!r} is not "
                                 f"usable here (usable: {', '.join(names)})")
            return Pick(chosen, True, forced=True)
        key = self.key(device, fields)
        entry = self.load().get(key)
        if entry is not None and entry.get("device") == device and entry.get("name") in names:
            return Pick(entry["name"], True)
        if time is None:
            raise ValueError(f"tuner: no cached {self.op} pick for {key} and nothing to time")
        times = {name: float(time(name)) for name in names}
        best = min(names, key=times.__getitem__)
        self.store(key, {"name": best, "device": device, "times": times})
        return Pick(best, False, times=times)
