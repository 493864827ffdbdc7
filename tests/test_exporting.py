"""`export_function`, `exporter` and `import_function`: traces saved to a file and replayed
from it, against the function itself; shapeless checks, metadata, callbacks and bad files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
from nuvec.testing import assert_allclose


def fun(x, y):
    return mx.exp(x) * y + mx.sum(x), x.reshape(1, -1) @ mx.ones((3, 2))


def test_round_trip_with_positional_and_keyword_inputs(tmp_path):
    path = str(tmp_path / "f.nvfn")
    x, y = mx.array([0.5, 1.0, -1.0]), mx.array([2.0, 3.0, 4.0])
    mx.export_function(path, fun, x, y=y, metadata=json.dumps({"layers": 2}))
    imported, metadata = mx.import_function(path, return_metadata=True)
    assert json.loads(metadata) == {"layers": 2}
    for call in (lambda: imported(x * 2, y=y), lambda: imported((x * 2,), {"y": y})):
        out = call()
        assert isinstance(out, tuple) and len(out) == 2  # always a flat tuple, as MLX's
        want, product = fun(x * 2, y)
        assert_allclose(out[0], np.asarray(want), dtype=mx.float32)
        assert_allclose(out[1], np.asarray(product), dtype=mx.float32)
    with pytest.raises(ValueError, match=r"^import_function: no exported trace takes 1 "
                                         r"positional and keywords \['y'\] of shapes "
                                         r"\[\(4,\), \(4,\)\]"):
        imported(mx.ones(4), y=mx.ones(4))
    assert mx.import_function(path, return_metadata=True)[1] is not None


def test_exporter_keeps_several_traces_and_models_keep_their_weights(tmp_path):
    path = str(tmp_path / "sum.nvfn")
    with mx.exporter(path, lambda *xs: sum(xs)) as export:
        export(mx.array(1.0))
        export(mx.array(1.0), mx.array(2.0))
    summed = mx.import_function(path)
    assert summed(mx.array(5.0))[0].item() == 5.0
    assert summed(mx.array(3.0), mx.array(4.0))[0].item() == 7.0
    model = nn.Sequential(nn.Linear(4, 8), nn.gelu, nn.Linear(8, 2))
    x = mx.random.normal((3, 4))
    mx.export_function(str(tmp_path / "mlp.nvfn"), model, x)
    assert_allclose(mx.import_function(str(tmp_path / "mlp.nvfn"))(x)[0], np.asarray(model(x)),
                    dtype=mx.float32)


def test_dtypes_of_inputs_and_constants_survive(tmp_path):
    path = str(tmp_path / "d.nvfn")
    table = mx.array([1.5, -2.25], mx.bfloat16)
    exact = mx.array([1 / 3, 2 / 3], mx.float64)
    mx.export_function(path, lambda a, b: (a * table, b + exact),
                       mx.ones(2, mx.bfloat16), mx.ones(2, mx.float64))
    a, b = mx.import_function(path)(mx.array([2.0, 4.0], mx.bfloat16),
                                    mx.array([0.0, 1.0], mx.float64))
    assert a.dtype is mx.bfloat16 and a.tolist() == [3.0, -9.0]
    assert b.dtype is mx.float64 and b.tolist() == [1 / 3, 1 + 2 / 3]


def test_shapeless_export_replays_other_shapes_or_refuses(tmp_path):
    path = str(tmp_path / "s.nvfn")
    mx.export_function(path, lambda a: mx.sin(a) * 2 + 1, mx.ones((3,)), shapeless=True)
    x = np.linspace(-1, 1, 7).astype(np.float32)
    assert_allclose(mx.import_function(path)(mx.array(x))[0], np.sin(x) * 2 + 1,
                    dtype=mx.float32)
    with pytest.raises(ValueError, match="^export_function: shapeless=True, but the "
                                         "function's graph depends on the input shapes"):
        mx.export_function(str(tmp_path / "m.nvfn"), mx.mean, mx.ones((3,)), shapeless=True)


def test_callbacks_and_what_cannot_be_exported(tmp_path):
    seen = []
    mx.export_function(seen.append, lambda a: a + 1, mx.ones(2))
    assert len(seen) == 1 and [s["primitive"]["primitive"] for s in seen[0]["steps"]] == [
        "nuvec.ops.binary:Add"]
    kind, index = seen[0]["steps"][0]["inputs"][1]  # the weak scalar 1, a constant
    assert kind == "const" and seen[0]["arrays"][index].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="^export_function: metadata is only saved to a file"):
        mx.export_function(seen.append, lambda a: a, mx.ones(2), metadata="m")
    custom = mx.custom_function(lambda a: a * 2)
    custom.vjp(lambda a, u, out: u * 2)
    with pytest.raises(ValueError, match="^export_function: cannot export a"):
        mx.export_function(str(tmp_path / "c.nvfn"), custom, mx.ones(2))
    with pytest.raises(ValueError, match="^export_function: attempting to evaluate an array"):
        mx.export_function(str(tmp_path / "e.nvfn"), lambda a: a * a.item(), mx.ones(()))
    with pytest.raises(ValueError, match="^exporter: attempting to evaluate an array"):
        with mx.exporter(str(tmp_path / "x.nvfn"), lambda a: a * a.item()) as ex:
            ex(mx.ones(()))


def test_bad_files_are_refused_without_running_them(tmp_path):
    with pytest.raises(ValueError, match="^import_function: .* is not an exported nuvec"):
        mx.import_function(str(tmp_path / "missing.nvfn"))
    path = str(tmp_path / "f.nvfn")
    mx.export_function(path, lambda a: a + 1, mx.ones(2))
    with np.load(path) as archive:
        entries = dict(archive)
    header = json.loads(bytes(entries["program"]).decode())
    forged = str(tmp_path / "forged.nvfn")

    def forge():
        entries["program"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
        with open(forged, "wb") as handle:
            np.savez(handle, **entries)

    header["traces"][0]["steps"][0]["primitive"]["primitive"] = "os:system"
    forge()
    with pytest.raises(ValueError, match="^import_function: the file names 'os:system', which "
                                         "is not part of nuvec"):
        mx.import_function(forged)
    header["format"] = "other/9"
    forge()
    with pytest.raises(ValueError, match="^import_function: .* has format 'other/9'"):
        mx.import_function(forged)


@pytest.mark.parametrize("call, message", [
    (lambda p: mx.export_function(p, lambda a: a, mx.ones(2), shapeless="no"),
     r"^export_function: shapeless must be a bool, got 'no' \(str\)"),
    (lambda p: mx.exporter(p, lambda a: a, shapeless=1),
     r"^exporter: shapeless must be a bool, got 1 \(int\)"),
    (lambda p: mx.import_function(p, return_metadata="yes"),
     r"^import_function: return_metadata must be a bool, got 'yes' \(str\)"),
    (lambda p: mx.load(p, return_metadata=None),
     r"^load: return_metadata must be a bool, got None \(NoneType\)"),
], ids=["export-shapeless", "exporter-shapeless", "import-metadata", "load-metadata"])
def test_flags_must_be_bools(tmp_path, call, message):
    with pytest.raises(TypeError, match=message):
        call(str(tmp_path / "f.mlxfn"))


def test_exporter_stores_each_constant_once(tmp_path):
    # MLX's test_export_many_traces_constant: five traces of one weight, the first one
    # (no inputs: `weight + 0`) not folded into a copy of it
    path = str(tmp_path / "w.nvfn")
    weight = mx.random.normal((16, 2048))
    mx.eval(weight)
    with mx.exporter(path, lambda *xs: weight + sum(xs)) as export:
        for n in range(5):
            export(*[mx.array(1.0)] * n)
    assert os.path.getsize(path) < weight.nbytes + 8192
    imported = mx.import_function(path)
    for n in range(5):
        assert mx.array_equal(imported(*[mx.array(2.0)] * n)[0], weight + 2 * n).item()


def test_broadcast_scalars_are_stored_as_one_value(tmp_path):
    path = str(tmp_path / "s.nvfn")
    mx.export_function(path, lambda a: a * 0.5, mx.ones((256, 256)))
    assert os.path.getsize(path) < 4096
    assert mx.import_function(path)(mx.full((256, 256), 3.0))[0][7, 9].item() == 1.5


@pytest.mark.parametrize("returned, shown", [
    (lambda a: (a, 1), r"\(Array, int\)"),
    (lambda a: (a, [a]), r"\(Array, \[Array\]\)"),
    (lambda a: {"a": a}, r"\{'a': Array\}"),
    (lambda a: None, "NoneType"),
], ids=["number", "nested", "dict", "none"])
def test_export_returns_an_array_or_a_flat_tuple_or_list(tmp_path, returned, shown):
    path = str(tmp_path / "f.nvfn")
    with pytest.raises(ValueError, match="^export_function: the function must return an array "
                                         "or a tuple or list of arrays, got " + shown):
        mx.export_function(path, returned, mx.ones(2))
    with pytest.raises(ValueError, match="^exporter: the function must return"):
        with mx.exporter(path, returned) as export:
            export(mx.ones(2))
    mx.export_function(path, lambda a: [a, a + 1], mx.ones(2))
    assert [o.tolist() for o in mx.import_function(path)(mx.ones(2))] == [[1, 1], [2, 2]]


def test_inputs_as_positional_and_keyword_arrays_or_a_sequence_and_a_dict(tmp_path):
    path = str(tmp_path / "f.nvfn")
    x, y, z = mx.array([1, 2, 3]), mx.array([2, 2, 2]), mx.array([0, 1, 0])
    mx.export_function(path, lambda x, z: x + z, {"x": x, "z": z})  # keywords in a dict
    imported = mx.import_function(path)
    for args, kwargs in [(({"x": x, "z": z},), {}), (([], {"x": x, "z": z}), {}),
                         ((), {"x": x, "z": z})]:
        assert imported(*args, **kwargs)[0].tolist() == [1, 3, 3]
    mx.export_function(path, lambda x, y, z: x * y + z, [x, y], {"z": z})
    imported = mx.import_function(path)
    for args, kwargs in [((x, y), {"z": z}), (((x, y), {"z": z}), {}), (([x, y], {"z": z}), {})]:
        assert imported(*args, **kwargs)[0].tolist() == [2, 5, 6]


ONE = mx.array(1.0)


@pytest.mark.parametrize("args, kwargs, shown", [
    (("hi",), {}, r"\(str\) and keywords \{\}"),
    ((ONE, "hi"), {}, r"\(Array, str\) and keywords \{\}"),
    (([[ONE]],), {}, r"\(\[\[Array\]\]\) and keywords \{\}"),
    ((ONE, 1.0), {}, r"\(Array, float\) and keywords \{\}"),
    ((ONE, [ONE]), {}, r"\(Array, \[Array\]\) and keywords \{\}"),
    (((ONE,),), {"z": ONE}, r"\(\(Array\)\) and keywords \{'z': Array\}"),
    (({"z": ONE},), {"x": ONE}, r"\(\{'z': Array\}\) and keywords \{'x': Array\}"),
    (({1: ONE},), {}, r"\(\{1: Array\}\) and keywords \{\}"),
    (((), {}, {}), {}, r"\(\(\), \{\}, \{\}\) and keywords \{\}"),
], ids=["str", "array-str", "nested-list", "array-float", "array-list", "tuple-keywords",
        "dict-keywords", "int-key", "three"])
def test_inputs_that_are_not_arrays_are_refused(tmp_path, args, kwargs, shown):
    # a TypeError (nuvec's convention) that is also MLX's ValueError
    path = str(tmp_path / "f.nvfn")
    mx.export_function(path, lambda x, y: x + y, ONE, ONE)
    imported = mx.import_function(path)
    for op, call in [("export_function", lambda: mx.export_function(
            path, lambda *xs, **ks: ONE, *args, **kwargs)),
                     ("import_function", lambda: imported(*args, **kwargs))]:
        with pytest.raises(TypeError, match=f"^{op}: the inputs must be arrays .* got {shown}$"
                           ) as info:
            call()
        assert isinstance(info.value, ValueError)


def test_a_closed_exporter_refuses_more_traces(tmp_path):
    with mx.exporter(str(tmp_path / "f.nvfn"), lambda a: a + 1) as export:
        export(mx.ones(2))
    with pytest.raises(RuntimeError, match="^exporter: the exporter is closed"):
        export(mx.ones(3))
