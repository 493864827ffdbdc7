"""The package's import structure, read from the source with `ast` (nothing is imported).

Packages depend in one direction: graph <- ops <- transforms <- fast <- backends, with the
namespace modules (`nuvec/__init__.py`, `linalg.py`, `fft.py`, ...) and the packages `nn`,
`optimizers`, `distributed` on top. An import inside a function says why in a comment on its
line; no private name (`_x`) crosses a module, neither imported nor read off an imported module.
(The device registry in `graph/device.py` names backends by string, imported on first use of
their device: that is how `import nuvec` stays free of CuPy.)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nuvec"
LAYERS = ("graph", "ops", "transforms", "fast", "backends")  # from the bottom up
TOP = len(LAYERS)  # the namespace modules, nn, optimizers, distributed, ...


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int | None:
    """The rank of a nuvec module in the order, None for a module outside nuvec."""
    parts = module.split(".")
    if parts[0] != "nuvec":
        return None
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return TOP


@dataclass
class Import:
    line: int
    target: str  # the module imported from (or the module imported)
    name: str | None  # the name taken from it (`from target import name`), if any
    local: str  # the name bound in the importing module
    in_function: bool
    commented: bool


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, source: str, is_package: bool = False,
               known: frozenset[str] | set[str] = frozenset()) -> list[Import]:
    """Every import statement of `source`, at module level or inside a function."""
    lines = source.splitlines()
    found: list[Import] = []

    def commented(node: ast.stmt) -> bool:
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        own = lines[node.lineno - 1: node.end_lineno]
        return any("#" in text for text in own) or above.startswith("#")

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    local = alias.asname or alias.name.split(".")[0]
                    found.append(Import(child.lineno, alias.name, None, local, in_function,
                                        commented(child)))
            elif isinstance(child, ast.ImportFrom):
                base = resolve(module, is_package, child)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    target, name = (sub, None) if sub in known else (base, alias.name)
                    found.append(Import(child.lineno, target, name, alias.asname or alias.name,
                                        in_function, commented(child)))
            visit(child, inner)

    visit(ast.parse(source), False)
    return found


def upward(module: str, imports: list[Import]) -> list[str]:
    """Imports that point up the order (a lower package importing a higher one)."""
    own = layer(module)
    return [f"{module}:{i.line} imports {i.target}" for i in imports
            if layer(i.target) is not None and own is not None and layer(i.target) > own]


def unexplained(module: str, imports: list[Import]) -> list[str]:
    return [f"{module}:{i.line} imports {i.target} inside a function without a comment"
            for i in imports if i.in_function and not i.commented]


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_crossings(module: str, source: str, imports: list[Import]) -> list[str]:
    """Private names imported from another nuvec module, or read off an imported one."""
    out = [f"{module}:{i.line} imports {i.name} from {i.target}" for i in imports
           if i.name and private(i.name) and i.target.startswith("nuvec") and i.target != module]
    modules = {i.local: i.target for i in imports if i.name is None
               and i.target.startswith("nuvec")}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and private(node.attr)):
            out.append(f"{module}:{node.lineno} reads {node.attr} of {modules[node.value.id]}")
    return out


def problems(check) -> list[str]:
    out = []
    for module, path in MODULES.items():
        source = path.read_text()
        found = imports_of(module, source, path.name == "__init__.py", set(MODULES))
        out += check(module, source, found)
    return out


def test_no_import_points_up_the_order() -> None:
    found = problems(lambda module, source, imports: upward(module, imports))
    assert not found, "imports against graph <- ops <- transforms <- fast <- backends <- " \
                      "namespace:\n" + "\n".join(found)


def test_imports_inside_functions_give_their_reason() -> None:
    found = problems(lambda module, source, imports: unexplained(module, imports))
    assert not found, "\n".join(found)


def test_no_private_name_crosses_a_module() -> None:
    found = problems(private_crossings)
    assert not found, "\n".join(found)


def test_import_nuvec_needs_no_optional_library() -> None:
    code = ("import sys, nuvec; "
            "print([m for m in ('cupy', 'mpi4py', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


# Modules of ops that import siblings as modules (they call each other's functions at call time)
# load in any order: each is imported first, into packages whose `__init__` has not run.
ORDER_PROBE = """
import importlib, pathlib, sys, types
root = pathlib.Path("nuvec").resolve()
failed = []
for name in sys.argv[1:]:
    for key in [k for k in sys.modules if k == "nuvec" or k.startswith("nuvec.")]:
        del sys.modules[key]
    for package in ("", ".graph", ".ops", ".transforms", ".fast"):
        module = types.ModuleType("nuvec" + package)
        module.__path__ = [str(root / package[1:])]
        sys.modules["nuvec" + package] = module
    try:
        importlib.import_module(name)
    except ImportError as exc:
        failed.append(f"{name}: {exc}")
print("\\n".join(failed))
"""


def test_cyclic_ops_modules_load_in_any_order() -> None:
    cyclic = [m for m, p in MODULES.items() if m.startswith("nuvec.ops.")
              and "from nuvec.ops import " in p.read_text()]
    assert len(cyclic) > 5  # the elementwise, shape and reduction core
    out = subprocess.run([sys.executable, "-c", ORDER_PROBE, *cyclic], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", out.stdout


# The checks themselves, on small sources: each rule fires where it should and only there.
KNOWN = {"nuvec.ops", "nuvec.ops.shape", "nuvec.fast", "nuvec.fast.base", "nuvec.graph.array"}


@pytest.mark.parametrize("module, source, expected", [
    ("nuvec.graph.array", "from nuvec.ops.shape import reshape\n", 1),
    ("nuvec.graph.array", "def f():\n    import nuvec.fast.base  # why\n", 1),
    ("nuvec.ops.shape", "from nuvec.fast import base\n", 1),
    ("nuvec.ops.shape", "from nuvec import linalg\n", 1),
    ("nuvec.ops.shape", "from nuvec.graph.array import Array\nfrom nuvec.ops import shape\n", 0),
    ("nuvec.fast.base", "from nuvec import ops\nimport numpy as np\n", 0),
    ("nuvec.linalg", "from nuvec.fast.base import one\n", 0),
])
def test_upward_imports_are_found(module: str, source: str, expected: int) -> None:
    assert len(upward(module, imports_of(module, source, known=KNOWN))) == expected


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    from nuvec.ops.shape import reshape\n", 1),
    ("def f():\n    from nuvec.ops.shape import reshape  # shape imports this module\n", 0),
    ("def f():\n    # torch is optional\n    import torch\n", 0),
    ("class A:\n    def f(self):\n        import math\n", 1),
    ("from nuvec.ops.shape import reshape\n", 0),
])
def test_unexplained_function_imports_are_found(source: str, expected: int) -> None:
    assert len(unexplained("nuvec.ops.unary", imports_of("nuvec.ops.unary", source,
                                                         known=KNOWN))) == expected


@pytest.mark.parametrize("source, expected", [
    ("from nuvec.ops.shape import _helper\n", 1),
    ("from nuvec.ops import shape\nshape._helper(1)\n", 1),
    ("from nuvec.ops import shape\nshape.reshape(1)\nx._node\n", 0),
    ("from nuvec.ops.shape import __all__, helper as _helper\n", 0),
    ("from numpy import _core\n", 0),
])
def test_private_crossings_are_found(source: str, expected: int) -> None:
    found = private_crossings("nuvec.ops.unary", source,
                              imports_of("nuvec.ops.unary", source, known=KNOWN))
    assert len(found) == expected
