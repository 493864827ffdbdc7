"""Kernel tables: every primitive computes on the CPU, and on the GPU through a GPU body or the
one listed CPU route; the shared bodies are the CPU's kernels."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.common.registry import SHARED, Bodies
from nuvec.backends.cpu_route import CPU_ROUTE
from nuvec.backends.cupy import special
from nuvec.backends.cupy.table import FUSED_CLASSES, GPU, build_table
from nuvec.backends.double import DoubleBackend
from nuvec.backends.numpy import table as cpu_table
from nuvec.distributed.kernels import GPU_KERNELS
from nuvec.distributed.kernels import KERNELS as CPU_COLLECTIVES
from nuvec.graph.backend import KernelTable
from nuvec.graph.primitive import Primitive


def _concrete_primitives() -> list[type]:
    found, todo = [], [Primitive]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        # family bases (with subclasses) are not primitives unless they have a kernel
        leaf = not cls.__subclasses__() or cls in cpu_table
        if cls.__module__.startswith("nuvec.") and not cls.__dict__.get("abstract", False):
            if cls is not Primitive and not cls.__name__.startswith("_") and leaf:
                found.append(cls)
    return sorted(set(found), key=lambda c: (c.__module__, c.__name__))


PRIMITIVES = _concrete_primitives()
# collectives get their kernels from `nuvec.distributed.init` (MPI on the CPU, NCCL on the GPU)
COLLECTIVES = set(GPU_KERNELS) | set(CPU_COLLECTIVES)
GPU_BODIES = (set(SHARED.classes()) | set(GPU.classes()) | set(special.CLASSES)
              | set(FUSED_CLASSES) | set(GPU_KERNELS))


def test_the_walk_finds_the_primitives():
    names = {cls.__name__ for cls in PRIMITIVES}
    assert {"Add", "Exp", "Matmul", "Sum", "RmsNorm", "Attention"} <= names


@pytest.mark.parametrize("cls", PRIMITIVES, ids=lambda c: c.__name__)
def test_every_primitive_has_a_cpu_kernel(cls):
    assert cls in cpu_table or cls in CPU_COLLECTIVES, f"{cls.__name__} has no CPU kernel"


@pytest.mark.parametrize("cls", PRIMITIVES, ids=lambda c: c.__name__)
def test_every_primitive_has_a_gpu_body_or_a_listed_cpu_route(cls):
    body, routed = cls in GPU_BODIES, cls in CPU_ROUTE
    assert body or routed, f"{cls.__name__} has neither a GPU body nor an entry in CPU_ROUTE"
    assert not (body and routed), f"{cls.__name__} has a GPU body and is listed in CPU_ROUTE"


def test_cpu_route_reasons_are_written():
    for cls, reason in CPU_ROUTE.items():
        assert isinstance(reason, str) and len(reason) > 20, cls.__name__


def test_gpu_table_over_numpy_covers_every_primitive():
    table = build_table(np, "gpu-check", cpu_table, np.asarray, np.asarray,
                        {cls: cpu_table.kernels[cls] for cls in special.CLASSES})
    assert {cls for cls in PRIMITIVES} - set(FUSED_CLASSES) - COLLECTIVES <= set(table.kernels)
    assert set(DoubleBackend().kernels.kernels) == set(table.kernels) | set(FUSED_CLASSES)


def test_cpu_table_uses_the_shared_body():
    # the CPU kernel of a shared primitive is that body bound to NumPy (or a NumPy override)
    x = np.array([0.0, 1.0], np.float32)
    kind = type(mx.exp(mx.array(x)).primitive)
    assert kind in SHARED
    assert np.array_equal(cpu_table.get(kind)(None, x), np.exp(x))


def test_a_second_kernel_for_a_class_raises():
    table = KernelTable("t")

    class Thing:
        pass

    table.add(Thing, lambda p: 1)
    with pytest.raises(ValueError, match="t: two kernels registered for Thing"):
        table.add(Thing, lambda p: 2)
    table.add(Thing, lambda p: 3, replace=True)
    assert table.get(Thing)(None) == 3 and len(table) == 1 and list(table) == [Thing]


def test_a_second_body_for_a_class_raises():
    bodies = Bodies()

    class Thing:
        pass

    bodies.add(Thing, lambda xp, p: 1)
    with pytest.raises(ValueError, match="shared bodies: two bodies registered for Thing"):
        bodies.add_factory(Thing, lambda xp: (lambda p: 1))
