"""`einsum` and `einsum_path`, and the engine the other contractions share: subscript parsing,
a greedy pairwise path, and the contraction of each pair (diagonals, sums, transposes and
reshapes around one batched `matmul`; multiply and sum for integer and complex operands).
"""

from __future__ import annotations

import string
from typing import Any, Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import Stream, to_stream
from nuvec.ops.arguments import as_array
from nuvec.ops.binary import multiply
from nuvec.ops.matmul import matmul
from nuvec.ops.matrices import diagonal
from nuvec.ops.reduction import sum as reduce_sum
from nuvec.ops.shape import broadcast_to, reshape, transpose
from nuvec.ops.unary import astype

__all__ = ["einsum", "einsum_path"]

LETTERS = string.ascii_letters


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


# -- parsing ---------------------------------------------------------------------------------
def _parse(op: str, subscripts: Any, shapes: Sequence[tuple[int, ...]]):
    """Subscripts as (input label lists, output label list, label sizes).

    Ellipsis dimensions get labels outside the alphabet (`0`, `1`, ...), right-aligned. Sizes
    broadcast as in NumPy: a size-1 dimension stretches to its label's size elsewhere.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"{op}: subscripts must be a string, got {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    explicit = "->" in text
    lhs, _, rhs = text.partition("->")
    if "->" in rhs:
        raise ValueError(f"{op}: subscripts {subscripts!r} contain more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"{op}: subscripts {subscripts!r} name {len(terms)} operands, "
                         f"got {len(shapes)}")
    ellipsis_ndim = 0
    parsed: list[list[str]] = []
    for term, shape in zip(terms, shapes):
        _check_term(op, subscripts, term)
        letters = term.replace("...", "")
        if "..." in term:
            extra = len(shape) - len(letters)
            if extra < 0:
                raise ValueError(f"{op}: operand with subscripts {term!r} has {len(shape)} "
                                 "dimensions, too few for its labels")
            ellipsis_ndim = max(ellipsis_ndim, extra)
        elif len(letters) != len(shape):
            raise ValueError(f"{op}: operand with subscripts {term!r} has {len(shape)} "
                             f"dimensions, expected {len(letters)}")
        parsed.append([term])
    batch = [str(i) for i in range(ellipsis_ndim)]
    inputs = []
    for (term,), shape in zip(parsed, shapes):
        head, _, tail = term.partition("...")
        if "..." in term:
            extra = len(shape) - len(head) - len(tail)
            inputs.append(list(head) + batch[ellipsis_ndim - extra:] + list(tail))
        else:
            inputs.append(list(term))
    sizes = _sizes(op, inputs, shapes)
    if explicit:
        _check_term(op, subscripts, rhs)
        if "..." not in rhs and ellipsis_ndim and any(sizes[b] != 1 for b in batch):
            raise ValueError(f"{op}: output subscripts {rhs!r} must contain '...' to keep "
                             "the broadcast dimensions")
        head, _, tail = rhs.partition("...")
        output = list(head) + (batch if "..." in rhs else []) + list(tail)
        for label in output:
            if label not in sizes:
                raise ValueError(f"{op}: output label {label!r} does not appear in the inputs")
            if output.count(label) > 1:
                raise ValueError(f"{op}: output label {label!r} is repeated")
    else:
        counts = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = batch + sorted(l for l, c in counts.items() if c == 1 and l not in batch)
    return inputs, output, sizes


def _check_term(op: str, subscripts: str, term: str) -> None:
    body = term.replace("...", "", 1)
    if "." in body:
        raise ValueError(f"{op}: invalid ellipsis in subscripts {subscripts!r}")
    for c in body:
        if c not in LETTERS:
            raise ValueError(f"{op}: invalid subscript {c!r} in {subscripts!r}; use letters")


def _sizes(op: str, inputs: list[list[str]], shapes) -> dict[str, int]:
    """Each label's size; a size-1 dimension takes the size the label has in other operands,
    but a label repeated within one operand must have one size there (as NumPy and MLX)."""
    sizes: dict[str, int] = {}
    for labels, shape in zip(inputs, shapes):
        own: dict[str, int] = {}
        for label, d in zip(labels, shape):
            if own.setdefault(label, d) != d:
                raise ValueError(f"{op}: label {label!r} repeats with sizes {own[label]} and "
                                 f"{d} in the operand of shape {shape}")
        for label, d in own.items():
            known = sizes.setdefault(label, d)
            if known != d and 1 not in (known, d):
                raise ValueError(f"{op}: label {label!r} has sizes {known} and {d} in "
                                 f"operands of shapes {', '.join(map(str, shapes))}")
            if known == 1:
                sizes[label] = d
    return sizes


# -- contraction order -----------------------------------------------------------------------
def _greedy_path(inputs: list[list[str]], output: list[str], sizes: dict[str, int]):
    """NumPy's greedy order: contract the pair whose result shrinks the total size the most
    (pairs sharing a label first); the result joins the end of the operand list."""
    terms = [set(t) for t in inputs]
    path = []
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                shared = bool(terms[i] & terms[j])
                kept = _kept(terms, i, j, output)
                result = (terms[i] | terms[j]) & kept
                cost = (_size(result, sizes) - _size(terms[i], sizes)
                        - _size(terms[j], sizes))
                key = (not shared, cost, _size(terms[i] | terms[j], sizes))
                if best is None or key < best[0]:
                    best = (key, i, j, result)
        _, i, j, result = best
        path.append((i, j))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [result]
    return path or [(0,)]


def _kept(terms, i, j, output) -> set[str]:
    kept = set(output)
    for k, t in enumerate(terms):
        if k not in (i, j):
            kept |= t
    return kept


def _size(labels, sizes) -> int:
    return _prod([sizes[l] for l in labels])


# -- array steps -----------------------------------------------------------------------------
def _diagonals(x: Array, labels: list[str], s: Stream) -> tuple[Array, list[str]]:
    """Takes the diagonal for each label repeated within one operand (traces, diagonals)."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        label = next(l for l in labels if labels.count(l) > 1)
        first = labels.index(label)
        second = labels.index(label, first + 1)
        x = diagonal(x, 0, first, second, stream=s)
        labels = [l for k, l in enumerate(labels) if k not in (first, second)] + [label]
    return x, labels


