"""Rule rows for as_strided and hadamard_transform."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import misc
from nuvec.testing import OpSpec

SPECS = [
    OpSpec("as_strided_windows", lambda x: mx.as_strided(x, (3, 4), (2, 1), 1),
           lambda rng: [rng.standard_normal((3, 4))], [misc.AsStrided]),
    OpSpec("as_strided_negative_stride", lambda x: mx.as_strided(x, (2, 3), (-3, 2), 3),
           lambda rng: [rng.standard_normal((8,))], [misc.AsStrided]),
    OpSpec("view_float64_as_uint32", lambda x: mx.view(x, mx.uint32),
           lambda rng: [rng.standard_normal((2, 3))], [misc.View], grad=False),
    OpSpec("hadamard_transform", lambda x: mx.hadamard_transform(x),
           lambda rng: [rng.standard_normal((3, 8))], [misc.Hadamard]),
    OpSpec("hadamard_transform_sloane_20", lambda x: mx.hadamard_transform(x),
           lambda rng: [rng.standard_normal((2, 40))], [misc.Hadamard]),
    OpSpec("hadamard_transform_scaled", lambda x: mx.hadamard_transform(x, scale=0.5),
           lambda rng: [rng.standard_normal((4,))], [misc.Hadamard]),
]
