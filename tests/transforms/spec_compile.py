"""Rule rows for `compile`'s fused elementwise chains: derivatives through the chain's
fallback graph, batching as one wider fused node."""

from __future__ import annotations

import nuvec as mx
from nuvec.fast.fused import FusedElementwise
from nuvec.testing import OpSpec

_CHAIN = mx.compile(lambda x, w: mx.tanh(mx.exp(x) * w + 1) * x - mx.sin(w))

SPECS = [
    OpSpec("compiled_elementwise_chain", _CHAIN,
           lambda rng: [rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4,))],
           [FusedElementwise]),
]
