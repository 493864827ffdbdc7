"""MLX's second names for existing operations (the array API standard's spellings): each is the
same function as the operation it names, so errors and documentation are that operation's."""

from __future__ import annotations

from nuvec.ops import binary, comparison, creation, linalg_compose, scan, unary

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_left_shift",
    "bitwise_right_shift", "cumulative_prod", "cumulative_sum", "empty", "matrix_norm", "pow",
]  # fmt: skip

acos, acosh, asin, asinh = unary.arccos, unary.arccosh, unary.arcsin, unary.arcsinh
atan, atanh, atan2, pow = unary.arctan, unary.arctanh, binary.arctan2, binary.power
bitwise_left_shift, bitwise_right_shift = comparison.left_shift, comparison.right_shift
cumulative_sum, cumulative_prod = scan.cumsum, scan.cumprod
matrix_norm = linalg_compose.norm  # MLX's top-level name of `linalg.norm`
empty = creation.zeros  # MLX's `empty` is `zeros`: a new array is never uninitialised