def _sum_out(x: Array, labels: list[str], keep: set[str], s: Stream):
    drop = [k for k, l in enumerate(labels) if l not in keep]
    if not drop:
        return x, labels

    return (reduce_sum(x, axis=drop, stream=s),
            [l for k, l in enumerate(labels) if k not in drop])


def _arrange(x: Array, labels: list[str], order: list[str], s: Stream) -> Array:
    """`x` transposed to `order`; labels missing from `x` become size-1 axes."""
    present = [l for l in order if l in labels]
    x = transpose(x, [labels.index(l) for l in present], stream=s)
    shape = tuple(x.shape[present.index(l)] if l in present else 1 for l in order)
    return reshape(x, shape, stream=s)


def _pair(a: Array, la: list[str], b: Array, lb: list[str], keep: set[str], sizes,
          s: Stream) -> tuple[Array, list[str]]:
    """Contracts two operands: shared labels not kept are summed, kept ones are batch axes."""
    a, la = _sum_out(a, la, keep | set(lb), s)
    b, lb = _sum_out(b, lb, keep | set(la), s)
    batch = [l for l in la if l in lb and l in keep]
    contracted = [l for l in la if l in lb and l not in keep]
    free_a = [l for l in la if l not in lb]
    free_b = [l for l in lb if l not in la]
    out_labels = batch + free_a + free_b
    if not contracted or not a.dtype.is_floating:
        # Elementwise product (with a sum for integer dtypes): broadcast both into one frame.

        frame = out_labels + contracted
        product = multiply(_arrange(a, la, frame, s), _arrange(b, lb, frame, s),
                           stream=s)
        if contracted:
            product = reduce_sum(product, axis=list(range(len(out_labels), len(frame))),
                                 stream=s)
            product = _keep_dtype(product, a.dtype, s)
        return product, out_labels

    def block(x, labels, first, second):
        x = _arrange(x, labels, batch + first + second, s)
        full = tuple(sizes[l] for l in batch + first + second)
        return reshape(x, (*full[: len(batch)], _prod(full[len(batch): len(batch) + len(first)]),
                           _prod(full[len(batch) + len(first):])), stream=s)

    product = matmul(block(a, la, free_a, contracted), block(b, lb, contracted, free_b),
                     stream=s)
    shape = tuple(sizes[l] for l in out_labels)
    return reshape(product, shape, stream=s), out_labels


def _keep_dtype(x: Array, dtype: dt.Dtype, s: Stream) -> Array:
    """Sums widen small integers (MLX's rule); a contraction keeps its operands' dtype."""
    return x if x.dtype is dtype else astype(x, dtype, stream=s)


def promoted(op: str, operands: Sequence[Any], s: Stream) -> list[Array]:
    arrays = [as_array(x, op) for x in operands]
    if not arrays:
        raise ValueError(f"{op}: at least one operand is required")
    common = arrays[0].dtype
    for x in arrays[1:]:
        common = dt.promote_types(common, x.dtype)
    return [x if x.dtype is common else astype(x, common, stream=s) for x in arrays]


def _stretch(x: Array, labels: list[str], sizes, s: Stream) -> Array:
    """`x` with each size-1 axis broadcast to its label's size (a view, no copy)."""
    shape = tuple(sizes[l] for l in labels)
    return x if x.shape == shape else broadcast_to(x, shape, stream=s)


