"""`exp` and `tanh` of NumPy arrays through MKL's vector math (VML) where MKL is installed
(`nuvec.backends.mkl_library`), else float32 `exp` through nuvec's own C (`vector_math.c`,
compiled on this machine by `nuvec.backends.native`), else NumPy's ufuncs.

On the two-core AVX2 machine of docs/performance.md, one thread, 100K elements: float32 `exp`
1.5 ns an element against NumPy's 3.7 and `tanh` 4.8 against 6.9; float64 `exp` 3.1 against
8.7 and `tanh` 9.0 against 34. In VML's high-accuracy mode both are within 0.55 ulp of the
exact value (NumPy's float32 `exp` within 2.2), so results differ from NumPy's in the last bit
of some elements. `vector_math.c`'s float32 `exp` is within 1 ulp (0.99 over a sweep of its
whole range) at about 0.85 of NumPy's time on an AVX-512 Xeon; its results differ from NumPy's
in the last bit of about a third of the elements. NumPy's own float32 `tanh` is vectorized and
was faster than a C `tanh` of the same accuracy there, so `tanh` stays NumPy's without MKL.
Where the C `exp` is in use, float32 `sigmoid` is one C pass of the sigmoid body's steps with
it (`sigmoid`: the same bits, 4.3 times as fast as those steps in NumPy calls there).

Either library computes float32 and float64 arrays (the C one float32) whose memory is one
contiguous run (C or Fortran order)
into a fresh array of that layout or an `out` of the same strides (`x` itself included), from
`MIN_ELEMENTS` elements: an array of fewer is NumPy's unless it or `out` is a view of a larger
one (or its caller names the size of the array it was cut from), so the pieces a kernel splits
an array into (blocks, threads' chunks, tiles) take the path the whole array takes, and every
element's bits are the same for every split. Each call runs on its caller's thread (VML's own
threads would compete with the thread pool's, `nuvec.backends.threads`).

VML computes arguments whose `exp` overflows, is subnormal, or is NaN or infinite on a slow
path (20 to 200 ns an element). An array with elements outside `EXP_RANGE` (a mask's `-inf`,
say) takes VML's fast path on the others clipped into the range, then a product with a 0/1 mask
zeroes the ones whose `exp` is 0 in the dtype, and the rest (rare) are NumPy's `exp`. The C
`exp` has no slow path (every argument takes the same vector instructions). Each element's
result depends on its own value only.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from nuvec.backends import mkl_library, native

__all__ = ["EXP_RANGE", "EXP_ZERO", "MIN_ELEMENTS", "exp", "exp_of", "exp_rows", "exp_visible",
           "in_use", "scale_rows", "sigmoid", "tanh"]

# Below this many elements NumPy's ufunc is used: a `ctypes` call and its checks cost about
# 25 us on the slower Zen 3 machine of docs/performance.md (`ndarray.ctypes` 3 us an array,
# the range check 6), so float32 `exp` through VML took 44 us against NumPy's 33 at 8K
# elements, 59 against 62 at 16K.
MIN_ELEMENTS = 1 << 14

# Arguments whose `exp` is a finite normal number in each dtype (VML's fast path), and below
# which `exp` rounds to 0 (under half the smallest subnormal)
EXP_RANGE = {np.dtype(np.float32): (-87.3, 87.3), np.dtype(np.float64): (-708.3, 708.3)}
EXP_ZERO = {np.dtype(np.float32): -104.0, np.dtype(np.float64): -746.0}

_HIGH_ACCURACY, _ERRORS_IGNORED = 0x2, 0x100  # VML mode bits (VML_HA, VML_ERRMODE_IGNORE)
_MODE = _HIGH_ACCURACY | _ERRORS_IGNORED
_DOMAIN_VML = 3  # MKL_DOMAIN_VML
_INT_MAX = 2**31 - 1  # `mkl_rt`'s default interface takes 32-bit integers

_SOURCE = Path(__file__).with_name("vector_math.c")


class _Library(NamedTuple):
    """The functions of one library by (name, dtype), each called as `fn(n, x, out)` with the
    arrays' addresses; `ranged`: its `exp` is fast only for arguments inside `EXP_RANGE`;
    `visible`, `rows` and `scale`: the C library's `nuvec_exp_visible_f32` (`exp_visible`),
    `nuvec_exp_rows_f32` (`exp_rows`) and `nuvec_scale_rows_f32` (`scale_rows`), else None."""

    functions: dict[tuple[str, np.dtype], Callable[[int, int, int], None]]
    ranged: bool
    visible: Any = None
    rows: Any = None
    scale: Any = None


_lock = threading.Lock()
_bound: list[Any] = []  # [] until first use, then [the `_Library` or None]


def _checked(fn: Callable[[int, int, int], None], name: str, dtype: Any) -> bool:
    """Whether `fn` agrees with NumPy's `name` on a few values."""
    x = np.linspace(-3, 3, 13, dtype=dtype)
    y = np.empty_like(x)
    fn(x.size, native.address(x), native.address(y))
    return bool(np.allclose(y, getattr(np, name)(x), rtol=1e-6, atol=0))


