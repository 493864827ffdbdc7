"""MLX's `compile`, `disable_compile` and `enable_compile`.

The first call of a compiled function traces `fun` on placeholder arrays (as `vmap` does, with
`nuvec.transforms.trace`) and turns the traced graph into a program: one step per primitive,
common subexpressions merged (primitives compare by their parameters) and steps whose inputs
are all constants evaluated once (constant folding). Each call, the first one included, replays
the program on its arrays, recording the same primitives without running `fun`'s Python. The
program is cached per argument structure, array shapes and dtypes, and non-array arguments;
anything else retraces. With `shapeless=True` a second shape traces once more and compares the
graphs (`_Program.same_graph`): only a graph that does not hold its shapes is replayed at other
shapes with the primitives' own shape rules. Where the two traces differ in a constant's value
alone, a trace at the first shape tells a changed closure (the first trace then replays at
every shape, as MLX's one trace does: `_Program.adopt`) from a constant of the shape. The
arrays named by `inputs` are traced as extra arguments, and the containers named by `outputs`
get the new arrays after each call (lists and dicts updated in place), as MLX's captured state
does. Chains of elementwise steps are then fused into one `FusedElementwise` step each
(`nuvec.fusion`; not for the `shapeless` programs replayed at other shapes, whose broadcast
shapes are not fixed): the CPU evaluates such a step in cache-sized blocks, a GPU stream in one
generated CUDA kernel.
Called on the primals of a reverse-mode transform (`grad(compile(f))`), a program replays its
reverse mode, traced once and split into fused forward and backward programs
(`_VjpPrograms`). A custom function's or a checkpoint's node is replayed with the function's
own graph before it. Transforms `fun` applies itself (a `grad` of an array it reads from its
scope) are part of its program; only the marks of enclosing transforms make it single-use.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nuvec.graph.array import Array, Node, handle, placeholder, record, tracing
from nuvec.graph.convert import from_data
from nuvec.graph.device import to_stream
from nuvec.graph.evaluator import eval as evaluate
from nuvec.graph.primitive import COPY
from nuvec.graph.tree import all_leaves, flatten, replace_leaves, unflatten
from nuvec.fast.fused import fetcher
from nuvec.fusion import fuse
from nuvec.ops.shape import BroadcastTo
from nuvec.transforms.autodiff import pullback
from nuvec.transforms.custom import CustomTransforms
from nuvec.transforms.trace import Key, key_of, release, trace, traced_graph, untraced

__all__ = ["compile", "disable_compile", "enable_compile"]

_CONSTANTS = (bool, int, float, complex, str, type(None))
# MLX's switch: compilation is off in a process started with MLX_DISABLE_COMPILE set
_settings = {"enabled": "MLX_DISABLE_COMPILE" not in os.environ}

# A reference to a value in a program: ("in", i) the i-th input, ("const", array), ("outer",
# array) an array an enclosing transform traces, or ("op", step, output) an earlier output.
Ref = tuple


class _Program:
    """A traced graph as steps, replayed on new inputs by recording the same primitives."""

    def __init__(self, in_keys: Sequence[Key], outs: Sequence[Array], fused: bool = True,
                 stops: frozenset[Node] = frozenset(), inner: set[Node] | None = None,
                 fold_arrays: bool = True):
        """`stops`: computed nodes whose outputs are inputs (in `in_keys`), not steps;
        `inner`: the marks of transforms the traced function applied itself; `fold_arrays`:
        whether steps reading constants of more than one element are folded (see `_foldable`)."""
        refs: dict[Key, Ref] = {key: ("in", i) for i, key in enumerate(in_keys)}
        self.in_dtypes = [node.dtypes[i] for node, i in in_keys]
        self.in_shapes = [node.shapes[i] for node, i in in_keys]
        # shapeless (`same_graph`): broadcast steps replayed to the shape of another value,
        # and constants of one repeated value (weak scalars) replayed as that value broadcast
        # to the shape of another input of their step: {(step, position): (value, ref)}
        self.like: dict[int, Ref] = {}
        self.scalars: dict[tuple[int, int], tuple[Array, Ref]] = {}
        # False when the graph reads arrays an enclosing transform is tracing (placeholders
        # of an outer trace): such a program holds that trace's arrays and is used once.
        self.reusable = True
        self.steps: list[tuple] = []  # (primitive, stream, input refs, shapes, dtypes)
        seen: dict[Any, int] = {}
        for node in traced_graph(list(outs), set(stops), into_custom=True):
            if (node.primitive is COPY and node.keep and (node.sources[0], node.indices[0])
                    not in refs and not (inner and node in inner)):
                # where an enclosing transform starts tracing an array `fun` reads
                refs[(node, 0)] = ("outer", handle(node, 0))
                self.reusable = False
                continue
            inputs = tuple(refs.get(k) or self._constant(handle(*k)) for k in zip(node.sources,
                                                                                   node.indices))
            if node.primitive is COPY and node.stream is node.sources[0].stream:
                # a transform's mark (`value_and_grad` inside the step, also of an array it
                # reads from an enclosing scope): the same value
                refs[(node, 0)] = inputs[0]
                continue
            if _foldable(node, inputs, fold_arrays):
                self._fold(node, inputs, refs)
                continue
            step = self._merged(node, inputs, seen)
            for i in range(len(node.shapes)):
                refs[(node, i)] = ("op", step, i)
        self.outs = [refs.get(key_of(o)) or self._constant(o) for o in outs]
        # the steps before fusion: the reverse mode is traced through them (`_VjpPrograms`),
        # whose own programs are then fused, instead of through fused nodes' chains
        self.unfused = (self.steps, self.outs)
        self.reverse: _VjpPrograms | None = None  # its reverse mode, once traced (`_with_vjp`)
        self.replays: dict[bool, tuple] = {}  # `_replay`'s plans, fused and unfused
        if fused:
            self.steps, self.outs = fuse(self.steps, self.outs, _ref_id, self._dtype_of,
                                         _gpu_covers, products=True)

    def same_graph(self, other: "_Program") -> bool:
        """Whether `other` (a trace of the same function at other shapes) has the same steps
        with equal parameters and constants: then the graph does not depend on the shapes
        (as far as two traces tell), and replaying it with the primitives' own shape rules
        computes what a trace would.

        Two exceptions are replayed to the new shapes instead: a broadcast step whose target
        differs matches if, in both traces, the target is the shape of another input of its
        first consumer (replayed to that input's shape: `like`); and constants that differ
        only in shape, repeating one value (a weak scalar broadcast to each trace's input),
        match if another input of their step has their shape in both traces (replayed as the
        value broadcast to it: `scalars`)."""
        (steps, outs), (other_steps, other_outs) = self.unfused, other.unfused
        if len(steps) != len(other_steps) or len(outs) != len(other_outs):
            return False
        like: dict[int, Ref] = {}
        scalars: dict[tuple[int, int], tuple[Array, Ref]] = {}
        for i, ((p1, s1, r1, _, d1), (p2, s2, r2, _, d2)) in enumerate(zip(steps,
                                                                            other_steps)):
            if not (s1 is s2 and d1 == d2 and len(r1) == len(r2)):
                return False
            for k, (a, b) in enumerate(zip(r1, r2)):
                if _same_ref(a, b):
                    continue
                value = _repeated_value(a, b)
                ref = None if value is None else next(
                    (r for r in r1 if r[0] != "const" and self._shape_of(r) == a[1].shape
                     and other._shape_of(r) == b[1].shape), None)
                if ref is None:
                    return False
                scalars[(i, k)] = (value, ref)
            if _equal_primitives(p1, p2):
                continue
            if type(p1) is not BroadcastTo or type(p2) is not BroadcastTo:
                return False
            ref = self._broadcast_like(i, other, like)
            if ref is None:
                return False
            like[i] = ref
        if not all(map(_same_ref, outs, other_outs)):
            return False
        self.like, self.scalars = like, scalars
        return True

    def adopt(self, other: "_Program") -> bool:
        """Takes the replay at other shapes (`like`, `scalars`) that `same_graph` found for
        `other`, a trace at this program's shapes whose steps are this program's, with
        constants that differ in value alone (the function's closure changed since this
        trace): this program, with the closure it was traced with, then replays at other
        shapes, as MLX replays its one trace. False where the steps differ otherwise."""
        (steps, outs), (other_steps, other_outs) = self.unfused, other.unfused
        if len(steps) != len(other_steps) or len(outs) != len(other_outs):
            return False
        for (p1, s1, r1, h1, d1), (p2, s2, r2, h2, d2) in zip(steps, other_steps):
            if not (s1 is s2 and h1 == h2 and d1 == d2 and len(r1) == len(r2)
                    and all(map(_same_kind, r1, r2)) and _equal_primitives(p1, p2)):
                return False
        if not all(map(_same_kind, outs, other_outs)):
            return False
        scalars = {}
        for (i, k), (_, ref) in other.scalars.items():
            mine = steps[i][2][k]
            value = _repeated_value(mine, mine)
            if value is None:
                return False
            scalars[(i, k)] = (value, ref)
        self.like, self.scalars = dict(other.like), scalars
        return True

    def _broadcast_like(self, i: int, other: "_Program", like: dict[int, Ref]) -> Ref | None:
        """The input of broadcast step `i`'s first consumer whose shape is the broadcast's
        target in both programs, if one is (and comes before that consumer, not itself a
        broadcast being replaced)."""
        steps, other_steps = self.unfused[0], other.unfused[0]
        mine = ("op", i, 0)
        for j in range(i + 1, len(steps)):
            if mine not in steps[j][2]:
                continue
            for ref in steps[j][2]:
                if ref == mine or ref[0] == "const" or (ref[0] == "op" and ref[1] in like):
                    continue
                if (self._shape_of(ref) == steps[i][0].shape
                        and other._shape_of(ref) == other_steps[i][0].shape):
                    return ref
            return None
        return None

    def _shape_of(self, ref: Ref) -> tuple[int, ...]:
        if ref[0] == "op":
            return self.unfused[0][ref[1]][3][ref[2]]
        return self.in_shapes[ref[1]] if ref[0] == "in" else ref[1].shape

    def _dtype_of(self, ref: Ref) -> Any:
        kind = ref[0]
        if kind == "op":
            return self.steps[ref[1]][4][ref[2]]
        return self.in_dtypes[ref[1]] if kind == "in" else ref[1].dtype

    def _constant(self, a: Array) -> Ref:
        """A constant, or ("outer", a) for a placeholder of an enclosing trace (never folded)."""
        if a.primitive is None and not a.is_evaluated:
            self.reusable = False
            return ("outer", a)
        return ("const", a)

    def _merged(self, node: Node, inputs: tuple[Ref, ...], seen: dict[Any, int]) -> int:
        """The step computing `node`: an earlier equal step (primitive, inputs) or a new one."""
        signature = (node.primitive, node.stream, tuple(_ref_id(r) for r in inputs))
        try:
            return seen[signature]
        except KeyError:
            pass
        except TypeError:  # a primitive whose parameters do not hash is never merged
            signature = None
        self.steps.append((node.primitive, node.stream, inputs, node.shapes, node.dtypes))
        if signature is not None:
            seen[signature] = len(self.steps) - 1
        return len(self.steps) - 1

    @staticmethod
    def _fold(node: Node, inputs: tuple[Ref, ...], refs: dict[Key, Ref]) -> None:
        """Evaluates a step of constants once; its outputs become constants."""
        values = untraced(lambda: record(node.primitive, [r[1] for r in inputs], node.stream))
        evaluate(*values)
        for i, v in enumerate(values):
            refs[(node, i)] = ("const", v)

    def _replay(self, fused: bool) -> tuple[list[Array], list[tuple], list[tuple[bool, int]]]:
        """The steps (fused or not) over one flat list of values, planned once: the inputs,
        then the constants, then each step's outputs in order. Returns the constants; per
        step its primitive, stream, shapes, dtypes and the fetcher of its inputs (a tuple of
        values from the flat list); per output whether it is an input, and its position."""
        plan = self.replays.get(fused)
        if plan is not None:
            return plan
        steps, outs = (self.steps, self.outs) if fused else self.unfused
        consts: list[Array] = []
        at: dict[int, int] = {}  # id of a constant's array -> its position
        for r in [r for step in steps for r in step[2]] + list(outs):
            if r[0] not in ("in", "op") and id(r[1]) not in at:
                at[id(r[1])] = len(self.in_dtypes) + len(consts)
                consts.append(r[1])
        starts = []  # each step's first output's position
        first = len(self.in_dtypes) + len(consts)
        for step in steps:
            starts.append(first)
            first += len(step[3])

        def position(ref: Ref) -> int:
            kind = ref[0]
            if kind == "op":
                return starts[ref[1]] + ref[2]
            return ref[1] if kind == "in" else at[id(ref[1])]

        replay = []
        for primitive, stream, refs, shapes, dtypes in steps:
            replay.append((primitive, stream, shapes, dtypes,
                           fetcher([position(r) for r in refs])))
        plan = consts, replay, [(r[0] == "in", position(r)) for r in outs]
        self.replays[fused] = plan
        return plan

    def __call__(self, inputs: Sequence[Array], shapeless: bool, fused: bool = True
                 ) -> list[Array]:
        """Records the steps on `inputs`; with the traced shapes, or the primitives' own
        shape rules if `shapeless`; the steps before fusion if not `fused`."""
        if shapeless and (self.like or self.scalars):
            steps, outs = self.unfused
            results = replay(steps, outs, self.like, self.scalars, inputs)
            return [handle(r._node, r._index) if o[0] == "in" else r
                    for r, o in zip(results, outs)]
        consts, replay_plan, outs = self._replay(fused)
        flat = [*inputs, *consts]
        for primitive, stream, shapes, dtypes, fetch in replay_plan:
            if shapeless:
                flat.extend(record(primitive, fetch(flat), stream))
            elif len(shapes) == 1:
                flat.append(handle(Node(primitive, fetch(flat), stream, shapes, dtypes), 0))
            else:
                node = Node(primitive, fetch(flat), stream, shapes, dtypes)
                flat.extend([handle(node, i) for i in range(len(shapes))])
        # an input passed through comes back as a new handle: rebinding one (an in-place
        # update) never rebinds the other
        return [handle(flat[i]._node, flat[i]._index) if passed else flat[i]
                for passed, i in outs]


def replay(steps: Sequence[tuple], outs: Sequence[Ref], like: dict[int, Ref],
           scalars: dict[tuple[int, int], tuple[Array, Ref]],
           inputs: Sequence[Array]) -> list[Array]:
    """Records `steps` on `inputs` with the primitives' own shape rules; a broadcast step in
    `like` takes the new shape of the value it names, recorded when its consumer reads it
    (that value may come later in the steps), and a constant in `scalars` is its value
    broadcast to the new shape of the step's input it names."""
    made: dict[int, list[Array]] = {}

    def value(ref: Ref) -> Array:
        kind = ref[0]
        if kind == "in":
            return inputs[ref[1]]
        if kind != "op":
            return ref[1]
        i = ref[1]
        if i not in made:  # a broadcast of `like`
            _, stream, refs, _, _ = steps[i]
            made[i] = record(BroadcastTo(value(like[i]).shape), [value(refs[0])], stream)
        return made[i][ref[2]]

    def argument(i: int, k: int, ref: Ref, stream: Any) -> Array:
        scalar = scalars.get((i, k))
        if scalar is None:
            return value(ref)
        return record(BroadcastTo(value(scalar[1]).shape), [scalar[0]], stream)[0]

    for i, (primitive, stream, refs, _, _) in enumerate(steps):
        if i not in like:
            made[i] = record(primitive, [argument(i, k, r, stream) for k, r in enumerate(refs)],
                             stream)
    return [value(r) for r in outs]


class _VjpPrograms:
    """A program's reverse mode, traced once: `forward` computes its outputs and the residuals
    (the values of the forward pass its backward reads), `backward` the cotangents of its
    inputs from the inputs, the residuals and the outputs' cotangents. Both are simplified and
    fused as the program is, so `grad(compile(f))` replays a fused backward pass without
    tracing it again, and computes the forward pass once."""

    def __init__(self, program: _Program, like: Sequence[Array]):
        full: list[Array] = []  # every output of the traced forward pass

        def outputs(*xs: Array) -> list[Array]:
            full[:] = program(list(xs), False, fused=False)
            return [full[i] for i in self.inexact]

        def derive() -> tuple[list[Array], list[Array], list[Array]]:
            primals = [placeholder(a.shape, a.dtype, a.stream) for a in like]
            probe = program(primals, False)
            # integer outputs (a random state, say) take no cotangent, as in any transform
            self.inexact = [i for i, o in enumerate(probe) if o.dtype.is_inexact]
            cots = [placeholder(probe[i].shape, probe[i].dtype, probe[i].stream)
                    for i in self.inexact]
            grads = pullback(outputs, primals, cots)[1]
            return primals, cots, grads

        primals, cots, grads = untraced(derive)
        cot_nodes = {c._node for c in cots}
        later: set[Node] = set()  # nodes of the backward pass (they read a cotangent)
        residuals: dict[Key, None] = {}
        for node in traced_graph(grads, set(), into_custom=True):
            if any(s in cot_nodes or s in later for s in node.sources):
                later.add(node)
                for key in zip(node.sources, node.indices):
                    if key[0] not in later and key[0].primitive is not None:
                        residuals[key] = None
        keys = [key_of(p) for p in primals]
        self.n_outs = len(full)
        self.forward = _Program(keys, full + [handle(*k) for k in residuals])
        self.backward = _Program(keys + list(residuals) + [key_of(c) for c in cots], grads,
                                 stops=frozenset(k[0] for k in residuals))
        self.reusable = (self.forward.reusable and self.backward.reusable
                         and bool(self.inexact))

    def __call__(self, program: _Program, inputs: list[Array]) -> list[Array]:
        """The outputs, recorded with the backward program as their reverse-mode rule."""
        values = untraced(lambda: self.forward(inputs, False))
        outs, residuals = values[: self.n_outs], values[self.n_outs:]

        def backward(primals, cotangents, outputs, wanted):
            cots = [cotangents[i] for i in self.inexact]
            return self.backward([*primals, *residuals, *cots], False)

        rule = CustomTransforms(len(inputs), lambda *xs: program(list(xs), False), backward)
        return record(rule, [*inputs, *outs], to_stream(None))


def _differentiated(inputs: Sequence[Array]) -> bool:
    """Whether `inputs` are the primals a reverse-mode transform has just marked (`grad`,
    `vjp` of the compiled function itself: each input evaluated or a mark over an evaluated
    array, at least one marked). Inputs computed inside a trace (an enclosing `compile`,
    `vmap` or a function of the primals) take the plain replay."""
    if not tracing.depth:
        return False
    marked = False
    for a in inputs:
        node = a._node
        if node.data is not None and not node.keep:
            continue
        if not (node.primitive is COPY and node.keep and node.sources[0].data is not None):
            return False
        marked = True
    return marked


def _gpu_covers(primitive: Any, dtype: Any) -> bool:
    """Whether the generated CUDA kernel of a fused chain takes a step (`primitive` None:
    only whether it takes the `dtype`)."""
    # imported at fusion time: the CUDA launchers are a backend, below nothing at import
    from nuvec.backends.cuda.launchers.fused import covers

    return covers(primitive, dtype)


def _same_ref(a: Ref, b: Ref) -> bool:
    """Whether two programs' references name the same value: the same input or step output,
    or constants equal in shape, dtype and every element."""
    if a[0] != b[0]:
        return False
    if a[0] in ("in", "op"):
        return a == b
    x, y = a[1], b[1]
    if x is y:
        return True
    if a[0] != "const" or x.shape != y.shape or x.dtype != y.dtype:
        return False
    return bool(np.array_equal(np.asarray(x), np.asarray(y), equal_nan=x.dtype.is_inexact))


def _equal_primitives(p1: Any, p2: Any) -> bool:
    """Whether two steps' primitives are equal (False for parameters that do not compare,
    such as arrays)."""
    try:
        return bool(p1 == p2)
    except (TypeError, ValueError):
        return False


def _values_differ(a: _Program, b: _Program) -> bool:
    """Whether two traces have steps of equal primitives (broadcasts' targets aside) and
    differ in the value of a constant, not only in its shape: what a closure that changed
    between the traces makes, and a shape's own constant (a mean's `1 / n`) too."""
    steps, other = a.unfused[0], b.unfused[0]
    if len(steps) != len(other):
        return False
    differ = False
    for (p1, _, r1, _, _), (p2, _, r2, _, _) in zip(steps, other):
        if type(p1) is not type(p2) or len(r1) != len(r2):
            return False
        if type(p1) is not BroadcastTo and not _equal_primitives(p1, p2):
            return False
        differ = differ or any(x[0] == "const" == y[0] and not _same_ref(x, y)
                               and _repeated_value(x, y) is None for x, y in zip(r1, r2))
    return differ


def _same_kind(a: Ref, b: Ref) -> bool:
    """Whether two programs' references name the same input or step output, or constants of
    one shape and dtype (their values may differ)."""
    if a[0] != b[0]:
        return False
    if a[0] != "const":
        return a == b if a[0] in ("in", "op") else a[1] is b[1]
    return a[1].shape == b[1].shape and a[1].dtype == b[1].dtype


def _repeated_value(a: Ref, b: Ref) -> Array | None:
    """The 0-d value two constants of different shapes repeat (a weak scalar broadcast to
    each trace's shape), or None if they are not that."""
    if a[0] != "const" or b[0] != "const" or a[1].dtype != b[1].dtype:
        return None
    x, y = np.asarray(a[1]), np.asarray(b[1])
    if x.size == 0 or y.size == 0 or x.ndim != y.ndim:
        return None
    first = x.reshape(-1)[0]
    same = x.dtype.kind != "f" or not np.isnan(first)
    if not (same and np.all(x == first) and np.all(y == first)):
        return None
    return from_data(x.reshape(-1)[:1].reshape(()), a[1].dtype)


def _foldable(node: Node, inputs: tuple[Ref, ...], fold_arrays: bool) -> bool:
    """Whether a step is evaluated once at the trace: its inputs are all constants and it is
    not a broadcast (a view costs nothing to keep, and a shapeless program replays it to other
    shapes). Without `fold_arrays` (an export) none of them has more than one element: its
    result would be a copy of a weight the file stores already, once per trace."""
    return (all(r[0] == "const" for r in inputs) and not isinstance(node.primitive, BroadcastTo)
            and (fold_arrays or all(r[1].size <= 1 for r in inputs)))


def _ref_id(ref: Ref) -> Any:
    return ref if ref[0] in ("in", "op") else (ref[0], id(ref[1]._node), ref[1]._index)


def _state_arrays(tree: Any) -> list[Array]:
    """The array handles in a tree of captured state (lists, tuples, dicts and dict subclasses
    such as modules); other leaves are ignored, as MLX does."""
    return [x for x in all_leaves(tree) if isinstance(x, Array)]


def _signature(arrays: Sequence[Array], shapeless: bool) -> tuple:
    return tuple((a.ndim if shapeless else a.shape, a.dtype) for a in arrays)


def _split_args(args: tuple, kwargs: dict) -> tuple[list[Array], Any, tuple]:
    """The array leaves of the arguments, their tree structure and the non-array leaves."""
    leaves, treedef = flatten([list(args), kwargs])
    constants = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Array):
            continue
        if not isinstance(leaf, _CONSTANTS):
            raise ValueError(
                "compile: function arguments must be trees of arrays or constants (bool, int, "
                f"float, complex, str, None), got {type(leaf).__name__}"
            )
        constants.append((i, type(leaf), leaf))
    return leaves, treedef, tuple(constants)


def _trace(fun: Callable[..., Any], leaves: list, treedef: Any, state_in: list[Array],
           outputs: Any, fused: bool, op: str = "compile",
           fold_arrays: bool = True) -> tuple[_Program, Any, int]:
    """Traces `fun` on placeholders for its arrays and the captured inputs; restores the state.
    `fold_arrays`: as `_Program` takes it."""
    stand_ins = [placeholder(a.shape, a.dtype, a.stream) if isinstance(a, Array) else a
                 for a in leaves]
    saved = [handle(a._node, a._index) for a in state_in]
    state_stand_ins = [placeholder(a.shape, a.dtype, a.stream) for a in state_in]
    # the inputs' keys before `fun` runs: it may update an argument in place (`x += 1`)
    keys = [key_of(p) for p in stand_ins + state_stand_ins if isinstance(p, Array)]
    for a, p in zip(state_in, state_stand_ins):
        a._rebind(p)
    inner: set[Node] = set()
    try:
        args, kwargs = unflatten(treedef, stand_ins)
        result = trace(fun, args, kwargs, op, inner)
        leaves_out, tree_out = flatten(result)
        outs = [o for o in leaves_out if isinstance(o, Array)]
        # other leaves (numbers, strings, None) come back as the trace returned them, as MLX's
        out_def = (tree_out, [None if isinstance(o, Array) else (o,) for o in leaves_out])
        state_out = [key_of(a) for a in _state_arrays(outputs)]
    finally:
        for a, s in zip(state_in, saved):
            a._rebind(s)
    finals = outs + [handle(*k) for k in state_out]
    program = _Program(keys, finals, fused, inner=inner, fold_arrays=fold_arrays)
    release(finals)
    return program, out_def, len(state_out)


def trace_program(fun: Callable[..., Any], args: tuple, kwargs: dict,
                  op: str) -> tuple[_Program, Any]:
    """`fun` traced on placeholders for the arrays of `args` and `kwargs` into an unfused
    program, and the structure of its result (`export_function`'s trace: steps reading
    constants of more than one element are kept, not folded into new constants)."""
    leaves, treedef, _ = _split_args(args, kwargs)
    program, out_def, _ = _trace(fun, leaves, treedef, [], None, False, op, fold_arrays=False)
    return program, out_def


def compile(
    fun: Callable[..., Any], inputs: Any = None, outputs: Any = None, shapeless: bool = False
) -> Callable[..., Any]:
    """Returns a compiled function which produces the same outputs as `fun` (MLX's `compile`).

    The first call traces `fun` into a graph, simplified (common subexpressions merged,
    constants folded); later calls with the same argument structure, array shapes and dtypes
    and equal non-array arguments replay that graph without running `fun`'s Python. Any other
    call traces again. Arrays `fun` reads from enclosing scopes are constants frozen at the
    trace unless named in `inputs`; arrays it replaces in enclosing state are lost unless
    named in `outputs`. `fun` must not evaluate the arrays it computes (no `eval`, `item`,
    printing): the trace has no values.

    Args:
        fun: takes arrays, trees of arrays or constants (bool, int, float, str, None) and
            returns arrays or trees of arrays; other leaves of its result (numbers, strings,
            None) are returned as the trace returned them.
        inputs: captured state read at each call: an array, or a list, tuple or dict (a
            module, an optimizer's `state`, `mx.random.state`) of nested lists, tuples, dicts
            and arrays; other leaves are ignored.
        outputs: captured state written back after each call: new arrays are put into its
            lists and dicts, as MLX fills them (an array held directly by a tuple is not
            replaced, as in MLX).
        shapeless: if True, a change of shape alone does not retrace (a change of rank or
            dtype does) once a trace at a second shape has given the same graph; a function
            whose graph holds its shapes (a mean, a broadcast scalar, a slice) gets a program
            per shape instead.

    Returns:
        A function with `fun`'s name, docstring and signature.

    Raises:
        TypeError: if `fun` is not callable or `shapeless` is not a bool.
        ValueError: if `outputs` is an array; at a call, if an
            argument leaf is neither an array nor a constant, or if `fun` evaluates an array
            it computes.

    Example:
        >>> import nuvec as mx
        >>> f = mx.compile(lambda x: mx.exp(x) + 1)
        >>> f(mx.array(0.0)).item()
        2.0
    """
    if not callable(fun):
        raise TypeError(f"compile: fun must be callable, got {type(fun).__name__}")
    if not isinstance(shapeless, bool):
        raise TypeError(f"compile: shapeless must be a bool, got {type(shapeless).__name__}")
    if isinstance(outputs, Array):  # (a new array could not be put into it)
        raise ValueError("compile: outputs must be a list, tuple or dict of captured state "
                         "(arrays nested in lists and dicts), got an array")
    cache: dict[Any, tuple[_Program, Any, int, tuple]] = {}
    # shapeless: per key of ranks, whether a trace at a second shape gave the same graph
    shape_free: dict[Any, bool] = {}

    @functools.wraps(fun)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        if not _settings["enabled"]:
            _split_args(args, kwargs)  # (the arguments checked as when compiled, as MLX does)
            return fun(*args, **kwargs)
        state_in = _state_arrays(inputs)
        if not kwargs and all(type(a) is Array for a in args):
            # arrays only (the common call): keyed by their number, with no tree to flatten
            arrays = list(args)
            key: tuple = (len(arrays), _signature(arrays, shapeless),
                          _signature(state_in, shapeless))
        else:
            leaves, treedef, constants = _split_args(args, kwargs)
            arrays = [a for a in leaves if isinstance(a, Array)]
            key = (treedef, constants, _signature(arrays, shapeless),
                   _signature(state_in, shapeless))
        program_inputs = arrays + state_in
        shapes = _signature(program_inputs, False) if shapeless else None
        # (one tree for both, as MLX code passes its state: the same arrays, found once)
        n_out = len(state_in) if outputs is inputs else len(_state_arrays(outputs))

        def traced(at: Any, fused: bool) -> tuple[_Program, Any, int, tuple]:
            leaves, treedef, _ = _split_args(args, kwargs)
            found = (*_trace(fun, leaves, treedef, state_in, outputs, fused), shapes)
            if found[0].reusable:
                cache[at] = found
            return found

        def closure_changed(first: tuple, other: _Program) -> bool:
            """Whether the graph is free of shapes under the closure `fun` reads now, and
            differs from the first trace's in constants alone: the closure changed, and the
            first trace replays at other shapes, as MLX's (a trace at the first shapes tells,
            where the captured state kept its shapes)."""
            n = len(arrays)
            if first[3][n:] != shapes[n:] or not _values_differ(first[0], other):
                return False
            leaves, treedef, _ = _split_args(args, kwargs)
            old = iter(first[3][:n])
            stand_ins = [placeholder(*next(old), a.stream) if isinstance(a, Array) else a
                         for a in leaves]
            again = _trace(fun, stand_ins, treedef, state_in, outputs, False)[0]
            # (a closure that did not change gives `first` again, whose graph at the other
            # shapes already differed)
            return again.reusable and again.same_graph(other) and first[0].adopt(again)

        entry = cache.get(key)
        if entry is None or entry[2] != n_out:
            entry = traced(key, not shapeless)
        other_shapes = shapeless and entry[3] != shapes
        if other_shapes and not shape_free.get(key, False):
            # A shapeless program replays at other shapes once a trace at a second shape gave
            # the same graph. Where it did not (a mean's 1 / n, a broadcast, a slice or a
            # reshape that holds the traced shape), each shape has a program of its own.
            exact = cache.get((key, shapes))
            if exact is None:
                exact = traced((key, shapes), True)
                if key not in shape_free:
                    shape_free[key] = (entry[0].same_graph(exact[0])
                                       or closure_changed(entry, exact[0]))
            if not shape_free[key]:
                entry, other_shapes = exact, False
        program, out_def, n_state, _ = entry
        if not other_shapes and _differentiated(program_inputs):
            results = _with_vjp(program, program_inputs)
        else:
            results = program(program_inputs, other_shapes)
        returned = iter(results[: len(results) - n_state])
        if n_state:  # new arrays into the state's containers; arrays taken out keep theirs
            state = iter(results[len(results) - n_state:])
            replace_leaves(outputs, lambda x: next(state) if isinstance(x, Array) else x)
        tree_out, fixed = out_def
        return unflatten(tree_out, [next(returned) if f is None else f[0] for f in fixed])

    return compiled


def _with_vjp(program: _Program, inputs: list[Array]) -> list[Array]:
    """`program`'s outputs on `inputs` with its traced reverse mode (see `_VjpPrograms`),
    traced at the first such call and kept by the program."""
    split = program.reverse
    if split is None:
        split = _VjpPrograms(program, inputs)
        if not split.reusable:
            return program(inputs, False)
        program.reverse = split
    return split(program, inputs)


def disable_compile() -> None:
    """Turns compilation off globally (MLX's `disable_compile`, for debugging).

    Compiled functions then call their function directly, running its Python at every call.
    A process started with the environment variable `MLX_DISABLE_COMPILE` set begins so.

    Example:
        >>> import nuvec as mx
        >>> mx.disable_compile()
        >>> mx.compile(lambda x: x * 2)(mx.array(3)).item()
        6
        >>> mx.enable_compile()
    """
    _settings["enabled"] = False


def enable_compile() -> None:
    """Turns compilation back on globally (MLX's `enable_compile`); see `disable_compile`.

    Example:
        >>> import nuvec as mx
        >>> mx.enable_compile()
        >>> mx.compile(lambda x: x * 2)(mx.array(3)).item()
        6
    """
    _settings["enabled"] = True
