"""MLX-style `repr` of arrays and the print options that shape it."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

if TYPE_CHECKING:
    from nuvec.graph.array import Array

# MLX prints the first and last 3 entries of any axis longer than 6 (a threshold of 6)
_options: dict[str, int] = {"precision": -1, "threshold": 6, "edgeitems": 3}


def _format_float(x: float, precision: int) -> str:
    if precision >= 0:
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
            "int": lambda i: str(int(i)),  # unpadded, as MLX
        },
    )
    return f"array({body}, dtype={a.dtype.name})"


@dataclass
class PrintOptions:
    """How arrays print, as MLX's `PrintOptions` (nuvec adds `threshold` and `edgeitems`).

    `precision` is the number of digits after the point for floats; -1 prints them as MLX
    does by default (C++ stream formatting: up to 6 significant digits).

    Example:
        >>> import nuvec as mx
        >>> mx.PrintOptions(precision=2)
        PrintOptions(precision=2, threshold=6, edgeitems=3)
    """

    precision: int = -1
    threshold: int = 6
    edgeitems: int = 3


def get_printoptions() -> PrintOptions:
    """The current print options (a copy: changing it changes nothing).

    Example:
        >>> import nuvec as mx
        >>> with mx.printoptions(precision=3):
        ...     print(mx.get_printoptions().precision)
        3
    """
    return PrintOptions(**_options)


def set_printoptions(precision: int = -1, threshold: int | None = None,
                     edgeitems: int | None = None) -> None:
    """Sets how arrays print.

    As in MLX, `precision` defaults to -1 (MLX's default float format), so calling this
    without it resets the precision; `threshold` and `edgeitems` (nuvec's additions, as in
    NumPy) keep their current values when None.

    Args:
        precision: digits after the point for floats, or -1 for MLX's default format.
        threshold: arrays with more elements than this print summarized with `...`.
        edgeitems: how many items a summarized axis shows at each end.

    Raises:
        ValueError: for a precision that is not an int >= -1, or a threshold or edgeitems
            that is not a non-negative int; no option changes then.

    Example:
        >>> import nuvec as mx
        >>> with mx.printoptions(precision=2):
        ...     print(mx.array([1 / 3]))
        array([0.33], dtype=float32)
    """
    _options.update(_checked_options("set_printoptions", precision, threshold, edgeitems))


def _checked_options(op: str, precision: Any, threshold: Any, edgeitems: Any) -> dict:
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems}
    given = {key: value for key, value in given.items() if value is not None}
    for key, value in given.items():
        lowest = -1 if key == "precision" else 0
        if not isinstance(value, int) or isinstance(value, bool) or not lowest <= value < 2**31:
            raise ValueError(f"{op}: {key} must be an int in [{lowest}, 2**31), got {value!r}")
    return given


def printoptions(precision: int = -1, threshold: int | None = None,
                 edgeitems: int | None = None) -> Any:
    """Sets print options (as `set_printoptions`) inside a `with` block and restores the
    previous ones on exit, even after an error.

    Args:
        precision, threshold, edgeitems: as `set_printoptions`.

    Returns:
        The context manager.

    Raises:
        ValueError: (at the call) for options `set_printoptions` rejects.

    Example:
        >>> import nuvec as mx
        >>> with mx.printoptions(precision=2):
        ...     print(mx.array([1 / 3]))
        array([0.33], dtype=float32)
    """
    return _scoped_options(_checked_options("printoptions", precision, threshold, edgeitems))


@contextmanager
def _scoped_options(given: dict) -> Iterator[None]:
    saved = dict(_options)
    _options.update(given)
    try:
        yield
    finally:
        _options.clear()
        _options.update(saved)
