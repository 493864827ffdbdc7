"""MLX's `export_function`, `import_function` and `exporter`: traced functions saved to a file
and replayed from it without the Python that made them.

A trace is `compile`'s unfused program (`compilation.trace_program`): its steps (a primitive,
the device it ran on, input references, output shapes and dtypes), its constants and its
outputs. A file holds one or more traces of one function (different input shapes, counts or
keywords) and a metadata string, as a NumPy `.npz` archive of a JSON description and the
constants' raw bytes; reading it (`allow_pickle=False`) runs no code from the file: a primitive
is rebuilt from its class, looked up under `nuvec`, and the values of its slots.
"""

from __future__ import annotations

import enum
import importlib
import json
from typing import Any, Callable

import numpy as np

from nuvec.compilation import replay, trace_program
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.convert import from_data
from nuvec.graph.device import DeviceType, is_available, to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import bool_flag, check_callable
from nuvec.transforms.trace import key_of

__all__ = ["export_function", "import_function", "exporter", "FunctionExporter"]

FORMAT = "nuvec.function/1"


class _Encoder:
    """Primitives' parameters as JSON values; arrays (constants or parameters) stored apart,
    each value once (each trace reads a constant through a handle of its own)."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.arrays: list[Array] = []
        self._at: dict[tuple, int] = {}

    def array(self, a: Array) -> int:
        key = key_of(a)
        if key not in self._at:
            self._at[key] = len(self.arrays)
            self.arrays.append(a)
        return self._at[key]

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (tuple, list)):
            return {"tuple" if isinstance(v, tuple) else "list": [self.value(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if isinstance(v, dt.Dtype):
            return {"dtype": v.name}
        if isinstance(v, enum.Enum):
            return {"enum": _qualified(type(v)), "value": self.value(v.value)}
        if isinstance(v, np.generic):
            return self.value(v.item())
        if isinstance(v, np.ndarray):
            return {"ndarray": self.array(from_data(v, dt.from_numpy_dtype(v.dtype)))}
        if isinstance(v, Array):
            return {"array": self.array(v)}
        if isinstance(v, Primitive):
            return self.primitive(v)
        raise ValueError(f"{self.op}: cannot export a {type(v).__name__} held by the traced "
                         f"graph ({v!r}); a function with custom rules or callbacks cannot be "
                         "exported")

    def primitive(self, p: Primitive) -> dict:
        state = {name: self.value(getattr(p, name)) for name in _slots(type(p))
                 if hasattr(p, name)}
        state.update({k: self.value(x) for k, x in getattr(p, "__dict__", {}).items()})
        return {"primitive": _qualified(type(p)), "state": state}


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return names


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _nuvec_class(name: str, base: type, op: str) -> type:
    module, _, qualname = name.partition(":")
    if module != "nuvec" and not module.startswith("nuvec."):
        raise ValueError(f"{op}: the file names {name!r}, which is not part of nuvec")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise ValueError(f"{op}: the file names {name!r}, which is not a {base.__name__}")
    return found


class _Decoder:
    def __init__(self, arrays: list[Array], op: str) -> None:
        self.arrays, self.op = arrays, op

    def value(self, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        (kind, body), *rest = v.items()
        if kind in ("tuple", "list"):
            items = [self.value(x) for x in body]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {self.value(k): self.value(x) for k, x in body}
        if kind == "dtype":
            return dt.to_dtype(body, self.op, names=True)
        if kind == "enum":
            return _nuvec_class(body, enum.Enum, self.op)(self.value(rest[0][1]))
        if kind == "ndarray":
            return np.asarray(self.arrays[body])
        if kind == "array":
            return self.arrays[body]
        if kind == "primitive":
            p = object.__new__(_nuvec_class(body, Primitive, self.op))
            for name, x in rest[0][1].items():
                object.__setattr__(p, name, self.value(x))
            return p
        raise ValueError(f"{self.op}: unknown entry {kind!r} in the file")


def _ref(ref: tuple, encoder: _Encoder, op: str) -> list:
    kind = ref[0]
    if kind == "in":
        return ["in", ref[1]]
    if kind == "op":
        return ["op", ref[1], ref[2]]
    if kind == "const":
        return ["const", encoder.array(ref[1])]
    raise ValueError(f"{op}: the function reads arrays an enclosing transform is tracing; "
                     "export it outside vmap, grad or compile")


def _example(op: str, args: tuple, kwargs: dict) -> tuple[list[Array], dict[str, Array]]:
    """The positional and keyword arrays, passed as MLX takes them: `*args, **kwargs` of
    arrays, or (with no keywords) a tuple or list of arrays, a dict of arrays, or both."""
    positional, keywords = args, kwargs
    if args and not isinstance(args[0], Array) and not kwargs:
        if len(args) == 1 and isinstance(args[0], dict):
            positional, keywords = (), args[0]
        elif len(args) <= 2:
            positional, keywords = args[0], args[1] if len(args) == 2 else {}
    if not (isinstance(positional, (tuple, list)) and isinstance(keywords, dict)
            and all(isinstance(v, Array) for v in [*positional, *keywords.values()])
            and all(isinstance(k, str) for k in keywords)):
        raise dt.DtypeError(f"{op}: the inputs must be arrays (positional and keyword), or a "
                            "tuple or list of arrays and/or a dict of arrays, got "
                            f"{_described(args)} and keywords {_described(kwargs)}")
    return list(positional), dict(sorted(keywords.items()))


def _described(value: Any) -> str:
    """`value`'s structure, its leaves by type (`(Array, [Array], str)`)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_described, value)) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(map(_described, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_described(v)}" for k, v in value.items()) + "}"
    return type(value).__name__


