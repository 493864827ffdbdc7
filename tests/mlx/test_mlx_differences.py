"""One test per entry of docs/mlx-differences.md: nuvec's behaviour where it still differs from
mlx.core (MLX's behaviour is stated in the entry)."""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import nuvec as mx


def test_errors_are_subclasses_with_nuvec_messages():
    with pytest.raises(ValueError, match=r"^bitwise_and: only integer") as info:
        mx.bitwise_and(mx.array([1.0]), mx.array([1.0]))
    assert isinstance(info.value, TypeError) and type(info.value) is mx.DtypeError
    with pytest.raises(ValueError) as info:
        mx.ones(3)[3]
    assert isinstance(info.value, IndexError)
    with pytest.raises(ValueError) as info:
        mx.array(2**64)
    assert isinstance(info.value, OverflowError)


def test_arithmetic_with_lists():
    a = mx.array([1.0, 2.0])
    assert (a * [1, 2]).tolist() == [1.0, 4.0] and (a + (1, 2)).tolist() == [2.0, 4.0]
    assert (a == [1.0, 2.0]) is False
    with pytest.raises(ValueError, match="^less: cannot compare an array with list"):
        mx.array.__lt__(a, [1, 2])


def test_numpy_views_are_read_only():
    a = mx.array([1.0, 2.0])
    view = np.asarray(a)
    assert not view.flags.writeable and not view.flags.owndata
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 5.0
    copy = np.array(a)
    copy[0] = 5.0
    assert a.tolist() == [1.0, 2.0] and copy.flags.writeable


def test_asarray_shares_numpy_memory():
    a = np.arange(6, dtype=np.float32)
    shared, default = mx.asarray(a, copy=False), mx.asarray(a)
    copied, forced = mx.array(a), mx.asarray(a, copy=True)
    a[0] = 5.0
    assert shared.tolist()[0] == default.tolist()[0] == 5.0
    assert copied.tolist()[0] == forced.tolist()[0] == 0.0
    assert mx.asarray(np.arange(6)[::2], copy=False).tolist() == [0, 2, 4]
    with pytest.raises(ValueError, match="copy=False forbids the copy"):
        mx.asarray(np.arange(3.0), dtype=mx.float32, copy=False)


def test_buffer_protocol_route():
    a = mx.array([1, 2], mx.int16)
    if sys.version_info >= (3, 12):
        assert memoryview(a).tolist() == [1, 2]
    else:
        with pytest.raises(TypeError):
            memoryview(a)
    assert a.__buffer__(0).readonly and np.asarray(a).tolist() == [1, 2]
    assert mx.array([1.0], mx.bfloat16).__buffer__(0).format == "H"


def test_numpy_operands_promote_as_arrays():
    assert (mx.array([1]) + np.array([1.5])).tolist() == [2.5]
    assert (mx.ones(2, mx.float16) * np.float32(2)).dtype == mx.float32
    assert (mx.array([1]) + mx.array(np.array([1.5]), mx.int32)).tolist() == [2]


def test_format_specs_on_one_element_arrays():
    assert f"{mx.array([2.5]):.1f}" == "2.5" and f"{mx.array(1.5)}" == "1.5"
    assert f"{mx.array([1, 2])}" == repr(mx.array([1, 2]))


def test_array_iterators_return_themselves():
    it = iter(mx.arange(4))
    assert iter(it) is it
    pairs = [(a.item(), b.item()) for a, b in zip(*[iter(mx.arange(4))] * 2)]
    assert pairs == [(0, 1), (2, 3)]


def test_numpy_functions_return_numpy():
    a = mx.ones((2, 3))
    assert isinstance(np.sum(a, axis=0), np.ndarray)
    assert isinstance(np.concatenate([a, a]), np.ndarray)
    assert isinstance(mx.sum(a, 0), mx.array)


def test_shared_memory_shows_later_writes():
    data = np.zeros(3, np.float32)
    shared, dl, copied = mx.asarray(data), mx.from_dlpack(data), mx.array(data)
    data[0] = 7.0
    assert shared[0].item() == 7.0 and dl[0].item() == 7.0 and copied[0].item() == 0.0


def test_dlpack_device_is_the_cpu():
    assert mx.ones(2).__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="the array is on the CPU"):
        mx.ones(2).__dlpack__(dl_device=(2, 0))


def test_bfloat16_pickles():
    x = mx.array([1.5, -2.0], mx.bfloat16)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is mx.bfloat16 and y.tolist() == [1.5, -2.0]


