"""Eager elementwise fusion: `eval` runs a chain of large elementwise nodes as one node.

When a batch on one CPU stream reaches an elementwise node whose output has at least
`FUSE_MIN_ELEMENTS` elements, the evaluator hands the rest of its tape to `plan`. `plan`
describes those nodes as program steps and lets the registered grouping (`nuvec.fusion`,
which `set_planner` installs) find maximal chains: elementwise nodes of one shape (and the
broadcasts feeding them) whose intermediates nothing but the chain can reach. The root of each
chain is rewritten to compute a `FusedElementwise` primitive on the chain's outer inputs (the
CPU evaluates that in cache-sized blocks, across threads); the other members leave the tape and
never run.

"Nothing else can reach" is proved as the evaluator proves that a buffer may be donated: by
counting references. A node still to run is referenced by the tape, by the sources of the
nodes consuming it, and by anything else that could read it later (an array handle, a sibling's
handle, a node outside the batch, an `eval` root, a transform's trace). A node referenced by
more than the tape and its consumers in the batch ends a chain (it must be computed); so does
a node made under a transform (`keep`), a node with several outputs, and a node under the size
threshold (small arrays keep the per-node path, which is faster for them). A backend may name
chains it computes in fewer passes than their nodes (`set_small_chains`: the CPU's scaled add
`c - s * x`, one BLAS call): those are fused from `SMALL_CHAIN_ELEMENTS` on; and chains it
computes in one generated pass (`set_covered_chains`: the CPU's generated C), fused from
`COVERED_CHAIN_ELEMENTS` on.

The rewritten root remembers its own primitive and inputs (`saved`) until it has run: if the
fused kernel fails, or the batch fails before the root ran, the evaluator puts the chain back
as it was recorded, so the error names the failing node as without fusion and a later `eval`
computes the same graph again.
"""

from __future__ import annotations

from math import prod
from sys import getrefcount
from typing import Any, Callable

from nuvec.graph.array import Node

__all__ = ["COVERED_CHAIN_ELEMENTS", "FUSE_MIN_ELEMENTS", "PLANS_KEPT", "REACH_GAP",
           "SMALL_CHAIN_ELEMENTS", "enabled", "forget", "plan", "restore", "plan_end", "saved",
           "set_covered_chains", "set_planner", "set_small_chains", "starts_chain", "unfuse"]

# Outputs from this many elements (8 MiB of float32) are fused: `python
# benchmarks/bench_elementwise.py --fusion` (docs/performance.md) measured the per-node path as
# fast or faster below it on the two-core machine, whose 32 MiB cache holds the temporaries of
# smaller chains, and a fused chain's plan and blocks cost 30-40 us.
FUSE_MIN_ELEMENTS = 1 << 21

# Chains the backend names (`set_small_chains`) are fused from this many elements: in the peer
# benchmark's MLP step a scaled add of [512, 784] float32 (its SGD update) took 85 us as one
# BLAS call against 260 us as two nodes, and a plan of one product and its reader about 50 us
# (docs/performance.md); other chains this small are faster on the per-node path.
SMALL_CHAIN_ELEMENTS = 1 << 16

# Chains the backend computes in one generated pass (`set_covered_chains`) are fused from this
# many elements: `python benchmarks/bench_elementwise.py --fusion` on the Intel Xeon of
# docs/performance.md (2 MiB of L2 a core) measured `exp(x) * w + b` fused (generated C) at
# 0.70 of the per-node path's time at 256K elements (1.6 at 128K), and chains of NumPy calls
# in blocks (`tanh`, `sin`) at 1.0 to 1.3 up to 1M.
COVERED_CHAIN_ELEMENTS = 1 << 18

# Nodes `plan_end` looks past the last one a chain of the generated chains' sizes reaches:
# the plans stay short (a chain's nodes are recorded near one another) and a long tape of such
# nodes is scanned a bounded number of times.
REACH_GAP = 32

