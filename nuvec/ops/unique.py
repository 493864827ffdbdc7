"""`unique` as MLX has it: a fixed output size (never inferred from the values), computed from
a stable sort of the flattened input, so that it records without evaluating anything."""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops import binary, comparison, creation, indexing, join, scan, slicing
from nuvec.ops import shape as shape_ops
from nuvec.ops.arguments import as_array, bool_flag, index_int
from nuvec.ops.sorting import argsort

__all__ = ["unique"]


def unique(a: Any, /, size: int, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, fill_value: Any = None, *,
           stream: Any = None) -> Array | tuple[Array, ...]:
    """The sorted unique elements of the flattened `a`, in an array of `size` entries.

    Entries past the last unique element hold `fill_value` (by default the smallest unique
    element) and count 0; with more unique elements than `size`, the smallest `size` are kept
    and the inverse indices of the others are clamped to the last entry. NaNs compare unequal,
    so each is its own element (as in MLX).

    Args:
        a: the input array.
        size: the number of entries of the outputs.
        return_index: also return, for each entry, the flat index of its first occurrence in
            `a` (that of the first entry past the last unique element), uint32.
        return_inverse: also return the entry of each element of `a` (`a`'s shape), uint32.
        return_counts: also return how often each entry occurs in `a`, int32.
        fill_value: the value of the entries past the last unique element.
        stream: the stream or device to run on.

    Returns:
        The unique elements, or a tuple of them with the requested arrays in the order values,
        index, inverse, counts.

    Raises:
        ValueError: if `size` is negative.
        TypeError: if `size` is not an integer, or for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.unique(mx.array([2, 1, 2, 3, 1]), 4, fill_value=0).tolist()
        [1, 2, 3, 0]
    """
    a = as_array(a, "unique")
    size = index_int(size, "unique", "size", low=0)
    return_index = bool_flag(return_index, "unique", "return_index")
    return_inverse = bool_flag(return_inverse, "unique", "return_inverse")
    return_counts = bool_flag(return_counts, "unique", "return_counts")
    s = to_stream(stream)
    flat = shape_ops.reshape(a, (-1,), stream=s)
    n = flat.size
    order = argsort(flat, axis=0, stream=s)
    ordered = indexing.take(flat, order, axis=0, stream=s)
    if n:  # where each run of equal sorted values starts
        head = creation.ones((1,), dt.bool_, stream=s)
        later = slicing.static_slice(ordered, (1,), (n,), (1,), s)
        earlier = slicing.static_slice(ordered, (0,), (n - 1,), (1,), s)
        starts = join.concatenate([head, comparison.not_equal(later, earlier, stream=s)], 0,
                                  stream=s)
    else:
        starts = creation.zeros((0,), dt.bool_, stream=s)
    group = binary.subtract(scan.cumsum(starts, stream=s), 1, stream=s)  # int32
    slot = binary.minimum(group, size, stream=s)  # entry `size`: a spare one, dropped
    first = comparison.where(starts, slot, size, stream=s)  # a run's first element only

    def entries(fill: Any, updates: Array, at: Array, mode: str, dtype: dt.Dtype) -> Array:
        base = creation.full((size + 1,), fill, dtype, stream=s)
        out = indexing.scatter(base, [at], updates, mode, s)
        return slicing.static_slice(out, (0,), (size,), (1,), s)

    if fill_value is None:
        fill_value = indexing.take(ordered, 0, stream=s) if n else 0
    outputs = [entries(fill_value, ordered, first, "set", a.dtype)]
    if return_index:
        first_index = indexing.take(order, 0, stream=s) if n else 0
        outputs.append(entries(first_index, order, first, "set", dt.uint32))
    if return_inverse:
        clamped = binary.maximum(binary.minimum(group, size - 1, stream=s), 0, stream=s)
        inverse = indexing.scatter(creation.zeros((n,), dt.uint32, stream=s), [order],
                                   clamped, "set", s)
        outputs.append(shape_ops.reshape(inverse, a.shape, stream=s))
    if return_counts:
        ones = creation.ones((n,), dt.int32, stream=s)
        outputs.append(entries(0, ones, slot, "add", dt.int32))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
