"""Elementwise fusion of a compiled program (`nuvec.compilation`): chains of elementwise steps
become one `FusedElementwise` step.

A group is a root step and the elementwise steps of the root's shape and stream whose every
consumer is in the group (so only the root's result leaves it); broadcasts feeding only the
group are absorbed (the fused node broadcasts its inputs). A step read by a program output or
by two groups ends a chain: it is computed once and read as an input by the groups after it,
never recomputed. Groups of fewer than two elementwise steps stay as they are; so do
non-elementwise steps. On a GPU stream only steps whose primitive and dtypes the generated CUDA
kernel covers are fused. The evaluator fuses eagerly through `fused_groups` (see
`nuvec.graph.evaluator`), admitting only steps with large outputs.

With `products` (a compiled program's CPU steps), a group that is a scaled add by one value
(`c - s * x`, an optimizer's update) whose `x` is a matrix product read by that group alone
absorbs the product: one `ProductUpdate` step, which the CPU computes as one gemm
accumulating into `c` (a `Depends` step waiting for the product, as a layer's input cotangent
waits for its weight's gradient, no longer waits for it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nuvec.fast.fused import FusedElementwise, ProductUpdate, is_elementwise, scaled_add_refs
from nuvec.graph import eager
from nuvec.graph.device import DeviceType
from nuvec.ops.matmul import Matmul
from nuvec.ops.shape import BroadcastTo, Transpose
from nuvec.transforms.depends import Depends

__all__ = ["fuse", "fused_groups"]

# A program step: (primitive, stream, input refs, output shapes, output dtypes); a ref is
# ("in", i), ("const", array), ("outer", array) or ("op", step, output).
ProgramStep = tuple


def _member_kind(step: ProgramStep, covered: Callable[[Any, Any], bool]) -> str | None:
    """"op" for a fusable elementwise step, "broadcast" for an absorbable broadcast."""
    primitive, stream, _, shapes, dtypes = step
    if len(shapes) != 1 or primitive is None:
        return None
    if isinstance(primitive, BroadcastTo):
        return "broadcast"
    if not is_elementwise(primitive):
        return None
    if stream.device.type is DeviceType.gpu and not covered(primitive, dtypes[0]):
        return None
    return "op"


def _groups(steps: Sequence[ProgramStep], outs: Sequence[tuple],
            covered: Callable[[Any, Any], bool]) -> list[int | None]:
    """The group (its root's index) of every step, None for steps outside any group (a step
    whose primitive is None takes part in none)."""
    users: list[list[int]] = [[] for _ in steps]
    for j, step in enumerate(steps):
        for r in step[2]:
            if r[0] == "op":
                users[r[1]].append(j)
    external = {r[1] for r in outs if r[0] == "op"}
    group: list[int | None] = [None] * len(steps)
    for j in reversed(range(len(steps))):
        kind = _member_kind(steps[j], covered)
        if kind is None:
            continue
        roots = {group[u] for u in users[j]}
        if j not in external and len(roots) == 1 and None not in roots:
            g = roots.pop()
            root = steps[g]
            if root[1] is steps[j][1] and root[3] == steps[j][3]:
                group[j] = g
                continue
        if kind == "op":
            group[j] = j
    return group


def _fused_step(steps: Sequence[ProgramStep], members: list[int],
                ref_id: Callable[[tuple], Any]) -> tuple[ProgramStep, list[tuple]]:
    """The fused step of a group (members in order, the root last) and its input refs."""
    inputs: list[tuple] = []
    position: dict[Any, int] = {}
    local: dict[int, int] = {}  # member step -> its value's ref inside the fused node
    chain: list[tuple] = []

    def ref_of(r: tuple) -> int:
        if r[0] == "op" and r[1] in local:
            return local[r[1]]
        key = ref_id(r)
        if key not in position:
            position[key] = len(inputs)
            inputs.append(r)
        return position[key]

    for j in members:
        primitive, _, refs, _, dtypes = steps[j]
        if isinstance(primitive, BroadcastTo):
            local[j] = ref_of(refs[0])
            continue
        chain.append((primitive, tuple(ref_of(r) for r in refs), dtypes[0]))
        local[j] = -len(chain)  # fixed below, once the number of inputs is known
    n = len(inputs)
    # a member's placeholder -(c + 1) names chain step c, which follows the n inputs
    chain = [(p, tuple(n - k - 1 if k < 0 else k for k in refs), d) for p, refs, d in chain]
    root = steps[members[-1]]
    primitive = FusedElementwise(chain, root[3][0])
    return (primitive, root[1], tuple(inputs), root[3], root[4]), inputs


def fused_groups(steps: Sequence[ProgramStep], outs: Sequence[tuple],
                 ref_id: Callable[[tuple], Any], dtype_of: Callable[[tuple], Any],
                 covered: Callable[[Any, Any], bool]) -> dict[int, tuple[ProgramStep, list[int]]]:
    """The groups of two or more elementwise steps (see the module docstring).

    Args: as `fuse`'s; a step whose primitive is None is left out of every group.

    Returns:
        {root index: (the fused step, the indices of the group's steps in order, root last)}.
    """
    group = _groups(steps, outs, covered)
    members: dict[int, list[int]] = {}
    for j, g in enumerate(group):
        if g is not None:
            members.setdefault(g, []).append(j)
    fused: dict[int, tuple[ProgramStep, list[int]]] = {}
    for g, ms in members.items():
        ops = [j for j in ms if not isinstance(steps[j][0], BroadcastTo)]
        if len(ops) < 2:
            continue
        step, inputs = _fused_step(steps, ms, ref_id)
        if steps[g][1].device.type is DeviceType.gpu and not all(
                covered(None, dtype_of(r)) for r in inputs):
            continue
        fused[g] = (step, ms)
    return fused


Readers = dict[int, list[tuple[int, Any, int]]]


def _readers(steps: Sequence[ProgramStep]) -> Readers:
    """{step: (reading step, its primitive, argument position) for every read of its
    value}."""
    found: Readers = {}
    for k, (primitive, _, refs, _, _) in enumerate(steps):
        for n, r in enumerate(refs):
            if r[0] == "op":
                found.setdefault(r[1], []).append((k, primitive, n))
    return found


def _waited_for(readers: Readers, reads: list[tuple[int, Any, int]]) -> list[int] | None:
    """The transposes among `reads` if every read is a dependency of a `Depends` step,
    directly or through a transpose read only so; else None."""
    views = []
    for k, p, n in reads:
        if type(p) is Transpose and _waited_for(readers, readers.get(k, [])) == []:
            views.append(k)
        elif type(p) is not Depends or n < p.count:
            return None
    return views


def _with_product(steps: Sequence[ProgramStep], outs: Sequence[tuple], readers: Readers,
                  step: ProgramStep, members: list[int]
                  ) -> tuple[ProgramStep, list[int], list[int]] | None:
    """A CPU group's fused step and members with the matrix product its scaled add scales
    absorbed (see the module docstring), and the steps it drops (the product, and
    transposes of it only `Depends` steps wait for); None where there is none. Besides the
    group, `Depends` steps may wait for the product (a layer's input cotangent waits for its
    weight's gradient): they no longer do."""
    update, stream, refs, shapes, dtypes = step
    found = scaled_add_refs(update) if stream.device.type is DeviceType.cpu else None
    if found is None:
        return None
    for x in found[1:3]:
        ref = refs[x]
        if ref[0] != "op" or any(r[0] == "op" and r[1] == ref[1] for r in outs):
            continue
        product, reads = steps[ref[1]], readers.get(ref[1], [])
        inside = [r for r in reads if r[0] in members]
        views = _waited_for(readers, [r for r in reads if r[0] not in members])
        if (type(product[0]) is Matmul and product[1] is stream and product[3] == shapes
                and len(shapes[0]) == 2 and len(inside) == 1 and views is not None
                and not any(r[0] == "op" and r[1] in views for r in outs)):
            merged = ProductUpdate(update, x, product[0])
            rest = refs[:x] + refs[x + 1:]
            return ((merged, stream, (*product[2], *rest), shapes, dtypes),
                    sorted([ref[1], *members]), [ref[1], *views])
    return None


def fuse(steps: Sequence[ProgramStep], outs: Sequence[tuple], ref_id: Callable[[tuple], Any],
         dtype_of: Callable[[tuple], Any], covered: Callable[[Any, Any], bool],
         products: bool = False) -> tuple[list[ProgramStep], list[tuple]]:
    """The program with its elementwise chains fused (see the module docstring).

    Args:
        steps: the program's steps in order.
        outs: the refs of its outputs.
        ref_id: a hashable identity of a ref (equal for the same value).
        dtype_of: the dtype of the value a ref names.
        covered: `(primitive, dtype) -> bool`, whether a GPU kernel can fuse that step.
        products: whether CPU scaled adds absorb the matrix product they scale.

    Returns:
        The new steps and output refs.
    """
    groups = fused_groups(steps, outs, ref_id, dtype_of, covered)
    absorbed: set[int] = set()  # products taken into a `ProductUpdate`, transposes of them
    readers = _readers(steps) if products else {}
    for g, (step, ms) in list(groups.items()) if products else ():
        merged = _with_product(steps, outs, readers, step, ms)
        if merged is not None:
            groups[g] = merged[:2]
            absorbed.update(merged[2])
    fused = {g: step for g, (step, _) in groups.items()}
    dropped = {j for _, ms in groups.values() for j in ms}
    new_index: dict[int, int] = {}
    out_steps: list[ProgramStep] = []

    def moved(r: tuple) -> tuple:
        return ("op", new_index[r[1]], r[2]) if r[0] == "op" else r

    for j, step in enumerate(steps):
        if (j in dropped and j not in fused) or j in absorbed:
            continue
        step = fused.get(j, step)
        primitive, stream, refs, shapes, dtypes = step
        if type(primitive) is Depends:  # (a dependency on an absorbed product is dropped)
            refs = tuple(r for r in refs if r[0] != "op" or r[1] not in absorbed)
        new_index[j] = len(out_steps)
        out_steps.append((primitive, stream, tuple(moved(r) for r in refs), shapes, dtypes))
    return out_steps, [moved(r) for r in outs]


def _cpu_groups(steps: Sequence[ProgramStep], outs: Sequence[tuple]
                ) -> dict[int, tuple[ProgramStep, list[int]]]:
    """`fused_groups` as the evaluator's eager fusion asks (CPU steps; refs are their ids)."""
    return fused_groups(steps, outs, _same, _same, _nothing)


def _same(ref: tuple) -> tuple:
    return ref


def _nothing(primitive: Any, dtype: Any) -> bool:
    return False


eager.set_planner(_cpu_groups, is_elementwise)
