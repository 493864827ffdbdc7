"""Writes the API reference in `docs/api/` from the public signatures and docstrings.

Stdlib only (`inspect`). Run `python docs/build_api.py` after changing a public function;
`tests/test_docs.py` fails while the committed pages differ from what this script writes.
"""

from __future__ import annotations

import argparse
import inspect
import re
import types
from pathlib import Path
from typing import Any, Callable

import nuvec
import nuvec.fast.tuner
import nuvec.nn
import nuvec.optimizers
import nuvec.testing

API = Path(__file__).resolve().parent / "api"
PACKAGE_ROOT = Path(nuvec.__file__).resolve().parents[1]  # source paths are relative to it

# The families of the `nuvec` namespace: (page, title, what it holds, defining modules).
FAMILIES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("array", "The Array class",
     "The lazy array: its attributes and methods; the operators `+ - * / // % ** @`, the "
     "comparisons, `& | ^ ~ << >>` with their reflected and in-place forms; indexing with "
     "`a[key]`, `a[key] = value` and `a.at[key]` (see [indexing]({docs}/indexing.md)); "
     "printing.",
     ("nuvec.graph.array", "nuvec.graph.printing")),
    ("creation", "Creation", "Arrays from data, constants, ranges, grids, matrices, windows.",
     ("nuvec.ops.creation", "nuvec.ops.matrices")),
    ("elementwise", "Elementwise operations",
     "Unary and binary arithmetic, comparisons, logic and bitwise operations.",
     ("nuvec.ops.unary", "nuvec.ops.rounding", "nuvec.ops.complex_parts", "nuvec.ops.nonfinite",
      "nuvec.ops.binary", "nuvec.ops.comparison")),
    ("reductions", "Reductions and statistics",
     "Sums, products, extrema, softmax and logsumexp, means and variances.",
     ("nuvec.ops.reduction", "nuvec.fast.softmax_axes", "nuvec.ops.statistics")),
    ("shape", "Shape, joining and views",
     "Reshaping, transposing, broadcasting, joining, splitting and padding arrays.",
     ("nuvec.ops.shape", "nuvec.ops.atleast", "nuvec.ops.join")),
    ("indexing", "Indexing",
     "Gathers, scatters and dynamic slices (see also [indexing]({docs}/indexing.md)).",
     ("nuvec.ops.indexing", "nuvec.ops.slicing", "nuvec.ops.masked", "nuvec.ops.subscript")),
    ("sorting", "Sorting and scans", "Sorting, selection, searching and cumulative operations.",
     ("nuvec.ops.sorting", "nuvec.ops.unique", "nuvec.ops.scan")),
    ("contractions", "Contractions and matmul",
     "Matrix products, batched and gathered matmuls, tensor contractions.",
     ("nuvec.ops.matmul", "nuvec.ops.contraction", "nuvec.ops.einsum", "nuvec.ops.gathered",
      "nuvec.fast.gather")),
    ("convolution", "Convolution", "N-d convolutions and their transposes.",
     ("nuvec.ops.conv", "nuvec.ops.conv_transpose", "nuvec.fast.conv")),
    ("quantization", "Quantization", "Affine quantization and quantized matrix products.",
     ("nuvec.ops.quantized", "nuvec.ops.microscaled", "nuvec.ops.fp8")),
    ("devices", "Devices, streams, evaluation and memory",
     "Where operations run, when they compute, the memory they hold and the CPU's threads.",
     ("nuvec.graph.device", "nuvec.graph.evaluator", "nuvec.graph.memory",
      "nuvec.graph.buffers", "nuvec.graph.dot", "nuvec.backends.threads")),
    ("transforms", "Function transformations",
     "grad, vjp, jvp, vmap and custom rules (see also [transforms]({docs}/transforms.md)).",
     ("nuvec.transforms.autodiff", "nuvec.transforms.batching", "nuvec.transforms.custom",
      "nuvec.transforms.depends",
      "nuvec.graph.primitive", "nuvec.compilation", "nuvec.exporting")),
    ("io", "Saving and loading",
     "Arrays to and from `.npy`, `.npz`, `.safetensors` and `.gguf` files (see also "
     "[files]({docs}/files.md)).",
     ("nuvec.io", "nuvec.io.loading", "nuvec.io.numpy_files", "nuvec.io.safetensors_files",
      "nuvec.io.gguf_files", "nuvec.interop")),
    ("dtypes", "Dtypes", "Element types, their categories, promotion and limits.",
     ("nuvec.graph.dtypes",)),
]

