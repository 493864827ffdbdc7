"""The generated check over the public surface: every public callable of `nuvec`, `nuvec.fast`,
`nuvec.linalg`, `nuvec.fft` and `nuvec.random`, each parameter tried with the invalid values of
its kind (surface_kinds.BATTERY). Each must raise at the call a ValueError, TypeError,
IndexError or OverflowError whose message starts with the function's name and shows the value.

Failures not yet fixed are listed in known_failures.txt (one per line, `case  # reason`); the
list may only shrink: a new failure fails the test, and so does a listed case that now passes.
Run `python tests/surface/test_surface.py` to print the counts and the current failures.
"""

from __future__ import annotations

import inspect
import pathlib
import sys
from typing import Iterator

import nuvec as mx
from surface_kinds import (ALLOWED_CASES, BATTERY, KIND_OVERRIDES, SKIP, fill, judge, kind_of,
                           public_callables, run)

KNOWN = pathlib.Path(__file__).with_name("known_failures.txt")

# q, k, v, g and beta of a valid gated delta call
GATED = (mx.ones((1, 2, 1, 4)),) * 2 + (mx.ones((1, 2, 1, 3)),) + (mx.ones((1, 2, 1)),) * 2

# valid calls for functions the generic fills cannot satisfy: (args, kwargs)
VALID = {
    "fast.rope": ((mx.ones((1, 2, 4, 8)), 8), dict(traditional=False, base=10000.0, scale=1.0,
                                                   offset=0)),
    "fast.rms_norm": ((mx.ones((2, 8)), mx.ones((8,)), 1e-5), {}),
    "fast.layer_norm": ((mx.ones((2, 8)), mx.ones((8,)), mx.zeros((8,)), 1e-5), {}),
    "fast.add_rms_norm": ((mx.ones((2, 8)), mx.ones((2, 8)), mx.ones((8,)), 1e-5), {}),
    "fast.scaled_dot_product_attention": ((mx.ones((1, 2, 4, 8)),) * 3, dict(scale=0.5)),
    "fast.cross_entropy": ((mx.ones((3, 5)), mx.array([0, 1, 4])), {}),
    "conv1d": ((mx.ones((1, 8, 2)), mx.ones((3, 3, 2))), {}),
    "conv2d": ((mx.ones((1, 8, 8, 2)), mx.ones((3, 3, 3, 2))), {}),
    "conv3d": ((mx.ones((1, 4, 4, 4, 2)), mx.ones((3, 2, 2, 2, 2))), {}),
    "conv_transpose1d": ((mx.ones((1, 8, 2)), mx.ones((3, 3, 2))), {}),
    "conv_transpose2d": ((mx.ones((1, 8, 8, 2)), mx.ones((3, 3, 3, 2))), {}),
    "conv_transpose3d": ((mx.ones((1, 4, 4, 4, 2)), mx.ones((3, 2, 2, 2, 2))), {}),
    "conv_general": ((mx.ones((1, 8, 2)), mx.ones((3, 3, 2))), {}),
    "convolve": ((mx.ones((5,)), mx.ones((3,))), {}),
    "gather_mm": ((mx.ones((2, 3, 4)), mx.ones((2, 4, 5))), {}),
    "take_along_axis": ((mx.ones((3, 4)), mx.zeros((3, 1), dtype=mx.int32)), dict(axis=1)),
    "put_along_axis": ((mx.ones((3, 4)), mx.zeros((3, 1), dtype=mx.int32), mx.ones((3, 1))),
                       dict(axis=1)),
    "einsum": (("ij,jk", mx.ones((2, 2)), mx.ones((2, 2))), {}),
    "einsum_path": (("ij,jk", mx.ones((2, 2)), mx.ones((2, 2))), {}),
    "fft.irfft2": ((mx.ones((4, 4), dtype=mx.complex64),), {}),
    "slice": ((mx.ones((4, 4)), mx.array([0, 0]), (0, 1), (2, 2)), {}),
    "slice_update": ((mx.ones((4, 4)), mx.ones((2, 2)), mx.array([0, 0]), (0, 1)), {}),
    "random.multivariate_normal": ((mx.zeros((2,)), mx.eye(2)), {}),
    "random.categorical": ((mx.zeros((3, 4)),), {}),
    "linalg.cross": ((mx.ones((3,)), mx.ones((3,))), {}),
    "from_fp8": ((mx.zeros((4,), dtype=mx.uint8),), {}),
    "masked_scatter": ((mx.ones((4,)), mx.array([True, False, True, False]), mx.ones((2,))), {}),
    "full_like": ((mx.ones((4,)), 2.0), {}),
    "zeros_like": ((mx.ones((4,)),), {}),
    "ones_like": ((mx.ones((4,)),), {}),
    "bitwise_and": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "bitwise_or": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "bitwise_xor": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "bitwise_invert": ((mx.ones((4,), mx.int32),), {}),
    "left_shift": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "right_shift": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "bitwise_left_shift": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "bitwise_right_shift": ((mx.ones((4,), mx.int32), mx.ones((4,), mx.int32)), {}),
    "broadcast_to": ((mx.ones((4,)), (3, 4)), {}),
    "reshape": ((mx.ones((4, 4)), (2, 8)), {}),
    "unflatten": ((mx.ones((4, 4)), 1, (2, 2)), {}),
    "full": (((2, 3), 1.0), {}),
    "concatenate": (([mx.ones((2, 2)), mx.ones((2, 2))],), {}),
    "concat": (([mx.ones((2, 2)), mx.ones((2, 2))],), {}),
    "stack": (([mx.ones((2, 2)), mx.ones((2, 2))],), {}),
    "take": ((mx.ones((4, 4)), mx.array([0, 1])), {}),
    "random.randint": ((0, 10, (3,)), {}),
    "linalg.inv": ((mx.eye(3) * 2,), {}),
    "linalg.cholesky": ((mx.eye(3) * 2,), {}),
    "linalg.solve": ((mx.eye(3) * 2, mx.ones((3,))), {}),
    "searchsorted": ((mx.array([1.0, 2.0, 3.0]), mx.array([2.0, 5.0])), {}),
    "segmented_mm": ((mx.ones((2, 4)), mx.ones((4, 3)), mx.array([[0, 1], [1, 4]])), {}),
    "quantize": ((mx.ones((4, 64)),), dict(group_size=64, bits=4)),
    "dequantize": (mx.quantize(mx.ones((2, 64))), dict(group_size=64, bits=4)),
    "quantized_matmul": ((mx.ones((2, 64)),) + mx.quantize(mx.ones((3, 64))), {}),
    "gather_qmm": ((mx.ones((1, 2, 64)),) + mx.quantize(mx.ones((4, 3, 64))),
                   dict(rhs_indices=mx.array([3, 0]))),
    "qqmm": ((mx.ones((2, 32)), mx.ones((3, 32))), {}),
    "gather_qqmm": ((mx.ones((1, 2, 32)), mx.ones((4, 3, 32))),
                    dict(rhs_indices=mx.array([3, 0]))),
    "fast.gated_delta": (GATED + (mx.zeros((1, 1, 3, 4)),), {}),
    "fast.gated_delta_steps": (GATED + (mx.zeros((1, 1, 3, 4)),), {}),
    "fast.gated_delta_slots": (GATED + (mx.zeros((3, 1, 3, 4)), mx.array([2])), {}),
    "fast.gated_delta_update": (GATED, {}),
    "fast.gated_delta_from_projections": (
        GATED[:3] + (mx.zeros((1, 2, 1)),) * 2 + (mx.zeros((1,)),) * 2, {}),
    "fast.norm_rope": ((mx.ones((1, 2, 3, 8)), mx.ones((8,)), 1e-5),
                       dict(dims=8, base=1e4, offset=2, cache=mx.zeros((1, 2, 8, 8)))),
    "fast.packed_attention": ((mx.ones((5, 24)), [3, 2], mx.ones((3, 2)), mx.zeros((3, 2))),
                              dict(heads=2)),
    "fast.paged_attention": ((mx.ones((1, 2, 1, 4)), mx.ones((2, 1, 2, 4)), mx.ones((2, 1, 2, 4)),
                              mx.array([[0, 1]]), mx.array([3])), dict(scale=0.5)),
    "fast.paged_write": ((mx.zeros((2, 1, 2, 1)), mx.ones((1, 1, 1)), mx.array([3])), {}),
    "fast.plan_attention": (((1, 8, 1, 128), (1, 8, 64, 128), (1, 8, 64, 128), mx.float16), {}),
}

