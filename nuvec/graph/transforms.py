"""Function transformations: `vjp`, `jvp`, `grad`, `value_and_grad` (and `vmap`, in `batching`).

Each traces the function by running it on arrays wrapped in `Copy` nodes (marking where the
trace starts, while keeping the link to any outer trace, so transforms nest) and then walks the
recorded graph iteratively, applying each primitive's rule. Rules build ordinary graph nodes, so
the results are lazy arrays and can be transformed again. When the outermost transform returns,
the traced nodes stop keeping their graph, so evaluation frees intermediates as usual.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from nuvec.graph.array import Array, Node, record1, tracing
from nuvec.graph.custom import depends
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import COPY, TransformError
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import flatten, unflatten

__all__ = ["vjp", "jvp", "grad", "value_and_grad", "vmap"]

Key = tuple[Node, int]  # (node, output index); nodes hash by identity


def _ops():
    import nuvec.ops as ops

    return ops


def _key(a: Array) -> Key:
    return (a._node, a._index)


def _check_arrays(op: str, what: str, values: Any) -> list[Array]:
    if isinstance(values, Array) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list of arrays, got {type(values).__name__}")
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


def _trace(fun: Callable[..., Any], args: Sequence[Any], kwargs: dict | None = None) -> Any:
    tracing.depth += 1
    try:
        return fun(*args, **(kwargs or {}))
    finally:
        tracing.depth -= 1


def _release(*trees: Any) -> None:
    """Once the outermost transform is done, traced nodes drop their graph like any other node.

    Nodes made while tracing keep their inputs after evaluation (an outer transform may still
    walk them); at depth 0 nothing will, so they detach now (or when they are evaluated).
    """
    if tracing.depth:
        return
    roots = [leaf._node for leaf in flatten(list(trees))[0] if isinstance(leaf, Array)]
    for node in toposort(roots, lambda n: n.keep):
        node.keep = False
        if node.data is not None:
            node.detach()


def _graph(outputs: Sequence[Array], starts: set[Node]) -> list[Node]:
    """Traced nodes between the starts and the outputs, inputs first.

    A primitive with a `num_primals` attribute (custom functions, checkpoints) passes its later
    inputs through as values: transforms apply its own rules and do not walk into them.
    """
    blocked: set[Node] = set()

    def expand(n: Node) -> bool:
        primitive = n.primitive
        if primitive is None or n in starts or n in blocked:
            return False
        hidden = getattr(primitive, "num_primals", None)
        if hidden is not None:
            blocked.update(n.sources[hidden:])
        return True

    return toposort([o._node for o in outputs], expand)


def _rule(node: Node, rule: Callable[..., Any], *args: Any) -> Any:
    """Calls a rule of `node`'s primitive with `node`'s stream as the default stream."""
    if to_stream(None) is node.stream:
        return rule(*args)
    with stream_context(node.stream):
        return rule(*args)


def _accumulate(table: dict[Key, Array], key: Key, value: Array) -> None:
    found = table.get(key)
    table[key] = value if found is None else _ops().add(found, value)


def backward(
    outputs: Sequence[Array], cotangents: Sequence[Array | None], starts: Sequence[Array]
) -> list[Array | None]:
    """Cotangents of `starts` (marked arrays) given cotangents of `outputs` (None: no gradient)."""
    start_nodes = {s._node for s in starts}
    order = _graph(outputs, start_nodes)
    reached = set(start_nodes)
    for node in order:
        for source in node.sources:
            if source in reached:
                reached.add(node)
                break
    table: dict[Key, Array] = {}
    for out, cot in zip(outputs, cotangents):
        if cot is not None and out._node in reached:
            _accumulate(table, _key(out), cot)
    here = to_stream(None)
    for node in reversed(order):
        if node not in reached:
            continue
        if len(node.shapes) == 1:
            cot = table.pop((node, 0), None)
            if cot is None:
                continue
            cots = [cot]
        else:
            cots = [table.pop((node, i), None) for i in range(len(node.shapes))]
            if all(c is None for c in cots):
                continue
        sources, indices, vjp = node.sources, node.indices, node.primitive.vjp
        if len(sources) == 1:
            argnums = [0]  # the node was reached through its one input
        else:
            argnums = [i for i, source in enumerate(sources) if source in reached]
        if node.stream is here:
            grads = vjp(node.inputs, cots, argnums, node.outputs())
        else:
            grads = _rule(node, vjp, node.inputs, cots, argnums, node.outputs())
        if len(grads) != len(argnums):
            raise TransformError(f"vjp: {node.primitive.name} returned {len(grads)} cotangents "
                                 f"for {len(argnums)} inputs")
        if len(argnums) > 1:
            grads = _finals_first(sources, argnums, grads, start_nodes)
        for i, g in zip(argnums, grads):
            if g is not None:
                _accumulate(table, (sources[i], indices[i]), g)
    return [table.get(_key(s)) for s in starts]


def _finals_first(
    sources: Sequence[Node], argnums: list[int], grads: list[Array | None], starts: set[Node]
) -> list[Array | None]:
    """Makes the cotangents that continue backward depend on those that reach a start.

    Evaluation then computes, say, a layer's weight gradient together with the cotangent of
    its input, and frees the layer's activation at once instead of keeping it until the
    weight gradient is asked for.
    """
    finals = [g for i, g in zip(argnums, grads) if g is not None and sources[i] in starts]
    if not finals or len(finals) == sum(g is not None for g in grads):
        return grads
    return [
        g if g is None or sources[i] in starts else depends([g], finals)[0]
        for i, g in zip(argnums, grads)
    ]


def forward(
    outputs: Sequence[Array], starts: Sequence[Array], tangents: Sequence[Array | None]
) -> list[Array | None]:
    """Tangents of `outputs` given tangents of `starts` (None: zero)."""
    table: dict[Key, Array] = {}
    for s, t in zip(starts, tangents):
        if t is not None:
            table[_key(s)] = t
    for node in _graph(outputs, {s._node for s in starts}):
        ts = [table.get(key) for key in zip(node.sources, node.indices)]
        if all(t is None for t in ts):
            continue
        outs = _rule(node, node.primitive.jvp, node.inputs, ts, node.outputs())
        for i, t in enumerate(outs):
            if t is not None:
                table[(node, i)] = t
    return [table.get(_key(o)) for o in outputs]


def _as_output_list(op: str, value: Any) -> list[Array]:
    if isinstance(value, Array):
        return [value]
    if isinstance(value, (list, tuple)):
        return _check_arrays(op, "the function's outputs", value)
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
        (outputs, vjps): the outputs of `fun` and one cotangent per primal (zeros where an
        output does not depend on a primal, or the primal is not a float).

    Raises:
        TypeError: if primals, cotangents or outputs are not arrays.
        ValueError: if the number or shapes of the cotangents do not match the outputs.
        TransformError: if a primitive on the path has no reverse-mode rule.

    Example:
        >>> import nuvec as mx
        >>> out, (g,) = mx.vjp(lambda x: x * x, [mx.array(3.0)], [mx.array(1.0)])
        >>> g.item()
        6.0
    """
    primals = _check_arrays("vjp", "primals", primals)
    cotangents = _check_arrays("vjp", "cotangents", cotangents)
    starts = _mark(primals)
    outputs = _as_output_list("vjp", _trace(fun, starts))
    if len(cotangents) != len(outputs):
        raise ValueError(f"vjp: got {len(cotangents)} cotangents for {len(outputs)} outputs")
    for o, c in zip(outputs, cotangents):
        if o.shape != c.shape:
            raise ValueError(f"vjp: cotangent shape {c.shape} does not match output {o.shape}")
    grads = backward(outputs, cotangents, starts)
    _release(outputs, starts)
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
        TypeError: if primals, tangents or outputs are not arrays.
        ValueError: if the number or shapes of the tangents do not match the primals.
        TransformError: if a primitive on the path has no forward-mode rule.

    Example:
        >>> import nuvec as mx
        >>> out, (t,) = mx.jvp(lambda x: x * x, [mx.array(3.0)], [mx.array(1.0)])
        >>> t.item()
        6.0
    """
    primals = _check_arrays("jvp", "primals", primals)
    tangents = _check_arrays("jvp", "tangents", tangents)
    if len(tangents) != len(primals):
        raise ValueError(f"jvp: got {len(tangents)} tangents for {len(primals)} primals")
    for p, t in zip(primals, tangents):
        if p.shape != t.shape:
            raise ValueError(f"jvp: tangent shape {t.shape} does not match primal {p.shape}")
    starts = _mark(primals)
    outputs = _as_output_list("jvp", _trace(fun, starts))
    outs = forward(outputs, starts, tangents)
    _release(outputs, starts)
    return outputs, [_fit("jvp", t, o) for t, o in zip(outs, outputs)]


def _select_args(
    op: str, args: tuple[Any, ...], kwargs: dict[str, Any], nums: list[int], names: list[str]
) -> None:
    if nums and nums[-1] >= len(args):
        raise ValueError(
            f"{op}: can't compute the gradient of argument index {nums[-1]} because the "
            f"function is called with only {len(args)} positional arguments"
        )
    for name in names:
        if name not in kwargs:
            raise ValueError(
                f"{op}: can't compute the gradient of keyword argument {name!r} because the "
                f"function is called with the keyword arguments {sorted(kwargs)}"
            )


def _normalize_argnums(op: str, argnums: Any, argnames: Any) -> tuple[list[int], list[str]]:
    """MLX's rules: argnums default to 0 without argnames; sorted, non-negative, unique."""
    names = [argnames] if isinstance(argnames, str) else list(argnames)
    if argnums is None:
        nums = [] if names else [0]
    else:
        nums = sorted([argnums] if isinstance(argnums, int) else list(argnums))
    if not nums and not names:
        raise ValueError(f"{op}: gradient with respect to no argument requested")
    if nums and nums[0] < 0:
        raise ValueError(f"{op}: can't compute the gradient of negative argument index {nums[0]}")
    if len(set(nums)) != len(nums):
        raise ValueError(f"{op}: duplicate argument index in argnums {tuple(nums)}")
    return nums, names


