"""Rule rows for scans (`nuvec.ops.scan`). Exclusive max/min/logaddexp scans start from an
infinite identity, so their rows drop that first output before checking."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import scan as sc
from nuvec.testing import OpSpec


def _matrix(rng):
    return [rng.standard_normal((3, 5))]


def _with_zeros(rng):
    x = rng.standard_normal((3, 5))
    x[0, 1] = x[2, 2] = x[2, 4] = 0.0
    return [x]


def _finite(fn, reverse):
    """The scan without its first output (the -inf/inf identity of an exclusive scan)."""
    drop = (slice(None), slice(None, -1)) if reverse else (slice(None), slice(1, None))
    return lambda x: fn(x)[drop]


SPECS = []
for name, kind in (("cumsum", "sum"), ("cumprod", "prod"), ("cummax", "max"),
                   ("cummin", "min"), ("logcumsumexp", "logaddexp")):
    op = getattr(mx, name)
    for reverse in (False, True):
        for inclusive in (True, False):
            def fn(x, op=op, reverse=reverse, inclusive=inclusive):
                return op(x, axis=1, reverse=reverse, inclusive=inclusive)

            if not inclusive and kind in ("max", "min", "logaddexp"):
                fn = _finite(fn, reverse)
            tag = f"{name}{'_reverse' if reverse else ''}{'' if inclusive else '_exclusive'}"
            SPECS.append(OpSpec(tag, fn, _matrix, covers=[sc.Scan]))
SPECS += [
    OpSpec("cumprod_zeros", lambda x: mx.cumprod(x, axis=1), _with_zeros, covers=[sc.Scan]),
    OpSpec("cumprod_zeros_reverse", lambda x: mx.cumprod(x, axis=1, reverse=True), _with_zeros,
           covers=[sc.Scan]),
    OpSpec("cumsum_flat", lambda x: mx.cumsum(x), _matrix, covers=[sc.Scan]),
    OpSpec("cummax_axis0", lambda x: mx.cummax(x, axis=0), _matrix, covers=[sc.Scan]),
]