# Plans whose groups `_groups_of` keeps (it forgets them all when it has this many).
PLANS_KEPT = 256

# (groups, elementwise): `groups(steps, outs)` as `nuvec.fusion.fused_groups` with the CPU's
# arguments, `elementwise(primitive)` whether a primitive may be a chain's member
_planner: list[Callable[..., Any] | None] = [None, None]

# (kinds, starts, keeps): the primitive classes that may begin such a chain, `starts(inputs)`
# whether a node of one (its input data given) does, `keeps(fused primitive, inputs)` whether
# a fused chain is one (see `set_small_chains`)
_small: list[Any] = [(), None, None]

# [covered]: `covered(fused primitive, input dtypes)` whether the backend computes a chain in
# one generated pass (see `set_covered_chains`), or None
_covered: list[Callable[[Any, list[Any]], bool] | None] = [None]

# (steps, outs) -> the groups the planner found there (see `_groups_of`)
_found: dict[tuple, dict] = {}

# id(root) -> (primitive, sources (a position among the fused node's inputs where it is one),
# indices, absorbed members) of a rewritten root not yet run
saved: dict[int, tuple[Any, tuple, tuple, list[Node]]] = {}


def set_planner(groups: Callable[..., Any] | None, elementwise: Callable[[Any], bool] | None
                ) -> None:
    """Installs the grouping eager fusion uses (None for both turns it off)."""
    _planner[0], _planner[1] = groups, elementwise
    _found.clear()


def set_small_chains(kinds: tuple[type, ...], starts: Callable[[list[Any]], bool] | None,
                     keeps: Callable[[Any, list[Any]], bool] | None) -> None:
    """Installs the backend's test for chains worth fusing below `FUSE_MIN_ELEMENTS`: a node
    whose primitive is of `kinds` may begin one if `starts(its inputs' data)`, and a chain
    found is fused if `keeps(its fused primitive, its inputs' data)` (None for a value not yet
    computed; `()`, None, None: none)."""
    _small[0], _small[1], _small[2] = kinds, starts, keeps


def set_covered_chains(covered: Callable[[Any, list[Any]], bool] | None
                       ) -> Callable[[Any, list[Any]], bool] | None:
    """Installs the backend's test for chains it computes in one generated pass, fused from
    `COVERED_CHAIN_ELEMENTS`: `covered(fused primitive, its inputs' NumPy dtypes)` (None:
    none); returns the test it replaces."""
    previous, _covered[0] = _covered[0], covered
    return previous


def _large(size: int) -> bool:
    """Whether an output of `size` elements may start or join a chain planned as large ones
    are (the rest of the tape at once)."""
    return size >= FUSE_MIN_ELEMENTS or (_covered[0] is not None
                                         and size >= COVERED_CHAIN_ELEMENTS)


def enabled() -> bool:
    """Whether a grouping is installed."""
    return _planner[0] is not None


def starts_chain(node: Node) -> bool:
    """Whether `node` (about to run, its inputs large) may start a fused chain."""
    elementwise = _planner[1]
    if elementwise is None or node.keep or len(node.shapes) != 1:
        return False
    size = prod(node.shapes[0])
    if _large(size):
        return elementwise(node.primitive)
    if size < SMALL_CHAIN_ELEMENTS or type(node.primitive) not in _small[0]:
        return False
    data = [source.data for source in node.sources]
    return (all(d is not None for d in data)
            and _small[1]([d[i] for d, i in zip(data, node.indices)]))