def _vml(lib: Any) -> _Library | None:
    """VML's `exp` and `tanh`, each checked against NumPy; None where one is missing or
    wrong."""
    found = {}
    for name, dtype, symbol in (("exp", np.float32, "vmsExp"), ("exp", np.float64, "vmdExp"),
                                ("tanh", np.float32, "vmsTanh"), ("tanh", np.float64, "vmdTanh")):
        fn = getattr(lib, symbol, None)
        if fn is None:
            return None
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = None

        def call(n: int, x: int, out: int, fn: Any = fn) -> None:
            _one_thread()
            fn(n, x, out, _MODE)

        if not _checked(call, name, dtype):
            return None
        found[(name, np.dtype(dtype))] = call
    return _Library(found, ranged=True)


def _own() -> _Library | None:
    """`vector_math.c`'s float32 `exp`, where it builds (and agrees with NumPy)."""
    lib = native.library(_SOURCE.name, _SOURCE.read_text())
    if lib is None:
        return None
    fn, sigmoid_fn = lib.nuvec_exp_f32, lib.nuvec_sigmoid_f32
    for f in (fn, sigmoid_fn):
        f.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
        f.restype = None
    visible = lib.nuvec_exp_visible_f32
    visible.argtypes = [ctypes.c_int64] * 5 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    visible.restype = None
    rows = lib.nuvec_exp_rows_f32
    rows.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                     ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    rows.restype = None
    scale = lib.nuvec_scale_rows_f32
    scale.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                      ctypes.c_void_p]
    scale.restype = None
    f32 = np.dtype(np.float32)
    return _Library({("exp", f32): fn, ("sigmoid", f32): sigmoid_fn}, ranged=False,
                    visible=visible, rows=rows, scale=scale) \
        if _checked(fn, "exp", np.float32) else None


def _library() -> _Library | None:
    if not _bound:
        with _lock:
            if not _bound:
                lib = mkl_library.library()
                _bound.append((lib is not None and _vml(lib)) or _own())
    found = _bound[0]
    if found is not None and found.ranged and mkl_library.library() is None:
        return None  # a process forked from one that loaded MKL: NumPy's
    return found


def _one_thread() -> None:
    # before each call: threadpoolctl's limits (`one_blas_thread`, the benchmarks') give every
    # MKL domain, VML's included, the old global count back when they end
    mkl_library.library().MKL_Domain_Set_Num_Threads(1, _DOMAIN_VML)


def in_use() -> str | None:
    """The library `exp` goes through for large arrays: "vml" (MKL's, with `tanh`), "c"
    (`vector_math.c`'s float32 `exp`, whose function generated CPU chains inline), or None
    (NumPy's ufuncs)."""
    lib = _library()
    return None if lib is None else "vml" if lib.ranged else "c"


def _apart_or_same(x: np.ndarray, out: np.ndarray) -> bool:
    """Whether `out` (of the strides of `x`) does not overlap `x` or is its very memory (a
    kernel writing in place through another view of its input)."""
    return (out is x or not np.may_share_memory(x, out)
            or native.address(x) == native.address(out))


