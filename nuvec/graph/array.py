"""The lazy graph: `Node` (one operation and its outputs) and `Array` (a handle on one output).

Arrays know their shape, dtype and stream without being evaluated. The constructor (from data),
operators and methods are installed on `Array` by `nuvec.ops.methods`, so this module imports
no operation.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph import memory
from nuvec.graph.device import DeviceType, Stream, host_stream, leaf_stream, to_stream
from nuvec.graph.memory import counters
from nuvec.graph.printing import format_array

if TYPE_CHECKING:
    from nuvec.graph.primitive import Primitive

Shape = tuple[int, ...]


class _Tracing(threading.local):
    """How many transforms this thread is tracing; nodes made meanwhile keep their graph.

    `threads` counts the threads tracing now, so that recording reads no thread-local state
    while no thread traces (the common case).
    """

    threads = 0  # class-wide, not per thread
    _depth = 0
    _lock = threading.Lock()

    @property
    def depth(self) -> int:
        return self._depth

    @depth.setter
    def depth(self, value: int) -> None:
        with self._lock:
            _Tracing.threads += (value > 0) - (self._depth > 0)
            self._depth = value


tracing = _Tracing()
claim_lock = threading.Lock()  # held while an evaluation claims nodes (`nuvec.graph.evaluator`)


class Node:
    """One recorded operation: primitive, inputs, stream, output shapes and dtypes.

    The inputs are held as `sources` (the input nodes, ordered, duplicates kept) and `indices`
    (which output of each), not as handles: rebinding a user's handle (an in-place update) then
    never changes a recorded graph. After evaluation `data` holds one backend array per output;
    the node then drops its primitive and inputs (detaches) unless it was made while a
    transform was tracing.
    """

    __slots__ = (
        "primitive", "sources", "indices", "stream", "shapes", "dtypes", "data", "pending", "keep",
        "nbytes",
    )

    def __init__(
        self,
        primitive: Primitive | None,
        inputs: Sequence[Array],
        stream: Stream,
        shapes: tuple[Shape, ...],
        dtypes: tuple[dt.Dtype, ...],
        data: list[Any] | None = None,
    ):
        self.primitive = primitive
        n = len(inputs)
        if n == 1:  # one and two inputs are the common cases: no lists built
            x = inputs[0]
            self.sources, self.indices = (x._node,), (x._index,)
        elif n == 2:
            a, b = inputs
            self.sources, self.indices = (a._node, b._node), (a._index, b._index)
        else:
            self.sources = tuple([x._node for x in inputs])
            self.indices = tuple([x._index for x in inputs])
        self.stream = stream
        self.shapes = shapes
        self.dtypes = dtypes
        self.data = data
        self.pending: Any = None
        self.keep = _Tracing.threads > 0 and tracing.depth > 0
        self.nbytes = 0  # bytes of buffers this node's kernel allocated (see graph.memory)

    def __del__(self) -> None:
        if self.nbytes:
            counters.active -= self.nbytes

    @property
    def inputs(self) -> tuple[Array, ...]:
        """New handles on the inputs, in order; for a node being evaluated, once it has run.

        (Running a node that is not kept may write its output into the buffer of an input that
        nothing else refers to: no handle on such an input may appear meanwhile.)
        """
        if not self.keep:
            with claim_lock:  # so no evaluation claims the node between the check and the handles
                batch = self.pending
                if batch is None:
                    return self._input_handles()
            batch.wait()
        return self._input_handles()

    def _input_handles(self) -> tuple[Array, ...]:
        sources, indices = self.sources, self.indices
        n = len(sources)
        if n == 1:  # one and two inputs are the common cases: no lists built
            return (handle(sources[0], indices[0]),)
        if n == 2:
            return (handle(sources[0], indices[0]), handle(sources[1], indices[1]))
        return tuple([handle(s, i) for s, i in zip(sources, indices)])

    def detach(self) -> None:
        if not self.keep:
            self.primitive = None
            self.sources = self.indices = ()

    def outputs(self) -> list[Array]:
        """One handle per output (siblings included)."""
        if len(self.shapes) == 1:
            return [handle(self, 0)]
        return [handle(self, i) for i in range(len(self.shapes))]


class _Fields:
    """`Array`'s fields, read as plain slots (the fastest attribute access).

    Arrays are read-only, as MLX's: `Array` refuses attribute writes, so new handles are
    filled in as `_WritableArray`s (the same layout) and then become Arrays.
    """

    __slots__ = ("_node", "_index", "shape", "dtype", "__weakref__")
    shape: Shape
    dtype: dt.Dtype


class _WritableArray(_Fields):
    __slots__ = ()


class Array(_Fields):
    """A lazy n-dimensional array, the result of recorded operations.

    `nuvec.array` is this class, as `mlx.core.array` is MLX's (`isinstance(x, mx.array)`
    works). `array(val, dtype=None)` makes an evaluated array from data: Python ints become
    int32 (int64 if they do not fit), floats float32, bools bool; NumPy float64 data becomes
    float32 unless `dtype` says otherwise (MLX's rule); a list of arrays is stacked. Evaluation
    of other arrays happens on `nuvec.eval`, `item()`, `tolist()` or `numpy.asarray(a)`.

    Args:
        val: a scalar, nested lists/tuples, NumPy data or another array.
        dtype: the dtype to store; default as above.

    Raises:
        TypeError: if `dtype` is not a dtype or the data is not numeric.
        ValueError: if nested sequences are ragged or an integer does not fit in int64.

    Example:
        >>> import nuvec as mx
        >>> mx.array([1, 2, 3])
        array([1, 2, 3], dtype=int32)
        >>> isinstance(mx.array([1.0]), mx.array)
        True
    """

    __slots__ = ()
    __array_priority__ = 100

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute {name!r} of 'array' objects is not writable")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def _rebind(self, other: Array) -> None:
        """Makes this handle refer to `other`'s value (MLX's in-place updates)."""
        _set(self, "_node", other._node)
        _set(self, "_index", other._index)
        _set(self, "shape", other.shape)
        _set(self, "dtype", other.dtype)

    # -- structure -------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.size

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.size

    @property
    def stream(self) -> Stream:
        return self._node.stream

    @property
    def primitive(self) -> Primitive | None:
        return self._node.primitive

    @property
    def inputs(self) -> tuple[Array, ...]:
        return self._node.inputs

    @property
    def is_evaluated(self) -> bool:
        return self._node.data is not None

    def siblings(self) -> list[Array]:
        """The other outputs of the operation that made this array."""
        return [a for i, a in enumerate(self._node.outputs()) if i != self._index]

    # -- evaluation ------------------------------------------------------------------------
    def _host(self) -> np.ndarray:
        """Evaluates and returns this array's data as a NumPy array (shared, do not mutate)."""
        node = self._node
        if node.data is None:
            from nuvec.graph.evaluator import eval as evaluate  # the evaluator imports this module

            evaluate(self)
            node = self._node
        data = node.data[self._index]
        if type(data) is not np.ndarray:  # a device buffer: copied to the host
            data = node.stream.backend.to_host(data, node.stream)
        return data

    def item(self) -> Any:
        """The value of a size-1 array as a Python scalar.

        Raises:
            ValueError: if the array has more than one element.
        """
        if self.size != 1:
            raise ValueError(f"item: only size-1 arrays can be converted, got shape {self.shape}")
        value = self._host().reshape(()).item()
        if self.dtype is dt.bfloat16:
            return float(value)
        return value

    def tolist(self) -> Any:
        """The array as nested Python lists (a scalar for 0-d arrays)."""
        data = self._host()
        if self.dtype is dt.bfloat16:
            data = data.astype(np.float32)
        return data.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # NumPy 2's protocol: a read-only view of the evaluated data unless a copy is asked
        # for or needed (a dtype change); `copy=False` refuses a needed copy
        data = self._host()
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {self.dtype.name} to {np.dtype(dtype)} "
                                 "needs a copy, but copy=False")
            return data.astype(dtype)
        if copy:
            return data.copy()
        view = data.view()
        view.flags.writeable = False
        return view

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> ArrayIterator:
        if not self.shape:  # raised by iter() itself, as NumPy does, not at the first next()
            raise TypeError("iteration over a 0-d array")
        # a handle of its own: an in-place update of `self` (`x += 1`) does not reach the rows
        it = _new(ArrayIterator)
        it._array, it._index, it._stop = handle(self._node, self._index), 0, self.shape[0]
        return it

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"The truth value of an array with shape {self.shape} is ambiguous; "
                "use any() or all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        value = self._scalar("float")
        if isinstance(value, complex):  # Python's rule for complex numbers, and MLX's
            raise TypeError("float(): a complex array has no real value; use .real or "
                            "complex()")
        return float(value)

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype.name}")
        return int(self._scalar("index"))

    def _scalar(self, what: str) -> Any:
        if self.size != 1:
            raise TypeError(
                f"{what}(): only size-1 arrays can be converted, got shape {self.shape}"
            )
        return self.item()

    def __format__(self, spec: str) -> str:
        # as MLX: an empty spec formats a 0-d array's value (f"loss {loss}") and prints others
        if not spec and self.shape:
            return repr(self)
        if self.size != 1:
            raise TypeError(
                f"format: only size-1 arrays take a format spec, got shape {self.shape}"
            )
        return format(self.item(), spec)

    def __repr__(self) -> str:
        return format_array(self)

    def __bytes__(self) -> bytes:
        """The raw bytes of the elements in row-major order (MLX's buffer)."""
        return self._host().tobytes()

    def __hash__(self) -> int:
        return id(self)

    def __reduce__(self):
        return (_rebuild, (np.array(self), self.dtype.name))