def plan_end(tape: list[Node], k: int) -> int:
    """Where the part of `tape` to plan from `tape[k]` (a node `starts_chain` accepts) ends
    (the rest then runs as a tape of its own, which may start chains again): the whole rest
    from a node of `FUSE_MIN_ELEMENTS`; from one of the generated chains' sizes, the last node
    reading it or a node that may join its chain, transitively, looking at most `REACH_GAP`
    nodes past the last one found (a chain reaches no further; planning a training step's
    whole backward pass for its SGD update of 256K elements cost more than the fusion saved);
    from a node that may begin a small chain, its first reader."""
    node = tape[k]
    size = prod(node.shapes[0])
    if size >= FUSE_MIN_ELEMENTS:
        return len(tape)
    if _large(size):
        # (nodes by identity: a set of nodes, not of their ids; loops, not `any` over a
        # generator: this scan runs over `REACH_GAP` nodes at every plan of a training step)
        elementwise, reach, end = _planner[1], {node}, k + 1
        j, stop = k + 1, min(len(tape), k + 1 + REACH_GAP)
        while j < stop:
            other = tape[j]
            for source in other.sources:
                if source in reach:
                    end = j + 1
                    stop = min(len(tape), end + REACH_GAP)
                    if _may_join(other) and elementwise(other.primitive):
                        reach.add(other)
                    break
            j += 1
        return end
    for j in range(k + 1, len(tape)):
        if node in tape[j].sources:
            return j + 1
    return k + 1


def _may_join(node: Node) -> bool:
    """Whether `node` may be a chain's member: not kept, one output, at least
    `FUSE_MIN_ELEMENTS` elements (`SMALL_CHAIN_ELEMENTS` with `set_small_chains`,
    `COVERED_CHAIN_ELEMENTS` with `set_covered_chains`)."""
    least = FUSE_MIN_ELEMENTS
    if _small[2] is not None:
        least = min(least, SMALL_CHAIN_ELEMENTS)
    if _covered[0] is not None:
        least = min(least, COVERED_CHAIN_ELEMENTS)
    return not node.keep and len(node.shapes) == 1 and prod(node.shapes[0]) >= least


def _steps(rest: list[Node]) -> tuple[list[tuple], list[int], list[Node]]:
    """The nodes of `rest` as program steps (see `nuvec.fusion`), how often each is read by
    the others, and the nodes they read from outside `rest`, in order of first read (a ref
    `("outer", k, i)` names the k-th: the steps of two plans of the same graph are equal). A
    step that must not join a chain (kept, several outputs, small) gets primitive None."""
    position = {id(node): j for j, node in enumerate(rest)}
    uses = [0] * len(rest)
    outer: list[Node] = []
    outer_at: dict[int, int] = {}
    steps: list[tuple] = []
    for node in rest:
        refs = []
        for source, i in zip(node.sources, node.indices):
            j = position.get(id(source))
            if j is None:
                k = outer_at.get(id(source))
                if k is None:
                    k = outer_at[id(source)] = len(outer)
                    outer.append(source)
                refs.append(("outer", k, i))
            else:
                uses[j] += 1
                refs.append(("op", j, i))
        steps.append((node.primitive if _may_join(node) else None, node.stream, tuple(refs),
                      node.shapes, node.dtypes))
    return steps, uses, outer


def _kept_small(step: tuple, outer: list[Node]) -> bool:
    """Whether the backend keeps a fused chain under `FUSE_MIN_ELEMENTS` (`set_small_chains`),
    given the data of its inputs (None for a value the plan computes)."""
    keeps = _small[2]
    if keeps is None:
        return False
    inputs = []
    for ref in step[2]:
        node = outer[ref[1]] if ref[0] == "outer" else None
        inputs.append(None if node is None or node.data is None else node.data[ref[2]])
    return keeps(step[0], inputs)


def _kept_covered(step: tuple, rest: list[Node], outer: list[Node]) -> bool:
    """Whether a fused chain from `COVERED_CHAIN_ELEMENTS` is one the backend computes in one
    generated pass (`set_covered_chains`), given its inputs' dtypes."""
    covered = _covered[0]
    if covered is None or prod(step[3][0]) < COVERED_CHAIN_ELEMENTS:
        return False
    dtypes = [(outer[ref[1]] if ref[0] == "outer" else rest[ref[1]]).dtypes[ref[2]].np
              for ref in step[2]]
    return covered(step[0], dtypes)


