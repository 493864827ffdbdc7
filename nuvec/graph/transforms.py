"""Function transformations: `vjp`, `jvp`, `vmap`, `grad`, `value_and_grad`.

Each traces the function by running it on arrays wrapped in `Copy` nodes (marking where the
trace starts, while keeping the link to any outer trace, so transforms nest) and then walks the
recorded graph iteratively, applying each primitive's rule. Rules build ordinary graph nodes, so
the results are lazy arrays and can be transformed again.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from nuvec.graph.array import Array, Node, placeholder, record1, tracing
from nuvec.graph.device import stream as stream_context
from nuvec.graph.primitive import COPY, TransformError
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import flatten, unflatten

Key = tuple[int, int]


def _ops():
    import nuvec.ops as ops

    return ops


def _key(a: Array) -> Key:
    return (id(a._node), a._index)


def _check_arrays(op: str, what: str, values: Sequence[Any]) -> list[Array]:
    for v in values:
        if not isinstance(v, Array):
            raise TypeError(f"{op}: {what} must be arrays, got {type(v).__name__}")
    return list(values)


def _mark(primals: Sequence[Array]) -> list[Array]:
    """Wraps each primal in a `Copy` node that starts the trace."""
    marked = []
    for p in primals:
        copy = record1(COPY, (p,), p.stream)
        copy._node.keep = True
        marked.append(copy)
    return marked


def _trace(fun: Callable[..., Any], args: Sequence[Any]) -> Any:
    tracing.depth += 1
    try:
        return fun(*args)
    finally:
        tracing.depth -= 1


def _graph(outputs: Sequence[Array], starts: set[int]) -> list[Node]:
    """Traced nodes between the starts and the outputs, inputs first."""
    return toposort(
        [o._node for o in outputs],
        lambda n: n.primitive is not None and id(n) not in starts,
    )


def _accumulate(table: dict[Key, Array], key: Key, value: Array) -> None:
    found = table.get(key)
    table[key] = value if found is None else _ops().add(found, value)


def backward(
    outputs: Sequence[Array], cotangents: Sequence[Array | None], starts: Sequence[Array]
) -> list[Array | None]:
    """Cotangents of `starts` (marked arrays) given cotangents of `outputs` (None: no gradient)."""
    start_ids = {id(s._node) for s in starts}
    order = _graph(outputs, start_ids)
    reached = set(start_ids)
    for node in order:
        if any(id(i._node) in reached for i in node.inputs):
            reached.add(id(node))
    table: dict[Key, Array] = {}
    for out, cot in zip(outputs, cotangents):
        if cot is not None and id(out._node) in reached:
            _accumulate(table, _key(out), cot)
    for node in reversed(order):
        if id(node) not in reached:
            continue
        cots = [table.pop((id(node), i), None) for i in range(len(node.shapes))]
        if all(c is None for c in cots):
            continue
        argnums = [i for i, inp in enumerate(node.inputs) if id(inp._node) in reached]
        with stream_context(node.stream):
            grads = node.primitive.vjp(list(node.inputs), cots, argnums, node.outputs())
        for i, g in zip(argnums, grads):
            if g is not None:
                _accumulate(table, _key(node.inputs[i]), g)
    return [table.get(_key(s)) for s in starts]


def forward(
    outputs: Sequence[Array], starts: Sequence[Array], tangents: Sequence[Array | None]
) -> list[Array | None]:
    """Tangents of `outputs` given tangents of `starts` (None: zero)."""
    start_ids = {id(s._node) for s in starts}
    table: dict[Key, Array] = {}
    for s, t in zip(starts, tangents):
        if t is not None:
            table[_key(s)] = t
    for node in _graph(outputs, start_ids):
        ts = [table.get(_key(i)) for i in node.inputs]
        if all(t is None for t in ts):
            continue
        with stream_context(node.stream):
            outs = node.primitive.jvp(list(node.inputs), ts, node.outputs())
        for i, t in enumerate(outs):
            if t is not None:
                table[(id(node), i)] = t
    return [table.get(_key(o)) for o in outputs]


def _as_output_list(op: str, value: Any) -> tuple[list[Array], bool]:
    if isinstance(value, Array):
        return [value], True
    if isinstance(value, (list, tuple)):
        return _check_arrays(op, "the function's outputs", value), False
    raise TypeError(f"{op}: the function must return an array or a list of arrays, got "
                    f"{type(value).__name__}")


def _fit(op: str, value: Array | None, like: Array) -> Array:
    """A rule result as an array of `like`'s shape and dtype (zeros for None)."""
    ops = _ops()
    if value is None:
        return ops.zeros_like(like)
    if value.shape != like.shape:
        raise TransformError(f"{op}: a rule produced shape {value.shape}, expected {like.shape}")
    return value if value.dtype is like.dtype else ops.astype(value, like.dtype)