def test_half_statistics_accumulate_in_float32():
    x = mx.full((1000,), 60000.0, dtype=mx.float16)  # its float16 sum overflows
    assert mx.mean(x).dtype == mx.float16 and mx.mean(x).item() == 60000.0


def test_arrays_past_memory_raise_at_the_call():
    with pytest.raises(ValueError, match=r"^zeros: an array of shape \(1048576, 1048576\)"):
        mx.zeros((2**20, 2**20))
    assert mx.broadcast_to(mx.array(0.0), (2**20, 2**20)).shape == (2**20, 2**20)


def test_out_of_range_array_indices_fail_at_evaluation():
    x = mx.arange(3)
    for lazy in (lambda: x[mx.array([5])], lambda: mx.take(x, mx.array([-4])),
                 lambda: mx.take_along_axis(x, mx.array([3]), 0)):
        with pytest.raises(mx.EvaluationError, match="out of bounds"):
            mx.eval(lazy())
    y = mx.arange(3)
    y[mx.array([7])] = 1
    with pytest.raises(RuntimeError, match="out of bounds"):
        mx.eval(y)
    assert x[mx.array([2, -1])].tolist() == [2, 2]


def test_at_divide_needs_a_float_array():
    with pytest.raises(TypeError, match="^at.divide: expected a floating-point array"):
        mx.array([5, 7]).at[0].divide(2)
    assert mx.array([5.0, 7.0]).at[0].divide(2).tolist() == [2.5, 7.0]
    with pytest.raises(ValueError, match="^getitem: cannot take"):
        mx.zeros((0, 3))[mx.array([0])]


def test_cross_entropy_targets_out_of_range():
    logits = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"^cross_entropy: target 3 is out of range"):
        mx.fast.cross_entropy(logits, mx.array([0, 3]))
    lazy = mx.fast.cross_entropy(logits, mx.array([0, 3]) + 0)
    assert np.isnan(lazy.tolist()[1]) and abs(lazy.tolist()[0] - np.log(3)) < 1e-6


def test_cummax_ties_share_the_cotangent():
    g = mx.grad(lambda a: mx.cummax(a).sum())(mx.array([3.0, 3.0, 1.0]))
    assert g.tolist() == [2.0, 1.0, 0.0]  # outputs 2 and 3 split between the tied 3s


def test_scatter_update_slices_get_their_own_cotangent():
    ct = mx.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for method in ("maximum", "add"):
        def f(a, u):
            return getattr(a.at[mx.array([0, 1]), :], method)(u)

        _, (_, gu) = mx.vjp(f, [mx.zeros((2, 3)), mx.ones((2, 3))], [ct])
        assert gu.tolist() == ct.tolist()  # MLX: [[1, 1, 1], [4, 4, 4]] for maximum


def test_additions_keep_mlx_calls():
    assert mx.array([1, 2]).dtype is mx.int32 and mx.array([1, 2], copy=True).dtype is mx.int32
    assert mx.array(np.ones(2), mx.float32, copy=None).dtype is mx.float32


def test_cpu_threads_are_an_addition():
    before = mx.get_num_threads()
    try:
        mx.set_num_threads(1)
        assert mx.get_num_threads() == 1
    finally:
        mx.set_num_threads(before)
    assert mx.get_num_threads() == before


def test_rope_frequencies_take_no_gradient():
    x, freqs = mx.ones((1, 1, 2, 4)), mx.array([1.0, 0.5])

    def loss(f):
        return mx.fast.rope(x, 4, traditional=False, base=None, scale=1.0, offset=0,
                            freqs=f).sum()

    with pytest.raises(ValueError, match="^rope: no gradient with respect to the offset or "
                                         "frequencies"):
        mx.grad(loss)(freqs)


def test_shapeless_compile_retraces_a_shape_dependent_graph():
    calls = []

    def mean(x):
        calls.append(1)
        return mx.mean(x)

    f = mx.compile(mean, shapeless=True)
    assert [f(mx.ones((n,)) * n).item() for n in (2, 5, 3)] == [2.0, 5.0, 3.0]
    assert len(calls) == 4  # a trace per shape, and one more at the first shape (1 / n)


