"""Evaluation: claim the unevaluated part of a graph, run each node on its stream, detach.

One `eval` call claims its nodes as a batch under a global lock (so several Python threads can
evaluate overlapping graphs). A batch on one stream runs inline in the caller's thread; a batch
spanning streams runs each node on its stream's one-worker executor, a node waiting only for
inputs made on other streams. Claim order is a topological order of all claimed nodes, so no
wait can form a cycle. An elementwise kernel may write its output into a large input buffer
that nothing else can see any more (`_donor`), as NumPy reuses its temporaries. On a CPU
stream, chains of large elementwise nodes whose intermediates nothing else can reach run as one
fused node (`nuvec.graph.eager`).

Everything that touches data goes through the stream's backend (`nuvec.graph.backend`): this
module knows no array library. On an asynchronous backend (GPU streams) a kernel call only
enqueues work: an input made on another stream of the device is ordered with an event, and
`eval` synchronizes the roots' streams before it returns.
"""

from __future__ import annotations

import threading
from sys import getrefcount
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from nuvec.graph import eager
from nuvec.graph.array import Array, Node, claim_lock
from nuvec.graph.device import (DeviceType, Stream, backend_state, loaded_backends,
                                to_stream)
from nuvec.graph.memory import counters
from nuvec.graph.toposort import claim_order
from nuvec.graph.tree import all_leaves

_in_flight: set[_Batch] = set()
_async_runner = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nuvec-async")


class EvaluationError(RuntimeError):
    """An operation failed while a graph was being evaluated.

    Example:
        >>> import nuvec as mx
        >>> bad = mx.linalg.inv(mx.zeros((2, 2)))  # fails only when computed
        >>> try: mx.eval(bad)
        ... except mx.EvaluationError as e: print(e)
        eval: Inverse failed on inputs [(2, 2) float32]: LinAlgError: Singular matrix
    """


class _Batch:
    """The nodes one `eval` claimed; `wait` returns once they have all run or one failed."""

    __slots__ = ("_running", "error", "stream", "__weakref__")

    def __init__(self) -> None:
        # held until `finish`: a lock costs a fraction of an Event, made once per `eval`
        self._running = threading.Lock()
        self._running.acquire()
        self.error: BaseException | None = None
        self.stream: Stream | None = None  # the one stream of all its nodes, if they share one

    def wait(self) -> None:
        """Blocks until the batch is finished (at once if it is)."""
        with self._running:
            pass

    def finish(self) -> None:
        """Marks the batch finished, releasing every `wait` (called once)."""
        self._running.release()


def _roots(args: tuple[Any, ...]) -> list[Node]:
    # Leaves that are not arrays are ignored, as MLX does; modules (dicts) are walked into.
    if len(args) == 1 and type(args[0]) is Array:  # (the most common call: one array)
        return [args[0]._node]
    if all(type(a) is Array for a in args):  # (arrays only)
        return [a._node for a in args]
    return [leaf._node for leaf in all_leaves(args) if isinstance(leaf, Array)]


def _placeholder_error(node: Node) -> ValueError:
    return ValueError(
        f"eval: cannot evaluate a placeholder array of shape {node.shapes[0]}: arrays traced "
        "inside vmap or compile have no value (a compiled function that stores an array "
        "outside itself must name that state in `outputs`)"
    )


def _claim(roots: list[Node]) -> tuple[list[Node], _Batch, set[_Batch]]:
    """Claims every unevaluated, unclaimed node the roots need; returns them in run order, the
    batch, and the other batches holding nodes they need (to wait for)."""
    batch = _Batch()
    waits: set[_Batch] = set()
    with claim_lock:
        tape, batch.stream = claim_order(roots, batch, waits, _placeholder_error)
        if tape:
            _in_flight.add(batch)
    return tape, batch, waits


def _source_data(node: Node) -> list[Any]:
    """The data of `node`'s inputs, where they were made."""
    return [source.data[i] for source, i in zip(node.sources, node.indices)]


