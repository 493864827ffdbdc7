"""Evaluation: claim the unevaluated part of a graph, run each node on its stream, detach.

One `eval` call claims its nodes as a batch under a global lock (so several Python threads can
evaluate overlapping graphs). A batch on one stream runs inline in the caller's thread; a batch
spanning streams runs each node on its stream's one-worker executor, a node waiting only for
inputs made on other streams. Claim order is a topological order of all claimed nodes, so no
wait can form a cycle.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from nuvec.graph.array import Array, Node
from nuvec.graph.device import DeviceType, Stream, backend_for
from nuvec.graph.memory import allocate, owned_bytes
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import tree_leaves

_claim_lock = threading.Lock()
_in_flight: set[_Batch] = set()
_async_runner = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nuvec-async")


class EvaluationError(RuntimeError):
    """An operation failed while a graph was being evaluated."""


class _Batch:
    """The nodes one `eval` claimed; `done` is set when they have all run or one failed."""

    __slots__ = ("done", "error", "__weakref__")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


def _roots(args: tuple[Any, ...]) -> list[Node]:
    nodes = []
    for leaf in tree_leaves(args):
        if isinstance(leaf, Array):
            nodes.append(leaf._node)
        elif leaf is not None:
            raise TypeError(f"eval: expected arrays or trees of arrays, got {type(leaf).__name__}")
    return nodes


def _check_computable(node: Node) -> None:
    if node.primitive is None:
        raise ValueError(
            f"eval: cannot evaluate a placeholder array of shape {node.shapes[0]}; "
            "arrays traced inside vmap have no value"
        )


def _unevaluated(roots: list[Node], waits: set[_Batch]) -> list[Node]:
    """Unevaluated, unclaimed nodes the roots need, inputs first; other batches go in `waits`."""

    def expand(node: Node) -> bool:
        if node.data is not None:
            return False
        if node.pending is not None:
            waits.add(node.pending)
            return False
        _check_computable(node)
        return True

    return toposort(roots, expand)


def _claim(roots: list[Node]) -> tuple[list[Node], _Batch, set[_Batch]]:
    """Claims every unevaluated node the roots need; returns them in run order."""
    batch = _Batch()
    waits: set[_Batch] = set()

    with _claim_lock:
        tape = _unevaluated(roots, waits)
        for node in tape:
            node.pending = batch
        if tape:
            _in_flight.add(batch)
    return tape, batch, waits


def _input_data(node: Node) -> list[Any]:
    stream = node.stream
    out = []
    for inp in node.inputs:
        source = inp._node
        data = source.data[inp._index]
        if source.stream is not stream and source.stream.device.type is not stream.device.type:
            data = _move(data, source.stream, stream)
        out.append(data)
    return out


def _move(data: Any, source: Stream, target: Stream) -> Any:
    """Data made on `source`'s device, as the backend of `target` takes it."""
    host = source.backend.to_host(data)
    return host if target.device.type is DeviceType.cpu else target.backend.from_host(host)


def _run(node: Node) -> None:
    primitive = node.primitive
    backend = node.stream.backend
    kernel = backend.kernels.get(type(primitive))
    if kernel is None:
        raise EvaluationError(f"eval: {primitive.name} has no kernel on {node.stream.device}")
    inputs = _input_data(node)
    try:
        result = kernel(primitive, *inputs)
    except EvaluationError:
        raise
    except Exception as exc:
        shapes = ", ".join(f"{i.shape} {i.dtype.name}" for i in node.inputs)
        raise EvaluationError(
            f"eval: {primitive!r} failed on inputs [{shapes}]: {type(exc).__name__}: {exc}"
        ) from exc
    dtypes = node.dtypes
    if len(dtypes) == 1:
        dtype = dtypes[0].np
        if type(result) is not np.ndarray or result.dtype is not dtype:
            result = backend.coerce(result, dtype)
        outputs = [result]
    else:
        outputs = [
            out if type(out) is np.ndarray and out.dtype is d.np else backend.coerce(out, d.np)
            for out, d in zip(result, dtypes)
        ]
    node.nbytes = owned_bytes(outputs, inputs)
    allocate(node.nbytes)
    node.data = outputs
    node.pending = None
    if not node.keep:
        node.primitive = None
        node.inputs = ()


def _finish(tape: list[Node | None], batch: _Batch, error: BaseException | None) -> None:
    if error is not None:
        batch.error = error
        for node in tape:
            if node is not None and node.data is None:
                node.pending = None
    with _claim_lock:
        _in_flight.discard(batch)
    batch.done.set()


def _wait_for(waits: set[_Batch]) -> None:
    for other in waits:
        other.done.wait()
        if other.error is not None:
            raise EvaluationError(f"eval: an input failed to evaluate: {other.error}") from other.error


def _executor(s: Stream) -> ThreadPoolExecutor:
    if s.executor is None:
        with _claim_lock:
            if s.executor is None:
                s.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"nuvec-{s.index}")
    return s.executor


def _run_streams(tape: list[Node | None]) -> None:
    """Runs a batch spanning several streams, each node on its stream's worker."""
    futures: dict[int, Future] = {}
    for i, node in enumerate(tape):
        assert node is not None
        deps = [
            futures[id(inp._node)]
            for inp in node.inputs
            if inp._node.stream is not node.stream and id(inp._node) in futures
        ]
        futures[id(node)] = _executor(node.stream).submit(_run_after, node, deps)
        tape[i] = None
    for future in futures.values():
        future.result()


def _run_after(node: Node, deps: list[Future]) -> None:
    for dep in deps:
        dep.result()
    with np.errstate(all="ignore"):
        _run(node)


def _execute(tape: list[Node | None], batch: _Batch, waits: set[_Batch]) -> None:
    error: BaseException | None = None
    try:
        _wait_for(waits)
        with np.errstate(all="ignore"):  # kernels define their own results for 1/0, nan, ...
            _run_tape(tape)
    except BaseException as exc:
        error = exc
        raise
    finally:
        _finish(tape, batch, error)


def _run_tape(tape: list[Node | None]) -> None:
    first = tape[0].stream  # type: ignore[union-attr]
    if any(node.stream is not first for node in tape):  # type: ignore[union-attr]
        _run_streams(tape)
        return
    for i in range(len(tape)):
        node = tape[i]
        tape[i] = None  # so intermediates are freed once their consumers ran
        _run(node)  # type: ignore[arg-type]


def eval(*arrays: Any) -> None:
    """Evaluates arrays (or trees of arrays) and everything they depend on.

    Raises:
        EvaluationError: if an operation fails while computing; the engine stays usable.
    """
    roots = _roots(arrays)
    tape, batch, waits = _claim(roots)
    if not tape:
        _wait_for(waits)
        return
    _execute(tape, batch, waits)  # type: ignore[arg-type]


def async_eval(*arrays: Any) -> None:
    """Starts evaluating arrays and returns; a later `eval` or `item()` waits for the result."""
    roots = _roots(arrays)
    tape, batch, waits = _claim(roots)
    if tape:
        _async_runner.submit(_execute_quietly, tape, batch, waits)


def _execute_quietly(tape: list[Node | None], batch: _Batch, waits: set[_Batch]) -> None:
    try:
        _execute(tape, batch, waits)
    except BaseException:
        pass  # recorded on the batch; raised by whoever evaluates these arrays next


def synchronize(stream: Stream | None = None) -> None:
    """Waits until all work started by `async_eval` has finished (on `stream`, or anywhere)."""
    with _claim_lock:
        pending = list(_in_flight)
    for batch in pending:
        batch.done.wait()
    if stream is not None:
        backend_for(stream.device).synchronize()
