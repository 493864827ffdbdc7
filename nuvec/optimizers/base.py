"""`Optimizer`, `MultiOptimizer` and `clip_grad_norm`, as `mlx.optimizers`.

An optimizer's `state` is a tree mirroring the parameters (one dict of arrays per parameter),
plus `step` (a uint64 count of updates) and the scheduled hyperparameters such as
`learning_rate`; it flattens with `tree_flatten`, so it saves and loads like the parameters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

import nuvec as mx
from nuvec.graph.array import Array
from nuvec.ops.arguments import real_number
from nuvec.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = ["Optimizer", "MultiOptimizer", "clip_grad_norm"]


def check_real(name: str, what: str, value: Any, low: float | None = None,
               high: float | None = None) -> Any:
    """Raises unless `value` is a finite real number (a 0-d real array included) in
    `[low, high)` (`high` excluded; either bound None: unbounded). Returns `value` unchanged.

    Raises:
        TypeError: for anything but a real number (strings, None, sequences, complex).
        ValueError: for NaN, an infinity, or a value out of range.
    """
    number = real_number(value, name, what)
    if low is not None and number < low:
        raise ValueError(f"{name}: {what} should be >= {low}, {value} was provided instead")
    if high is not None and not number < high:
        raise ValueError(f"{name}: {what} should be < {high}, {value} was provided instead")
    return value


def check_pair(name: str, what: str, values: Any, low: float | None = None,
               high: float | None = None) -> list[Any]:
    """`values` (a sequence of two real numbers, each checked as `check_real`) as a list.

    Raises:
        TypeError: if `values` is not a sequence or holds a non-real entry.
        ValueError: for a length other than 2 or an entry out of range.
    """
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, (Sequence, Array,
                                                                          np.ndarray)):
        raise TypeError(f"{name}: {what} must be a sequence of 2 numbers, got {values!r} "
                        f"({type(values).__name__})")
    values = list(values)
    if len(values) != 2:
        raise ValueError(f"{name}: {what} must hold 2 numbers, got {len(values)}: {values}")
    for i, value in enumerate(values):
        check_real(name, f"{what}[{i}]", value, low, high)
    return values


def check_learning_rate(name: str, learning_rate: Any) -> None:
    """Raises unless `learning_rate` is a schedule (a callable), a real number or a real
    array.

    Raises:
        TypeError: for anything else (strings, None, complex).
        ValueError: for a NaN or infinite number.
    """
    if callable(learning_rate):
        return
    if isinstance(learning_rate, (Array, np.ndarray)):
        kind = learning_rate.dtype.kind
        if kind not in "iuf" and not (isinstance(learning_rate, Array)
                                     and learning_rate.dtype == mx.bfloat16):
            raise TypeError(f"{name}: learning_rate must be a real number, array or schedule, "
                            f"got an array of dtype {learning_rate.dtype}")
        return
    real_number(learning_rate, name, "learning_rate")


class _Mismatch(Exception):
    """A gradient tree that does not fit the parameters: `keys` is its path, filled in
    while the walk unwinds (so a valid tree builds no path strings)."""

    def __init__(self, make_message: Callable[[str], Exception]) -> None:
        super().__init__()
        self.make_message, self.keys = make_message, []


def _check_tree(gradients: Any, parameters: Any) -> None:
    """Raises `_Mismatch` unless every gradient names a parameter of the same shape (an
    empty container fits anything: the place of a member without parameters)."""
    if isinstance(gradients, (dict, list, tuple)) and not gradients:
        return
    if isinstance(gradients, dict):
        if not isinstance(parameters, dict):
            raise _Mismatch(lambda path: ValueError(
                f"the gradients hold a dict at {_where(path)} where the parameters hold "
                f"{_describe(parameters)}"))
        for key, gradient in gradients.items():
            if key not in parameters:
                raise _Mismatch(lambda path, key=key: ValueError(
                    f"the gradients hold {_where(_join(path, key))}, which is not a parameter (the "
                    f"parameters there: {sorted(map(str, parameters))})"))
            try:
                _check_tree(gradient, parameters[key])
            except _Mismatch as error:
                error.keys.append(key)
                raise
    elif isinstance(gradients, (list, tuple)):
        if not isinstance(parameters, (list, tuple)) or len(parameters) < len(gradients):
            raise _Mismatch(lambda path: ValueError(
                f"the gradients hold a {type(gradients).__name__} of {len(gradients)} at "
                f"{_where(path)} "
                f"where the parameters hold {_describe(parameters)}"))
        for index, gradient in enumerate(gradients):
            try:
                _check_tree(gradient, parameters[index])
            except _Mismatch as error:
                error.keys.append(index)
                raise
    elif type(gradients) is not Array:
        raise _Mismatch(lambda path: TypeError(
            f"the gradient at {_where(path)} must be an array, got {type(gradients).__name__}"))
    elif type(parameters) is not Array:
        raise _Mismatch(lambda path: ValueError(
            f"the gradients hold an array at {_where(path)} where the parameters hold "
            f"{_describe(parameters)}"))
    elif gradients.shape != parameters.shape:
        raise _Mismatch(lambda path: ValueError(
            f"the gradient of {_where(path)} has shape {gradients.shape} but the parameter has "
            f"shape {parameters.shape}"))


def _describe(tree: Any) -> str:
    if isinstance(tree, Array):
        return f"an array of shape {tree.shape}"
    if isinstance(tree, (list, tuple)):
        return f"a {type(tree).__name__} of {len(tree)}"
    return "a dict" if isinstance(tree, dict) else f"a {type(tree).__name__}"


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _where(path: str) -> str:
    return repr(path) if path else "the root"


def check_gradients(name: str, gradients: Any, parameters: Any) -> None:
    """Raises, naming the optimizer `name` and the parameter's path, unless `gradients` is a
    tree (dict, list or tuple) of arrays whose every leaf names a parameter of `parameters`
    with the same shape (one shape comparison per parameter).

    Raises:
        TypeError: for gradients that are not a tree of arrays.
        ValueError: for a gradient naming no parameter, or of another shape.
    """
    if not isinstance(gradients, (dict, list, tuple)):
        raise TypeError(f"{name}: gradients must be a dict, list or tuple of arrays (as "
                        f"nn.value_and_grad returns), got {type(gradients).__name__}")
    try:
        _check_tree(gradients, parameters)
    except _Mismatch as error:
        path = ".".join(str(k) for k in reversed(error.keys))
        exception = error.make_message(path)
        raise type(exception)(f"{name}: {exception}") from None


def _empty_states(tree: Any) -> Any:
    return tree_map(lambda _: {}, tree)


def _grow_state(params: Any, state: Any) -> Any:
    """`state` extended with empty per-parameter dicts where `params` has new members."""
    if isinstance(params, (list, tuple)):
        state = list(state)
        for i in range(min(len(state), len(params))):
            state[i] = _grow_state(params[i], state[i])
        state.extend(_empty_states(list(params[len(state):])))
        return type(params)(state)
    if isinstance(params, dict):
        for key, value in params.items():
            state[key] = _grow_state(value, state[key]) if key in state else _empty_states(value)
        return state
    return state


class Optimizer(ABC):
    """The base of the optimizers: subclasses define `init_single` and `apply_single`.

    Args:
        schedulers: hyperparameter name -> schedule (a function of the step) to evaluate
            before each update.
    """

    def __init__(self, schedulers: dict[str, Callable[[mx.array], mx.array]] | None = None):
        self._initialized = False
        self._state: dict[str, Any] = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model: Any, gradients: Any) -> None:
        """Applies `gradients` to the parameters of `model` (an `nn.Module`), in place."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: Any) -> None:
        """Creates the state of every parameter of the tree `parameters` that lacks one.

        Called by the first `apply_gradients`; call it yourself to have the state before.
        """
        self._state = _grow_state(parameters, self._state)
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    @abstractmethod
    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Fills `state` (a dict) for one parameter."""

    @abstractmethod
    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """The updated parameter from its gradient; updates `state` in place."""

    def apply_gradients(self, gradients: Any, parameters: Any) -> Any:
        """The updated parameters (a tree shaped like `gradients`); advances `step`.

        Args:
            gradients: the gradient tree (e.g. from `nn.value_and_grad`).
            parameters: a tree holding at least the parameters `gradients` names.

        Returns:
            The tree of updated parameters.
        """
        check_gradients(type(self).__name__, gradients, parameters)
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = schedule(self.step)
        self.state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self.state)

    @property
    def state(self) -> dict[str, Any]:
        """The optimizer state: a tree of arrays (set it to restore a saved state)."""
        return self._state

    @state.setter
    def state(self, state: dict[str, Any]) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        """The number of updates applied so far (a uint64 array)."""
        return self.state["step"]

    @property
    def learning_rate(self) -> mx.array:
        """The current learning rate (an array)."""
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Any) -> None:
        check_learning_rate(type(self).__name__, learning_rate)
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, value: Any) -> None:
        """Stores `value`, or registers it as a schedule when it is callable.

        Raises:
            TypeError, ValueError: for a learning rate that is not a real number, a real
                array or a schedule.
        """
        if name == "learning_rate":
            check_learning_rate(type(self).__name__, value)
        if callable(value):
            self._schedulers[name] = value
            value = value(self.step)
        else:
            value = mx.array(value)
        self.state[name] = value


class MultiOptimizer(Optimizer):
    """Several optimizers, each for the parameters its filter selects.

    Several optimizers, each for the parameters its filter selects (the last takes the
    rest).

    Args:
        optimizers: the optimizers.
        filters: `len(optimizers) - 1` predicates `(path, gradient) -> bool`; a parameter goes
            to the first optimizer whose filter accepts it.

    Raises:
        ValueError: for a wrong number of filters.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)],
        ...                            [lambda path, g: path.endswith("bias")])
        >>> new = opt.apply_gradients({"w": mx.ones((2,)), "bias": mx.ones((2,))},
        ...                           {"w": mx.zeros((2,)), "bias": mx.zeros((2,))})
        >>> new["bias"].tolist()
        [-0.1..., -0.1...]
    """

    def __init__(self, optimizers: list[Optimizer], filters: list[Callable] | None = None):
        super().__init__()
        filters = list(filters or [])
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"MultiOptimizer: given {len(filters)} filters but "
                             f"{len(optimizers) - 1} needed.")
        self.optimizers = list(optimizers)
        self.filters = filters + [lambda *args, **kwargs: True]

    def _split(self, gradients: Any) -> list[Any]:
        if len(self.optimizers) == 1:
            return [gradients]
        parts: list[list[tuple[str, Any]]] = [[] for _ in self.optimizers]
        for path, g in tree_flatten(gradients):
            for i, keep in enumerate(self.filters):
                if keep(path, g):
                    parts[i].append((path, g))
                    break
        return [tree_unflatten(part) if part else {} for part in parts]

    def init(self, parameters: Any) -> None:
        """Initializes each optimizer on its share of `parameters`."""
        for optimizer, part in zip(self.optimizers, self._split(parameters)):
            optimizer.init(part)

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Unused: the inner optimizers hold the per-parameter states."""

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """Unused: the inner optimizers update the parameters."""
        return parameter

    def apply_gradients(self, gradients: Any, parameters: Any) -> Any:
        """Each optimizer's updates of its share, merged into one tree."""
        check_gradients(type(self).__name__, gradients, parameters)
        tree: Any = {}
        for optimizer, part in zip(self.optimizers, self._split(gradients)):
            if tree_flatten(part):
                tree = tree_merge(tree, optimizer.apply_gradients(part, parameters))
        return tree

    @property
    def state(self) -> dict[str, Any]:
        """`{"states": [each optimizer's state]}`."""
        return {"states": [optimizer.state for optimizer in self.optimizers]}

    @state.setter
    def state(self, state: dict[str, Any]) -> None:
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("MultiOptimizer.state: invalid state provided: expected "
                             f"{{'states': [{len(self.optimizers)} states]}}")
        for optimizer, inner in zip(self.optimizers, state["states"]):
            optimizer.state = inner

    @property
    def learning_rate(self) -> mx.array:
        """The first optimizer's learning rate (setting it sets every optimizer's)."""
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Any) -> None:
        for optimizer in self.optimizers:
            optimizer.learning_rate = learning_rate