def _input_data(node: Node) -> list[Any]:
    """The data of `node`'s inputs, moved to its stream's device where needed; an input made
    on another stream of an asynchronous device is waited for with an event."""
    stream = node.stream
    out = _source_data(node)
    waited: list[Stream] = []
    for k, source in enumerate(node.sources):
        other = source.stream
        if other is stream:
            continue
        if other.device.type is not stream.device.type:
            out[k] = _move(out[k], other, stream)
        elif stream.backend.asynchronous and other not in waited:
            waited.append(other)
            backend = stream.backend
            backend.wait_event(stream, backend.record_event(other))
    return out


def _move(data: Any, source: Stream, target: Stream) -> Any:
    """Data made on `source`'s device, as the backend of `target` takes it."""
    host = source.backend.to_host(data, source)
    if target.device.type is DeviceType.cpu:
        return host
    return target.backend.from_host(host, target)


_REUSE_BYTES = 1 << 18  # inputs from this size may lend their buffer (NumPy elides from here)


def _donor(node: Node) -> int | None:
    """The position of an input whose buffer `node`'s kernel may overwrite with its output.

    Only a buffer nothing else can see: its node is referenced by this node alone (which drops
    it after running, unless kept) and ran on this node's stream; the buffer is referenced by
    its node's data alone (no other handle, view, `np.asarray` of it or consumer), owns its
    memory, is writeable, large, and has the output's shape and dtype.

    Inputs are tried from the last: a fused chain numbers its inputs in the order its steps
    first read them, so the last is the one its final step accumulates into (`c` of a scaled
    add `c - a * b`, which the CPU's BLAS then updates in place with `axpy`, where writing
    `c + alpha * b` over `b` takes OpenBLAS's slower `axpby`: 0.27 ms against 0.41 for an
    SGD update of `[512, 784]` float32 in a compiled training step). Any other kernel may
    write over any of its inputs alike.
    """
    if node.keep:  # a kept node holds on to its inputs, whose data must then stay as it is
        return None
    sources, indices, stream = node.sources, node.indices, node.stream
    shape, dtype = node.shapes[0], node.dtypes[0].np
    backend = stream.backend
    array_type = backend.array_type
    for k in reversed(range(len(sources))):
        # two references: `node.sources` and getrefcount's argument
        if getrefcount(sources[k]) != 2 or sources[k].stream is not stream:
            continue
        data = sources[k].data[indices[k]]
        # three references: the source's data list, `data` and getrefcount's argument
        if (
            type(data) is array_type
            and getrefcount(data) == 3
            and data.nbytes >= _REUSE_BYTES
            and backend.can_donate(data, shape, dtype)
        ):
            return k
    return None


def _compute(node: Node, kernel: Any, backend: Any) -> Any:
    """Runs `kernel` on `node`'s inputs, moved where needed, into a donated buffer if any."""
    primitive = node.primitive
    k = _donor(node) if type(primitive) in backend.kernels.writes_into else None
    if k is None:
        result = kernel(primitive, *_input_data(node))
        if eager.saved:  # a fused chain's root has run: its recorded chain is not needed
            eager.saved.pop(id(node), None)
        return result
    # if the kernel fails, `node` stays claimed by a failed batch: its input is never read again
    source = node.sources[k]
    out = source.data[node.indices[k]]
    result = kernel(primitive, *_input_data(node), out=out)
    if result is out:  # the buffer is this node's now: its old node stops counting it
        source.nbytes -= out.nbytes
        counters.active -= out.nbytes
    return result


def _failure(node: Node, exc: Exception) -> EvaluationError:
    shapes = ", ".join(
        f"{source.shapes[i]} {source.dtypes[i].name}"
        for source, i in zip(node.sources, node.indices)
    )
    return EvaluationError(
        f"eval: {node.primitive!r} failed on inputs [{shapes}]: {type(exc).__name__}: {exc}"
    )