def _groups_of(groups: Callable[..., Any], steps: list[tuple], outs: list[tuple]) -> dict:
    """`groups(steps, outs)`, kept for the next plan of equal steps and outputs (a training
    loop's updates plan the same part of their tape at every step), unless an elementwise
    primitive's parameters do not hash. Other steps are keyed by their primitive's class
    (the grouping takes no member of them but broadcasts, whatever their parameters), so
    nothing kept holds a primitive's parameters (a custom function's closure, say) alive."""
    elementwise = _planner[1]
    key: tuple | None = (tuple([
        (p if p is None or elementwise(p) else type(p), s, refs, shapes, dtypes)
        for p, s, refs, shapes, dtypes in steps]), tuple(outs))
    try:
        found = _found.get(key)
    except (TypeError, ValueError):  # parameters that do not hash, or compare as arrays
        key, found = None, None
    if found is None:
        found = groups(steps, outs)
        if key is not None:
            if len(_found) >= PLANS_KEPT:
                _found.clear()
            _found[key] = found
    return found


def plan(rest: list[Node]) -> tuple[list[Node], list[int]]:
    """The nodes of `rest` (a batch's tape from its first fusable node on, the only list
    holding them) to run, with each chain's root rewritten to compute the chain (the absorbed
    members are left out), and the ids of the rewritten roots. Records what `unfuse` needs in
    `saved`."""
    groups = _planner[0]
    if groups is None:
        return rest, []
    steps, uses, outer = _steps(rest)
    # references to rest[j]: `rest`, its readers' sources, getrefcount's argument; any other
    # (a handle, an outside node, an `eval` root) makes its value an output of the batch
    outs = [("op", j, 0) for j in range(len(rest)) if getrefcount(rest[j]) != uses[j] + 2]
    fused = {g: chain for g, chain in _groups_of(groups, steps, outs).items()
             if prod(chain[0][3][0]) >= FUSE_MIN_ELEMENTS or _kept_small(chain[0], outer)
             or _kept_covered(chain[0], rest, outer)}
    if not fused:
        return rest, []
    absorbed: set[int] = set()
    for g, (step, members) in fused.items():
        root = rest[g]
        nodes = tuple(outer[r[1]] if r[0] == "outer" else rest[r[1]] for r in step[2])
        # a recorded source that is also an input of the fused node is kept as its position
        # there, so that the entry adds no reference to it: the fused kernel may be given its
        # buffer, as the evaluator proves by counting references
        where = {id(n): k for k, n in enumerate(nodes)}
        recorded = tuple(where.get(id(n), n) for n in root.sources)
        saved[id(root)] = (root.primitive, recorded, root.indices,
                           [rest[m] for m in members if m != g])
        root.primitive = step[0]
        root.sources = nodes
        root.indices = tuple(r[2] for r in step[2])
        absorbed.update(m for m in members if m != g)
    return [node for j, node in enumerate(rest) if j not in absorbed], [id(rest[g]) for g in fused]


def unfuse(root: Node) -> list[Node] | None:
    """Puts a rewritten `root` back as recorded; returns its absorbed members in run order
    (None if `root` was not rewritten or has run)."""
    entry = saved.pop(id(root), None)
    if entry is None:
        return None
    root.primitive, recorded, root.indices, members = entry
    fused = root.sources
    root.sources = tuple(fused[n] if type(n) is int else n for n in recorded)
    return members


def restore(rest: list[Node | None]) -> None:
    """After a failed batch: every rewritten root of `rest` that did not run is put back and
    its members released (with the unrun nodes of `rest`), as if nothing had been fused."""
    for node in rest:
        if node is None or node.data is not None:
            continue
        node.pending = None
        for member in unfuse(node) or ():
            if member.data is None:
                member.pending = None


def forget(roots: list[int]) -> None:
    """Drops what `saved` still holds for the chains of a finished plan (`roots`: their ids;
    a root that ran through the evaluator's fast path is still there)."""
    for key in roots:
        saved.pop(key, None)
