"""`Optimizer`, `MultiOptimizer` and `clip_grad_norm`, as `mlx.optimizers`.

An optimizer's `state` is a tree mirroring the parameters (one dict of arrays per parameter),
plus `step` (a uint64 count of updates) and the scheduled hyperparameters such as
`learning_rate`; it flattens with `tree_flatten`, so it saves and loads like the parameters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

import nuvec as mx
from nuvec.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = ["Optimizer", "MultiOptimizer", "clip_grad_norm"]


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
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, value: Any) -> None:
        """Stores `value`, or registers it as a schedule when it is callable."""
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
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm}")

    def square_sum(g: mx.array) -> mx.array:  # float16 squares would overflow past 65504
        return mx.sum(mx.square(g.astype(mx.float32) if g.dtype == mx.float16 else g))

    total = mx.sqrt(tree_reduce(lambda acc, g: acc + square_sum(g), grads, 0.0))
    factor = mx.minimum(max_norm / (total + 1e-6), 1.0)

    def scale(g: mx.array) -> mx.array:  # cast after scaling: float16 factors may underflow
        scaled = g * factor
        return scaled.astype(g.dtype) if mx.issubdtype(g.dtype, mx.floating) else scaled

    return tree_map(scale, grads), total
