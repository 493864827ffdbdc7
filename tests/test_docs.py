"""The documentation stays true: API pages current, links resolving, every example running.

- The pages under `docs/api/` equal what `docs/build_api.py` writes now.
- Every relative link in `docs/**/*.md` and `README.md` names an existing file (and heading),
  and every repository path they name (`nuvec/...`, `tests/...`) exists.
- `docs/dev/layout.md` names every module of `nuvec/graph`, `nuvec/ops` and `nuvec/fast`.
- Every ```python block of those pages runs, the blocks of one page in order in one namespace
  (a block preceded by the line `<!-- no-run -->` is skipped).
- Every docstring example (`>>>`) of the documented namespaces gives its printed result.
"""

from __future__ import annotations

import doctest
import importlib.util
import inspect
import re
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import nuvec
from nuvec.backends.numpy import kernels as cpu_kernels

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^([ \t]*)```.*?^\1```[ \t]*$", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PYTHON_BLOCK = re.compile(r"^([ \t]*)```python\n(.*?)^\1```[ \t]*$", re.S | re.M)
NO_RUN = "<!-- no-run -->"


def _load_builder() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("nuvec_docs_build_api", DOCS / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_api = _load_builder()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_api_pages_are_current(tmp_path: Path) -> None:
    build_api.write(tmp_path)
    fresh = {str(p.relative_to(tmp_path)): p.read_text() for p in tmp_path.rglob("*.md")}
    committed = {
        str(p.relative_to(DOCS / "api")): p.read_text() for p in (DOCS / "api").rglob("*.md")
    }
    stale = sorted(name for name in fresh.keys() | committed.keys()
                   if fresh.get(name) != committed.get(name))
    assert not stale, f"docs/api is stale in {stale}: run `python docs/build_api.py`"


def _headings(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {build_api.anchor(line.lstrip("#")) for line in text.splitlines()
            if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        path = (page.parent / file_part).resolve() if file_part else page
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and path.suffix == ".md" and fragment not in _headings(path):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{_name(page)}: broken links {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_named_paths_exist(page: Path) -> None:
    code = r"`((?:nuvec|tests|docs|benchmarks|examples)/[\w/.-]*)`"  # patterns (`*`, `<`) skipped
    named = set(re.findall(code, page.read_text()))
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{_name(page)} names paths that do not exist: {missing}"


def test_layout_names_every_module() -> None:
    layout = (DOCS / "dev" / "layout.md").read_text()
    modules = [
        p for package in ("graph", "ops", "transforms", "fast")
        for p in (ROOT / "nuvec" / package).glob("*.py")
    ]
    missing = sorted(str(p.relative_to(ROOT)) for p in modules
                     if p.name != "__init__.py" and f"{p.name}`" not in layout)
    assert not missing, f"docs/dev/layout.md does not name {missing}"


def _python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, code) of each runnable ```python block of a page."""
    text = page.read_text()
    blocks = []
    for match in PYTHON_BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.strip() != NO_RUN:
            code = textwrap.dedent(match.group(2))
            blocks.append((text.count("\n", 0, match.start()) + 2, code))
    return blocks


EXAMPLE_PAGES = [page for page in PAGES if _python_blocks(page)]


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=_name)
def test_code_examples_run(page: Path) -> None:
    namespace: dict = {"__name__": "__docs__"}
    registered = dict(cpu_kernels)  # pages may register kernels of their example primitives
    try:
        for line, code in _python_blocks(page):
            exec(compile(code, f"{_name(page)}:{line}", "exec"), namespace)
        nuvec.synchronize()
    finally:
        cpu_kernels.clear()
        cpu_kernels.update(registered)


def _documented() -> list[tuple[str, object]]:
    """(qualified name, object) of every public function and class the API pages document."""
    found, seen = [], set()
    namespaces = [("nuvec", nuvec, sorted(dir(nuvec)))] + [
        (ns, module, build_api.public_names(module)) for ns, module, _ in build_api.NAMESPACES
    ]
    for prefix, module, names in namespaces:
        for name in names:
            obj = getattr(module, name)
            if name.startswith("_") or id(obj) in seen:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                seen.add(id(obj))
                found.append((f"{prefix}.{name}", obj))
    return found


DOCTESTS = [
    test
    for qualified, obj in _documented()
    for test in doctest.DocTestFinder(recurse=False).find(
        obj,
        qualified,
        globs={**vars(inspect.getmodule(obj)), "mx": nuvec, "np": np},
    )
    if test.examples
]


@pytest.mark.parametrize("test", DOCTESTS, ids=lambda t: t.name)
def test_docstring_examples_run(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    output: list[str] = []
    runner.run(test, out=output.append)
    assert not runner.failures, "".join(output)