def _unfused(node: Node, backend: Any) -> Any:
    """The result of a fused chain's root whose fused kernel failed, computed as recorded: the
    members first, then the root; a failure names the failing node as without fusion."""
    members: list[Node | None] = eager.unfuse(node)  # type: ignore[assignment]
    try:
        _run_nodes(members, backend)
    except BaseException:
        for member in members:  # unrun members are released, as `_finish` releases a tape's
            if member is not None and member.data is None:
                member.pending = None
        raise
    kernel = backend.kernels.get(type(node.primitive))
    try:
        return _compute(node, kernel, backend)
    except Exception as exc:
        raise _failure(node, exc) from exc


def _run_nodes(tape: list[Node | None], backend: Any, planning: bool = False) -> int | None:
    """Computes the nodes of `tape` in order with `backend` (their streams'), stores their data
    and detaches them. Entries are cleared once they ran, so intermediates are freed once their
    consumers ran; everything per node is inline, as this loop runs once per operation.

    With `planning`, stops at the first node that may start a fused chain (`eager`), before
    it runs, and returns its position; otherwise returns None once every node ran."""
    get, array_type, reuse = backend.kernels.get, backend.array_type, _REUSE_BYTES
    if planning:  # inputs that may make a large output take the branch that looks for chains
        reuse = min(reuse, eager.FUSE_MIN_ELEMENTS)
    for k in range(len(tape)):
        node = tape[k]  # left in `tape` until it ran: if it fails, `_finish` releases it
        primitive = node.primitive
        kernel = get(type(primitive))
        if kernel is None:
            raise EvaluationError(f"eval: {primitive.name} has no kernel on {node.stream.device}")
        sources, stream = node.sources, node.stream
        try:
            # inputs on the node's own stream, too small to lend their buffer, are the common
            # case: no moves, no search for a buffer to reuse (a source node's `nbytes` bounds
            # the buffers it owns; only an owned buffer is lent), and no list for one or two
            n = len(sources)
            if n == 1 and sources[0].stream is stream and sources[0].nbytes < reuse:
                result = kernel(primitive, sources[0].data[node.indices[0]])
            elif (n == 2 and sources[0].stream is stream and sources[1].stream is stream
                  and sources[0].nbytes < reuse and sources[1].nbytes < reuse):
                i, j = node.indices
                result = kernel(primitive, sources[0].data[i], sources[1].data[j])
            elif n > 2 and all(s.stream is stream and s.nbytes < reuse for s in sources):
                result = kernel(primitive, *[s.data[i] for s, i in zip(sources, node.indices)])
            else:  # large inputs, or inputs from other streams
                if planning and k + 1 < len(tape) and eager.starts_chain(node):
                    return k
                result = _compute(node, kernel, backend)
        except EvaluationError:
            raise
        except Exception as exc:
            if id(node) not in eager.saved:
                raise _failure(node, exc) from exc
            result = _unfused(node, backend)  # a fused kernel failed: the chain as recorded
        dtypes = node.dtypes
        if type(result) is array_type and len(dtypes) == 1 and result.dtype is dtypes[0].np:
            base = result.base
            if base is None:  # a fresh buffer of the right type (common)
                node.data = [result]
                nbytes = result.nbytes
            elif node.sources and (
                    base is (first := node.sources[0].data[node.indices[0]])
                    or (type(first) is array_type and base is first.base)):
                node.data = [result]  # a view of the first input (a transpose, a reshape)
                nbytes = 0  # (`node.sources`: a fused root run unfused has its own back)
            else:
                node.data, nbytes = _outputs(node, result, backend)
        else:
            node.data, nbytes = _outputs(node, result, backend)
        if nbytes:  # `allocate(nbytes)`, inline
            node.nbytes = nbytes
            active = counters.active + nbytes
            counters.active = active
            if active > counters.peak:
                counters.peak = active
        node.pending = None
        if not node.keep:  # `node.detach()`, inline
            node.primitive = None
            node.sources = node.indices = ()
        # hold no reference to the node or its data once stored (nor to an input a view's
        # `base` found): a consumer may take over a buffer only if nothing else refers to it
        # (`_donor` counts the references)
        tape[k] = result = base = first = None
    return None


