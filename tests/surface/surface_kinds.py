"""The generated check's tables: every public callable, each parameter's kind, the invalid values
tried for each kind, and how one call is judged.

A parameter's kind comes from its name (`NAME_KINDS`, checked first), else from its annotation,
else from its default value; a required parameter with no other clue is an array. A function
whose required arguments the generic fills cannot satisfy has a valid call in `VALID`.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Iterator

import numpy as np

import nuvec as mx

NAMESPACES = {"": mx, "fast.": mx.fast, "linalg.": mx.linalg, "fft.": mx.fft,
              "random.": mx.random}

# Deliberate exceptions: functions the check does not call, with the reason.
SKIP = {
    "set_default_device": "changes process-wide state; its checks are in tests/graph",
    "set_default_stream": "changes process-wide state; its checks are in tests/graph",
    "enable_compile": "changes process-wide state and takes no arguments",
    "disable_compile": "changes process-wide state and takes no arguments",
    "set_printoptions": "changes process-wide state; its checks are in tests/ops",
    "set_memory_limit": "changes process-wide memory limits; its checks are in tests/graph",
    "set_cache_limit": "changes process-wide memory limits; its checks are in tests/graph",
    "set_wired_limit": "changes process-wide memory limits; its checks are in tests/graph",
    "random.seed": "changes the global key; its range checks are in tests/surface",
    "save": "writes files; the io tests check its arguments",
    "savez": "writes files; the io tests check its arguments",
    "savez_compressed": "writes files; the io tests check its arguments",
    "save_safetensors": "writes files; the io tests check its arguments",
    "save_gguf": "writes files; the io tests check its arguments",
    "load": "reads files; the io tests check its arguments",
    "fast.record_or_fallback": "an extension hook taking a primitive and a fallback builder",
    "fast.run_on_cpu": "an extension hook taking a callable",
    "fast.precompiled_cuda_kernel": "runs only on a GPU; its argument checks are in "
                                    "tests/cuda/test_precompiled_kernel.py",
}

# Deliberate exceptions: cases the check tries whose bad value is in fact valid, with the reason.
ALLOWED_CASES = {
    "eval arrays=object": "MLX's eval skips leaves that are not arrays",
    "eval arrays=str": "MLX's eval skips leaves that are not arrays",
    "async_eval arrays=object": "MLX's async_eval skips leaves that are not arrays",
    "async_eval arrays=str": "MLX's async_eval skips leaves that are not arrays",
    "bartlett M=negative": "NumPy's window functions give an empty window for M <= 0",
    "blackman M=negative": "NumPy's window functions give an empty window for M <= 0",
    "hamming M=negative": "NumPy's window functions give an empty window for M <= 0",
    "hanning M=negative": "NumPy's window functions give an empty window for M <= 0",
    "array_equal b=mismatched": "arrays of different shapes are simply not equal",
    "kron b=mismatched": "the Kronecker product takes any two shapes",
    "outer b=mismatched": "outer flattens both inputs, so any shapes fit",
    "searchsorted v=mismatched": "the values to insert may have any shape",
    "linalg.cross b=mismatched": "(3,) and (5, 7, 3) broadcast, as the other axes may",
    "depends dependencies=mismatched": "dependencies may have any shape",
    "masked_scatter src=mismatched": "src may have more elements than mask has true entries",
    "tensordot axes=repeated": "axes=(0, 0) is the pair contracting a's axis 0 with b's axis 0",
    "fft.fftshift axes=repeated": "a repeated axis is shifted again, as NumPy and MLX do",
    "fft.ifftshift axes=repeated": "a repeated axis is shifted again, as NumPy and MLX do",
    "fast.plan_attention dtype=str": "plan_attention takes dtype names such as 'float32'",
    "flatten end_axis=past-end": "MLX clamps flatten's axes to the first and last axis",
    "flatten start_axis=before-start": "MLX clamps flatten's axes to the first and last axis",
}

# kinds the generic inference gets wrong for one function: {function: {param: kind}}
KIND_OVERRIDES = {
    "random.uniform": {"low": "float", "high": "float"},
    "pad": {"constant_values": "float"},
}

NAME_KINDS = {
    "stream": "stream", "axis": "axis", "axis1": "axis", "axis2": "axis", "start_axis": "axis",
    "end_axis": "axis", "source": "axis", "destination": "axis", "axes": "axes",
    "shape": "shape", "dtype": "dtype", "key": "key", "fun": "callable", "f": "callable",
    "M": "size", "n": "size", "num": "size", "num_samples": "size", "dims": "integer",
    "stride": "integer", "padding": "integer", "dilation": "integer", "groups": "integer",
    "eps": "finite", "base": "finite", "threshold": "integer", "group_size": "integer",
    "bits": "integer", "ddof": "integer", "decimals": "integer", "kth": "integer",
    "q_shape": "shape", "k_shape": "shape", "v_shape": "shape",
    "mode": "option", "side": "option", "UPLO": "option", "indexing": "option",
}

ALLOWED = (ValueError, TypeError, IndexError, OverflowError)


class Opaque:
    """An arbitrary object no function accepts."""

    def __repr__(self) -> str:
        return "<Opaque>"


# the invalid values tried for each kind: (label, value)
BATTERY: dict[str, list[tuple[str, Any]]] = {
    "stream": [("str", "bogus"), ("int", 3), ("object", Opaque())],
    "axis": [("past-end", 9), ("before-start", -9), ("float", 1.5), ("str", "0"),
             ("object", Opaque())],
    "axes": [("past-end", (9,)), ("repeated", (0, 0)), ("float", (1.5,)), ("str", "0")],
    "shape": [("negative", (-1, 3)), ("float", (1.5,)), ("str", "3"), ("huge", (2**70,)),
              ("object", Opaque())],
    "size": [("negative", -3), ("float", 1.5), ("str", "3"), ("huge", 2**70)],
    "dtype": [("str", "float32"), ("int", 3), ("object", Opaque())],
    "integer": [("float", 1.5), ("str", "3"), ("huge", 2**70), ("object", Opaque())],
    "finite": [("nan", math.nan), ("inf", math.inf), ("str", "x"), ("object", Opaque())],
    "float": [("str", "x"), ("object", Opaque())],
    "option": [("unknown", "bogus"), ("int", 3)],
    "key": [("wrong-shape", "KEY3"), ("str", "k"), ("object", Opaque())],
    "callable": [("int", 3), ("str", "f")],
    "array": [("object", Opaque()), ("str", "x")],
    "pair": [("mismatched", "MISMATCH")],
    # flags take only bools (MLX refuses 0/1, None and 0-d arrays too)
    "bool": [("str", "no"), ("int", 1), ("none", None), ("array", mx.array(True)),
             ("object", Opaque())],
    "bool-or-none": [("str", "no"), ("int", 1), ("array", mx.array(True)), ("object", Opaque())],
}


def public_callables() -> Iterator[tuple[str, Callable]]:
    """(qualified name, function) for every public function of every namespace, sorted."""
    for prefix, ns in NAMESPACES.items():
        for name in sorted(dir(ns)):
            fn = getattr(ns, name)
            if name.startswith("_") or inspect.isclass(fn) or inspect.ismodule(fn):
                continue
            own = getattr(fn, "__name__", name)
            if own != name and any(getattr(n, own, None) is fn for n in NAMESPACES.values()):
                continue  # the same function under a second name: checked under its own
                # (`acos`, `matrix_norm`... are wrappers named for themselves: checked)
            if callable(fn):
                yield prefix + name, fn


def kind_of(p: inspect.Parameter) -> str | None:
    """The kind of parameter `p` (None: a value with no invalid battery)."""
    if p.name in NAME_KINDS:
        return NAME_KINDS[p.name]
    ann = str(p.annotation)
    if ann == "bool | None":
        return "bool-or-none"
    if ann == "bool" or isinstance(p.default, bool):
        return "bool"
    if ann.startswith("int") or type(p.default) is int:
        return "integer"
    if ann.startswith("float") or type(p.default) is float:
        return "float"
    if ann.startswith("str") or type(p.default) is str:
        return "option"
    if p.kind is p.VAR_POSITIONAL:
        return "array"
    if p.default is p.empty and p.kind is not p.VAR_KEYWORD:
        return "array"
    return None


def fill(kind: str | None, square: int) -> Any:
    """A valid value of `kind` for a required parameter."""
    return {"axis": 0, "axes": (0,), "shape": (2, 3), "dtype": mx.float32, "key": mx.random.key(0),
            "callable": lambda x: x, "size": 4, "integer": 1, "finite": 1.0, "float": 1.0,
            "option": None, "bool": False}.get(kind, mx.ones((square, square)) if kind == "array"
                                               else None)


def evaluate(out: Any) -> None:
    """Evaluates every array in a result (deferred errors surface here)."""
    if isinstance(out, mx.array):
        mx.eval(out)
    elif isinstance(out, (list, tuple)):
        for o in out:
            evaluate(o)
    elif isinstance(out, dict):
        for o in out.values():
            evaluate(o)


def run(fn: Callable, args: list, kwargs: dict) -> tuple[str, BaseException | None]:
    """Calls and evaluates: 'ok', 'call' (raised at the call) or 'eval' (raised at eval)."""
    try:
        out = fn(*args, **kwargs)
    except Exception as exc:  # the judge below looks at the type
        return "call", exc
    try:
        evaluate(out)
    except Exception as exc:
        return "eval", exc
    return "ok", None


def shows(exc: BaseException, value: Any) -> bool:
    """Whether the message shows the offending value (its repr, str or type name; an array by
    its shape, as messages show arrays)."""
    msg = str(exc)
    candidates = [repr(value), str(value), type(value).__name__]
    if isinstance(value, mx.array):  # an array is shown by its shape or its dtype
        candidates += [str(value.shape), str(list(value.shape)), value.dtype.name]
    if isinstance(value, tuple):
        candidates += [str(v) for v in value]
    return any(c in msg for c in candidates)


def judge(name: str, value: Any, outcome: str, exc: BaseException | None) -> str | None:
    """None when the bad value was rejected as required, else what went wrong."""
    short = name.rsplit(".", 1)[-1]
    if outcome == "ok":
        return "accepted"
    if outcome == "eval":
        return f"deferred to eval ({type(exc).__name__})"
    if isinstance(exc, KeyboardInterrupt) or not isinstance(exc, ALLOWED):
        return f"leaks {type(exc).__name__}"
    if not str(exc).startswith(f"{short}:"):
        return "message lacks the function's name"
    if value is not None and not shows(exc, value):
        return "message lacks the value"
    return None


def np_scalar_ok() -> list[tuple[str, Any]]:
    """Valid integer spellings every integer parameter must accept."""
    return [("np.int64", np.int64(1)), ("0-d", mx.array(1))]