def vjp(
    fun: Callable[..., Any], primals: Sequence[Array], cotangents: Sequence[Array]
) -> tuple[list[Array], list[Array]]:
    """Runs `fun(*primals)` and pulls `cotangents` back to the primals.

    Args:
        fun: takes arrays, returns an array or a list of arrays.
        primals: the inputs (list of arrays).
        cotangents: one per output, of the output's shape.

    Returns:
        (outputs, vjps): the outputs of `fun` and one cotangent per primal.

    Raises:
        ValueError: if the number or shapes of the cotangents do not match the outputs.
    """
    primals = _check_arrays("vjp", "primals", primals)
    cotangents = _check_arrays("vjp", "cotangents", cotangents)
    starts = _mark(primals)
    outputs, _ = _as_output_list("vjp", _trace(fun, starts))
    if len(cotangents) != len(outputs):
        raise ValueError(f"vjp: got {len(cotangents)} cotangents for {len(outputs)} outputs")
    for o, c in zip(outputs, cotangents):
        if o.shape != c.shape:
            raise ValueError(f"vjp: cotangent shape {c.shape} does not match output {o.shape}")
    grads = backward(outputs, cotangents, starts)
    return outputs, [_fit("vjp", g, p) for g, p in zip(grads, primals)]


def jvp(
    fun: Callable[..., Any], primals: Sequence[Array], tangents: Sequence[Array]
) -> tuple[list[Array], list[Array]]:
    """Runs `fun(*primals)` and pushes `tangents` forward to its outputs.

    Args:
        fun: takes arrays, returns an array or a list of arrays.
        primals: the inputs (list of arrays).
        tangents: one per primal, of the primal's shape.

    Returns:
        (outputs, jvps): the outputs of `fun` and one tangent per output.

    Raises:
        ValueError: if the number or shapes of the tangents do not match the primals.
    """
    primals = _check_arrays("jvp", "primals", primals)
    tangents = _check_arrays("jvp", "tangents", tangents)
    if len(tangents) != len(primals):
        raise ValueError(f"jvp: got {len(tangents)} tangents for {len(primals)} primals")
    for p, t in zip(primals, tangents):
        if p.shape != t.shape:
            raise ValueError(f"jvp: tangent shape {t.shape} does not match primal {p.shape}")
    starts = _mark(primals)
    outputs, _ = _as_output_list("jvp", _trace(fun, starts))
    outs = forward(outputs, starts, tangents)
    return outputs, [_fit("jvp", t, o) for t, o in zip(outs, outputs)]


def _select_args(
    op: str, args: tuple[Any, ...], kwargs: dict[str, Any], argnums: Any, argnames: Any
) -> tuple[list[int], list[str]]:
    names = [argnames] if isinstance(argnames, str) else list(argnames)
    if argnums is None:
        nums = [] if names else [0]
    elif isinstance(argnums, int):
        nums = [argnums]
    else:
        nums = list(argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise ValueError(f"{op}: argnums {n} is out of range for {len(args)} arguments")
    for name in names:
        if name not in kwargs:
            raise ValueError(f"{op}: keyword argument {name!r} was not given")
    return [n % len(args) for n in nums], names


def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] | None = None,
    argnames: str | Sequence[str] = (),
) -> Callable[..., tuple[Any, Any]]:
    """Returns a function computing `fun`'s value and its gradient.

    `fun` returns a scalar array, or a list/tuple whose first entry is a scalar array (the
    rest is auxiliary output, returned but not differentiated). Gradients are taken with
    respect to `argnums` (default 0) and `argnames`; each selected argument may be a tree of
    arrays and its gradient has the same structure.

    Returns:
        A function returning `(value, grads)`: `grads` for one argnum is that argument's
        gradient, for several a tuple; with `argnames`, `(grads_by_position, grads_by_name)`.

    Raises:
        ValueError: if the function's value is not a scalar array.
    """

    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        nums, names = _select_args("value_and_grad", args, kwargs, argnums, argnames)
        selected = [args[n] for n in nums] + [kwargs[k] for k in names]
        leaves, treedef = flatten(selected)
        _check_arrays("value_and_grad", "differentiated arguments", leaves)
        starts = _mark(leaves)
        rebuilt = unflatten(treedef, starts)
        call_args = list(args)
        for n, value in zip(nums, rebuilt):
            call_args[n] = value
        call_kwargs = dict(kwargs)
        for k, value in zip(names, rebuilt[len(nums):]):
            call_kwargs[k] = value
        value = _trace(lambda: fun(*call_args, **call_kwargs), ())
        loss = value[0] if isinstance(value, (list, tuple)) and value else value
        if not isinstance(loss, Array) or loss.size != 1:
            raise ValueError(
                "value_and_grad: the function must return a scalar array, or a list or tuple "
                f"whose first element is a scalar array; got {_describe(loss)}"
            )
        grads = backward([loss], [_ops().ones_like(loss)], starts)
        grads = [_fit("grad", g, p) for g, p in zip(grads, leaves)]
        tree = unflatten(treedef, grads)
        by_pos = tree[0] if len(nums) == 1 else tuple(tree[: len(nums)])
        if not names:
            return value, by_pos
        by_name = dict(zip(names, tree[len(nums):]))
        return value, ((by_pos if nums else None), by_name)

    return wrapped


