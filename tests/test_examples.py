"""The examples run: short trainings of `examples/mlp.py` and `examples/transformer_lm.py`
lower their losses; the language model checkpoints, resumes and generates with its cache."""

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


def test_transformer_lm_short_run_lowers_the_loss_checkpoints_and_resumes(tmp_path) -> None:
    lm = _load("transformer_lm")
    small = ["--dims", "32", "--heads", "2", "--layers", "1", "--hidden", "64", "--context",
             "32", "--batch-size", "8", "--lr", "1e-2", "--warmup", "2", "--eval-every", "10",
             "--val-batches", "2", "--generate", "12", "--out", str(tmp_path), "--quiet"]
    result = lm.main(["--steps", "20", *small])
    losses = [loss for _, loss in result["train_loss"]]
    assert len(losses) == 20
    assert np.mean(losses[-4:]) < 0.75 * np.mean(losses[:2])
    assert result["val_loss"] < 3.5 and len(result["sample"]) == 12
    assert (tmp_path / "loss.png").stat().st_size > 1000
    assert Path(result["checkpoint"]).exists() and (tmp_path / "progress.json").exists()
    resumed = lm.main(["--steps", "22", "--resume", *small])
    assert resumed["steps_run"] == 2 and len(resumed["train_loss"]) == 22
    assert [tuple(p) for p in resumed["train_loss"][:20]] == result["train_loss"]


def test_transformer_lm_data_and_cached_generation_agree() -> None:
    lm = _load("transformer_lm")
    data = lm.CharData(lm.load_text())
    assert data.vocab_size > 90 and len(data.val) > 40_000
    assert data.decode(data.encode("for x in y:")) == "for x in y:"
    import nuvec as mx

    mx.random.seed(0)
    model = lm.TransformerLM(data.vocab_size, 32, 2, 2, 64)
    tokens = mx.array(data.encode("The while loop"))[None]
    full, _ = model(tokens)
    _, cache = model(tokens[:, :10])
    step_logits = []
    for i in range(10, tokens.shape[1]):
        logits, cache = model(tokens[:, i:i + 1], cache)
        step_logits.append(np.asarray(logits[0, 0]))
    np.testing.assert_allclose(np.stack(step_logits), np.asarray(full[0, 10:]), rtol=1e-4,
                               atol=1e-5)
