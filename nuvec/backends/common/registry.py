"""The registry of shared bodies: a primitive's computation written once against `xp`.

A body is `body(xp, primitive, *inputs)` where `xp` is an array namespace (NumPy or CuPy) and
the inputs are arrays of that namespace. Each backend binds the bodies to its namespace
(`bind`) and then overrides the entries where it has something better.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from nuvec.graph.backend import KernelTable

Body = Callable[..., Any]


class Bodies:
    """Shared bodies by primitive class, each with whether it takes `out=` (see `KernelTable`).

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.common.registry import Bodies, bind
        >>> from nuvec.graph.backend import KernelTable
        >>> class Exp: pass
        >>> bodies = Bodies()
        >>> @bodies.register(Exp)
        ... def exp(xp, p, x):
        ...     return xp.exp(x)
        >>> table = KernelTable("example"); bind(table, np, bodies)
        >>> float(table.get(Exp)(None, np.float64(0.0)))
        1.0
    """

    def __init__(self) -> None:
        self.entries: dict[type, tuple[Body, bool]] = {}
        self.factories: dict[type, tuple[Callable[[Any], Body], bool]] = {}

    def add(self, cls: type, fn: Body, out: bool = False) -> None:
        """Registers `fn` as the body of `cls`.

        Raises:
            ValueError: if `cls` has a body already.
        """
        if cls in self:
            raise ValueError(f"shared bodies: two bodies registered for {cls.__name__}")
        self.entries[cls] = (fn, out)

    def add_factory(self, cls: type, make: Callable[[Any], Body], out: bool = False) -> None:
        """Registers `make(xp) -> kernel(primitive, *inputs)`: for hot elementwise kernels,
        which then look up no namespace attribute per call.

        Raises:
            ValueError: if `cls` has a body already.
        """
        if cls in self:
            raise ValueError(f"shared bodies: two bodies registered for {cls.__name__}")
        self.factories[cls] = (make, out)

    def register(self, *classes: type, out: bool = False) -> Callable[[Body], Body]:
        """A decorator registering the function as the body of each class."""

        def decorate(fn: Body) -> Body:
            for cls in classes:
                self.add(cls, fn, out=out)
            return fn

        return decorate

    def __contains__(self, cls: object) -> bool:
        return cls in self.entries or cls in self.factories

    def classes(self) -> list[type]:
        return [*self.entries, *self.factories]


SHARED = Bodies()
body = SHARED.register


def bind(
    table: KernelTable, xp: Any, bodies: Bodies = SHARED, skip: frozenset = frozenset()
) -> None:
    """Adds every body (except the classes in `skip`) to `table`, computing with `xp`."""
    for cls, (fn, out) in bodies.entries.items():
        if cls not in skip:
            table.add(cls, partial(fn, xp), out=out)
    for cls, (make, out) in bodies.factories.items():
        if cls not in skip:
            table.add(cls, make(xp), out=out)
