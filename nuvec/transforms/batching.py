"""`vmap`: traces a function on unbatched stand-ins, then replays its graph with each
primitive's batching rule on the batched inputs (see `nuvec.transforms.trace` for the walk).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nuvec.graph.array import Array, placeholder
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.tree import flatten, unflatten
from nuvec.ops.arguments import BadIndexError, check_callable
from nuvec.ops.shape import broadcast_to, expand_dims, moveaxis
from nuvec.transforms.trace import Key, apply_rule, key_of, release, trace, traced_graph

__all__ = ["vmap"]


def _flat_axes(op: str, axes: Any, tree: Any, output: bool) -> list[int | None]:
    """Expands axes (an int, None, or a tree prefix of `tree`) to one axis per array leaf."""
    if isinstance(tree, Array):
        if isinstance(axes, (tuple, list)) and len(axes) == 1:
            axes = axes[0]
        if axes is None:
            return [None]
        if not isinstance(axes, int) or isinstance(axes, bool):
            raise ValueError(f"{op}: axis must be int or None, got {axes!r}")
        ndim = tree.ndim + (1 if output else 0)
        if not -ndim <= axes < ndim:
            kind = "output " if output else ""
            raise BadIndexError(f"{op}: invalid {kind}vectorization axis {axes} for an "
                                       f"array of shape {tree.shape}")  # MLX's IndexError
        return [axes % ndim]
    if isinstance(tree, (list, tuple)):
        if isinstance(axes, (list, tuple)):
            if len(axes) != len(tree):
                raise ValueError(f"{op}: axes {axes!r} have {len(axes)} entries for "
                                 f"{len(tree)} values")
            return [a for sub_a, sub_t in zip(axes, tree) for a in _flat_axes(op, sub_a, sub_t,
                                                                                output)]
    elif isinstance(tree, dict):
        if isinstance(axes, dict):
            if set(axes) != set(tree):
                raise ValueError(f"{op}: axes keys {sorted(axes)} do not match {sorted(tree)}")
            return [a for k in tree for a in _flat_axes(op, axes[k], tree[k], output)]
    else:
        what = "outputs" if output else "arguments"
        raise DtypeError(f"{op}: the {what} must be arrays or trees of arrays, got "
                        f"{type(tree).__name__}")
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return [a for sub in (tree.values() if isinstance(tree, dict) else tree)
                for a in _flat_axes(op, axes, sub, output)]
    raise ValueError(f"{op}: axes {axes!r} do not match the structure {type(tree).__name__}")


def _check_axes_spec(what: str, spec: Any) -> None:
    """Raises at the call for an axes spec that is not an int, None or a list, tuple or dict of
    them (the ranges are checked against the arguments when the function runs)."""
    if spec is None:
        return
    if isinstance(spec, (list, tuple)):
        for item in spec:
            _check_axes_spec(what, item)
        return
    if isinstance(spec, dict):
        for item in spec.values():
            _check_axes_spec(what, item)
        return
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer)):
        raise ValueError(f"vmap: axis must be int or None (or a list, tuple or dict of them) "
                         f"in {what}, got {spec!r} ({type(spec).__name__})")  # MLX's ValueError
    if not -(2**31) <= spec < 2**31:
        raise ValueError(f"vmap: {what} entries must fit in int32, got {spec}")


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """Returns `fun` vectorized over a batch axis of its inputs.

    Args:
        fun: takes arrays (or trees of arrays), returns an array or a tree of arrays.
        in_axes: the batch axis of each argument: an int, `None` (not batched), or a tree
            prefix of the arguments (of the argument itself when there is one); negative axes
            count from the end.
        out_axes: where the batch axis goes in each output (int or tree prefix; negative
            counts from the end of the batched output).

    Returns:
        The vectorized function.

    Raises:
        TypeError: if an argument or output leaf is not an array.
        ValueError: if axes do not match the arguments, no argument is batched, or batched
            inputs disagree on the batch size.
        IndexError: if an axis is out of range (a `ValueError` too).

    Example:
        >>> import nuvec as mx
        >>> mx.vmap(lambda x: x.sum())(mx.ones((3, 2))).tolist()
        [2.0, 2.0, 2.0]
    """
    check_callable("vmap", fun)
    _check_axes_spec("in_axes", in_axes)
    _check_axes_spec("out_axes", out_axes)

    def wrapped(*args: Any) -> Any:
        leaves, treedef = flatten(list(args))
        tree, axes = (args[0], in_axes) if len(args) == 1 else (list(args), in_axes)
        if len(args) == 1 and isinstance(axes, (tuple, list)) and len(axes) == 1 and not (
            isinstance(tree, (tuple, list)) and len(tree) == 1
        ):
            axes = axes[0]  # one argument: in_axes may be its axes, or a 1-tuple of them
        axes = _flat_axes("vmap", list(axes) if isinstance(axes, tuple) else axes, tree, False)
        size = None
        traced, batched = [], {}
        for leaf, axis in zip(leaves, axes):
            if axis is None:
                traced.append(leaf)
                continue
            if size is not None and leaf.shape[axis] != size:
                raise ValueError(
                    f"vmap: inconsistent batch sizes {size} and {leaf.shape[axis]} along in_axes"
                )
            size = leaf.shape[axis]
            stand_in = placeholder(leaf.shape[:axis] + leaf.shape[axis + 1:], leaf.dtype,
                                   leaf.stream)
            batched[key_of(stand_in)] = (leaf, axis)
            traced.append(stand_in)
        if size is None:
            raise ValueError("vmap: at least one of in_axes must be non-None")
        result = trace(fun, unflatten(treedef, traced), op="vmap")
        outs, out_def = flatten(result)
        out_axes_list = _flat_axes("vmap", out_axes, result, True)
        mapped = _replay(outs, batched)
        finals = [_place(o, mapped.get(key_of(o)), ax, size) for o, ax in zip(outs, out_axes_list)]
        release(outs, finals)
        return unflatten(out_def, finals)

    return wrapped


def _replay(outs: list[Array], batched: dict[Key, tuple[Array, int]]) -> dict[Key, tuple]:
    """Re-records the traced graph on batched inputs with each primitive's `vmap` rule."""
    mapped: dict[Key, tuple[Array, int | None]] = dict(batched)
    for node in traced_graph(outs, set()):
        found = [mapped.get(key) for key in zip(node.sources, node.indices)]
        if all(f is None for f in found):
            continue
        inputs = [f[0] if f else i for f, i in zip(found, node.inputs)]
        axes = [f[1] if f else None for f in found]
        results, out_axes = apply_rule(node, node.primitive.vmap, inputs, axes)
        for i, (r, ax) in enumerate(zip(results, out_axes)):
            mapped[(node, i)] = (r, ax)
    return mapped


def _place(out: Array, found: tuple | None, out_axis: int | None, size: int) -> Array:
    if out_axis is None:
        if found is not None and found[1] is not None:
            raise ValueError("vmap: out_axes None for an output that depends on a batched input")
        return out if found is None else found[0]
    if found is None or found[1] is None:
        value = out if found is None else found[0]
        value = broadcast_to(expand_dims(value, 0), (size, *value.shape))
        axis = 0
    else:
        value, axis = found
    return moveaxis(value, axis, out_axis) if axis != out_axis else value
