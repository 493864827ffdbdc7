"""MLX's `compile`, `disable_compile` and `enable_compile`.

In MLX, compiling is a pure optimization: the compiled function returns what the function
returns, with its graph traced once and fused. nuvec does not fuse graphs, so a compiled function
is a wrapper that calls the function; code written with `mx.compile` runs unchanged.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["compile", "disable_compile", "enable_compile"]


def compile(
    fun: Callable[..., Any], inputs: Any = None, outputs: Any = None, shapeless: bool = False
) -> Callable[..., Any]:
    """A function that returns the same outputs as `fun` (MLX's `compile`).

    MLX traces `fun` once and fuses its graph. nuvec runs `fun`'s operations as they come, so
    the compiled function simply calls `fun`: the state named by `inputs` and `outputs` (model
    parameters, optimizer state, `mx.random.state`) is read and updated by `fun` itself, exactly
    as MLX's captured state is.

    Args:
        fun: a function of arrays (or trees of arrays) returning arrays or trees of arrays.
        inputs: trees of arrays `fun` reads implicitly (MLX captures them); any value.
        outputs: trees of arrays `fun` updates implicitly (MLX writes them back); any value.
        shapeless: MLX recompiles only on dtype or rank changes when True; must be a bool.

    Returns:
        A function with `fun`'s name, docstring and signature.

    Raises:
        TypeError: if `fun` is not callable or `shapeless` is not a bool.

    Example:
        >>> import nuvec as mx
        >>> f = mx.compile(lambda x: mx.exp(x) + 1)
        >>> f(mx.array(0.0)).item()
        2.0
    """
    if not callable(fun):
        raise TypeError(f"compile: fun must be callable, got {type(fun).__name__}")
    if not isinstance(shapeless, bool):
        raise TypeError(f"compile: shapeless must be a bool, got {type(shapeless).__name__}")

    @functools.wraps(fun)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)

    return compiled


def disable_compile() -> None:
    """Turns compilation off globally (MLX's `disable_compile`, for debugging).

    Compiled and plain functions run the same operations in nuvec, so there is no state to
    change: this exists so that MLX code toggling compilation runs unchanged.

    Example:
        >>> import nuvec as mx
        >>> mx.disable_compile()
        >>> mx.compile(lambda x: x * 2)(mx.array(3)).item()
        6
        >>> mx.enable_compile()
    """


def enable_compile() -> None:
    """Turns compilation back on globally (MLX's `enable_compile`); see `disable_compile`.

    Example:
        >>> import nuvec as mx
        >>> mx.enable_compile()
        >>> mx.compile(lambda x: x * 2)(mx.array(3)).item()
        6
    """