def _run_fused(tape: list[Node | None], k: int | None, backend: Any) -> None:
    """Runs the nodes of `tape` from `k` on, their fusable chains fused (`eager.plan`): the
    part `eager.plan_end` names is planned and run, then the rest runs as a tape again."""
    while k is not None:
        end = eager.plan_end(tape, k)  # type: ignore[arg-type]
        part = tape[k:end]
        del tape[:end]  # `part` alone holds its nodes (the plan counts references); ran before k
        roots: list[int] = []
        try:
            part, roots = eager.plan(part)  # type: ignore[arg-type]
            _run_nodes(part, backend)
        except BaseException:
            eager.restore(part)  # unrun chains as recorded, unrun nodes released
            raise
        finally:
            eager.forget(roots)
        k = _run_nodes(tape, backend, True) if tape else None


def _outputs(node: Node, result: Any, backend: Any) -> tuple[list[Any], int]:
    """A kernel's result as the node's outputs (coerced to their dtypes), and the bytes of the
    buffers among them that are not its inputs' buffers.

    One output that owns its memory counts its bytes, a view whose base is an input's buffer
    (or that buffer's base) counts none, and a view of a buffer no input owns counts that
    buffer's, without asking the backend: transposes, reshapes and broadcasts, the common
    views, and kernels' outputs made in another shape."""
    dtypes, array_type = node.dtypes, backend.array_type
    if len(dtypes) == 1:
        dtype = dtypes[0].np
        if type(result) is not array_type or result.dtype is not dtype:
            result = backend.coerce(result, dtype, node.shapes[0])
        base = getattr(result, "base", 0)
        if base is None:
            return [result], result.nbytes
        if type(result) is array_type:
            for source, i in zip(node.sources, node.indices):
                data = source.data[i]
                if base is data or (type(data) is array_type and base is data.base):
                    return [result], 0
            if type(base) is array_type and base.base is None:
                # (NumPy and CuPy point a view of a view at the buffer's owner)
                return [result], base.nbytes
        outputs = [result]
    else:
        outputs = [
            out if type(out) is array_type and out.dtype is d.np else backend.coerce(out, d.np, s)
            for out, d, s in zip(result, dtypes, node.shapes)
        ]
    return outputs, backend.owned_bytes(outputs, _source_data(node))


def _finish(tape: list[Node | None], batch: _Batch, error: BaseException | None) -> None:
    if error is not None:
        batch.error = error
        for node in tape:
            if node is not None and node.data is None:
                node.pending = None
    with claim_lock:
        _in_flight.discard(batch)
    batch.finish()


class _Interrupted(BaseException):
    """A batch this one waited on was interrupted (`KeyboardInterrupt`, `SystemExit`): its
    unfinished nodes were released, so the evaluation claims them again."""


def _wait_for(waits: set[_Batch]) -> None:
    for other in waits:
        other.wait()
        error = other.error
        if error is None:
            continue
        if not isinstance(error, Exception):
            raise _Interrupted() from error
        raise EvaluationError(f"eval: an input failed to evaluate: {type(error).__name__}: "
                              f"{error}") from error


def _executor(s: Stream) -> ThreadPoolExecutor:
    if s.executor is None:
        with claim_lock:
            if s.executor is None:
                s.executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix=f"nuvec-{s.index}")
    return s.executor


def _run_streams(tape: list[Node | None]) -> None:
    """Runs a batch spanning several streams, each node on its stream's worker."""
    futures: dict[int, Future] = {}
    for i, node in enumerate(tape):
        assert node is not None
        deps = [
            futures[id(source)]
            for source in node.sources
            if source.stream is not node.stream and id(source) in futures
        ]
        futures[id(node)] = _executor(node.stream).submit(_run_after, node, deps)
        tape[i] = None
    for future in futures.values():
        future.result()


def _run_after(node: Node, deps: list[Future]) -> None:
    try:
        for dep in deps:
            dep.result()
        stream = node.stream
        backend = stream.backend
        with backend.scope(stream):
            _run_nodes([node], backend)
    except BaseException:
        _release(node)
        raise