def test_compile_takes_scope_arrays_computed_from_arguments():
    x = mx.array([1, 2, 3]) + 2
    f = mx.compile(lambda a: a + (x + 1))
    assert f(x).tolist() == [7, 9, 11]
    assert f(mx.zeros(3, mx.int32)).tolist() == [4, 5, 6]  # x + 1: a constant of the trace


def test_exported_functions_are_nuvec_files(tmp_path):
    path = str(tmp_path / "f.mlxfn")
    mx.export_function(path, lambda a: a + 1, mx.ones(2))
    with np.load(path, allow_pickle=False) as archive:
        assert "program" in archive.files  # an .npz whatever its name
    assert mx.import_function(path)(mx.zeros(2))[0].tolist() == [1.0, 1.0]


def test_streams_work_from_any_thread():
    import threading

    s = mx.new_stream(mx.cpu)
    out = []
    thread = threading.Thread(target=lambda: out.append(mx.add(1, 2, stream=s).item()))
    thread.start()
    thread.join()
    assert out == [3]


def test_buffer_sizes_are_the_real_buffers():
    a = mx.ones((1000,))
    b = mx.arange(1000.0)
    mx.eval(a, b)
    assert mx.get_array_buffer_size(a) == 4 and mx.get_array_buffer_size(b) == 4000


def test_tiny_microscaled_groups_quantize_to_zero():
    w = np.zeros((1, 32), np.float32)
    w[0, :2] = [1e-40, 3e-41]
    q, scales = mx.quantize(mx.array(w), mode="mxfp4")
    assert scales.tolist() == [[0]]  # 2**-127
    assert not mx.dequantize(q, scales, mode="mxfp4", dtype=mx.float32).any().item()


def test_clear_streams_keeps_the_default_streams():
    made = mx.new_stream(mx.cpu)
    mx.add(1, 2).item()  # the default stream in use, as MLX's before its clear_streams fails
    mx.clear_streams()
    assert mx.add(1, 2).item() == 3
    with pytest.raises(RuntimeError, match="^stream: .* was destroyed by clear_streams"):
        mx.stream(made)


def test_qqmm_computes_every_case_in_float32():
    # (MLX: RuntimeError "[QQMatmul] NYI for the general case" on the CPU for these)
    w = mx.full((4, 32), 3.0)
    assert mx.qqmm(mx.full((3, 2, 32), 1.5), w).tolist() == [[[144.0] * 4] * 2] * 3
    assert mx.gather_qqmm(mx.full((2, 1, 32), 1.5), mx.stack([w, w]),
                          rhs_indices=mx.array([1])).shape == (2, 1, 4)
    # MLX's CPU accumulates this float16 row in float16, to inf
    x = mx.full((1, 1024), 60.0, mx.float16)
    assert mx.qqmm(x, mx.ones((1, 1024), mx.float16), mode="mxfp8").item() == 61440.0


def test_every_documented_difference_has_a_test():
    doc = (Path(__file__).parents[2] / "docs" / "mlx-differences.md").read_text()
    entries = re.split(r"\n- \*\*", doc)[1:]
    assert len(entries) >= 15
    untested = [e.split("**")[0] for e in entries if not re.search(r"\(`test_\w+`\)", e)]
    assert not untested, f"entries without a test: {untested}"
    names = re.findall(r"\(`(test_\w+)`\)", doc)
    assert not [n for n in names if n not in globals()], "documented without a test"
    assert len(set(names)) == len(names) == len(entries)


def test_non_finite_python_floats_are_not_stored_into_integers():
    x = mx.zeros((3,), mx.int32)
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=f"^setitem: the Python float {value} does not fit"):
            x[1] = value
        with pytest.raises(ValueError, match=f"^full: the Python float {value} does not fit"):
            mx.full((2,), value, mx.int32)
        with pytest.raises(ValueError, match="^pad: the Python float"):
            mx.pad(x, 1, constant_values=-value)
    with pytest.raises(ValueError, match="^setitem: the Python float 300.0 does not fit in uint8"):
        mx.zeros((3,), mx.uint8)[0] = 300.0
    assert mx.array(float("nan"), mx.int32).item() == mx.iinfo(mx.int32).min  # a cast casts


def test_tree_unflatten_refuses_huge_gaps():
    from nuvec.utils import tree_unflatten

    assert tree_unflatten([("layers.2.w", 1)]) == {"layers": [{}, {}, {"w": 1}]}
    with pytest.raises(ValueError, match="^tree_unflatten: list index 10000000000 would fill"):
        tree_unflatten([("layers.10000000000.w", 1)])