# Names whose defining module spans several families.
NAME_FAMILY = {
    "hanning": "creation", "hamming": "creation", "blackman": "creation", "bartlett": "creation",
    "as_strided": "shape", "view": "shape", "hadamard_transform": "contractions",
    "gather_mm": "contractions", "block_masked_mm": "contractions",
    "segmented_mm": "contractions", "gather_qmm": "quantization",
    "stop_gradient": "transforms", "astype": "dtypes", "matrix_norm": "reductions",
    "ArrayLike": "array",
}

# The other namespaces: (page, module, what it holds).
NAMESPACES: list[tuple[str, types.ModuleType, str]] = [
    ("nuvec.random", nuvec.random, "Random keys and samplers, as `mlx.core.random`."),
    ("nuvec.linalg", nuvec.linalg,
     "Linear algebra, as `mlx.core.linalg` (see also [linalg]({docs}/linalg.md))."),
    ("nuvec.fft", nuvec.fft,
     "Fourier transforms, as `mlx.core.fft` (see also [linalg and fft]({docs}/linalg.md))."),
    ("nuvec.fast", nuvec.fast,
     "Fused operations and the attention planner (see also [fast]({docs}/fast.md))."),
    ("nuvec.fast.tuner", nuvec.fast.tuner,
     "The tile tuner of the CUDA kernels: forced schedules and the disk cache of picks (see "
     "also [fast]({docs}/fast.md))."),
    ("nuvec.cuda", nuvec.cuda, "Whether an NVIDIA GPU is available, as `mlx.core.cuda`."),
    ("nuvec.metal", nuvec.metal,
     "MLX's `mlx.core.metal` for Apple-GPU code: never available; the rest harmless."),
    ("nuvec.distributed", nuvec.distributed,
     "Communication between processes, as `mlx.core.distributed` (see also "
     "[distributed]({docs}/distributed.md))."),
    ("nuvec.utils", nuvec.utils, "Tree utilities, as `mlx.utils`."),
    ("nuvec.nn", nuvec.nn,
     "Layers, `Module` and activations, as `mlx.nn` (see also [nn]({docs}/nn.md))."),
    ("nuvec.nn.losses", nuvec.nn.losses, "Loss functions, as `mlx.nn.losses`."),
    ("nuvec.nn.init", nuvec.nn.init, "Initializers, as `mlx.nn.init`."),
    ("nuvec.optimizers", nuvec.optimizers,
     "Optimizers and schedules, as `mlx.optimizers` (see also "
     "[optimizers]({docs}/optimizers.md))."),
    ("nuvec.testing", nuvec.testing, "Assertions and rule checks for operations."),
]

SECTION = re.compile(r"^(Args|Returns|Raises|Example|Examples|Attributes):\s*$")
ENTRY = re.compile(r"^(\*{0,2}[\w.]+(?:, \*{0,2}[\w.]+)*):\s*(.*)$")
GENERATED = "<!-- Generated by docs/build_api.py from the docstrings; do not edit. -->"


