"""Launchers of `rms_norm.cu` and `layer_norm.cu`: one block per row for the forward
kernels; the VJPs run `parts` blocks over strided rows, then sum the weight and bias
gradients per column."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, row_block, variants, vec_width
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = [
    "LAYER_NORM",
    "RMS_NORM",
    "add_rms_norm",
    "layer_norm",
    "layer_norm_vjp",
    "rms_norm",
    "rms_norm_vjp",
]

RMS_NORM = KernelFile(
    "rms_norm",
    variants(["rms_norm", "add_rms_norm", "rms_norm_vjp"]) + variants(["column_sum"], False))
LAYER_NORM = KernelFile(
    "layer_norm", variants(["layer_norm", "layer_norm_vjp"]) + variants(["column_sum"], False))
# Blocks of the VJP kernels: enough to fill an H200 (132 SMs) twice, never more than rows.
VJP_PARTS = 264


def _rows(runner: Runner, x: Any) -> tuple[Any, int, int, str]:
    x = runner.contiguous(x)
    d = x.shape[-1]
    return x, x.size // max(d, 1), d, runner.dtype_of(x)


def _setup(runner: Runner, x: Any, params: list[Any]):
    x, rows, d, dtype = _rows(runner, x)
    params = [runner.contiguous(p) for p in params]
    vec = vec_width(runner, dtype, d, [x, *[p for p in params if p.ndim]])
    return x, params, rows, d, dtype, vec


def rms_norm(runner: Runner, p: Any, x: Any, w: Any) -> Any:
    """`RmsNorm(eps)` of `x` with weight `w` (1-D, or the scalar 1)."""
    x, (w,), rows, d, dtype, vec = _setup(runner, x, [w])
    y = runner.empty(x.shape, dtype)
    runner.launch(RMS_NORM, f"rms_norm<{CTYPES[dtype]}, {vec}>", (rows,),
                  (row_block(d // vec),), 0,
                  [x, w, y, np.uint32(d), np.float32(p.eps), np.int32(w.ndim == 1)])
    return y


def add_rms_norm(runner: Runner, p: Any, x: Any, r: Any, w: Any) -> tuple[Any, Any]:
    """`AddRmsNorm(eps)`: `(x + r, rms_norm(x + r))`."""
    x, (r, w), rows, d, dtype, vec = _setup(runner, x, [r, w])
    h, y = runner.empty(x.shape, dtype), runner.empty(x.shape, dtype)
    runner.launch(RMS_NORM, f"add_rms_norm<{CTYPES[dtype]}, {vec}>", (rows,),
                  (row_block(d // vec),), 0,
                  [x, r, w, h, y, np.uint32(d), np.float32(p.eps), np.int32(w.ndim == 1)])
    return h, y


def _column_sums(runner: Runner, kernel: KernelFile, part: Any, parts: int, d: int,
                 dtype: str) -> Any:
    out = runner.empty((d,), dtype)
    runner.launch(kernel, f"column_sum<{CTYPES[dtype]}>", (-(-d // 256),), (256,), 0,
                  [part, out, np.uint32(parts), np.uint32(d)])
    return out


def _zero(runner: Runner, dtype: str) -> Any:
    z = runner.empty((), dtype)
    z[...] = 0
    return z


def rms_norm_vjp(runner: Runner, p: Any, x: Any, w: Any, g: Any) -> tuple[Any, Any]:
    """`RmsNormVjp(eps)`: the gradients for `x` and `w`."""
    x, (w, g), rows, d, dtype, vec = _setup(runner, x, [w, g])
    parts = min(rows, VJP_PARTS)
    dx, part = runner.empty(x.shape, dtype), runner.empty((parts, d), "float32")
    runner.launch(RMS_NORM, f"rms_norm_vjp<{CTYPES[dtype]}, {vec}>", (parts,),
                  (row_block(d // vec),), 0,
                  [x, w, g, dx, part, np.uint32(rows), np.uint32(d), np.float32(p.eps),
                   np.int32(w.ndim == 1)])
    if w.ndim == 0:
        return dx, _zero(runner, dtype)
    return dx, _column_sums(runner, RMS_NORM, part, parts, d, dtype)


def layer_norm(runner: Runner, p: Any, x: Any, w: Any, b: Any) -> Any:
    """`LayerNorm(eps)` of `x` with weight `w` and bias `b` (1-D, or scalars 1 and 0)."""
    x, (w, b), rows, d, dtype, vec = _setup(runner, x, [w, b])
    y = runner.empty(x.shape, dtype)
    runner.launch(LAYER_NORM, f"layer_norm<{CTYPES[dtype]}, {vec}>", (rows,),
                  (row_block(d // vec),), 0,
                  [x, w, b, y, np.uint32(d), np.float32(p.eps), np.int32(w.ndim == 1),
                   np.int32(b.ndim == 1)])
    return y


def layer_norm_vjp(runner: Runner, p: Any, x: Any, w: Any, b: Any, g: Any):
    """`LayerNormVjp(eps)`: the gradients for `x`, `w` and `b`."""
    x, (w, b, g), rows, d, dtype, vec = _setup(runner, x, [w, b, g])
    parts = min(rows, VJP_PARTS)
    dx, part = runner.empty(x.shape, dtype), runner.empty((2, parts, d), "float32")
    runner.launch(LAYER_NORM, f"layer_norm_vjp<{CTYPES[dtype]}, {vec}>", (parts,),
                  (row_block(d // vec),), 0,
                  [x, w, g, dx, part, np.uint32(rows), np.uint32(d), np.float32(p.eps),
                   np.int32(w.ndim == 1)])
    dw = (_column_sums(runner, LAYER_NORM, part[0], parts, d, dtype) if w.ndim
          else _zero(runner, dtype))
    db = (_column_sums(runner, LAYER_NORM, part[1], parts, d, dtype) if b.ndim
          else _zero(runner, dtype))
    return dx, dw, db
