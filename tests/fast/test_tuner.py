"""The tile tuner without a GPU: keys, the disk cache (another process, another device or
source version, a damaged file), forced schedules, and the packed-attention launcher's use of
it (timing injected; bypassed in the emulator)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nuvec.backends.cuda.launchers import packed_attention as launcher
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.fast import tuner
from nuvec.fast.packed_attention import PackedAttention
from nuvec.fast.tuner import Tuner, bucket

NAMES = ["r16_c16", "r32_c32", "m64_c64"]
SPEED = {"r16_c16": 3.0, "r32_c32": 1.0, "m64_c64": 2.0}


class Clock:
    """An injected timing function that counts its calls."""

    def __init__(self, speed=SPEED):
        self.speed, self.calls = speed, []

    def __call__(self, name):
        self.calls.append(name)
        return self.speed[name]


def never(name):
    raise AssertionError(f"timed {name}")


@pytest.fixture
def path(tmp_path):
    return tmp_path / "packed_attention.json"


def test_bucket():
    assert [bucket(n) for n in (0, 1, 2, 3, 191, 4016, 4096)] == [0, 1, 2, 4, 256, 4096, 4096]


def test_key_orders_fields():
    t = Tuner("op", "v")
    assert t.key("H200", {"window": 0, "heads": 12}) == "device=H200|heads=12|window=0"


def test_times_once_then_reuses(path):
    clock = Clock()
    first = Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12}, NAMES, clock)
    assert first.name == "r32_c32" and not first.from_cache and first.times == SPEED
    assert sorted(clock.calls) == sorted(NAMES)
    again = Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12}, NAMES, never)
    assert again.name == "r32_c32" and again.from_cache
    entry = json.loads(path.read_text())["picks"]["device=H200|heads=12"]
    assert entry["name"] == "r32_c32" and entry["device"] == "H200"


def test_a_second_process_reuses_the_pick(path):
    Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12}, NAMES, Clock())
    code = ("import sys; from nuvec.fast.tuner import Tuner;"
            "p = Tuner('packed_attention', 'v1', sys.argv[1]).pick('H200', {'heads': 12}, "
            "['r16_c16', 'r32_c32', 'm64_c64'], None); print(p.name, p.from_cache)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, cwd=os.getcwd())
    assert done.stdout.split() == ["r32_c32", "True"], done.stderr


@pytest.mark.parametrize("change", ["version", "device", "fields", "damaged"])
def test_other_caches_are_ignored(path, change):
    Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12}, NAMES, Clock())
    version, device, fields = "v1", "H200", {"heads": 12}
    if change == "version":
        version = "v2"
    elif change == "device":
        device = "A100"
    elif change == "fields":
        fields = {"heads": 16}
    else:
        path.write_text(path.read_text()[:20])
    clock = Clock({"r16_c16": 0.5, "r32_c32": 1.0, "m64_c64": 2.0})
    pick = Tuner("packed_attention", version, path).pick(device, fields, NAMES, clock)
    assert pick.name == "r16_c16" and not pick.from_cache and len(clock.calls) == 3


def test_a_cached_pick_that_is_no_longer_usable_is_retimed(path):
    Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12}, NAMES, Clock())
    pick = Tuner("packed_attention", "v1", path).pick("H200", {"heads": 12},
                                                      ["r16_c16", "m64_c64"], Clock())
    assert pick.name == "m64_c64" and not pick.from_cache


def test_forced_schedule(path):
    tuner.force("packed_attention", "m64_c64")
    try:
        pick = Tuner("packed_attention", "v1", path).pick("H200", {}, NAMES, never)
        assert pick.name == "m64_c64" and pick.forced
        with pytest.raises(ValueError, match="^tuner: the forced packed_attention schedule "
                                             "'m64_c64' is not usable here"):
            Tuner("packed_attention", "v1", path).pick("H200", {}, ["r16_c16"], never)
    finally:
        tuner.force("packed_attention", None)
    assert tuner.forced("packed_attention") is None and not path.exists()


def test_no_candidates_or_nothing_to_time(path):
    with pytest.raises(ValueError, match="^tuner: op has no usable schedule"):
        Tuner("op", "v1", path).pick("H200", {}, [], never)
    with pytest.raises(ValueError, match="^tuner: no cached op pick for device=H200"):
        Tuner("op", "v1", path).pick("H200", {}, NAMES, None)


# -- the packed-attention launcher -------------------------------------------------------
def _node(lengths=(5, 40, 1), heads=2, d=64, dtype=np.float32, window=None):
    qkv = np.zeros((sum(lengths), 3 * heads * d), dtype)
    return PackedAttention(heads, lengths, d ** -0.5, window), qkv


class FakeGpu(EmulatorRunner):
    """A runner that looks like a GPU to the schedule choice (it has an `arch`)."""

    def arch(self):
        return "sm_90"


def test_launcher_key_buckets_tokens_and_lengths():
    p, _ = _node(window=8)
    assert launcher.tuning_key(p, "bfloat16", 46) == {
        "dtype": "bfloat16", "heads": 2, "window": 9, "tokens": 64, "longest": 64}


def test_launcher_tunes_on_a_gpu(path):
    p, qkv = _node()
    facts = launcher.DeviceFacts("H200 sm_90", 227 * 1024, True)
    speeds = {name: float(i + 1) for i, name in enumerate(launcher.TILES)}
    speeds["r64_c32"] = 0.1
    clock = Clock(speeds)
    t = Tuner("packed_attention", launcher.source_version(), path)
    name, tile = launcher.schedule(FakeGpu(), p, qkv, False, clock, facts, t)
    assert name == "r64_c32" and tile == launcher.TILES["r64_c32"]
    # float32: no mma schedule is a candidate
    assert set(clock.calls) == {n for n, s in launcher.TILES.items() if not s.mma}
    again = launcher.schedule(FakeGpu(), p, qkv, False, never, facts,
                              Tuner("packed_attention", launcher.source_version(), path))
    assert again[0] == "r64_c32"


def test_launcher_bypasses_the_tuner_in_the_emulator(monkeypatch):
    monkeypatch.setattr(Tuner, "pick", never)
    p, qkv = _node()
    assert launcher.schedule(EmulatorRunner(), p, qkv, False, never)[0] == "r16_c16"
    assert launcher.schedule(EmulatorRunner(), p, qkv, True, never)[0] == "c16"
    tuner.force("packed_attention", "r32_c64")
    try:
        assert launcher.schedule(EmulatorRunner(), p, qkv, False, never)[0] == "r32_c64"
    finally:
        tuner.force("packed_attention", None)