def anchor(heading: str) -> str:
    """The anchor GitHub gives a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _annotation(value: Any) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def _default(value: Any) -> str:
    """A default as written: functions by name (their repr holds an address), else repr."""
    return value.__name__ if inspect.isfunction(value) else repr(value)


def signature(name: str, obj: Any) -> str:
    """`name(params) -> result`, with annotations as written in the source."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        bases = ", ".join(base.__name__ for base in obj.__bases__)
        return f"class {name}({bases})"
    parts: list[str] = []
    star_written = False
    kinds = [p.kind for p in sig.parameters.values()]
    for i, p in enumerate(sig.parameters.values()):
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star_written:
            parts.append("*")
            star_written = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        star_written |= p.kind is p.VAR_POSITIONAL
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            default = _default(p.default)
            text += f" = {default}" if p.annotation is not p.empty else f"={default}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(kinds) or kinds[i + 1] is not p.kind):
            parts.append("/")
    result = "" if sig.return_annotation is sig.empty else (
        f" -> {_annotation(sig.return_annotation)}"
    )
    return f"{name}({', '.join(parts)}){result}"


def _entries(lines: list[str]) -> list[str]:
    """`name: text` lines (continuations indented) as a markdown list."""
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        match = ENTRY.match(stripped)
        if match and not line.startswith("        "):
            items.append(f"- `{match.group(1)}`: {match.group(2)}")
        elif stripped and items:
            items[-1] += f" {stripped}"
        elif stripped:
            items.append(stripped)
    return items


