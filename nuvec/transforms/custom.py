"""Custom transformation rules: `custom_function` and `checkpoint`.

A `CustomTransforms` node takes the function's array inputs followed by the outputs the
function computed on them, and passes the latter through. Transforms apply the node's rules (the
user's, or by default the transform of the wrapped function, which recomputes its forward) and
never walk into the function's own graph, which is built outside any trace and so is freed as
soon as it has been evaluated.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from nuvec.graph.array import Array, record
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.graph.tree import TreeDef, flatten, is_node, unflatten
from nuvec.ops.arguments import check_callable
from nuvec.ops.creation import zeros_like
from nuvec.transforms.autodiff import conjugated, jvp, pullback
from nuvec.transforms.batching import vmap
from nuvec.transforms.depends import depends
from nuvec.transforms.trace import untraced

__all__ = ["custom_function", "checkpoint"]

FlatFun = Callable[..., list[Array]]


def _zeros_for(values: Sequence[Array | None], like: Sequence[Array]) -> list[Array]:
    return [zeros_like(o) if v is None else v for v, o in zip(values, like)]


class CustomTransforms(Primitive):
    """Outputs = the last inputs; `num_primals` leading inputs are the function's arguments.

    `fun(*primals) -> list of arrays`; optional flat rules:
    `vjp_fun(primals, cotangents, outputs, wanted)` -> one cotangent (or None) per primal,
    those of the indices in `wanted` at least; `jvp_fun(primals, tangents)` -> one tangent per
    output (tangents None where zero); `vmap_fun(inputs, axes)` -> (outputs, axes).
    """

    __slots__ = ("num_primals", "fun", "vjp_fun", "jvp_fun", "vmap_fun")

    def __init__(self, num_primals: int, fun: FlatFun, vjp_fun: Callable | None = None,
                 jvp_fun: Callable | None = None, vmap_fun: Callable | None = None):
        self.num_primals = num_primals
        self.fun, self.vjp_fun, self.jvp_fun, self.vmap_fun = fun, vjp_fun, jvp_fun, vmap_fun

    def params(self):
        return (self.num_primals, self.fun, self.vjp_fun, self.jvp_fun, self.vmap_fun)

    def output_specs(self, inputs):
        return tuple((x.shape, x.dtype) for x in inputs[self.num_primals:])

    def vjp(self, primals, cotangents, argnums, outputs):
        n = self.num_primals
        args = list(primals[:n])
        cots = _zeros_for(cotangents, outputs)
        wanted = [i for i in argnums if i < n]
        if self.vjp_fun is not None:
            grads = list(self.vjp_fun(args, cots, list(outputs), wanted))
            if len(grads) != n:
                raise ValueError(f"custom_function: the vjp returned {len(grads)} cotangents "
                                 f"for {n} array arguments")
        else:
            grads = pullback(self.fun, args, cots)[1]
        return [grads[i] if i < n else None for i in argnums]

    def jvp(self, primals, tangents, outputs):
        n = self.num_primals
        args, ts = list(primals[:n]), list(tangents[:n])
        if self.jvp_fun is not None:
            outs = list(self.jvp_fun(args, ts))
            if len(outs) != len(outputs):
                raise ValueError(f"custom_function: the jvp returned {len(outs)} tangents for "
                                 f"{len(outputs)} outputs")
            return outs
        return jvp(self.fun, args, _zeros_for(ts, args))[1]

    def vmap(self, inputs, axes):
        n = self.num_primals
        args, in_axes = list(inputs[:n]), list(axes[:n])
        if self.vmap_fun is not None:
            outs, out_axes = self.vmap_fun(args, in_axes)
            return list(outs), list(out_axes)
        outs = vmap(lambda *xs: list(self.fun(*xs)), in_axes=tuple(in_axes))(*args)
        return outs, [0] * len(outs)


class _Call:
    """One call of a wrapped function: the arrays among its arguments and its output tree."""

    def __init__(self, fun: Callable[..., Any], op: str, args: tuple, kwargs: dict):
        self.fun, self.op = fun, op
        leaves, self.in_def = flatten((list(args), kwargs))
        self.positions = [i for i, x in enumerate(leaves) if isinstance(x, Array)]
        self.leaves = leaves
        self.num_args = len(args)
        self.out_def: TreeDef | None = None

    def arrays(self) -> list[Array]:
        return [self.leaves[i] for i in self.positions]

    def rebuild(self, arrays: Sequence[Any], constants: bool = True) -> tuple[list, dict]:
        """The call's (args, kwargs) with `arrays` in place of its arrays and its other leaves
        kept, or None without `constants` (they have no tangent or batch axis)."""
        leaves = list(self.leaves) if constants else [None] * len(self.leaves)
        for i, a in zip(self.positions, arrays):
            leaves[i] = a
        args, kwargs = unflatten(self.in_def, leaves)
        return args, kwargs

    def flat(self, *arrays: Array) -> list[Array]:
        args, kwargs = self.rebuild(arrays)
        outs, self.out_def = flatten(self.fun(*args, **kwargs))
        for o in outs:
            if not isinstance(o, Array):
                raise TypeError(f"{self.op}: the function must return arrays or trees of arrays, "
                                f"got {type(o).__name__}")
        return outs

    def outputs(self, flat: Sequence[Any]) -> Any:
        assert self.out_def is not None
        return unflatten(self.out_def, list(flat))

    def apply(self, vjp_fun=None, jvp_fun=None, vmap_fun=None) -> Any:
        arrays = self.arrays()
        outs = untraced(lambda: self.flat(*arrays))
        prim = CustomTransforms(len(arrays), self.flat, vjp_fun, jvp_fun, vmap_fun)
        results = record(prim, [*arrays, *outs], to_stream(None)) if outs else []
        return self.outputs(results)


def _one_or_tuple(args: Sequence[Any]) -> Any:
    return args[0] if len(args) == 1 else tuple(args)


def _arrays_of(op: str, what: str, tree: Any, count: int) -> list[Array | None]:
    leaves = flatten(tree)[0]
    for x in leaves:
        if x is not None and not isinstance(x, Array):
            raise TypeError(f"{op}: the {what} must hold arrays, got {type(x).__name__}")
    if len(leaves) != count:
        raise ValueError(f"{op}: the {what} returned {len(leaves)} arrays, expected {count}")
    return leaves


class custom_function:  # noqa: N801  (MLX's name)
    """A function whose `vjp`, `jvp` and `vmap` are given by the user (MLX's decorator).

    Calls behave like the wrapped function. Under a transformation the functions registered
    with `.vjp`, `.jvp` and `.vmap` replace the derived rules; a transformation without one
    applies to the wrapped function (recomputing its forward). Arrays the function closes over
    are constants: no gradient reaches them.

    - `vjp(primals, cotangents, outputs, **kwargs)`: `primals` is the single positional
      argument or the tuple of them; `cotangents` and `outputs` have the output's structure.
      Returns one cotangent per argument (alone for a single one), each a tree of its
      argument's structure; `None` (or a missing trailing one) for zeros; entries for
      non-array leaves are ignored.
    - `jvp(primals, tangents)`: `tangents` mirrors `primals` (None where zero); returns the
      output tangents with the output's structure.
    - `vmap(inputs, axes)`: `axes` mirrors `inputs` (None for unbatched); returns
      `(outputs, output_axes)`.

    Example:
        >>> import nuvec as mx
        >>> @mx.custom_function
        ... def f(x):
        ...     return x * x
        >>> @f.vjp
        ... def f_vjp(x, cotangent, output):
        ...     return cotangent * 10.0
        >>> mx.grad(f)(mx.array(3.0)).item()
        10.0
    """

    def __init__(self, f: Callable[..., Any]):
        check_callable("custom_function", f)
        self._fun = f
        self._vjp: Callable | None = None
        self._jvp: Callable | None = None
        self._vmap: Callable | None = None
        functools.update_wrapper(self, f)

    def vjp(self, f: Callable[..., Any]) -> custom_function:
        """Registers the custom vjp; returns this function (use as a decorator)."""
        self._vjp = f
        return self

    def jvp(self, f: Callable[..., Any]) -> custom_function:
        """Registers the custom jvp; returns this function (use as a decorator)."""
        self._jvp = f
        return self

    def vmap(self, f: Callable[..., Any]) -> custom_function:
        """Registers the custom vmap; returns this function (use as a decorator)."""
        self._vmap = f
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._vjp is None and self._jvp is None and self._vmap is None:
            return self._fun(*args, **kwargs)
        call = _Call(self._fun, "custom_function", args, kwargs)
        return call.apply(
            self._flat_vjp(call) if self._vjp else None,
            self._flat_jvp(call) if self._jvp else None,
            self._flat_vmap(call) if self._vmap else None,
        )

    def _positional(self, call: _Call, op: str, arrays: Sequence[Any],
                    constants: bool = True) -> tuple[Any, dict]:
        args, kwargs = call.rebuild(arrays, constants)
        if kwargs:
            raise ValueError(f"custom_function: a custom {op} needs positional arguments only")
        return _one_or_tuple(args), kwargs

    def _flat_vjp(self, call: _Call) -> Callable:
        def flat(primals, cotangents, outputs, wanted):
            # the user's rule is in `vjp`'s (MLX's) complex convention; the node's rules are
            # transposes: conjugate around it, as `vjp` does around `pullback`
            args, kwargs = call.rebuild(primals)
            cots = call.outputs(conjugated(cotangents))
            grads = self._vjp(_one_or_tuple(args), cots, call.outputs(outputs), **kwargs)
            found = [g for arg, grad in zip(args, _per_argument(grads, args))
                     for g in _cotangents_of(arg, grad)]
            return conjugated(found) + [None] * (len(primals) - len(found))

        return flat

    def _flat_jvp(self, call: _Call) -> Callable:
        def flat(primals, tangents):
            args, _ = self._positional(call, "jvp", primals)
            tans, _ = self._positional(call, "jvp", tangents, constants=False)
            out = self._jvp(args, tans)
            return _arrays_of("custom_function", "jvp", out, call.out_def.num_leaves)

        return flat

    def _flat_vmap(self, call: _Call) -> Callable:
        def flat(inputs, axes):
            args, _ = self._positional(call, "vmap", inputs)
            in_axes, _ = self._positional(call, "vmap", axes, constants=False)
            result = self._vmap(args, in_axes)
            if not isinstance(result, tuple) or len(result) != 2:
                raise ValueError("custom_function: the vmap must return a tuple (outputs, axes)")
            outs = flatten(result[0])[0]
            out_axes = _broadcast_out_axes(result[1], result[0], len(outs))
            return outs, out_axes

        return flat


def _per_argument(grads: Any, args: list) -> list:
    """A vjp's result as one cotangent per positional argument: a lone argument's may come
    alone, and missing trailing ones are None (zeros)."""
    sequence = isinstance(grads, (list, tuple))
    if len(args) == 1 and (not sequence or isinstance(args[0], (list, tuple))):
        return [grads]
    grads = list(grads) if sequence else [grads]
    if len(grads) > len(args):
        raise ValueError(f"custom_function: the vjp returned {len(grads)} cotangents for "
                         f"{len(args)} arguments")
    return grads + [None] * (len(args) - len(grads))


def _cotangents_of(arg: Any, grad: Any) -> list[Array | None]:
    """One cotangent (None for zeros) per array leaf of `arg` from `grad`, a tree of its
    structure or None; what `grad` holds for a non-array leaf is ignored."""
    if isinstance(arg, Array):
        if grad is not None and not isinstance(grad, Array):
            raise TypeError(f"custom_function: the vjp must return an array or None for an "
                            f"array argument, got {type(grad).__name__}")
        if grad is not None and grad.shape != arg.shape:
            raise ValueError(f"custom_function: the vjp returned a cotangent of shape "
                             f"{grad.shape} for an argument of shape {arg.shape}")
        return [grad]
    if not is_node(arg):
        return []
    if grad is None:
        return [None] * sum(isinstance(x, Array) for x in flatten(arg)[0])
    if isinstance(arg, dict):
        fits = isinstance(grad, dict) and set(grad) == set(arg)
    else:
        fits = isinstance(grad, (list, tuple)) and len(grad) == len(arg)
    if not fits:
        raise ValueError(f"custom_function: the vjp returned a cotangent of structure "
                         f"{flatten(grad)[1]!r} for an argument of structure "
                         f"{flatten(arg)[1]!r}")
    pairs = [(arg[k], grad[k]) for k in arg] if isinstance(arg, dict) else zip(arg, grad)
    return [g for a, c in pairs for g in _cotangents_of(a, c)]


def _broadcast_out_axes(axes: Any, outputs: Any, count: int) -> list[int | None]:
    if axes is None or isinstance(axes, int):
        return [axes] * count
    flat = flatten(axes)[0]
    if len(flat) != count:
        raise ValueError(f"custom_function: the vmap returned {len(flat)} axes for {count} "
                         "outputs")
    return flat


def checkpoint(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun`, recomputed in the backward pass instead of keeping its intermediates.

    The forward pass keeps only `fun`'s inputs and outputs; a gradient recomputes the rest
    when the backward pass reaches it, trading compute for a lower peak of memory.

    Args:
        fun: takes arrays or trees of arrays, returns an array or a tree of arrays.

    Returns:
        A function with `fun`'s signature and results.

    Raises:
        TypeError: if `fun` is not callable.

    Example:
        >>> import nuvec as mx
        >>> f = mx.checkpoint(lambda x: (x * x).exp())
        >>> round(mx.grad(lambda x: f(x).sum())(mx.array([0.5])).item(), 4)
        1.284
    """
    check_callable("checkpoint", fun)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        call = _Call(fun, "checkpoint", args, kwargs)

        def recompute(primals, cotangents, outputs, wanted):
                # Recompute only once the cotangents exist, i.e. when the backward pass gets here.
            held = depends(primals, cotangents)

            def partial(*chosen: Array) -> list[Array]:
                full = list(held)
                for i, a in zip(wanted, chosen):
                    full[i] = a
                return call.flat(*full)

            grads = pullback(partial, [held[i] for i in wanted], cotangents)[1]
            # Each gradient depends on the others: all are computed as soon as one is needed,
            # so the recomputed intermediates are freed at once.
            found = {
                i: depends([g], grads[:k] + grads[k + 1:])[0] if len(grads) > 1 else g
                for k, (i, g) in enumerate(zip(wanted, grads))
            }
            return [found.get(i) for i in range(len(primals))]

        return call.apply(vjp_fun=recompute)

    return wrapped