# one array candidate size per try: square matrices suit linalg, vectors suit 1-D ops
SQUARES = (4, 3)


def baseline(name: str, fn) -> tuple[list, dict, dict] | None:
    """A valid call of `fn` (args, kwargs, {param: kind}), or None if none is known."""
    params = [p for p in inspect.signature(fn).parameters.values()]
    kinds = {p.name: kind_of(p) for p in params} | KIND_OVERRIDES.get(name, {})
    candidates = [VALID[name]] if name in VALID else []
    for square in SQUARES:
        args, kwargs = [], {}
        for p in params:
            if p.default is not p.empty or p.kind is p.VAR_KEYWORD:
                continue
            value = fill(kinds[p.name], square)
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        candidates.append((tuple(args), kwargs))
    for args, kwargs in candidates:
        if run(fn, list(args), dict(kwargs))[0] == "ok":
            return list(args), dict(kwargs), kinds
    return None


def substitute(fn, args: list, kwargs: dict, pname: str, value):
    """The call with parameter `pname` set to `value`."""
    params = list(inspect.signature(fn).parameters.values())
    args, kwargs = list(args), dict(kwargs)
    for i, p in enumerate(params):
        if p.name != pname:
            continue
        if p.kind is p.VAR_POSITIONAL:
            return [value] + args[i:] if i < len(args) else args + [value], kwargs
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and i < len(args):
            args[i] = value
        elif p.kind is p.POSITIONAL_ONLY:
            return None
        else:
            kwargs[pname] = value
    return args, kwargs


