"""Ordinary operations, one module per family; each public function validates and records."""

from nuvec.ops.binary import *  # noqa: F401,F403
from nuvec.ops.comparison import *  # noqa: F401,F403
from nuvec.ops.contraction import *  # noqa: F401,F403
from nuvec.ops.conv import *  # noqa: F401,F403
from nuvec.ops.creation import *  # noqa: F401,F403
from nuvec.ops.fft import *  # noqa: F401,F403
from nuvec.ops.indexing import *  # noqa: F401,F403
from nuvec.ops.join import *  # noqa: F401,F403
from nuvec.ops.linalg import *  # noqa: F401,F403
from nuvec.ops.matmul import *  # noqa: F401,F403
from nuvec.ops.matrices import *  # noqa: F401,F403
from nuvec.ops.misc import *  # noqa: F401,F403
from nuvec.ops.quantized import *  # noqa: F401,F403
from nuvec.ops.random import *  # noqa: F401,F403
from nuvec.ops.reduction import *  # noqa: F401,F403
from nuvec.ops.scan import *  # noqa: F401,F403
from nuvec.ops.shape import *  # noqa: F401,F403
from nuvec.ops.slicing import *  # noqa: F401,F403
from nuvec.ops.sorting import *  # noqa: F401,F403
from nuvec.ops.statistics import *  # noqa: F401,F403
from nuvec.ops.unary import *  # noqa: F401,F403

from nuvec.ops import methods as _methods  # noqa: F401,E402  (installs Array operators)
