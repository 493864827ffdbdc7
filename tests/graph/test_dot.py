"""`export_to_dot`: the unevaluated graph behind arrays in DOT, with MLX's naming."""

import io
import re

import pytest

import nuvec as mx


def dot(*args, **kwargs) -> str:
    out = io.StringIO()
    mx.export_to_dot(out, *args, **kwargs)
    return out.getvalue()


def test_graph_nodes_edges_and_names(tmp_path):
    x = mx.array([1.0, 2.0])
    mx.eval(x)
    y = mx.exp(x) * x
    text = dot(y, x=x, total=mx.sum(y))
    assert text.startswith("digraph {\n") and text.endswith("}\n")
    labels = re.findall(r'(\d+) \[label="(\w+)"', text)
    assert [name for _, name in labels] == ["Exp", "Multiply", "Sum", "Reshape"]
    assert '{ rank=source; "x"; }' in text and '"x" -> 0' in text and '"x" -> 1' in text
    assert '{ rank=sink; "total"; }' in text  # a named output
    edges = re.findall(r'^"?(\w+)"? -> "?(\w+)"?$', text, re.M)
    assert ("0", "A") in edges and ("A", "1") in edges  # exp's result feeds the product
    path = tmp_path / "graph.dot"
    mx.export_to_dot(str(path), y)
    assert path.read_text().count("label=") == 2
    assert dot(x) == 'digraph {\n{ rank=sink; "A"; }\n}\n'  # evaluated: nothing to compute


def test_rejected_arguments():
    with pytest.raises(TypeError, match="^export_to_dot: file must be a path or have a write"):
        mx.export_to_dot(3, mx.ones(2))
    with pytest.raises(TypeError, match="^export_to_dot: the outputs must be arrays, got int"):
        dot(mx.ones(2), 3)
