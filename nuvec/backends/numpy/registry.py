"""The CPU kernel table and the decorator that fills it."""

from __future__ import annotations

from typing import Any, Callable

kernels: dict[type, Callable[..., Any]] = {}
# primitive classes whose kernel takes `out=`: a buffer the evaluator gives up (see `kernel`)
writes_into: set[type] = set()


def kernel(
    *primitive_classes: type, out: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the decorated function as the CPU kernel of each primitive class.

    With `out=True` the kernel also takes a keyword `out`: `None`, or an array of the output's
    shape and dtype that the evaluator gives up to it (an input buffer nothing else can see, so
    it may alias an input). The kernel may write its whole result there in one elementwise
    NumPy call and return it, or ignore it; it must not write there otherwise.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for cls in primitive_classes:
            if cls in kernels:
                raise RuntimeError(f"two CPU kernels registered for {cls.__name__}")
            kernels[cls] = fn
            if out:
                writes_into.add(cls)
        return fn

    return register