class ArrayIterator:
    """The iterator over the first axis of an array that `iter(a)` returns, as MLX's.

    Python code cannot construct one. Its rows are the array's values when `iter` was called.

    Example:
        >>> import nuvec as mx
        >>> it = iter(mx.array([[1, 2], [3, 4]]))
        >>> type(it) is mx.ArrayIterator
        True
        >>> next(it)
        array([1, 2], dtype=int32)
    """

    __slots__ = ("_array", "_index", "_stop")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ArrayIterator: no constructor; iter(array) returns one")

    def __iter__(self) -> ArrayIterator:
        return self  # Python's protocol; MLX returns a copy (docs/mlx-differences.md)

    def __next__(self) -> Array:
        i = self._index
        if i == self._stop:
            raise StopIteration
        self._index = i + 1
        return self._array[i]


def _rebuild(data: np.ndarray, dtype_name: str) -> Array:
    return leaf(data.astype(dt.to_dtype(dtype_name, names=True).np, copy=False),
                dt.to_dtype(dtype_name, names=True))


_new = object.__new__
_set = object.__setattr__  # past `Array.__setattr__`


def handle(node: Node, index: int) -> Array:
    """A new handle on output `index` of `node`."""
    out = _new(_WritableArray)
    out._node = node
    out._index = index
    out.shape = node.shapes[index]
    out.dtype = node.dtypes[index]
    out.__class__ = Array
    return out