def _describe(x: Any) -> str:
    if isinstance(x, Array):
        return f"an array of shape {x.shape}"
    return type(x).__name__


def grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] | None = None,
    argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """Returns a function computing the gradient of scalar-valued `fun`.

    See `value_and_grad` for `argnums`, `argnames` and the result's structure.
    """
    vg = value_and_grad(fun, argnums, argnames)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return vg(*args, **kwargs)[1]

    return wrapped


def _broadcast_axes(op: str, axes: Any, tree: Any) -> list[int | None]:
    """Expands `in_axes` (an int, None, or a tree prefix of `tree`) to one axis per leaf."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(flatten(tree)[0])
    if isinstance(axes, (list, tuple)) and isinstance(tree, (list, tuple)):
        if len(axes) != len(tree):
            raise ValueError(f"{op}: in_axes has {len(axes)} entries for {len(tree)} arguments")
        return [a for sub_a, sub_t in zip(axes, tree) for a in _broadcast_axes(op, sub_a, sub_t)]
    if isinstance(axes, dict) and isinstance(tree, dict):
        return [a for k in tree for a in _broadcast_axes(op, axes[k], tree[k])]
    raise ValueError(f"{op}: in_axes {axes!r} does not match the arguments' structure")


def vmap(
    fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0
) -> Callable[..., Any]:
    """Returns `fun` vectorized over a batch axis of its inputs.

    Args:
        fun: takes arrays (or trees of arrays), returns an array or a tree of arrays.
        in_axes: the batch axis of each argument: an int, `None` (not batched), or a tree
            prefix of the arguments; negative axes count from the end.
        out_axes: where the batch axis goes in each output (int or tree prefix).

    Raises:
        ValueError: if axes are out of range or batched inputs disagree on the batch size.
    """

    def wrapped(*args: Any) -> Any:
        leaves, treedef = flatten(list(args))
        axes = _broadcast_axes("vmap", list(in_axes) if isinstance(in_axes, tuple) else in_axes,
                               list(args))
        size = None
        traced, batched = [], {}
        for leaf, axis in zip(leaves, axes):
            if axis is None or not isinstance(leaf, Array):
                if axis is not None:
                    raise ValueError(f"vmap: in_axes {axis} given for a non-array argument")
                traced.append(leaf)
                continue
            if not -leaf.ndim <= axis < leaf.ndim:
                raise ValueError(f"vmap: in_axes {axis} is out of range for shape {leaf.shape}")
            axis %= leaf.ndim
            if size is not None and leaf.shape[axis] != size:
                raise ValueError(
                    f"vmap: inconsistent batch sizes {size} and {leaf.shape[axis]} along in_axes"
                )
            size = leaf.shape[axis]
            stand_in = placeholder(leaf.shape[:axis] + leaf.shape[axis + 1:], leaf.dtype,
                                   leaf.stream)
            batched[_key(stand_in)] = (leaf, axis)
            traced.append(stand_in)
        if size is None:
            raise ValueError("vmap: at least one argument must have a batch axis")
        result = _trace(fun, unflatten(treedef, traced))
        outs, out_def = flatten(result)
        _check_arrays("vmap", "the function's outputs", outs)
        mapped = _replay(outs, batched)
        out_axes_list = _broadcast_axes("vmap", out_axes, result)
        finals = [_place(o, mapped.get(_key(o)), ax, size) for o, ax in zip(outs, out_axes_list)]
        return unflatten(out_def, finals)

    return wrapped


def _replay(outs: list[Array], batched: dict[Key, tuple[Array, int]]) -> dict[Key, tuple]:
    """Re-records the traced graph on batched inputs with each primitive's `vmap` rule."""
    mapped: dict[Key, tuple[Array, int | None]] = dict(batched)
    stand_ins = {k[0] for k in batched}
    order = toposort([o._node for o in outs], lambda n: n.primitive is not None)
    for node in order:
        if id(node) in stand_ins:
            continue
        found = [mapped.get(_key(i)) for i in node.inputs]
        if all(f is None for f in found):
            continue
        inputs = [f[0] if f else i for f, i in zip(found, node.inputs)]
        axes = [f[1] if f else None for f in found]
        with stream_context(node.stream):
            results, out_axes = node.primitive.vmap(inputs, axes)
        for i, (r, ax) in enumerate(zip(results, out_axes)):
            mapped[(id(node), i)] = (r, ax)
    return mapped


def _place(out: Array, found: tuple | None, out_axis: int | None, size: int) -> Array:
    ops = _ops()
    if out_axis is None:
        if found is not None and found[1] is not None:
            raise ValueError("vmap: out_axes None for an output that depends on a batched input")
        return out
    if found is None or found[1] is None:
        value = out if found is None else found[0]
        value = ops.broadcast_to(ops.expand_dims(value, 0), (size, *value.shape))
        axis = 0
    else:
        value, axis = found
    if not -value.ndim <= out_axis < value.ndim:
        raise ValueError(f"vmap: out_axes {out_axis} is out of range for {value.ndim} dimensions")
    return ops.moveaxis(value, axis, out_axis)