def _outputs_checked(fun: Callable[..., Any], op: str) -> Callable[..., Any]:
    """`fun`, raising unless it returns an array or a tuple or list of arrays (as MLX)."""

    def checked(*args: Any, **kwargs: Any) -> Any:
        result = fun(*args, **kwargs)
        if isinstance(result, Array) or (isinstance(result, (tuple, list))
                                         and all(isinstance(x, Array) for x in result)):
            return result
        raise ValueError(f"{op}: the function must return an array or a tuple or list of "
                         f"arrays, got {_described(result)}")

    return checked


def _doubled(a: Array) -> Array:
    """A zero array of `a`'s dtype with each axis longer than 1 twice as long."""
    return from_data(np.zeros(tuple(d * 2 if d > 1 else d for d in a.shape), a.dtype.np),
                     a.dtype)


def _describe_trace(fun: Callable[..., Any], args: list[Array], kwargs: dict[str, Array],
                    shapeless: bool, encoder: _Encoder, op: str) -> dict:
    program, _ = trace_program(fun, tuple(args), kwargs, op)
    if shapeless:
        # replayed at other shapes only if its graph does not hold the example's shapes, as
        # compile(shapeless=True) checks: a second trace with longer axes must give the same
        try:
            other, _ = trace_program(fun, tuple(_doubled(a) for a in args),
                                     {k: _doubled(v) for k, v in kwargs.items()}, op)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{op}: shapeless=True, but the function fails for inputs with "
                             f"longer axes ({exc})") from exc
        if not program.same_graph(other):
            raise ValueError(f"{op}: shapeless=True, but the function's graph depends on the "
                             "input shapes (a reshape, slice, broadcast or mean holds them); "
                             "export it with shapeless=False, once per shape")
    steps, outs = program.unfused
    arrays = [*args, *kwargs.values()]
    return {
        "positional": len(args), "keywords": list(kwargs), "shapeless": shapeless,
        "like": [[i, _ref(r, encoder, op)] for i, r in program.like.items()],
        "scalars": [[i, k, encoder.array(v), _ref(r, encoder, op)]
                    for (i, k), (v, r) in program.scalars.items()],
        "inputs": [[list(a.shape), a.dtype.name] for a in arrays],
        "steps": [{"primitive": encoder.primitive(p), "device": s.device.type.name,
                   "inputs": [_ref(r, encoder, op) for r in refs],
                   "shapes": [list(x) for x in shapes], "dtypes": [d.name for d in dtypes]}
                  for p, s, refs, shapes, dtypes in steps],
        "outputs": [_ref(r, encoder, op) for r in outs],
    }


