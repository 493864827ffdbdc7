"""The `Primitive` contract: what an operation is, its output specs, equality and rules.

How a primitive computes lives in the backends (a kernel table per device). Rule methods are
written with nuvec operations, so transforms compose; `nuvec.ops.families` provides the common
rule families (elementwise, reductions, linear ops) as base classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from nuvec.graph.array import Array, record1

if TYPE_CHECKING:
    from nuvec.graph.dtypes import Dtype

Shape = tuple[int, ...]
OutputSpecs = Sequence[tuple[Shape, "Dtype"]]


class TransformError(ValueError):
    """A transformation that cannot apply to a primitive (for example no derivative exists).

    Example:
        >>> import nuvec as mx
        >>> f = mx.grad(lambda x: mx.sum(mx.view(x, mx.bfloat16)))
        >>> try: f(mx.zeros((2,), mx.float16))
        ... except mx.TransformError as e: print(e)
        vjp: View has no reverse-mode derivative
    """


class Primitive:
    """One operation: parameters, output shapes and dtypes, and `vjp`/`jvp`/`vmap` rules.

    Subclasses set `__slots__` for their parameters and return them from `params()`, which
    defines equality. Rules receive and return nuvec arrays:

    - `vjp(primals, cotangents, argnums, outputs)` -> one cotangent (or `None`) per argnum;
      `cotangents` has one entry per output, `None` where that output gets no cotangent. For
      complex values the rule is the transpose (`u * f'(z)`); the public `vjp` conjugates
      around the walk into MLX's `u * conj(f'(z))`.
    - `jvp(primals, tangents, outputs)` -> one tangent (or `None`) per output; `tangents` has one
      entry per primal, `None` for a zero tangent (never all `None`).
    - `vmap(inputs, axes)` -> (outputs, output axes); `axes[i]` is the batch axis of input `i`
      or `None` if it is not batched.

    `allocates` is False for primitives whose outputs are views of their inputs (broadcasts,
    transposes, slices): only outputs that need a buffer are checked against the device's
    memory when recorded.
    """

    __slots__ = ()
    allocates = True

    @property
    def name(self) -> str:
        return type(self).__name__

    def params(self) -> tuple[Any, ...]:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.params() == other.params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.params()))

    def __repr__(self) -> str:
        params = self.params()
        return f"{self.name}{params!r}" if params else self.name

    def output_specs(self, inputs: Sequence[Array]) -> OutputSpecs:
        raise TransformError(f"{self.name}: output_specs is not defined")

    def vjp(
        self,
        primals: Sequence[Array],
        cotangents: Sequence[Array | None],
        argnums: Sequence[int],
        outputs: Sequence[Array],
    ) -> list[Array | None]:
        raise TransformError(f"vjp: {self.name} has no reverse-mode derivative")

    def jvp(
        self,
        primals: Sequence[Array],
        tangents: Sequence[Array | None],
        outputs: Sequence[Array],
    ) -> list[Array | None]:
        raise TransformError(f"jvp: {self.name} has no forward-mode derivative")

    def vmap(
        self, inputs: Sequence[Array], axes: Sequence[int | None]
    ) -> tuple[list[Array], list[int | None]]:
        raise TransformError(f"vmap: {self.name} has no batching rule")


class Copy(Primitive):
    """The identity; transforms wrap their primals in it to mark where a trace starts."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [cotangents[0]]

    def jvp(self, primals, tangents, outputs):
        return [tangents[0]]

    def vmap(self, inputs, axes):
        return [record1(self, inputs, inputs[0].stream)], [axes[0]]


COPY = Copy()