def _function(name: str, x: Any, out: Any, whole: int = 0) -> Any:
    """VML's `name` for `x` (a piece of an array of `whole` elements) and `out` (see the
    module docstring), or None."""
    lib = _library()  # (first: without a library, or its `name` for this dtype, nothing
    # else is looked at: `tanh` without MKL asks at every call)
    if lib is None or type(x) is not np.ndarray:
        return None
    fn = lib.functions.get((name, x.dtype))
    if fn is None or not x.size or x.size > _INT_MAX:
        return None
    if x.size < MIN_ELEMENTS and max(whole, getattr(x.base, "size", 0),
                                     getattr(getattr(out, "base", None), "size", 0)) < MIN_ELEMENTS:
        return None
    if not (x.flags.c_contiguous or x.flags.f_contiguous):
        return None
    if out is not None and (type(out) is not np.ndarray or out.dtype != x.dtype
                            or out.shape != x.shape or out.strides != x.strides
                            or not out.flags.writeable or not _apart_or_same(x, out)):
        return None
    return fn


def _apply(fn: Callable, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        out = np.empty_like(x)  # (the layout of `x`)
    fn(x.size, native.address(x), native.address(out))
    return out


def exp(x: Any, out: Any = None, *, in_range: bool = False, whole: int = 0) -> Any:
    """`np.exp(x, out=out)`, through VML where it applies (see the module docstring);
    `in_range=True` where the caller knows every element of `x` lies in `EXP_RANGE` (it
    skips the check), `whole` the size of the array a kernel cut `x` from where `x` is not
    a view of it (a block widened from float16, say): the piece takes that array's path.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import exp
        >>> y = exp(np.zeros(1 << 14, np.float32))
        >>> float(y.min()), float(y.max())
        (1.0, 1.0)
    """
    fn = _function("exp", x, out, whole)
    if fn is None:
        return np.exp(x) if out is None else np.exp(x, out=out)
    low, high = EXP_RANGE[x.dtype]
    if in_range or not _library().ranged or (x.min() >= low and x.max() <= high):  # (NaN: False)
        return _apply(fn, x, out)
    return _exp_outside(fn, x, out, low, high)


def exp_visible(s: np.ndarray, n: int, shift: int, window: int | None, sums: np.ndarray) -> bool:
    """`exp` in place of a chunk of attention scores `s` (keys x stacked query rows, float32,
    its rows contiguous), with the causal mask applied and the column sums taken in the same
    pass, through `vector_math.c` (where it is the `exp` in use, see `in_use`); False, with
    nothing done, elsewhere.

    Column `j` of `s` is a query row at position `shift + j % n` counted from the chunk's
    first key. Its entries for later keys, and with a `window` for keys `window` or more
    before it, become 0; the others become their `exp` (the bits `exp` gives). `sums` (one
    float32 per column, contiguous, of any shape) receives each column's results added in key
    order.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import exp_visible
        >>> s, sums = np.zeros((3, 2), np.float32), np.empty(2, np.float32)
        >>> done = exp_visible(s, 2, 0, None, sums)  # rows at keys 0 and 1
        >>> not done or (s.tolist(), sums.tolist()) == ([[1, 1], [0, 1], [0, 0]], [1, 2])
        True
    """
    lib = _library()
    if (lib is None or lib.visible is None or s.dtype != np.float32 or sums.dtype != np.float32
            or s.ndim != 2 or s.strides[1] != 4 or not sums.flags.c_contiguous
            or sums.size != s.shape[1] or not s.flags.writeable or s.shape[1] % max(n, 1)):
        return False
    keys, cols = s.shape
    lib.visible(keys, cols, n, shift, window or 0, native.address(s), s.strides[0] // 4,
                native.address(sums))
    return True


def exp_rows(x: np.ndarray, out: np.ndarray, sums: np.ndarray, *, whole: int = 0) -> bool:
    """`exp` of the rows of `x` (2-D float32, elements contiguous) into `out` (the same
    shape, elements contiguous) with each row's sum of its results into `sums` (one float32 a
    row, contiguous, any shape), in one pass of `vector_math.c` (where its `exp` is the one in
    use and `x` qualifies as for `exp`; the sums accumulated in double); False, with nothing
    done, elsewhere.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import exp_rows
        >>> x = np.zeros((2, 1 << 13), np.float32)
        >>> out, sums = np.empty_like(x), np.empty(2, np.float32)
        >>> not exp_rows(x, out, sums) or sums.tolist() == [8192.0, 8192.0]
        True
    """
    lib = _library()
    if (lib is None or lib.rows is None or type(x) is not np.ndarray or x.ndim != 2
            or x.dtype != np.float32 or out.dtype != np.float32 or out.shape != x.shape
            or x.strides[1] != 4 or out.strides[1] != 4 or sums.dtype != np.float32
            or not sums.flags.c_contiguous or sums.size != x.shape[0] or not x.size
            or max(x.size, whole, getattr(x.base, "size", 0)) < MIN_ELEMENTS
            or not _apart_or_same(x, out)):
        return False
    lib.rows(x.shape[0], x.shape[1], native.address(x), x.strides[0] // 4, native.address(out),
             out.strides[0] // 4, native.address(sums))
    return True


def scale_rows(y: np.ndarray, factors: np.ndarray) -> bool:
    """`y *= factors` in place for 2-D float32 `y` (elements contiguous) and one float32
    factor a row (contiguous, any shape), through `vector_math.c` where its `exp` is the one
    in use (a product of float32 values: NumPy's bits), from `MIN_ELEMENTS` elements; False,
    with nothing done, elsewhere.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import scale_rows
        >>> y = np.ones((2, 1 << 13), np.float32)
        >>> not scale_rows(y, np.array([2, 3], np.float32)) or y[:, 0].tolist() == [2.0, 3.0]
        True
    """
    lib = _library()
    if (lib is None or lib.scale is None or type(y) is not np.ndarray or y.ndim != 2
            or y.dtype != np.float32 or y.strides[1] != 4 or not y.flags.writeable
            or factors.dtype != np.float32 or not factors.flags.c_contiguous
            or factors.size != y.shape[0] or max(y.size, getattr(y.base, "size", 0))
            < MIN_ELEMENTS):
        return False
    lib.scale(y.shape[0], y.shape[1], native.address(y), y.strides[0] // 4, native.address(factors))
    return True


def exp_of(xp: Any, x: Any, out: Any = None, *, whole: int = 0) -> Any:
    """`xp.exp(x, out=out)` in the array namespace `xp` (a shared body's NumPy or CuPy):
    NumPy's arrays through `exp` (with `whole`, see there), others through `xp.exp`.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import exp_of
        >>> float(exp_of(np, np.zeros(3))[0])
        1.0
    """
    if xp is np:
        return exp(x, out, whole=whole)
    return xp.exp(x) if out is None else xp.exp(x, out=out)


def _exp_outside(fn: Callable, x: np.ndarray, out: np.ndarray | None, low: float,
                 high: float) -> np.ndarray:
    """`exp` of an array with elements outside `[low, high]` (or NaN): VML's fast path on the
    arguments clipped into the range, times 0 where `exp` rounds to 0 (a multiplication by a
    mask: NumPy's masked stores take several times as long), and NumPy's `exp` of the other
    outside elements (rare: subnormal and overflowing results, NaN)."""
    flat = x.ravel(order="K")  # (a view: `x` is one contiguous run)
    zero = flat < EXP_ZERO[x.dtype]
    odd = (flat >= low) & (flat <= high)
    odd |= zero
    np.logical_not(odd, out=odd)
    others = np.flatnonzero(odd) if odd.any() else None
    exact = None if others is None else np.exp(flat[others])  # (before `out`, maybe `x`)
    if out is None:
        out = np.empty_like(x)
    result = out.ravel(order="K")
    np.clip(flat, low, high, out=result)
    fn(result.size, native.address(result), native.address(result))
    np.logical_not(zero, out=zero)
    result *= zero
    if others is not None:
        result[others] = exact
    return out


def sigmoid(x: Any, *, whole: int = 0) -> Any:
    """The logistic sigmoid of a float32 array in one pass of `vector_math.c` (the shared
    sigmoid body's steps with this module's `exp`: the same bits), where its `exp` is the one
    in use and `x` qualifies as for `exp` (`whole`: see there); None elsewhere.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import sigmoid
        >>> y = sigmoid(np.zeros(1 << 14, np.float32))
        >>> y is None or float(y.max()) == 0.5
        True
    """
    fn = _function("sigmoid", x, None, whole)
    return None if fn is None else _apply(fn, x, None)


def tanh(x: Any, out: Any = None) -> Any:
    """`np.tanh(x, out=out)`, through VML where it applies (see the module docstring).

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.vector_math import tanh
        >>> float(tanh(np.full(1 << 14, 40.0)).min())
        1.0
    """
    fn = _function("tanh", x, out)
    if fn is not None:
        return _apply(fn, x, out)
    return np.tanh(x) if out is None else np.tanh(x, out=out)

