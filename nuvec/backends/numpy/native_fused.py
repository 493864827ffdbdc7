"""`FusedElementwise` chains as generated C on the CPU: one pass over the output, each element
read once from every input and written once, every step in registers.

A chain of at least `MIN_ELEMENTS` elements whose inputs and steps are float32, float64 or bool
and whose steps are all ones the generator covers (arithmetic, negation, `abs`, `square`,
`sqrt`, `rsqrt`, `floor`, `ceil`, `trunc`, `round`, `maximum`, `minimum`, comparisons, logical
and/or/not, `where`, casts, the tanh and sigmoid derivative products, and float32 `exp` and
`sigmoid` where `nuvec.backends.vector_math` computes them with `vector_math.c`) becomes one C
function,
compiled for this machine by
`nuvec.backends.native` once per chain, input dtypes and input kinds (read along the last axis
element by element, or one value per row), then cached in memory and on disk. Each step
computes in its own dtype exactly as the step's NumPy kernel does (IEEE arithmetic without
contraction, `maximum`'s NaN and tie rules, the same `exp`), so the values are the unfused
graph's bit for bit. The output's shape and the inputs' strides are arguments, so one build
serves every shape. The output is split into contiguous ranges over the thread pool; `ctypes`
releases the GIL during each call.

Chains it does not cover, or inputs read with other strides along the last axis (a transposed
view), return None: `nuvec.backends.numpy.fused` computes them with NumPy in blocks.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends import native, threads, vector_math
from nuvec.backends.cuda.launchers.fused import collapse, element_strides
from nuvec.backends.threads import parallel_rows
from nuvec.fast.fused import FusedElementwise
from nuvec.graph import dtypes as dt
from nuvec.graph.convert import AsType
from nuvec.ops import binary as b
from nuvec.ops import comparison as c
from nuvec.ops import rounding
from nuvec.ops import unary as u

__all__ = ["MIN_ELEMENTS", "covers", "generate", "run", "step"]

# Below this many output elements NumPy's calls cost less than a `ctypes` call and its
# arguments; it is also where `vector_math` starts taking `vector_math.c`'s `exp`, which the
# chains inline (below it `exp` is NumPy's, whose bits differ).
MIN_ELEMENTS = vector_math.MIN_ELEMENTS

_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.bool_): "unsigned char"}
_FLOATS = ("float", "double")
_TRANSCENDENTAL = (u.Exp, u.Sigmoid)  # the steps that cost more than their memory traffic
_VECTOR_MATH = Path(vector_math.__file__).with_name("vector_math.c")

# Each covered step as a C expression over its operands `{0}`, `{1}`, `{2}`; `{T}` is the
# step's C type, `{f}` the suffix of its math builtins ("f" for float)
_FLOAT_UNARY: dict[type, str] = {
    u.Negative: "-{0}", u.Abs: "__builtin_fabs{f}({0})", u.Square: "{0} * {0}",
    u.Sqrt: "__builtin_sqrt{f}({0})", u.Rsqrt: "({T})1 / __builtin_sqrt{f}({0})",
    # exact in both (NumPy's `rint` rounds halves to even, as C's in the default mode)
    rounding.Floor: "__builtin_floor{f}({0})", rounding.Ceil: "__builtin_ceil{f}({0})",
    rounding.Trunc: "__builtin_trunc{f}({0})", rounding.Round: "__builtin_rint{f}({0})",
}
_FLOAT_BINARY: dict[type, str] = {
    b.Add: "{0} + {1}", b.Subtract: "{0} - {1}", b.Multiply: "{0} * {1}",
    b.Divide: "{0} / {1}",
    # NumPy's maximum and minimum: NaN propagates; of two equal values, the second
    b.Maximum: "({0} > {1} || {0} != {0}) ? {0} : {1}",
    b.Minimum: "({0} < {1} || {0} != {0}) ? {0} : {1}",
}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
            "greater": ">", "greater_equal": ">="}
# `DerivativeProduct` by (kind, scaled), in its NumPy kernel's order: the cotangent `{0}`,
# the output last
_DERIVATIVES = {
    ("tanh", True): "(({T})1 - {1} * {1}) * {0}", ("tanh", False): "({T})1 - {0} * {0}",
    ("sigmoid", True): "((({T})1 - {1}) * {1}) * {0}", ("sigmoid", False): "(({T})1 - {0}) * {0}",
    ("relu", True): "{0} * ({T})({1} > ({T})0)", ("relu", False): "({T})({0} > ({T})0)",
}


def _expression(q: Any, step: str, operands: list[str]) -> str | None:
    """The C expression of step `q` with a result of C type `step` over operands of C types
    `operands`; None where the generator does not cover it."""
    cls = type(q)
    if cls is AsType or cls is u.StopGradient:
        if cls is AsType and step == "unsigned char" and operands[0] in _FLOATS:
            return "{0} != 0"  # (NaN is true, as NumPy casts it)
        return "({T}){0}"
    if cls is c.Compare:
        same = operands[0] == operands[1] and operands[0] in _FLOATS
        return f"{{0}} {_COMPARE[q.kind]} {{1}}" if same and q.kind in _COMPARE else None
    if cls is c.Logical and all(o == "unsigned char" for o in operands):
        return "{0} && {1}" if q.kind == "and" else "{0} || {1}" if q.kind == "or" else None
    if cls is u.LogicalNot and operands == ["unsigned char"]:
        return "!{0}"
    if cls is c.Select:
        return "{0} ? {1} : {2}" if operands[1:] == [step, step] else None
    if step not in _FLOATS or any(o != step for o in operands):
        return None
    if cls is u.Exp or cls is u.Sigmoid:  # (the functions `vector_math` computes them with)
        own = step == "float" and vector_math.in_use() == "c"
        return ("exp_one({0})" if cls is u.Exp else "sigmoid_one({0})") if own else None
    if cls is u.DerivativeProduct:
        return _DERIVATIVES.get((q.kind, q.scaled))
    return _FLOAT_UNARY.get(cls) or _FLOAT_BINARY.get(cls)


def _expressions(p: FusedElementwise, inputs: list[str]) -> list[str] | None:
    """Each step's C statement body, with its operands named `v<ref>`; None where a step or
    dtype is not covered."""
    types = list(inputs)
    out = []
    for q, refs, dtype in p.steps:
        step = _TYPES.get(dtype.np)
        text = None if step is None else _expression(q, step, [types[r] for r in refs])
        if text is None:
            return None
        f = "f" if step == "float" else ""
        out.append(text.format(*(f"v{r}" for r in refs), T=step, f=f))
        types.append(step)
    return out


def covers(p: FusedElementwise, dtypes: list[np.dtype]) -> bool:
    """Whether the generator computes `p` on inputs of `dtypes`.

    Example:
        >>> import numpy as np
        >>> import nuvec as mx
        >>> from nuvec.fast.fused import FusedElementwise
        >>> from nuvec.backends.numpy.native_fused import covers
        >>> mul, sin = mx.multiply(mx.ones(1), 2).primitive, mx.sin(mx.ones(1)).primitive
        >>> float32 = np.dtype(np.float32)
        >>> covers(FusedElementwise(((mul, (0, 1), mx.float32),), (4,)), [float32] * 2)
        True
        >>> covers(FusedElementwise(((sin, (0,), mx.float32),), (4,)), [float32])
        False
    """
    types = [_TYPES.get(np.dtype(d)) for d in dtypes]
    return None not in types and _expressions(p, types) is not None


def generate(p: FusedElementwise, dtypes: list[np.dtype], along: list[bool]) -> tuple[str, str]:
    """The name and C source of `p`'s function for inputs of `dtypes`, read element by element
    along the last axis (`along`) or one value per row.

    The function computes the C-order output elements `[start, stop)` of a collapsed output of
    `ndim` axes `dims`, input `k` read at `in[k] + sum(index * strides[k * ndim + axis])`.
    """
    types = [_TYPES[np.dtype(d)] for d in dtypes]
    statements = _expressions(p, types)
    n, out_type = len(types), _TYPES[p.steps[-1][2].np]
    lines = [f"  const {t} *x{k} = (const {t} *)in[{k}];" for k, t in enumerate(types)]
    lines += [f"  {out_type} *out = ({out_type} *)out_;",
              "  int64_t last = dims[ndim - 1];",
              "  for (int64_t i = start; i < stop;) {",
              "    int64_t col = i % last, rest = i / last;",
              "    int64_t len = last - col < stop - i ? last - col : stop - i;"]
    lines += [f"    const {t} *p{k} = x{k}{' + col' if along[k] else ''};"
              for k, t in enumerate(types)]
    lines += ["    for (int64_t axis = ndim - 2; axis >= 0; axis--) {",
              "      int64_t index = rest % dims[axis];",
              "      rest /= dims[axis];"]
    lines += [f"      p{k} += index * strides[{k} * ndim + axis];" for k in range(n)]
    lines += ["    }"]
    lines += [f"    const {t} r{k} = p{k}[0];" for k, t in enumerate(types) if not along[k]]
    lines += ["    " + f"{out_type} *o = out + i;",
              "#pragma omp simd",
              "    for (int64_t j = 0; j < len; j++) {"]
    lines += [f"      const {t} v{k} = {'p%d[j]' % k if along[k] else 'r%d' % k};"
              for k, t in enumerate(types)]
    for j, text in enumerate(statements):
        step = _TYPES[p.steps[j][2].np]
        lines.append(f"      const {step} v{n + j} = ({step})({text});")
    lines += [f"      o[j] = v{n + len(statements) - 1};", "    }", "    i += len;", "  }"]
    body = "\n".join(lines)
    name = "chain_" + hashlib.sha256(body.encode()).hexdigest()[:16]
    source = "\n".join([
        _VECTOR_MATH.read_text(),
        f"void {name}(int64_t start, int64_t stop, int64_t ndim, const int64_t *dims,",
        "        const int64_t *strides, void *const *in, void *out_) {",
        body,
        "}",
        "",
    ])
    return name, source


# (chain, dtypes, along) -> (its C function or None, bytes an element, heavy: see `_function`)
_functions: dict[tuple, Any] = {}
# (id(chain), dtypes, along) -> (chain, entry): a compiled program replays the same
# primitive at every call, whose hash (its steps') costs 0.1 ms for 256 steps
_by_id: dict[tuple, tuple[FusedElementwise, Any]] = {}
_flat: dict[tuple[int, int], tuple[Any, Any]] = {}  # (size, inputs) -> (dims, strides) of C


def _function(p: FusedElementwise, dtypes: list[np.dtype], along: list[bool]) -> Any:
    """`p`'s C function for inputs of `dtypes` read `along` the last axis or not (None where
    not covered or not built), the bytes an element moves or computes, and whether a step
    costs more than its memory traffic (see `run`)."""
    quick = (id(p), *dtypes, *along)
    found = _by_id.get(quick)
    if found is not None and found[0] is p:
        return found[1]
    key = (p, tuple(dtypes), tuple(along))
    if key not in _functions:
        fn = None
        if covers(p, dtypes):
            name, source = generate(p, dtypes, along)
            lib = native.library(f"{name}.c", source)
            if lib is not None:
                fn = getattr(lib, name)
                fn.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_void_p] * 4
                fn.restype = None
        work = sum(d.itemsize for d in dtypes) + p.steps[-1][2].np.itemsize + 4 * len(p.steps)
        heavy = any(type(q) in _TRANSCENDENTAL for q, _, _ in p.steps)
        if len(_functions) >= 1024:
            _functions.clear()
        _functions[key] = (fn, work, heavy)
    if len(_by_id) >= 1024:
        _by_id.clear()
    _by_id[quick] = (p, _functions[key])
    return _functions[key]


def _target(out: np.ndarray | None, views: list[np.ndarray], shape: tuple[int, ...],
            dtype: np.dtype) -> int | None:
    """The address of `out` where the chain may write there: C-contiguous of its shape and
    dtype, and any input sharing its memory is that very buffer (read at each element before
    it is written); else None."""
    if out is None or out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous:
        return None
    start = native.address(out)
    if all(not np.may_share_memory(v, out)
           or (native.address(v) == start and v.strides == out.strides) for v in views):
        return start
    return None


def run(p: FusedElementwise, views: list[np.ndarray], out: np.ndarray | None
        ) -> np.ndarray | None:
    """`p` on `views` (its inputs broadcast to its shape) through its generated function, into
    `out` where it may write there; None where the generator does not take it (see the module
    docstring)."""
    shape = p.shape
    size = math.prod(shape)
    if size < MIN_ELEMENTS:
        return None
    n = len(views)
    if all(v.flags.c_contiguous and v.shape == shape for v in views):  # (the common case)
        flat = _flat.get((size, n))
        if flat is None:
            if len(_flat) >= 256:
                _flat.clear()
            flat = _flat[(size, n)] = ((ctypes.c_int64 * 1)(size), (ctypes.c_int64 * n)(*[1] * n))
        ndim, (dims_c, strides_c), along = 1, flat, [True] * n
    else:
        dims, steps = collapse(shape, [element_strides(v, shape) for v in views])
        if not dims or any(s[-1] not in (0, 1) for s in steps):
            return None
        along = [s[-1] == 1 for s in steps]
        ndim = len(dims)
        dims_c = (ctypes.c_int64 * ndim)(*dims)
        strides_c = (ctypes.c_int64 * (ndim * n))(*(x for s in steps for x in s))
    fn, work, heavy = _function(p, [v.dtype for v in views], along)
    if fn is None:
        return None
    dtype = p.steps[-1][2].np
    target = _target(out, views, shape, dtype)
    if target is None:
        out = np.empty(shape, dtype)
        target = native.address(out)
    inputs_c = (ctypes.c_void_p * n)(*map(native.address, views))
    # a chunk is worth a thread from MIN_BYTES of work where the chain takes `exp`, else from
    # MEMORY_BOUND_BYTES (the tanh derivative product, one thread against two: 61 and 89 us
    # at 128K elements, 144 and 156 at 256K, 249 and 219 at 512K)
    least = threads.MIN_BYTES if heavy else threads.MEMORY_BOUND_BYTES
    parallel_rows(size, lambda a, z: fn(a, z, ndim, dims_c, strides_c, inputs_c, target),
                  row_bytes=work, min_bytes=least, align=64)
    return out


# (primitive's class and params, shape, dtype) -> its one-step chain: `_function` finds a
# chain it has seen by identity, without hashing it
_one_steps: dict[tuple, FusedElementwise] = {}


def step(p: Any, inputs: list[np.ndarray], out: np.ndarray | None = None) -> np.ndarray | None:
    """One elementwise node `p` on `inputs` (each of the output's shape, the node's dtype) as
    a generated chain of one step: one pass where its NumPy kernel makes several (the tanh
    derivative product: three). None where `run` does not take it.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.numpy.native_fused import step
        >>> from nuvec.ops.unary import DerivativeProduct
        >>> g, t = np.ones(1 << 14, np.float32), np.full(1 << 14, 0.5, np.float32)
        >>> r = step(DerivativeProduct("tanh"), [g, t])
        >>> r is None or float(r[0]) == 0.75
        True
    """
    x = inputs[0]
    key = (type(p), p.params(), x.shape, x.dtype)
    chain = _one_steps.get(key)
    if chain is None:
        if len(_one_steps) >= 256:
            _one_steps.clear()
        one = ((p, tuple(range(len(inputs))), dt.from_numpy_dtype(x.dtype)),)
        chain = _one_steps[key] = FusedElementwise(one, x.shape)
    return run(chain, inputs, out)
