"""Function transformations: they trace a function and apply each primitive's rules.

`trace` marks and walks traced graphs; `autodiff` differentiates (`vjp`, `jvp`, `grad`,
`value_and_grad`); `batching` vectorizes (`vmap`); `custom` holds user rules
(`custom_function`) and `checkpoint`; `depends` orders evaluation without data flow.
"""

from nuvec.transforms.autodiff import grad, jvp, value_and_grad, vjp
from nuvec.transforms.batching import vmap
from nuvec.transforms.custom import checkpoint, custom_function
from nuvec.transforms.depends import depends

__all__ = [
    "checkpoint",
    "custom_function",
    "depends",
    "grad",
    "jvp",
    "value_and_grad",
    "vjp",
    "vmap",
]