class FunctionExporter:
    """Collects traces of one function and writes them to a file when closed (MLX's
    `FunctionExporter`, made by `exporter`): call it with example inputs once per shape,
    count or set of keywords the imported function should take. Usable as a context
    manager (closing on exit).

    Example:
        >>> import os, tempfile
        >>> import nuvec as mx
        >>> path = os.path.join(tempfile.mkdtemp(), "sum.nvfn")
        >>> with mx.exporter(path, lambda *xs: sum(xs)) as export:
        ...     export(mx.array(1.0))
        ...     export(mx.array(1.0), mx.array(2.0))
        >>> mx.import_function(path)(mx.array(3.0), mx.array(4.0))[0].item()
        7.0
    """

    def __init__(self, file: Any, fun: Callable[..., Any], *, shapeless: bool = False,
                 metadata: str | None = None, op: str = "exporter") -> None:
        check_callable(op, fun)
        if not (isinstance(file, str) or callable(file)):
            raise TypeError(f"{op}: file must be a path or a callback, got "
                            f"{type(file).__name__}")
        if metadata is not None and not isinstance(metadata, str):
            raise TypeError(f"{op}: metadata must be a str, got {type(metadata).__name__}")
        if metadata is not None and callable(file):
            raise ValueError(f"{op}: metadata is only saved to a file, not given to a callback")
        shapeless = bool_flag(shapeless, op, "shapeless")
        self._file, self._shapeless, self._metadata = file, shapeless, metadata
        self._fun = _outputs_checked(fun, op)
        self._op = op
        self._encoder = _Encoder(op)
        self._traces: list[dict] = []
        self._closed = False

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Traces the function on these example inputs (arrays; `*args` and `**kwargs`, or
        a tuple or list and/or a dict)."""
        if self._closed:
            raise RuntimeError(f"{self._op}: the exporter is closed")
        positional, keywords = _example(self._op, args, kwargs)
        described = _describe_trace(self._fun, positional, keywords, self._shapeless,
                                    self._encoder, self._op)
        if callable(self._file):  # with the constants its "const" references index
            self._file(dict(described, arrays=list(self._encoder.arrays)))
        self._traces.append(described)

    def close(self) -> None:
        """Writes the traces to the file (a callback has had each already)."""
        if self._closed or callable(self._file):
            self._closed = True
            return
        self._closed = True
        arrays = self._encoder.arrays
        header = {"format": FORMAT, "metadata": self._metadata, "traces": self._traces,
                  "arrays": [[list(a.shape), a.dtype.name] for a in arrays]}
        entries = {"program": np.frombuffer(json.dumps(header).encode(), np.uint8)}
        for i, a in enumerate(arrays):
            entries[f"array{i}"] = _raw_bytes(np.asarray(a))
        with open(self._file, "wb") as handle:
            np.savez(handle, **entries)

    def __enter__(self) -> FunctionExporter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _raw_bytes(data: np.ndarray) -> np.ndarray:
    """`data`'s bytes (any dtype, bfloat16 included); only the first element's where it
    repeats that one (all strides 0: a weak scalar broadcast to an input's shape)."""
    if data.size > 1 and not any(data.strides):
        data = data[(slice(0, 1),) * data.ndim]
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8)


def exporter(file: str, fun: Callable[..., Any], *, shapeless: bool = False,
             metadata: str | None = None) -> FunctionExporter:
    """A `FunctionExporter` writing traces of `fun` to `file` (MLX's `exporter`).

    Args:
        file: the path to write when the exporter closes.
        fun: takes arrays, returns an array or a tuple or list of arrays.
        shapeless: whether the imported function takes other shapes of the same ranks
            (checked at each trace: the graph must not hold the example's shapes).
        metadata: a string saved with the function (`import_function(...,
            return_metadata=True)` reads it).

    Raises:
        TypeError: if `fun` is not callable or `metadata` not a str.
        ValueError: at a call, as `export_function` raises; RuntimeError once closed.
    """
    return FunctionExporter(file, fun, shapeless=shapeless, metadata=metadata)


def export_function(file_or_callback: Any, fun: Callable[..., Any], *args: Any,
                    shapeless: bool = False, metadata: str | None = None,
                    **kwargs: Any) -> None:
    """Traces `fun` on example inputs and saves the trace (MLX's `export_function`).

    The file replays the function for inputs of the example's shapes and dtypes (with
    `shapeless`, any shapes of the same ranks) with `import_function`, without `fun`'s Python.
    The graph must hold only nuvec primitives and arrays: a function with custom rules
    (`custom_function`, `checkpoint`) cannot be exported. Loading a file runs none of its
    content as code.

    Args:
        file_or_callback: a path, or a callable given the trace's description (the dict the
            file's JSON holds per trace, plus `arrays`: the constants its references index).
        fun: takes arrays, returns an array or a tuple or list of arrays.
        *args: example positional arrays (or, with no `kwargs`, a tuple or list of them
            and/or a dict of keyword ones).
        shapeless: whether other shapes of the same ranks may be passed; the function's graph
            must not depend on the shapes (checked with a second trace at longer axes).
        metadata: a string saved alongside (only to a file).
        **kwargs: example keyword arrays.

    Raises:
        TypeError: if `fun` is not callable or `metadata` not a str.
        ValueError: for metadata with a callback, a graph that cannot be saved, a result
            other than an array or a tuple or list of arrays, or a `shapeless` function whose
            graph depends on its shapes.
        DtypeError: (a `TypeError` and a `ValueError`) if an input is not an array.

    Example:
        >>> import os, tempfile
        >>> import nuvec as mx
        >>> path = os.path.join(tempfile.mkdtemp(), "f.nvfn")
        >>> mx.export_function(path, lambda x, y: x * y + 1, mx.ones((2,)), y=mx.ones((2,)))
        >>> f = mx.import_function(path)
        >>> f(mx.array([1.0, 2.0]), y=mx.array([3.0, 4.0]))[0].tolist()
        [4.0, 9.0]
    """
    with FunctionExporter(file_or_callback, fun, shapeless=shapeless, metadata=metadata,
                          op="export_function") as export:
        export(*args, **kwargs)