def resolve(value, like):
    """The battery's placeholders made concrete for the parameter's valid value."""
    if value == "KEY3" and isinstance(value, str):
        return mx.ones((3,), dtype=mx.uint32)
    if value == "MISMATCH" and isinstance(value, str):
        return mx.ones((5, 7, 3))
    return value


def cases():
    """Yields (case id, function, args, kwargs, bad value) for the whole surface."""
    for name, fn in public_callables():
        if name in SKIP:
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        base = baseline(name, fn)
        if base is None:
            # no valid call known: only the stream is tried, any error must still be named
            if "stream" in sig.parameters:
                for label, bad in BATTERY["stream"]:
                    yield f"{name} stream={label} (no baseline)", fn, [], {"stream": bad}, None
            continue
        args, kwargs, kinds = base
        arrays = [p for p, k in kinds.items() if k == "array"]
        for pname, kind in kinds.items():
            if kind is None:
                continue
            battery = list(BATTERY[kind])
            if kind == "array" and len(arrays) > 1 and pname != arrays[0]:
                battery += BATTERY["pair"]
            for label, bad in battery:
                bad = resolve(bad, None)
                call = substitute(fn, args, kwargs, pname, bad)
                if call is not None:
                    yield f"{name} {pname}={label}", fn, call[0], call[1], bad


def outcomes() -> Iterator[tuple[str, str | None]]:
    """(case id, what went wrong or None) for every case of the surface."""
    for case, fn, args, kwargs, bad in cases():
        outcome, exc = run(fn, args, kwargs)
        yield case, judge(case.split(" ", 1)[0], bad, outcome, exc)


def collect() -> tuple[int, int, int, dict[str, str]]:
    """(callables, skipped, cases tried, {case: failure}), cases of ALLOWED_CASES left out."""
    failures, tried = {}, 0
    for case, problem in outcomes():
        tried += 1
        if problem is not None and case not in ALLOWED_CASES:
            failures[case] = problem
    n = sum(1 for name, _ in public_callables() if name not in SKIP)
    return n, len(SKIP), tried, failures


def known() -> dict[str, str]:
    """The recorded known failures: {case: reason}."""
    out = {}
    for line in KNOWN.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            case, _, reason = line.partition("  # ")
            out[case.strip()] = reason.strip()
    return out


def test_every_public_callable_rejects_bad_input_at_the_call():
    n, skipped, tried, failures = collect()
    assert n > 250 and tried > 1500
    listed = known()
    new = sorted(f"{c}: {p}" for c, p in failures.items() if c not in listed)
    fixed = sorted(c for c in listed if c not in failures)
    assert not new, "new failures:\n" + "\n".join(new)
    assert not fixed, "now passing, remove from known_failures.txt:\n" + "\n".join(fixed)


def test_known_failures_each_give_a_reason():
    assert all(known().values())


def test_allowed_cases_are_current_and_give_a_reason():
    """Each deliberate exception is still a case the check flags (else it is stale)."""
    flagged = {case for case, problem in outcomes() if problem is not None}
    assert all(ALLOWED_CASES.values())
    stale = sorted(c for c in ALLOWED_CASES if c not in flagged)
    assert not stale, "remove from ALLOWED_CASES:\n" + "\n".join(stale)


if __name__ == "__main__":
    n, skipped, tried, failures = collect()
    print(f"{n} callables ({skipped} skipped), {tried} invalid values, "
          f"{tried - len(failures) - len(ALLOWED_CASES)} rejected as required, "
          f"{len(ALLOWED_CASES)} allowed, {len(failures)} failures")
    if "--write" in sys.argv:
        header = "# case  # what is wrong; left: not yet fixed (the list may only shrink)\n"
        KNOWN.write_text(header + "".join(f"{c}  # {p}\n" for c, p in sorted(failures.items())))
    else:
        for c, p in sorted(failures.items()):
            print(f"{c}: {p}")