def leaf(data: np.ndarray, dtype: dt.Dtype, upload: bool = False) -> Array:
    """An evaluated array over host `data` of `dtype` (the caller keeps no reference to it).

    With `upload`, on a GPU default stream the data is copied to the GPU (`nuvec.array` does
    this); other leaves (cached scalars, constants) stay on the host and move when used.
    """
    s = leaf_stream() if upload else host_stream()
    if s.device.type is not DeviceType.cpu:
        data = s.backend.from_host(data, s)
    node = Node(None, (), s, (tuple(data.shape),), (dtype,), [data])
    node.nbytes = memory.owned_bytes((data,), ())
    memory.allocate(node.nbytes)
    return handle(node, 0)


def placeholder(shape: Shape, dtype: dt.Dtype, stream: Stream | None = None) -> Array:
    """An array with a shape and dtype but no value (transforms trace functions with these)."""
    node = Node(None, (), stream or to_stream(None), (tuple(shape),), (dtype,), None)
    return handle(node, 0)


def _check_size(primitive: Primitive, shape: tuple[int, ...], dtype: dt.Dtype,
                stream: Stream) -> None:
    # outputs under 2**27 elements (1 GiB at 8 bytes each) need no look at the device: this
    # runs for every recorded operation
    if (len(shape) > 1 or (shape and shape[0] > 1 << 26)) and math.prod(shape) > 1 << 27:
        memory.check_allocation(primitive.name.lower(), shape, dtype.size, dtype.name,
                                stream.device)


def record(primitive: Primitive, inputs: Sequence[Array], stream: Stream) -> list[Array]:
    """Records `primitive` applied to `inputs` on `stream`; returns one array per output.

    Raises:
        ValueError: if an output of a primitive that allocates could not fit in the memory of
            the stream's device.
    """
    specs = primitive.output_specs(inputs)
    if primitive.allocates:
        for shape, dtype in specs:
            _check_size(primitive, shape, dtype, stream)
    node = Node(
        primitive, inputs, stream, tuple(s for s, _ in specs), tuple(d for _, d in specs)
    )
    return [handle(node, i) for i in range(len(specs))]


def record_pair(primitive: Primitive, a: Node, i: int, b: Node, j: int, stream: Stream,
                shape: Shape, dtype: dt.Dtype) -> Array:
    """`record1` of a single-output primitive reading output `i` of node `a` and output `j` of
    node `b`, whose output spec (`shape`, `dtype`) the caller computed: elementwise
    arithmetic's per-op path (no handles on the inputs, no `output_specs` call)."""
    if primitive.allocates and (len(shape) > 1 or (shape and shape[0] > 1 << 26)):
        _check_size(primitive, shape, dtype, stream)
    node = _new(Node)  # `Node.__init__`, inline
    node.primitive = primitive
    node.sources = (a, b)
    node.indices = (i, j)
    node.stream = stream
    node.shapes = (shape,)
    node.dtypes = (dtype,)
    node.data = node.pending = None
    node.keep = _Tracing.threads > 0 and tracing.depth > 0
    node.nbytes = 0
    out = _new(_WritableArray)  # `handle(node, 0)`, inline
    out._node = node
    out._index = 0
    out.shape = shape
    out.dtype = dtype
    out.__class__ = Array
    return out


def record1(primitive: Primitive, inputs: Sequence[Array], stream: Stream) -> Array:
    """Records a single-output `primitive`; returns its output (see `record`)."""
    ((shape, dtype),) = primitive.output_specs(inputs)
    if primitive.allocates and (len(shape) > 1 or (shape and shape[0] > 1 << 26)):
        _check_size(primitive, shape, dtype, stream)  # (small 1-D outputs skip the call)
    out = _new(_WritableArray)  # `handle(node, 0)`, inline
    out._node = Node(primitive, inputs, stream, (shape,), (dtype,))
    out._index = 0
    out.shape = shape
    out.dtype = dtype
    out.__class__ = Array
    return out
