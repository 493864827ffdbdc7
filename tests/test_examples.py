"""The examples run: a short training of `examples/mlp.py` lowers its loss."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"nuvec_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_spirals_are_deterministic() -> None:
    mlp = _load("mlp")
    x1, y1 = mlp.make_spirals(points_per_class=50)
    x2, y2 = mlp.make_spirals(points_per_class=50)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert x1.shape == (150, 2) and x1.dtype == np.float32
    assert sorted(set(y1.tolist())) == [0, 1, 2]


def test_mlp_quick_run_lowers_the_loss(monkeypatch, capsys) -> None:
    mlp = _load("mlp")
    monkeypatch.setattr(sys, "argv", ["mlp.py", "--quick"])
    mlp.main()
    lines = capsys.readouterr().out.splitlines()
    losses = [float(line.split("loss")[1].split()[0]) for line in lines if line.startswith("epoch")]
    assert len(losses) == 10
    assert losses[-1] < 0.6 * losses[0]
    assert lines[-1].startswith("final loss")
