"""Rule rows for the shape, slicing and join families (reshape ... concatenate, slices)."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import join, shape, slicing
from nuvec.testing import OpSpec


def _normal(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def _setitem_steps(x, u):
    y = x * 1.0
    y[1::2, ::-1] = u
    return y


SPECS = [
    OpSpec("reshape", lambda x: mx.reshape(x, (3, 4)), _normal(2, 6), [shape.Reshape]),
    OpSpec("flatten", lambda x: mx.flatten(x, 0, 1), _normal(2, 3, 2), [shape.Reshape]),
    OpSpec("transpose", lambda x: mx.transpose(x, (2, 0, 1)), _normal(2, 3, 4),
           [shape.Transpose]),
    OpSpec("swapaxes", lambda x: mx.swapaxes(x, 0, 1), _normal(2, 3), [shape.Transpose]),
    OpSpec("broadcast_to", lambda x: mx.broadcast_to(x, (2, 3, 4)), _normal(3, 1),
           [shape.BroadcastTo]),
    OpSpec("contiguous", lambda x: mx.contiguous(x.T) * 2.0, _normal(3, 4),
           [shape.Contiguous]),
    OpSpec("flip", lambda x: mx.flip(x, (0, 2)), _normal(2, 3, 4), [slicing.Slice]),
    OpSpec("diff", lambda x: mx.diff(x, 2, axis=0), _normal(5, 3), [slicing.Slice]),
    OpSpec("getitem_steps", lambda x: x[1::2, ::-2, 1], _normal(4, 5, 3), [slicing.Slice]),
    OpSpec("getitem_int_none", lambda x: x[None, 2, ..., -1], _normal(3, 2, 4),
           [slicing.Slice]),
    OpSpec("setitem_steps", _setitem_steps,
           lambda rng: [rng.standard_normal((4, 3)), rng.standard_normal((2, 3))],
           [slicing.SliceUpdate]),
    OpSpec("pad_constant", lambda x, v: mx.pad(x, ((1, 0), (2, 1)), constant_values=v),
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal(())],
           [slicing.SliceUpdate, shape.BroadcastTo]),
    OpSpec("slice_dynamic", lambda x, i: mx.slice(x, i, (0, 1), (2, 2)),
           lambda rng: [rng.standard_normal((4, 5)), rng.integers(0, 4, size=(2,))],
           [slicing.DynamicSlice]),
    OpSpec("slice_dynamic_fixed_start", lambda x: mx.slice(x, mx.array([1]), (1,), (3, 2)),
           _normal(3, 4), [slicing.DynamicSlice]),
    OpSpec("slice_update_dynamic", lambda x, u, i: mx.slice_update(x, u, i, (1,)),
           lambda rng: [rng.standard_normal((3, 5)), rng.standard_normal((3, 2)),
                        rng.integers(0, 5, size=(1,))],
           [slicing.DynamicSliceUpdate]),
    OpSpec("slice_update_dynamic_fixed", lambda x, u: mx.slice_update(x, u, mx.array(2), (0,)),
           lambda rng: [rng.standard_normal((4, 2)), rng.standard_normal((1, 2))],
           [slicing.DynamicSliceUpdate]),
    OpSpec("concatenate", lambda a, b: mx.concatenate([a, b], axis=1),
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((2, 1))],
           [join.Concatenate]),
    OpSpec("stack", lambda a, b: mx.stack([a, b], axis=-1),
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))],
           [join.Concatenate]),
    OpSpec("split", lambda x: mx.split(x, [1, 3], axis=1), _normal(2, 4), [slicing.Slice]),
    OpSpec("roll", lambda x: mx.roll(x, (1, -1), (0, 1)), _normal(3, 4), [join.Concatenate]),
    OpSpec("repeat_tile", lambda x: mx.tile(mx.repeat(x, 2, axis=0), (1, 2)), _normal(2, 3),
           [shape.BroadcastTo, shape.Reshape]),
    OpSpec("pad_edge", lambda x: mx.pad(x, 2, mode="edge"), _normal(2, 3), []),
]
