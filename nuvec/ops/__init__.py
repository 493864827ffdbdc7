"""Ordinary operations, one module per family; each public function validates and records."""

from nuvec.ops.aliases import *  # noqa: F401,F403
from nuvec.ops.atleast import *  # noqa: F401,F403
from nuvec.ops.binary import *  # noqa: F401,F403
from nuvec.ops.comparison import *  # noqa: F401,F403
from nuvec.ops.complex_parts import *  # noqa: F401,F403
from nuvec.ops.contraction import *  # noqa: F401,F403
from nuvec.ops.conv import *  # noqa: F401,F403
from nuvec.ops.conv_transpose import *  # noqa: F401,F403
from nuvec.ops.creation import *  # noqa: F401,F403
from nuvec.ops.distributions import *  # noqa: F401,F403
from nuvec.ops.einsum import *  # noqa: F401,F403
from nuvec.ops.fft import *  # noqa: F401,F403
from nuvec.ops.fftn import *  # noqa: F401,F403
from nuvec.ops.indexing import *  # noqa: F401,F403
from nuvec.ops.join import *  # noqa: F401,F403
from nuvec.ops.fp8 import *  # noqa: F401,F403
from nuvec.ops.linalg import *  # noqa: F401,F403
from nuvec.ops.masked import *  # noqa: F401,F403
from nuvec.ops.matmul import *  # noqa: F401,F403
from nuvec.ops.matrices import *  # noqa: F401,F403
from nuvec.ops.misc import *  # noqa: F401,F403
from nuvec.ops.nonfinite import *  # noqa: F401,F403
from nuvec.ops.quantized import *  # noqa: F401,F403
from nuvec.ops.random import *  # noqa: F401,F403
from nuvec.ops.reduction import *  # noqa: F401,F403
from nuvec.ops.rounding import *  # noqa: F401,F403
from nuvec.ops.scan import *  # noqa: F401,F403
from nuvec.ops.shape import *  # noqa: F401,F403
from nuvec.ops.slicing import *  # noqa: F401,F403
from nuvec.ops.sorting import *  # noqa: F401,F403
from nuvec.ops.statistics import *  # noqa: F401,F403
from nuvec.ops.unary import *  # noqa: F401,F403
from nuvec.ops.unique import *  # noqa: F401,F403

from nuvec.ops import methods as _methods  # noqa: F401,E402  (installs Array operators)
import sys as _sys  # noqa: E402

# The public names are the families' functions, never the family modules (`nuvec.ops.matmul`
# the module is shadowed here by `matmul` the function, so read the modules from sys.modules).
__all__ = sorted({
    name
    for module_name, module in list(_sys.modules.items())
    if module_name.startswith("nuvec.ops.") and module_name.count(".") == 2
    for name in getattr(module, "__all__", ())
})