def _describe(x: Any) -> str:
    if isinstance(x, Array):
        return f"an array of shape {x.shape}"
    return type(x).__name__


def _loss_of(op: str, value: Any, aux_allowed: bool) -> Array:
    if isinstance(value, Array):
        loss = value
    elif aux_allowed and isinstance(value, (list, tuple)) and value:
        loss = value[0]
    else:
        loss = None
    if not isinstance(loss, Array) or loss.size != 1:
        allowed = ("a scalar array, or a tuple whose first element is a scalar array"
                   if aux_allowed else "a scalar array")
        got = _describe(value if loss is None else loss)
        raise ValueError(f"{op}: the function must return {allowed}; got {got}")
    return loss


def _value_and_grad(
    op: str, fun: Callable[..., Any], argnums: Any, argnames: Any, aux_allowed: bool
) -> Callable[..., tuple[Any, Any]]:
    nums, names = _normalize_argnums(op, argnums, argnames)

    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        _select_args(op, args, kwargs, nums, names)
        selected = [args[n] for n in nums] + [kwargs[k] for k in names]
        leaves, treedef = flatten(selected)
        for arg in selected:
            if not isinstance(arg, (Array, list, tuple, dict)):
                raise TypeError(f"{op}: differentiated arguments must be arrays or trees of "
                                f"arrays, got {type(arg).__name__}")
        # non-array leaves of a tree pass through unchanged, into the gradient too (MLX)
        where = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Array)]
        for i in where:
            if not leaves[i].dtype.is_inexact:
                raise TypeError(f"{op}: cannot differentiate with respect to an array of "
                                f"{leaves[i].dtype.name} (shape {leaves[i].shape}); use a "
                                "float dtype")
        starts = _mark([leaves[i] for i in where])
        traced = list(leaves)
        for i, start in zip(where, starts):
            traced[i] = start
        rebuilt = unflatten(treedef, traced)
        call_args = list(args)
        for n, value in zip(nums, rebuilt):
            call_args[n] = value
        call_kwargs = dict(kwargs)
        for k, value in zip(names, rebuilt[len(nums):]):
            call_kwargs[k] = value
        value = _trace(fun, call_args, call_kwargs)
        loss = _loss_of(op, value, aux_allowed)
        grads = backward([loss], [_ops().ones_like(loss)], starts)
        _release(value, starts)
        fitted = list(leaves)
        for i, g in zip(where, grads):
            fitted[i] = _fit(op, g, leaves[i])
        tree = unflatten(treedef, fitted)
        by_pos = tree[0] if len(nums) == 1 else (tuple(tree[: len(nums)]) if nums else None)
        if not names:
            return value, by_pos
        return value, (by_pos, dict(zip(names, tree[len(nums):])))

    return wrapped