def clip_grad_norm(grads: Any, max_norm: float) -> tuple[Any, mx.array]:
    """Scales a gradient tree so that its global L2 norm is at most `max_norm`.

    Args:
        grads: the gradient tree.
        max_norm: the largest norm allowed.

    Returns:
        `(clipped_grads, total_norm)`, the norm before clipping. float16 gradients are
        squared and summed in float32 (so the norm is float32) and keep their dtype.

    Raises:
        ValueError: for a negative `max_norm`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> clipped, norm = optim.clip_grad_norm({"a": mx.array([3.0, 4.0])}, 1.0)
        >>> norm.item(), [round(v, 4) for v in clipped["a"].tolist()]
        (5.0, [0.6, 0.8])
    """
    check_max_norm("clip_grad_norm", max_norm)
    total = mx.sqrt(squared_norm(grads))
    return clipped(grads, total, max_norm), total


def check_max_norm(name: str, max_norm: Any) -> None:
    """Raises ValueError, naming `name`, for a negative `max_norm`."""
    if max_norm < 0:
        raise ValueError(f"{name}: max_norm must be >= 0, got {max_norm}")


def squared_norm(grads: Any) -> mx.array:
    """The sum of the squares of every array of the tree `grads` (float16 ones squared and
    summed in float32, whose squares would overflow past 65504)."""
    def square_sum(g: mx.array) -> mx.array:
        return mx.sum(mx.square(g.astype(mx.float32) if g.dtype == mx.float16 else g))

    return tree_reduce(lambda acc, g: acc + square_sum(g), grads, 0.0)


def clipped(grads: Any, total: mx.array, max_norm: float) -> Any:
    """`grads` scaled by `min(max_norm / (total + 1e-6), 1)`, each float array keeping its
    dtype (cast after scaling: float16 factors may underflow)."""
    factor = mx.minimum(max_norm / (total + 1e-6), 1.0)

    def scale(g: mx.array) -> mx.array:
        scaled = g * factor
        return scaled.astype(g.dtype) if mx.issubdtype(g.dtype, mx.floating) else scaled

    return tree_map(scale, grads)
