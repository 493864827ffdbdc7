"""nuvec: lazy arrays, composable transforms and fused model operations, with MLX's API.

Use it as MLX: `import nuvec as mx`.
"""

from nuvec.graph.array import Array, ArrayIterator
from nuvec.graph.device import (
    Device,
    DeviceType,
    Stream,
    StreamContext,
    ThreadLocalStream,
    clear_streams,
    cpu,
    default_device,
    default_stream,
    device_count,
    device_info,
    gpu,
    is_available,
    new_stream,
    new_thread_local_stream,
    new_thread_unsafe_stream,
    set_default_device,
    set_default_stream,
    stream,
)
from nuvec.graph.dtypes import (
    Dtype,
    DtypeCategory,
    DtypeError,
    bfloat16,
    bool_,
    can_cast,
    complex64,
    complexfloating,
    finfo,
    float16,
    float32,
    float64,
    floating,
    generic,
    iinfo,
    inexact,
    isdtype,
    int8,
    int16,
    int32,
    int64,
    integer,
    issubdtype,
    number,
    promote_types,
    result_type,
    signedinteger,
    uint8,
    uint16,
    uint32,
    uint64,
    unsignedinteger,
)
from nuvec.graph.evaluator import EvaluationError, async_eval, eval, synchronize
from nuvec.graph.buffers import get_array_buffer_size
from nuvec.graph.dot import export_to_dot
from nuvec.graph.memory import (
    clear_cache,
    get_active_memory,
    get_cache_memory,
    get_memory_limit,
    get_peak_memory,
    reset_peak_memory,
    set_cache_limit,
    set_memory_limit,
    set_wired_limit,
)
from nuvec.graph.printing import (
    PrintOptions,
    get_printoptions,
    printoptions,
    set_printoptions,
)
from nuvec.graph.primitive import TransformError
from nuvec.ops import *  # noqa: F401,F403
from nuvec.ops.arguments import ArrayLike
from nuvec.ops.subscript import ArrayAt  # the type of `a.at`, as MLX names it
from nuvec.fast.conv import conv1d
from nuvec.fast.gather import gather_mm, gather_qmm
from nuvec.fast.softmax_axes import logsumexp, softmax
from nuvec.transforms import (
    checkpoint,
    custom_function,
    depends,
    grad,
    jvp,
    value_and_grad,
    vjp,
    vmap,
)
array = Array  # noqa: F811  (the class, as in MLX, so `isinstance(x, mx.array)` works)
import nuvec.fft as fft  # noqa: E402  (after the star import, which binds nuvec.ops.fft)
import nuvec.linalg as linalg  # noqa: E402  (likewise nuvec.ops.linalg)
import nuvec.random as random  # noqa: E402  (after the star import, which binds nuvec.ops.random)
from nuvec.constants import e, euler_gamma, inf, nan, newaxis, pi
from nuvec import utils  # noqa: E402
from nuvec import fast  # noqa: E402
from nuvec import cuda, metal  # noqa: E402
from nuvec import distributed  # noqa: E402
from nuvec.compilation import compile, disable_compile, enable_compile  # noqa: E402
from nuvec.exporting import (  # noqa: E402
    FunctionExporter, export_function, exporter, import_function,
)
from nuvec.io import (  # noqa: E402
    load, save, save_gguf, save_safetensors, savez, savez_compressed,
)

__version__ = "0.1.0"
from nuvec.interop import from_dlpack  # noqa: E402
from nuvec.backends.threads import get_num_threads, set_num_threads  # noqa: E402