def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] | None = None,
    argnames: str | Sequence[str] = (),
) -> Callable[..., tuple[Any, Any]]:
    """Returns a function computing `fun`'s value and its gradient.

    `fun` returns a scalar array, or a tuple (or list) whose first entry is a scalar array
    (the rest is auxiliary output, returned but not differentiated).

    Args:
        fun: the function; its differentiated arguments are float arrays or trees of them.
        argnums: positional argument(s) to differentiate; default 0 when `argnames` is empty.
        argnames: keyword argument(s) to differentiate.

    Returns:
        A function returning `(value, grads)`: `grads` has the structure of the argument for
        one argnum, is a tuple (in increasing argnum order) for several, and with `argnames`
        is `(positional_grads_or_None, {name: grad})`.

    Raises:
        ValueError: for negative, repeated or out-of-range argnums, missing argnames, or a
            value that is not a scalar array (or a tuple starting with one).
        TypeError: if a differentiated leaf is not an array or not floating point.

    Example:
        >>> import nuvec as mx
        >>> value, g = mx.value_and_grad(lambda x: (x * x).sum())(mx.array([1.0, 2.0]))
        >>> value.item(), g.tolist()
        (5.0, [2.0, 4.0])
    """
    return _value_and_grad("value_and_grad", fun, argnums, argnames, True)


def grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] | None = None,
    argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """Returns a function computing the gradient of scalar-valued `fun`.

    Args:
        fun: returns a scalar array (use `value_and_grad` for auxiliary outputs).
        argnums: positional argument(s) to differentiate; default 0 when `argnames` is empty.
        argnames: keyword argument(s) to differentiate.

    Returns:
        A function returning the gradients, structured as in `value_and_grad`.

    Raises:
        ValueError, TypeError: as `value_and_grad`.

    Example:
        >>> import nuvec as mx
        >>> mx.grad(lambda x: x * x * x)(mx.array(2.0)).item()
        12.0
    """
    vg = _value_and_grad("grad", fun, argnums, argnames, False)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return vg(*args, **kwargs)[1]

    return wrapped


from nuvec.graph.batching import vmap  # noqa: E402,F401  (needs the helpers above)