def _release(node: Node) -> None:
    """Unclaims a node that did not compute (its run failed or was interrupted), so a later
    `eval` runs it again instead of waiting on the failed batch: after a `KeyboardInterrupt`
    the same arrays evaluate as before."""
    if node.data is None:
        node.pending = None


def _execute(tape: list[Node | None], batch: _Batch, waits: set[_Batch]) -> None:
    error: BaseException | None = None
    try:
        if waits:
            _wait_for(waits)
        _run_tape(tape, batch.stream)
    except BaseException as exc:
        error = exc
        raise
    finally:
        _finish(tape, batch, error)


def _run_tape(tape: list[Node | None], stream: Stream | None) -> None:
    """Runs a claimed batch: inline when all its nodes are on `stream`, else per stream."""
    if stream is None:
        _run_streams(tape)
        return
    backend = stream.backend
    with backend.scope(stream):  # kernels define their own results for 1/0, nan, ...
        k = _run_nodes(tape, backend, stream.device.type is DeviceType.cpu and eager.enabled())
        if k is not None:
            _run_fused(tape, k, backend)


def _synchronize_roots(roots: list[Node]) -> None:
    """Waits for the device work behind `roots` on asynchronous backends (GPU streams)."""
    done: list[Stream] = []
    for root in roots:
        s = root.stream
        if s in done or not s.backend.asynchronous:
            continue
        done.append(s)
        try:
            s.backend.synchronize(s)
        except Exception as exc:
            raise EvaluationError(
                f"eval: a kernel failed on {s}: {type(exc).__name__}: {exc}"
            ) from exc


def eval(*arrays: Any) -> None:
    """Evaluates arrays (or trees of arrays) and everything they depend on.

    Raises:
        EvaluationError: if an operation fails while computing; the engine stays usable.

    Example:
        >>> import nuvec as mx
        >>> a = mx.array([1, 2]) + 1
        >>> mx.eval({"a": a})
        >>> a.tolist()
        [2, 3]
    """
    roots = _roots(arrays)
    while True:
        tape, batch, waits = _claim(roots)
        try:
            if tape:
                _execute(tape, batch, waits)  # type: ignore[arg-type]
            elif waits:
                _wait_for(waits)
        except _Interrupted:
            continue  # an input's evaluation elsewhere was interrupted: claim it again
        break
    if backend_state.asynchronous:
        _synchronize_roots(roots)


def async_eval(*arrays: Any) -> None:
    """Starts evaluating arrays and returns; a later `eval` or `item()` waits for the result.

    Example:
        >>> import nuvec as mx
        >>> a = mx.arange(3) * 2
        >>> mx.async_eval(a)
        >>> a.tolist()
        [0, 2, 4]
    """
    roots = _roots(arrays)
    tape, batch, waits = _claim(roots)
    if not tape:
        return
    if batch.stream is not None and batch.stream.backend.asynchronous and not waits:
        _execute_quietly(tape, batch, waits)  # kernels only enqueue: return once they have
    else:
        _async_runner.submit(_execute_quietly, tape, batch, waits)


def _execute_quietly(tape: list[Node | None], batch: _Batch, waits: set[_Batch]) -> None:
    try:
        _execute(tape, batch, waits)
    except BaseException:
        pass  # recorded on the batch; raised by whoever evaluates these arrays next


def synchronize(stream: Stream | None = None) -> None:
    """Waits until all work started by `async_eval` has finished (on `stream`, or anywhere).

    Args:
        stream: the stream (or device) to wait for; None waits for every stream.

    Raises:
        TypeError: if `stream` is not a Stream, Device or None.

    Example:
        >>> import nuvec as mx
        >>> a = mx.arange(3) * 2
        >>> mx.async_eval(a); mx.synchronize()
        >>> a.tolist()
        [0, 2, 4]
    """
    if stream is not None:
        stream = to_stream(stream)
    with claim_lock:
        pending = list(_in_flight)
    for batch in pending:
        batch.wait()
    if stream is not None:
        stream.backend.synchronize(stream)
        return
    for backend in loaded_backends():
        backend.synchronize(None)
