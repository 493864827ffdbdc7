"""MLX-style `repr` of arrays and the print options that shape it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

if TYPE_CHECKING:
    from nuvec.graph.array import Array

_options: dict[str, Any] = {"precision": None, "threshold": 1000, "edgeitems": 3}


def _format_float(x: float, precision: int | None) -> str:
    if precision is not None:
        return f"{x:.{precision}f}"
    return f"{x:g}"


def format_array(a: Array) -> str:
    """`array([...], dtype=name)` with C++-stream float formatting as MLX prints."""
    data = np.asarray(a)
    if a.dtype.name == "bfloat16":
        data = data.astype(np.float32)
    precision = _options["precision"]
    body = np.array2string(
        data,
        separator=", ",
        prefix="array(",
        threshold=_options["threshold"],
        edgeitems=_options["edgeitems"],
        formatter={
            "float_kind": lambda x: _format_float(float(x), precision),
            "complex_kind": lambda z: f"{_format_float(z.real, precision)}"
            f"{'+' if z.imag >= 0 else '-'}{_format_float(abs(z.imag), precision)}j",
            "bool": lambda b: str(bool(b)),
        },
    )
    return f"array({body}, dtype={a.dtype.name})"


def set_printoptions(precision: int | None = None, threshold: int | None = None,
                     edgeitems: int | None = None) -> None:
    """Sets how arrays print: float `precision`, summarization `threshold`, `edgeitems`."""
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems)):
        if value is not None:
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"set_printoptions: {key} must be a non-negative int, got {value!r}")
            _options[key] = value


@contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Temporarily sets print options (see `set_printoptions`)."""
    saved = dict(_options)
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        _options.clear()
        _options.update(saved)
