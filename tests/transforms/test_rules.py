"""The rule table: every `OpSpec` row of `tests/transforms/spec_*.py`, checked by one driver.

For each row: the float64 numerical-gradient check, jvp against vjp, and vmap against a Python
loop (batch axis first, last and negative). The completeness test fails for every primitive
class of `nuvec.ops`, `nuvec.fast` and `nuvec.graph` that no row covers.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest

import nuvec
from nuvec.graph.primitive import Primitive
from nuvec.testing import OpSpec, run_grad_checks, run_vmap_checks

HERE = Path(__file__).parent
PACKAGES = ("nuvec.graph", "nuvec.ops", "nuvec.transforms", "nuvec.fast")


def _load_specs() -> list[tuple[str, OpSpec]]:
    """Imports every `spec_*.py` beside this file; returns (family, row) pairs in file order."""
    rows = []
    for path in sorted(HERE.glob("spec_*.py")):
        family = path.stem[len("spec_"):]
        name = f"nuvec_rule_specs.{path.stem}"
        module = sys.modules.get(name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        for row in module.SPECS:
            rows.append((family, row))
    return rows


ROWS = _load_specs()
SPECS = [row for _, row in ROWS]


def is_abstract(cls: type) -> bool:
    """`Primitive`, the rule families (`nuvec.ops.families`), classes marked `abstract = True`."""
    return (
        cls is Primitive
        or cls.__module__ == "nuvec.ops.families"
        or vars(cls).get("abstract", False) is True
    )


def primitive_classes() -> list[type]:
    """Every concrete `Primitive` subclass defined in a module of `PACKAGES`."""
    found: dict[str, type] = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names = [package_name] + [
            info.name
            for info in pkgutil.walk_packages(package.__path__, prefix=package_name + ".")
        ]
        for module_name in names:
            module = importlib.import_module(module_name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, Primitive)
                    and cls.__module__ == module_name
                    and not is_abstract(cls)
                ):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


@pytest.mark.parametrize("spec", [s for s in SPECS if s.grad], ids=lambda s: s.name)
def test_grad(spec: OpSpec) -> None:
    run_grad_checks(spec)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.vmap], ids=lambda s: s.name)
def test_vmap(spec: OpSpec) -> None:
    run_vmap_checks(spec)


def test_row_names_are_unique() -> None:
    seen: dict[str, str] = {}
    duplicates = []
    for family, row in ROWS:
        if row.name in seen:
            duplicates.append(f"{row.name} (spec_{seen[row.name]}.py, spec_{family}.py)")
        seen[row.name] = family
    assert not duplicates, "duplicate row names: " + ", ".join(duplicates)


def test_covers_lists_primitive_classes() -> None:
    # A row of a composition (no primitive of its own) may cover nothing.
    for family, row in ROWS:
        for cls in row.covers:
            assert isinstance(cls, type) and issubclass(cls, Primitive), (
                f"spec_{family}.py: row {row.name} covers {cls!r}, not a Primitive subclass"
            )


def test_every_primitive_has_a_row() -> None:
    covered = {cls for row in SPECS for cls in row.covers}
    missing = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in primitive_classes()
        if cls not in covered
    ]
    assert not missing, f"{len(missing)} primitives have no OpSpec row: " + ", ".join(missing)


def test_discovery_finds_known_primitives() -> None:
    found = set(primitive_classes())
    assert nuvec.ops.unary.Exp in found
    assert nuvec.graph.primitive.Copy in found
    assert Primitive not in found
    assert not any(cls.__module__ == "nuvec.ops.families" for cls in found)