def docstring(obj: Any) -> list[str]:
    """A Google-style docstring as markdown lines."""
    text = inspect.getdoc(obj) or ""
    body: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        match = SECTION.match(line)
        if match:
            sections.append((match.group(1), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            body.append(line)
    while body and not body[-1].strip():
        body.pop()
    out = list(body)
    for title, lines in sections:
        while lines and not lines[-1].strip():
            lines.pop()
        out += ["", f"**{title}**", ""]
        if title.startswith("Example"):
            out += ["```pycon", *(line[4:] for line in lines), "```"]
        elif title == "Returns":
            out.append(" ".join(line.strip() for line in lines if line.strip()))
        else:
            out += _entries(lines)
    return out


def _members(cls: type) -> tuple[list[tuple[str, Any]], list[str], list[str]]:
    """A class's own public members: documented (name, function) pairs, then the names of the
    undocumented attributes and of the undocumented methods."""
    documented, attributes, methods = [], [], []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        target = member.fget if isinstance(member, property) else member
        if isinstance(target, (staticmethod, classmethod)):
            target = target.__func__
        if inspect.isfunction(target) and target.__doc__ and target.__name__ != "<lambda>":
            documented.append((name, target))
        elif isinstance(member, (property, types.MemberDescriptorType)):
            attributes.append(name)
        elif callable(member):
            methods.append(name)
    return sorted(documented), sorted(attributes), sorted(methods)


def value(name: str, obj: Any) -> str:
    """`name = repr` for constants; mutable state (whose repr changes) shows only its type."""
    if isinstance(obj, (list, dict, set)) and name.islower():
        return f"`{name}`: module state (a `{type(obj).__name__}`)"
    return f"`{name} = {obj!r}`"


def _listed(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def entry(name: str, obj: Any) -> list[str]:
    """The markdown of one public function or class."""
    source = Path(inspect.getfile(inspect.unwrap(obj))).resolve().relative_to(PACKAGE_ROOT)
    out = [f"### {name}", "", f"`{signature(name, obj)}`", "", *docstring(obj), "",
           f"Defined in `{source}`.", ""]
    if not inspect.isclass(obj) or issubclass(obj, BaseException):
        return out
    documented, attributes, methods = _members(obj)
    for member_name, member in documented:
        head = member_name if isinstance(vars(obj)[member_name], property) else (
            signature(member_name, member)
        )
        out.append(f"- `{name}.{head}`: {docstring(member)[0]}")
    if attributes:
        out.append(f"- Attributes: {_listed(attributes)}")
    if methods:
        same = all(hasattr(nuvec, m) for m in methods)
        out.append(f"- Methods: {_listed(methods)}" + (
            " (each calls the `nuvec` function of the same name on the array)" if same else ""
        ))
    return out + [""] if documented or attributes or methods else out


def public_names(module: types.ModuleType) -> list[str]:
    """The names a namespace page documents: `__all__`, else what the module defines."""
    names = getattr(module, "__all__", None)
    if names is None:  # a module without __all__: what it defines
        names = [
            n for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", module.__name__)
            == module.__name__ and not isinstance(v, types.ModuleType)
            and (callable(v) or n.isupper())
        ]
    return sorted(names)


def page(title: str, intro: str, names: list[str], lookup: Callable[[str], Any]) -> str:
    """One markdown page: a title, an index of the functions, an entry per function, values."""
    functions = [n for n in names if callable(lookup(n))]
    values = [n for n in names if not callable(lookup(n))]
    out = [GENERATED, "", f"# {title}", "", intro, ""]
    out += [f"- [`{n}`](#{anchor(n)}): {docstring(lookup(n))[0]}" for n in functions]
    if values:
        out.append("- [Values](#values): " + _listed(values))
    out.append("")
    for name in functions:
        out += entry(name, lookup(name))
    if values:
        out += ["## Values", ""] + [f"- {value(n, lookup(n))}" for n in values]
    return "\n".join(out).rstrip() + "\n"


def family_of(name: str, obj: Any) -> str:
    """The family page of a public `nuvec` name."""
    if name in NAME_FAMILY:
        return NAME_FAMILY[name]
    module = getattr(obj, "__module__", None) if callable(obj) else type(obj).__module__
    for slug, _, _, modules in FAMILIES:
        if module in modules:
            return slug
    if module == "builtins":
        return "constants"
    raise ValueError(f"build_api: {name} (from {module}) belongs to no family; add its module "
                     "to FAMILIES in docs/build_api.py")


def core_pages() -> dict[str, str]:
    """The pages of the `nuvec` namespace: one per family, and `nuvec.md` indexing them."""
    members: dict[str, list[str]] = {slug: [] for slug, *_ in FAMILIES}
    members["constants"] = []
    for name in sorted(dir(nuvec)):
        obj = getattr(nuvec, name)
        if not name.startswith("_") and not isinstance(obj, types.ModuleType):
            members[family_of(name, obj)].append(name)
    pages: dict[str, str] = {}
    index = [GENERATED, "", "# `nuvec`", "",
             "The core namespace (`import nuvec as mx`), one page per family.", ""]
    for slug, title, intro, _ in FAMILIES:
        pages[f"nuvec/{slug}.md"] = page(f"`nuvec`: {title}", intro.replace("{docs}", "../.."),
                                         members[slug], lambda n: getattr(nuvec, n))
        listed = ", ".join(
            f"[`{n}`](nuvec/{slug}.md#{anchor(n) if callable(getattr(nuvec, n)) else 'values'})"
            for n in members[slug]
        )
        index += [f"## [{title}](nuvec/{slug}.md)", "", intro.replace("{docs}", ".."), "",
                  listed, ""]
    index += ["## Constants", ""]
    index += [f"- {value(n, getattr(nuvec, n))}" for n in members["constants"]]
    index += ["", "## Other namespaces", ""]
    index += [f"- [`{ns}`]({ns}.md): {text.replace('{docs}', '..')}" for ns, _, text in NAMESPACES]
    pages["nuvec.md"] = "\n".join(index) + "\n"
    return pages


def all_pages() -> dict[str, str]:
    """Every page of the API reference, by path relative to `docs/api/`."""
    pages = core_pages()
    for ns, module, intro in NAMESPACES:
        pages[f"{ns}.md"] = page(f"`{ns}`", intro.replace("{docs}", ".."), public_names(module),
                                 lambda n: getattr(module, n))
    return pages


def write(target: Path) -> list[Path]:
    """Writes every page under `target`; returns the paths written."""
    written = []
    for relative, text in all_pages().items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=API, help="where to write (docs/api)")
    args = parser.parse_args()
    print(f"wrote {len(write(args.out))} pages under {args.out}")


if __name__ == "__main__":
    main()
