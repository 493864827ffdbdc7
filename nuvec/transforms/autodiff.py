"""Differentiation: `vjp`, `jvp`, `grad`, `value_and_grad`, and the walks `backward`, `forward`.

Each traces the function by running it on arrays wrapped in `Copy` nodes (marking where the
trace starts, while keeping the link to any outer trace, so transforms nest; see `trace`) and
then walks the recorded graph iteratively, applying each primitive's rule. Rules build ordinary
graph nodes, so the results are lazy arrays and can be transformed again. When the outermost
transform returns, the traced nodes stop keeping their graph, so evaluation frees intermediates
as usual.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterator, Sequence

from nuvec.graph.array import Array, Node, handle
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import DtypeError, complex64
from nuvec.graph.primitive import TransformError
from nuvec.graph.tree import flatten, is_node, unflatten
from nuvec.ops.arguments import check_callable, int_tuple
from nuvec.ops.complex_parts import conj
from nuvec.ops.creation import zeros_like
from nuvec.ops.families import ones
from nuvec.ops.slicing import add_cotangents
from nuvec.ops.unary import astype
from nuvec.transforms.depends import depends
from nuvec.transforms.trace import (
    Key,
    Slots,
    apply_rule,
    check_arrays,
    fill_in_place,
    key_of,
    mark,
    release,
    restore_unchanged,
    trace,
    traced_graph,
)

__all__ = ["vjp", "jvp", "grad", "value_and_grad"]


def _accumulate(table: dict[Key, Array], key: Key, value: Array) -> None:
    found = table.get(key)
    table[key] = value if found is None else add_cotangents(found, value)


def backward(
    outputs: Sequence[Array], cotangents: Sequence[Array | None], starts: Sequence[Array]
) -> list[Array | None]:
    """Cotangents of `starts` (marked arrays) given cotangents of `outputs` (None: no gradient)."""
    start_nodes = {s._node for s in starts}
    order = traced_graph(outputs, start_nodes)
    reached = set(start_nodes)
    for node in order:
        for source in node.sources:
            if source in reached:
                reached.add(node)
                break
    table: dict[Key, Array] = {}
    for out, cot in zip(outputs, cotangents):
        if cot is not None and out._node in reached:
            _accumulate(table, key_of(out), cot)
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
            grads = apply_rule(node, vjp, node.inputs, cots, argnums, node.outputs())
        if len(grads) != len(argnums):
            raise TransformError(f"vjp: {node.primitive.name} returned {len(grads)} cotangents "
                                 f"for {len(argnums)} inputs")
        if len(argnums) > 1:
            grads = _finals_first(sources, argnums, grads, start_nodes)
        for i, g in zip(argnums, grads):
            if g is not None:
                _accumulate(table, (sources[i], indices[i]), g)
    return [table.get(key_of(s)) for s in starts]


def _finals_first(
    sources: Sequence[Node], argnums: list[int], grads: list[Array | None], starts: set[Node]
) -> list[Array | None]:
    """Makes the cotangents that continue backward depend on those that reach a start.

    Evaluation then computes, say, a layer's weight gradient together with the cotangent of
    its input, and frees the layer's activation at once instead of keeping it until the
    weight gradient is asked for. A cotangent reaches a start where its input is one or a
    view of one (a layer's `w.T`).
    """
    final = [g is not None and _start_or_view(sources[i], starts) for i, g in zip(argnums, grads)]
    finals = [g for g, f in zip(grads, final) if f]
    if not finals or len(finals) == sum(g is not None for g in grads):
        return grads
    return [g if g is None or f else depends([g], finals)[0] for g, f in zip(grads, final)]


def _start_or_view(node: Node, starts: set[Node]) -> bool:
    """Whether `node` is one of `starts` or a view of one through views alone."""
    while node not in starts:
        primitive = node.primitive
        if primitive is None or primitive.allocates or len(node.sources) != 1:
            return False
        node = node.sources[0]
    return True


def forward(
    outputs: Sequence[Array], starts: Sequence[Array], tangents: Sequence[Array | None]
) -> list[Array | None]:
    """Tangents of `outputs` given tangents of `starts` (None: zero)."""
    table: dict[Key, Array] = {}
    for s, t in zip(starts, tangents):
        if t is not None:
            table[key_of(s)] = t
    for node in traced_graph(outputs, {s._node for s in starts}):
        ts = [table.get(key) for key in zip(node.sources, node.indices)]
        if all(t is None for t in ts):
            continue
        outs = apply_rule(node, node.primitive.jvp, node.inputs, ts, node.outputs())
        for i, t in enumerate(outs):
            if t is not None:
                table[(node, i)] = t
    return [table.get(key_of(o)) for o in outputs]


def _as_output_list(op: str, value: Any) -> list[Array]:
    if isinstance(value, Array):
        return [value]
    if isinstance(value, (list, tuple)):
        return check_arrays(op, "the function's outputs", value)
    raise TypeError(f"{op}: the function must return an array or a list of arrays, got "
                    f"{type(value).__name__}")


def _fit(op: str, value: Array | None, like: Array) -> Array:
    """A rule result as an array of `like`'s shape and dtype (zeros for None)."""
    if value is None:
        return zeros_like(like)
    if value.shape != like.shape:
        raise TransformError(f"{op}: a rule produced shape {value.shape}, expected {like.shape}")
    return value if value.dtype is like.dtype else astype(value, like.dtype)


def _handles(starts: Sequence[Array]) -> list[Array]:
    """New handles on the starts for the function to use: an in-place update inside it
    (`a[0] = b`, `a += 1`) rebinds its handle, never the start the transform reads."""
    return [handle(s._node, s._index) for s in starts]


def conjugated(values: Sequence[Array | None]) -> list[Array | None]:
    """The complex arrays of `values` conjugated (the others as they are)."""
    return [conj(v) if v is not None and v.dtype is complex64 else v for v in values]


def pullback(
    fun: Callable[..., Any], primals: Sequence[Array], cotangents: Sequence[Array]
) -> tuple[list[Array], list[Array]]:
    """`vjp` in the rules' own convention, the transpose: a complex cotangent `u` of
    `z -> c z` pulls back to `c u`. Transforms built on reverse mode use it (custom rules,
    `compile`); the public `vjp` conjugates around it."""
    primals = check_arrays("vjp", "primals", primals)
    cotangents = check_arrays("vjp", "cotangents", cotangents)
    starts = mark(primals)
    outputs = _as_output_list("vjp", trace(fun, _handles(starts)))
    if len(cotangents) != len(outputs):
        raise ValueError(f"vjp: got {len(cotangents)} cotangents for {len(outputs)} outputs")
    for o, c in zip(outputs, cotangents):
        if o.shape != c.shape:
            raise ValueError(f"vjp: cotangent shape {c.shape} does not match output {o.shape}")
    grads = backward(outputs, cotangents, starts)
    release(outputs, starts)
    return outputs, [_fit("vjp", g, p) for g, p in zip(grads, primals)]


def vjp(
    fun: Callable[..., Any], primals: Sequence[Array], cotangents: Sequence[Array]
) -> tuple[list[Array], list[Array]]:
    """Runs `fun(*primals)` and pulls `cotangents` back to the primals.

    Complex values follow MLX's convention (PyTorch's): the cotangent `u` of `z -> f(z)`
    pulls back to `u * conj(f'(z))`, so the gradient of a real loss is
    `dL/dx + 1j * dL/dy` and descends along `-grad`.

    Args:
        fun: takes arrays, returns an array or a list of arrays.
        primals: the inputs (list of arrays).
        cotangents: one per output, of the output's shape.

    Returns:
        (outputs, vjps): the outputs of `fun` and one cotangent per primal (zeros where an
        output does not depend on a primal, or the primal is not a float).

    Raises:
        TypeError: if `fun` is not callable, or primals, cotangents or outputs are not arrays.
        ValueError: if the number or shapes of the cotangents do not match the outputs.
        TransformError: if a primitive on the path has no reverse-mode rule.

    Example:
        >>> import nuvec as mx
        >>> out, (g,) = mx.vjp(lambda x: x * x, [mx.array(3.0)], [mx.array(1.0)])
        >>> g.item()
        6.0
    """
    check_callable("vjp", fun)
    cotangents = check_arrays("vjp", "cotangents", cotangents)
    outputs, grads = pullback(fun, primals, conjugated(cotangents))
    return outputs, conjugated(grads)


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
        TypeError: if `fun` is not callable, or primals, tangents or outputs are not arrays.
        ValueError: if the number or shapes of the tangents do not match the primals.
        TransformError: if a primitive on the path has no forward-mode rule.

    Example:
        >>> import nuvec as mx
        >>> out, (t,) = mx.jvp(lambda x: x * x, [mx.array(3.0)], [mx.array(1.0)])
        >>> t.item()
        6.0
    """
    check_callable("jvp", fun)
    primals = check_arrays("jvp", "primals", primals)
    tangents = check_arrays("jvp", "tangents", tangents)
    if len(tangents) != len(primals):
        raise ValueError(f"jvp: got {len(tangents)} tangents for {len(primals)} primals")
    for p, t in zip(primals, tangents):
        if p.shape != t.shape:
            raise ValueError(f"jvp: tangent shape {t.shape} does not match primal {p.shape}")
    starts = mark(primals)
    outputs = _as_output_list("jvp", trace(fun, _handles(starts)))
    outs = forward(outputs, starts, tangents)
    release(outputs, starts)
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
    try:
        names = [argnames] if isinstance(argnames, str) else list(argnames)
    except TypeError:
        names = [None]
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{op}: argnames must be a str or a sequence of str, got {argnames!r}")
    if argnums is None:
        nums = [] if names else [0]
    else:
        nums = sorted(int_tuple(argnums, op, "argnums"))
        if nums and nums[-1] >= 2**31:
            raise ValueError(f"{op}: argnums must be below 2**31, got {nums[-1]}")
    if not nums and not names:
        raise ValueError(f"{op}: gradient with respect to no argument requested")
    if nums and nums[0] < 0:
        raise ValueError(f"{op}: can't compute the gradient of negative argument index {nums[0]}")
    if len(set(nums)) != len(nums):
        raise ValueError(f"{op}: duplicate argument index in argnums {tuple(nums)}")
    return nums, names


def _check_argnames(op: str, fun: Callable[..., Any], names: list[str]) -> None:
    """Raises ValueError for an argname `fun` cannot take by keyword (a function with
    `**kwargs`, or one without a signature, takes any)."""
    try:
        params = inspect.signature(fun).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for n in names:
        if n not in params or params[n].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                 inspect.Parameter.VAR_POSITIONAL):
            raise ValueError(f"{op}: argnames {n!r} is not a keyword parameter of the function, "
                             f"whose parameters are {list(params)}")


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
    if not isinstance(loss, Array) or loss.ndim != 0:
        allowed = ("a scalar array, or a tuple whose first element is a scalar array"
                   if aux_allowed else "a scalar array")
        got = _describe(value if loss is None else loss)
        raise ValueError(f"{op}: the function must return {allowed}; got {got}")
    return loss


def _check_leaves(op: str, leaves: list[Any], selected: list[Any], nums: list[int],
                  names: list[str]) -> None:
    """Raises unless every leaf of the differentiated arguments is a float array: MLX rejects
    other leaves (numbers, None, strings) there; the other arguments may hold anything."""
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, Array):
            roots = [f"args[{n}]" for n in nums] + [f"kwargs[{k!r}]" for k in names]
            paths = [p for root, arg in zip(roots, selected) for p in _leaf_paths(arg, root)]
            raise DtypeError(f"{op}: differentiated arguments must be arrays or trees of "
                             f"arrays, got {type(leaf).__name__} at {paths[i]}")
        if not leaf.dtype.is_inexact:
            raise DtypeError(f"{op}: cannot differentiate with respect to an array of "
                             f"{leaf.dtype.name} (shape {leaf.shape}); use a float dtype")


def _leaf_paths(tree: Any, path: str) -> Iterator[str]:
    """The path of each leaf of `tree` in `flatten`'s order, as indexing from `path`."""
    if not is_node(tree):
        yield path
        return
    for key, child in tree.items() if isinstance(tree, dict) else enumerate(tree):
        yield from _leaf_paths(child, f"{path}[{key!r}]")


def _value_and_grad(
    op: str, fun: Callable[..., Any], argnums: Any, argnames: Any, aux_allowed: bool
) -> Callable[..., tuple[Any, Any]]:
    check_callable(op, fun)
    nums, names = _normalize_argnums(op, argnums, argnames)
    _check_argnames(op, fun, names)

    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        _select_args(op, args, kwargs, nums, names)
        selected = [args[n] for n in nums] + [kwargs[k] for k in names]
        leaves, treedef = flatten(selected)  # (modules too, as MLX)
        _check_leaves(op, leaves, selected, nums, names)
        starts = mark(leaves)
        slots: Slots = {}
        filled = iter(_handles(starts))  # the caller's lists and dicts take them in place (MLX)
        rebuilt = [fill_in_place(arg, filled, slots) for arg in selected]
        call_args = list(args)
        for n, value in zip(nums, rebuilt):
            call_args[n] = value
        call_kwargs = dict(kwargs)
        for k, value in zip(names, rebuilt[len(nums):]):
            call_kwargs[k] = value
        kept: list[Array] = []
        try:
            value = trace(fun, call_args, call_kwargs)
        finally:
            for arg in rebuilt:
                restore_unchanged(arg, slots, kept)
        loss = _loss_of(op, value, aux_allowed)
        grads = backward([loss], [ones(loss.shape, loss.dtype)], starts)  # (a cached leaf)
        release(value, kept, starts)
        # (MLX's complex convention, as vjp)
        tree = unflatten(treedef, [_fit(op, g, p) for g, p in zip(conjugated(grads), leaves)])
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
    (the rest is auxiliary output, returned but not differentiated). As in MLX, `fun` gets the
    caller's own lists and dicts with traced arrays in them; afterwards the caller's arrays are
    put back, except in entries `fun` assigned or updated in place, which keep the new value.

    Args:
        fun: the function; its differentiated arguments are float arrays or trees of them.
        argnums: positional argument(s) to differentiate; default 0 when `argnames` is empty.
        argnames: keyword argument(s) to differentiate.

    Returns:
        A function returning `(value, grads)`: `grads` has the structure of the argument for
        one argnum (tuples keep their type; dict and list subclasses, a module, come back as
        plain dicts and lists, as in MLX), is a tuple (in increasing argnum order) for
        several, and with `argnames` is `(positional_grads_or_None, {name: grad})`.

    Raises:
        ValueError: for negative, repeated or out-of-range argnums, missing argnames, or a
            value that is not a scalar array (or a tuple starting with one).
        DtypeError: if a leaf of a differentiated argument is not an array (a number, None,
            a string) or not floating point (a `TypeError` and a `ValueError`, as MLX's).

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
        ValueError, DtypeError: as `value_and_grad`.

    Example:
        >>> import nuvec as mx
        >>> mx.grad(lambda x: x * x * x)(mx.array(2.0)).item()
        12.0
    """
    vg = _value_and_grad("grad", fun, argnums, argnames, False)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return vg(*args, **kwargs)[1]

    return wrapped

