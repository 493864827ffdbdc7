"""MLX-style `repr` of arrays and the print options that shape it."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

if TYPE_CHECKING:
    from nuvec.graph.array import Array

# MLX prints the first and last 3 entries of any axis longer than 6 (a threshold of 6)
_options: dict[str, int] = {"precision": -1, "threshold": 6, "edgeitems": 3}


def _format_float(x: float, precision: int) -> str:
    if precision >= 0:
        return f"{x:.{precision}f}"
    return f"{x:g}"


def _item_format(kind: str, precision: int) -> Callable[[Any], str]:
    """How one Python scalar of a NumPy dtype `kind` prints."""
    if kind == "f":
        return lambda x: _format_float(x, precision)
    if kind == "c":
        def complex_format(z: complex) -> str:
            sign, imag = ("-", -z.imag) if z.imag < 0 else ("+", z.imag)  # MLX: 1+-0j, nan+nanj
            return f"{_format_float(z.real, precision)}{sign}{_format_float(imag, precision)}j"

        return complex_format
    return str  # bools as True/False, integers unpadded


def format_array(a: Array) -> str:
    """`array([...], dtype=name)` as MLX prints: C++-stream float formatting, each row on a
    line (no blank lines between blocks, no wrapping), and every axis shown even when empty
    (shape (2, 0) prints two `[]` rows)."""
    data = np.asarray(a)
    if a.dtype.name == "bfloat16":
        data = data.astype(np.float32)
    item = _item_format(data.dtype.kind, _options["precision"])
    edge = _options["edgeitems"] if data.size > _options["threshold"] else None
    body = item(data.item()) if data.ndim == 0 else _format_rows(data, item, edge, len("array("))
    return f"array({body}, dtype={a.dtype.name})"


def _format_rows(data: np.ndarray, item: Callable[[Any], str], edge: int | None,
                 column: int) -> str:
    """`data` (at least 1-D) as nested brackets, the outer one at `column`; with `edge`, axes
    longer than twice it show their first and last `edge` entries around `...`."""
    n = len(data)
    cut = edge is not None and n > 2 * edge
    if data.ndim == 1:
        if cut:
            parts = [*map(item, data[:edge].tolist()), "...", *map(item, data[n - edge:].tolist())]
        else:
            parts = [*map(item, data.tolist())]
        return "[" + ", ".join(parts) + "]"
    rows = [*range(edge), None, *range(n - edge, n)] if cut else range(n)
    inner = [
        "..." if i is None else _format_rows(data[i], item, edge, column + 1) for i in rows
    ]
    return "[" + (",\n" + " " * (column + 1)).join(inner) + "]"


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
