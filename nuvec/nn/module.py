"""`Module`, MLX's base class of layers: a dict of parameters (arrays) and child modules.

A module's public array members (directly, or inside dicts and lists) are its parameters; its
members that are modules are its children. Everything else (`_training`, `_no_grad`, plain
Python attributes) is neither. The tree methods walk that structure the way `mlx.nn.Module`
does, so MLX code using `parameters()`, `update()`, `freeze()` or `load_weights()` runs as is.
"""

from __future__ import annotations

from typing import Any, Callable

import nuvec as mx
from nuvec.utils import tree_flatten, tree_unflatten

__all__ = ["Module"]

Filter = Callable[["Module", str, Any], bool]


_NESTED = (dict, list)  # what a module's members nest in (a module is a dict)


def _default_leaf(module: "Module", key: str, value: Any) -> bool:
    return not isinstance(value, _NESTED)


def _unwrap(model: "Module", key: str, value: Any, filter_fn: Filter,
            map_fn: Callable[[Any], Any] | None, is_leaf_fn: Filter) -> Any:
    """The filtered, mapped subtree of `value`, the member `key` of `model` (`map_fn` None:
    the leaves as they are)."""
    if (not isinstance(value, _NESTED) if is_leaf_fn is _default_leaf
            else is_leaf_fn(model, key, value)):  # (the default test inline: once per member)
        return value if map_fn is None else map_fn(value)
    if isinstance(value, Module):
        return {k: _unwrap(value, k, v, filter_fn, map_fn, is_leaf_fn)
                for k, v in value.items() if filter_fn(value, k, v)}
    # Inside dicts and lists a member the filter rejects stays as an empty dict, as in MLX, so
    # positions and keys line up with the module's (`layers.2` stays `layers.2` when
    # `layers.1` is a plain function).
    if isinstance(value, dict):
        return {k: _unwrap(model, f"{key}.{k}", v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, f"{key}.{k}", v) else {} for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(model, f"{key}.{i}", v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, f"{key}.{i}", v) else {} for i, v in enumerate(value)]
    raise RuntimeError("Module.filter_and_map: unexpected leaf found while traversing the module")


def _update(dst: Any, new_tree: Any, strict: bool) -> None:
    """`Module.update` of the container `dst` from `new_tree` (module-level recursion: no
    closures rebuilt per call)."""
    if isinstance(new_tree, dict):
        items: Any = new_tree.items()
    elif isinstance(new_tree, list):
        items = enumerate(new_tree)
    else:
        if strict:
            raise ValueError(f"Module.update: received invalid type: {type(new_tree).__name__}.")
        return
    array, is_dict = mx.array, isinstance(new_tree, dict)
    for k, new in items:
        if is_dict and k not in dst:
            if strict:
                raise ValueError(f'Module.update: module does not have parameter named "{k}".')
            continue
        if not is_dict and k >= len(dst):
            if strict:
                raise ValueError(f"Module.update: list index {k} is out of bounds for "
                                 f"destination of length {len(dst)}.")
            continue
        if isinstance(dst[k], array):
            if strict and not isinstance(new, array):
                raise ValueError(f"Module.update: received invalid type: {type(new).__name__}.")
            dst[k] = new
        else:
            _update(dst[k], new, strict)


def _is_floating(dtype: Any) -> bool:
    """`Module.set_dtype`'s default predicate."""
    return mx.issubdtype(dtype, mx.floating)