class _Imported:
    """A function read from a file: replays the trace its inputs fit."""

    def __init__(self, traces: list[dict], arrays: list[Array], path: str) -> None:
        self._traces, self._path = traces, path
        decoder = _Decoder(arrays, "import_function")
        # steps as `compilation.replay` takes them: (primitive, stream, refs, shapes, dtypes),
        # each on its device's default stream (the default one where that device is missing)
        self._steps = [[(decoder.value(s["primitive"]), _stream(s["device"]),
                         [_decoded_ref(r, arrays) for r in s["inputs"]], None, None)
                        for s in t["steps"]] for t in traces]
        self._outs = [[_decoded_ref(r, arrays) for r in t["outputs"]] for t in traces]
        self._like = [({i: _decoded_ref(r, arrays) for i, r in t.get("like", [])},
                       {(i, k): (arrays[v], _decoded_ref(r, arrays))
                        for i, k, v, r in t.get("scalars", [])}) for t in traces]

    def __repr__(self) -> str:
        return f"<imported function from {self._path!r}, {len(self._traces)} trace(s)>"

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Array, ...]:
        positional, keywords = _example("import_function", args, kwargs)
        arrays = [*positional, *keywords.values()]
        for trace, steps, outs, (like, scalars) in zip(self._traces, self._steps, self._outs,
                                                       self._like):
            if self._fits(trace, positional, keywords, arrays):
                return tuple(replay(steps, outs, like, scalars, arrays))
        wanted = [f"{t['positional']} positional, keywords {t['keywords']}, inputs "
                  f"{[(tuple(shape), name) for shape, name in t['inputs']]}"
                  for t in self._traces]
        raise ValueError(f"import_function: no exported trace takes {len(positional)} "
                         f"positional and keywords {list(keywords)} of shapes "
                         f"{[a.shape for a in arrays]} and dtypes "
                         f"{[a.dtype.name for a in arrays]}; the file has: {'; '.join(wanted)}")

    @staticmethod
    def _fits(trace: dict, positional: list, keywords: dict, arrays: list[Array]) -> bool:
        if trace["positional"] != len(positional) or trace["keywords"] != list(keywords):
            return False
        for a, (shape, dtype) in zip(arrays, trace["inputs"]):
            if a.dtype.name != dtype:
                return False
            if (a.ndim != len(shape)) if trace["shapeless"] else (list(a.shape) != shape):
                return False
        return True


def _stream(device: str) -> Any:
    found = DeviceType[device]
    return to_stream(found if is_available(found) else None)


def _decoded_ref(ref: list, arrays: list[Array]) -> tuple:
    return ("const", arrays[ref[1]]) if ref[0] == "const" else tuple(ref)


def import_function(file: str, return_metadata: bool = False) -> Any:
    """Reads a function written by `export_function` or `exporter` (MLX's `import_function`).

    The function takes the inputs of one of its traces (as `*args, **kwargs`, or a tuple or
    list and/or a dict) and returns a tuple of arrays. Its steps run on the default stream of
    the device each ran on when exported (the default stream where that device is missing).

    Args:
        file: the path.
        return_metadata: also return the saved metadata string (None if none was saved).

    Returns:
        The function, or `(function, metadata)`.

    Raises:
        ValueError: if the file is not an exported nuvec function.
    """
    return_metadata = bool_flag(return_metadata, "import_function", "return_metadata")
    try:
        with np.load(file, allow_pickle=False) as archive:
            header = json.loads(bytes(archive["program"]).decode())
            raw = [archive[f"array{i}"] for i in range(len(header.get("arrays", [])))]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"import_function: {file!r} is not an exported nuvec function "
                         f"({exc})") from exc
    if header.get("format") != FORMAT:
        raise ValueError(f"import_function: {file!r} has format {header.get('format')!r}, "
                         f"expected {FORMAT!r}")
    arrays = []
    for r, (shape, name) in zip(raw, header["arrays"]):
        dtype = dt.to_dtype(name, "import_function", names=True)
        values = r.view(dtype.np)  # one element: repeated to the shape (see `_raw_bytes`)
        data = np.broadcast_to(values[0], shape) if values.size == 1 else values.reshape(shape)
        arrays.append(from_data(data, dtype))
    fn = _Imported(header["traces"], arrays, file)
    return (fn, header["metadata"]) if return_metadata else fn
