"""Rule rows for `compile`'s fused elementwise chains (derivatives through the chain's
fallback graph, batching as one wider fused node) and its updates absorbing a product
(`ProductUpdate`: rules through the product and the update)."""

from __future__ import annotations

import nuvec as mx
from nuvec.fast.fused import FusedElementwise, ProductUpdate
from nuvec.testing import OpSpec

_CHAIN = mx.compile(lambda x, w: mx.tanh(mx.exp(x) * w + 1) * x - mx.sin(w))
_UPDATE = mx.compile(lambda w, g, h: w - 0.5 * (g.T @ h))

SPECS = [
    OpSpec("compiled_elementwise_chain", _CHAIN,
           lambda rng: [rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4,))],
           [FusedElementwise]),
    OpSpec("compiled_product_update", _UPDATE,
           lambda rng: [rng.standard_normal((6, 5)), rng.standard_normal((4, 6)),
                        rng.standard_normal((4, 5))],
           [ProductUpdate]),
]