class Module(dict):
    """Base class of layers and models, as `mlx.nn.Module`.

    Subclasses set arrays and modules as attributes in `__init__` and define `__call__`.
    Attribute access reads the dict: `self.weight` is `self["weight"]`.

    Example:
        >>> import nuvec.nn as nn
        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.scale = mx.ones((2,))
        ...     def __call__(self, x):
        ...         return self.scale * x
        >>> m = Affine()
        >>> m.parameters()
        {'scale': array([1, 1], dtype=float32)}
    """

    __call__: Callable[..., Any]

    def __init__(self) -> None:
        self._no_grad: set[str] = set()
        self._training = True

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (`train()`) rather than `eval()` mode."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module's dict of members itself (parameters, children and other arrays)."""
        return self

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        text = f"{type(self).__name__}({self._extra_repr()}"
        for key, child in children:
            text += "\n  " + f"({key}): {child!r}".replace("\n", "\n  ")
        return text + ("\n)" if children else ")")

    def __getattr__(self, key: str) -> Any:
        if key in self:
            return self[key]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, (mx.array, dict, list, tuple)):
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = value
        else:
            if key in self:
                del self[key]
            super().__setattr__(key, value)

    def __delattr__(self, key: str) -> None:
        if key in self:
            del self[key]
        else:
            super().__delattr__(key)

    # ---- filters -------------------------------------------------------------------------

    @staticmethod
    def is_module(value: Any) -> bool:
        """Whether `value` is a `Module`."""
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        """The filter of members that may hold children: dicts (modules included) and lists."""
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """The filter of members that may hold parameters: public arrays, dicts and lists."""
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """`valid_parameter_filter` without the frozen members."""
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(self, filter_fn: Filter, map_fn: Callable[[Any], Any] | None = None,
                       is_leaf_fn: Filter | None = None) -> dict[str, Any]:
        """The tree of members that `filter_fn(module, key, value)` keeps, leaves mapped.

        Args:
            filter_fn: keeps a member (at any depth) when it returns True.
            map_fn: applied to each kept leaf (identity when None).
            is_leaf_fn: marks leaves; by default anything but modules, dicts and lists.

        Returns:
            A dict tree mirroring the module.
        """
        is_leaf_fn = is_leaf_fn or _default_leaf
        return {k: _unwrap(self, k, v, filter_fn, map_fn, is_leaf_fn)
                for k, v in self.items() if filter_fn(self, k, v)}

    # ---- trees ---------------------------------------------------------------------------

    def parameters(self) -> dict[str, Any]:
        """Every parameter (public array member, recursively) as a tree of dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict[str, Any]:
        """The parameters that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict[str, Any]:
        """The direct child modules (inside dicts and lists too), as a tree."""
        return self.filter_and_map(self.valid_child_filter,
                                   is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self) -> dict[str, Any]:
        """The descendant modules without children, as a tree."""
        def is_leaf(m: Module, k: str, v: Any) -> bool:
            return isinstance(v, Module) and not tree_flatten(v.children(),
                                                              is_leaf=Module.is_module)
        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf)

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls `apply_fn(dotted_path, module)` on this module and every descendant."""
        stack: list[tuple[str, Module]] = [("", self)]
        while stack:
            prefix, module = stack.pop()
            apply_fn(prefix, module)
            prefix = "." + prefix if prefix else ""
            stack.extend(tree_flatten(module.children(), prefix=prefix, is_leaf=self.is_module))
        return self

    def modules(self) -> list["Module"]:
        """This module and all its descendants."""
        found: list[Module] = []
        self.apply_to_modules(lambda _, m: found.append(m))
        return found

    def named_modules(self) -> list[tuple[str, "Module"]]:
        """(dotted path, module) for this module (path "") and all its descendants."""
        found: list[tuple[str, Module]] = []
        self.apply_to_modules(lambda k, m: found.append((k, m)))
        return found

    def update(self, parameters: dict[str, Any], strict: bool = True) -> "Module":
        """Replaces parameters with those of the tree `parameters` (as `mlx.nn.Module.update`).

        Args:
            parameters: a tree of dicts and lists whose leaves are arrays.
            strict: if True, every key must name an existing member and every replacement of
                an array must be an array.

        Returns:
            The module.

        Raises:
            ValueError: with `strict`, for a key the module lacks or a leaf of the wrong type.
        """
        _update(self, parameters, strict)
        return self

    def update_modules(self, modules: dict[str, Any], strict: bool = True) -> "Module":
        """Replaces child modules with those of the tree `modules`.

        Args:
            modules: a tree of dicts and lists whose leaves are modules.
            strict: if True, every key must name an existing member holding modules.

        Returns:
            The module.

        Raises:
            ValueError: with `strict`, for a key the module lacks or a leaf of the wrong type.
        """
        def apply(dst: Any, new_tree: Any) -> None:
            if isinstance(new_tree, dict):
                items = list(new_tree.items())
            elif isinstance(new_tree, list):
                items = list(enumerate(new_tree))
            else:
                if strict:
                    raise ValueError("Module.update_modules: received invalid type: "
                                     f"{type(new_tree).__name__}.")
                return
            for k, new in items:
                if isinstance(dst, dict) and k not in dst:
                    if strict:
                        raise ValueError("Module.update_modules: module does not have "
                                         f'sub-module named "{k}".')
                    continue
                if isinstance(new_tree, list) and k >= len(dst):
                    if strict:
                        raise ValueError(f"Module.update_modules: list index {k} is out of "
                                         f"bounds for destination of length {len(dst)}.")
                    continue
                current = dst[k]
                if isinstance(current, Module) and isinstance(new, Module):
                    dst[k] = new
                elif isinstance(current, (dict, list)):
                    apply(current, new)
                elif strict and not (isinstance(new, dict) and not new):  # `{}`: nothing to set
                    raise ValueError("Module.update_modules: received invalid type: "
                                     f"{type(new).__name__}.")

        apply(self, modules)
        return self

    def apply(self, map_fn: Callable[[mx.array], mx.array],
              filter_fn: Filter | None = None) -> "Module":
        """Replaces each parameter `p` (kept by `filter_fn`) with `map_fn(p)`; returns self."""
        filter_fn = filter_fn or self.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    # ---- freezing, modes, dtypes ---------------------------------------------------------

    def _validate_keys(self, keys: Any, strict: bool, recurse: bool, op: str) -> list[str] | None:
        """`keys` as a list (None stays None); with `strict`, each key must be a member of this
        module or, with `recurse`, of at least one module of the tree."""
        if keys is None:
            return None
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            visited = self.modules() if recurse else [self]
            for k in keys:
                if not any(k in m for m in visited):
                    raise KeyError(f"Module.{op}: module doesn't contain member {k}.")
        return keys

    def freeze(self, *, recurse: bool = True, keys: str | list[str] | None = None,
               strict: bool = False) -> "Module":
        """Freezes parameters: `trainable_parameters()` (and so `nn.value_and_grad`) skip them.

        Args:
            recurse: also freeze the descendants' parameters.
            keys: the member names to freeze (default: every parameter member).
            strict: if True, every key must be a member of the module (with `recurse`, of at
                least one module of the tree).

        Returns:
            The module.

        Raises:
            KeyError: with `strict`, for a key no module has.

        Example:
            >>> import nuvec.nn as nn
            >>> layer = nn.Linear(2, 2).freeze(keys="bias")
            >>> list(layer.trainable_parameters())
            ['weight']
        """
        keys = self._validate_keys(keys, strict, recurse, "freeze")

        def freeze_one(_: str, m: Module) -> None:
            local = keys
            if local is None:
                local = [k for k, _ in tree_flatten(m.filter_and_map(
                    lambda mod, k, v: not isinstance(v, Module)
                    and mod.valid_parameter_filter(mod, k, v)))]
            m._no_grad.update(local)

        if recurse:
            self.apply_to_modules(freeze_one)
        else:
            freeze_one("", self)
        return self

    def unfreeze(self, *, recurse: bool = True, keys: str | list[str] | None = None,
                 strict: bool = False) -> "Module":
        """Unfreezes parameters (all of them, or the members `keys`); arguments as `freeze`."""
        keys = self._validate_keys(keys, strict, recurse, "unfreeze")

        def unfreeze_one(_: str, m: Module) -> None:
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(keys)

        if recurse:
            self.apply_to_modules(unfreeze_one)
        else:
            unfreeze_one("", self)
        return self

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (`mode=True`) or evaluation mode on every module; returns self."""
        def set_mode(_: str, m: Module) -> None:
            m._set_training_mode(mode)
        return self.apply_to_modules(set_mode)

    def _set_training_mode(self, mode: bool) -> None:
        """Sets this module's mode (MLX's hook: a layer that changes with it overrides this)."""
        self._training = mode

    def eval(self) -> "Module":
        """Sets evaluation mode (`train(False)`): dropout off, batch norm uses running stats."""
        return self.train(False)

    def set_dtype(self, dtype: Any,
                  predicate: Callable[[Any], bool] | None = _is_floating) -> None:
        """Casts the parameters whose dtype `predicate` accepts (default: the floating ones;
        None: all of them) to `dtype`, as MLX's."""
        if predicate is None:
            self.apply(lambda x: x.astype(dtype))
        else:
            self.apply(lambda x: x.astype(dtype) if predicate(x.dtype) else x)

    # ---- weights files -------------------------------------------------------------------

    def load_weights(self, file_or_weights: Any, strict: bool = True) -> "Module":
        """Loads parameters from a `.npz`/`.safetensors` file, a list of (path, array) pairs or
        a dict from path to array.

        Args:
            file_or_weights: a file path, a list or tuple of `(dotted_path, array)` pairs, or
                a dict `{dotted_path: array}`.
            strict: if True, the weights must name exactly the model's parameters, with the
                same shapes.

        Returns:
            The module.

        Raises:
            ValueError: with `strict`, for extra or missing parameters, a non-array weight or
                a shape mismatch.

        Example:
            >>> import nuvec.nn as nn
            >>> layer = nn.Linear(2, 1)
            >>> _ = layer.load_weights([("weight", mx.zeros((1, 2))), ("bias", mx.ones((1,)))])
            >>> layer.bias.tolist()
            [1.0]
        """
        weights = file_or_weights
        if isinstance(weights, dict):
            weights = list(weights.items())
        elif isinstance(weights, tuple):
            weights = list(weights)
        elif not isinstance(weights, list):
            weights = list(mx.load(str(weights)).items())
        if strict:
            self._check_weights(dict(weights))
        if weights:
            self.update(tree_unflatten(weights), strict=strict)
        return self

    def _check_weights(self, new: dict[str, Any]) -> None:
        current = dict(tree_flatten(self.parameters()))
        extras = sorted(new.keys() - current.keys())
        if extras:
            raise ValueError(f"load_weights: received {len(extras)} parameters not in model: "
                             f"{', '.join(extras)}.")
        missing = sorted(current.keys() - new.keys())
        if missing:
            raise ValueError(f"load_weights: missing {len(missing)} parameters: "
                             f"{', '.join(missing)}.")
        for key, value in new.items():
            if not isinstance(value, mx.array):
                raise ValueError(f"load_weights: expected an array but received "
                                 f"{type(value).__name__} for parameter {key}")
            if value.shape != current[key].shape:
                raise ValueError(f"load_weights: expected shape {current[key].shape} but "
                                 f"received shape {value.shape} for parameter {key}")

    def save_weights(self, file: str) -> None:
        """Saves the parameters to `file`: `.npz` or `.safetensors` by its extension.

        Raises:
            ValueError: for another extension.
        """
        file = str(file)
        params = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **params)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, params)
        else:
            raise ValueError(f"save_weights: unsupported file extension for {file}; use "
                             "'.npz' or '.safetensors'")