def contract(operands: list[Array], inputs: list[list[str]], output: list[str], sizes,
              path, s: Stream) -> Array:
    items = []
    for k, (x, labels) in enumerate(zip(operands, inputs)):
        x, labels = _diagonals(_stretch(x, labels, sizes, s), labels, s)
        others = set(output)
        for j, other in enumerate(inputs):
            if j != k:
                others |= set(other)
        items.append(_sum_out(x, labels, others, s))
    for step in path:
        if len(step) == 1:
            continue
        i, j = step
        (a, la), (b, lb) = items[i], items[j]
        rest = [item for k, item in enumerate(items) if k not in (i, j)]
        keep = set(output)
        for _, labels in rest:
            keep |= set(labels)
        items = rest + [_pair(a, la, b, lb, keep, sizes, s)]
    x, labels = _sum_out(*items[0], set(output), s)
    x = _keep_dtype(x, operands[0].dtype, s)
    return transpose(x, [labels.index(l) for l in output], stream=s)


def _labels_text(labels: Sequence[str]) -> str:
    """Labels as subscripts text; ellipsis dimensions print as digits."""
    return "".join(labels)


def einsum(subscripts: str, *operands: Any, stream: Any = None) -> Array:
    """Einstein summation over `operands` as described by `subscripts` (NumPy's notation).

    Supports explicit (`"ij,jk->ik"`) and implicit (`"ij,jk"`) output, ellipsis broadcasting
    (`"...ij,...jk->...ik"`), and labels repeated within one operand (`"ii->i"` takes a
    diagonal, `"ii"` a trace). A size-1 dimension stretches to its label's size in the other
    operands, as in NumPy. Operands are contracted pairwise in `einsum_path`'s order.

    Args:
        subscripts: the contraction, labels are ASCII letters.
        *operands: the arrays, promoted to their common dtype.
        stream: the stream or device to run on.

    Returns:
        The contracted array.

    Raises:
        ValueError: for malformed subscripts, a wrong number of operands, a label with two
            sizes other than 1 (or two sizes within one operand), or an output label that no
            input has.
        TypeError: if `subscripts` is not a string.

    Example:
        >>> import nuvec as mx
        >>> mx.einsum("ij,j->i", mx.ones((2, 3)), mx.ones((3,))).tolist()
        [3.0, 3.0]
    """
    s = to_stream(stream)
    arrays = promoted("einsum", operands, s)
    inputs, output, sizes = _parse("einsum", subscripts, [x.shape for x in arrays])
    path = _greedy_path(inputs, output, sizes)
    return contract(arrays, inputs, output, sizes, path, s)


def einsum_path(subscripts: str, *operands: Any) -> tuple[list[tuple[int, ...]], str]:
    """The order in which `einsum` contracts `operands`, and a printable summary.

    Pairs are chosen greedily (NumPy's rule: the contraction that most reduces the total size
    first); each step's result is appended to the end of the operand list.

    Args:
        subscripts: the contraction, as for `einsum`.
        *operands: the arrays (only their shapes are read).

    Returns:
        `(path, info)`: a list of index tuples and a string describing the steps.

    Raises:
        ValueError: as `einsum`.

    Example:
        >>> import nuvec as mx
        >>> mx.einsum_path("ij,jk", mx.zeros((5, 8)), mx.zeros((8, 3)))[0]
        [(0, 1)]
    """
    shapes = [as_array(x, "einsum_path").shape for x in operands]
    inputs, output, sizes = _parse("einsum_path", subscripts, shapes)
    path = _greedy_path(inputs, output, sizes)
    terms = [list(t) for t in inputs]
    naive = _prod([sizes[l] for l in sizes]) * max(len(inputs), 1)
    lines, flops, largest = [], 0, 0
    for step in path:
        if len(step) == 1:
            continue
        i, j = step
        rest = [t for k, t in enumerate(terms) if k not in step]
        keep = set(output).union(*map(set, rest)) if rest else set(output)
        union = [l for l in dict.fromkeys(terms[i] + terms[j])]
        result = [l for l in union if l in keep]
        flops += _prod([sizes[l] for l in union])
        largest = max(largest, _prod([sizes[l] for l in result]))
        lines.append(f"{len(union):>4}   {_labels_text(terms[i])},{_labels_text(terms[j])}"
                     f"->{_labels_text(result)}")
        terms = rest + [result]
    full = ",".join(_labels_text(t) for t in inputs) + "->" + _labels_text(output)
    info = "\n".join([
        f"  Complete contraction:  {full}",
        f"      Naive FLOP count:  {naive:.3e}",
        f"  Optimized FLOP count:  {max(flops, 1):.3e}",
        f"  Largest intermediate:  {largest:.3e} elements",
        "scaling   contraction",
        *lines,
    ])
    return list(path), info
