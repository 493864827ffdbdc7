"""MLX's second names for existing operations (the array API standard's spellings): each calls
the operation it names and shares its documentation, but its errors name the function called
(`mx.acos("x")` says `acos:`)."""

from __future__ import annotations

import functools
from typing import Any, Callable

from nuvec.graph.caller import name_function
from nuvec.ops import binary, comparison, creation, linalg_compose, scan, unary

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_left_shift",
    "bitwise_right_shift", "cumulative_prod", "cumulative_sum", "empty", "matrix_norm", "pow",
]  # fmt: skip



def _alias(target: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`target` under the second name `name`: the same signature and docstring, and named
    `name` on the call stack, so the errors `target` names with `public_caller` name it."""

    @functools.wraps(target)
    def alias(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    return name_function(alias, name)


acos, acosh = _alias(unary.arccos, "acos"), _alias(unary.arccosh, "acosh")
asin, asinh = _alias(unary.arcsin, "asin"), _alias(unary.arcsinh, "asinh")
atan, atanh = _alias(unary.arctan, "atan"), _alias(unary.arctanh, "atanh")
atan2, pow = _alias(binary.arctan2, "atan2"), _alias(binary.power, "pow")
bitwise_left_shift = _alias(comparison.left_shift, "bitwise_left_shift")
bitwise_right_shift = _alias(comparison.right_shift, "bitwise_right_shift")
cumulative_sum = _alias(scan.cumsum, "cumulative_sum")
cumulative_prod = _alias(scan.cumprod, "cumulative_prod")
matrix_norm = _alias(linalg_compose.norm, "matrix_norm")  # MLX's top-level `linalg.norm`
empty = _alias(creation.zeros, "empty")  # MLX's `empty` is `zeros`: never uninitialised
