"""The cases of the bad-input issue, one test each, with the message checked."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nuvec as mx


class Opaque:
    """An arbitrary object no function accepts."""

    def __repr__(self) -> str:
        return "<Opaque>"


def test_bad_stream_names_the_op_and_the_value():
    with pytest.raises(TypeError, match=r"^abs: stream must be a Stream, ThreadLocalStream, "
                                        r"Device or None, got 'bogus'"):
        mx.abs(mx.ones((2,)), stream="bogus")
    with pytest.raises(TypeError, match=r"^sum: stream must be"):
        mx.ones((2,)).sum(stream=3)  # an Array method names the op it stands for
    with pytest.raises(TypeError, match=r"^rms_norm: stream must be"):
        mx.fast.rms_norm(mx.ones((2, 8)), mx.ones((8,)), 1e-5, stream="s")


def test_zeros_names_itself_not_full():
    with pytest.raises(ValueError, match=r"^zeros: negative dimensions are not allowed, "
                                         r"got \(-1, 3\)"):
        mx.zeros((-1, 3))


def test_trace_names_itself_not_diagonal():
    with pytest.raises(TypeError, match=r"^trace: offset must be an int, got 1.5"):
        mx.trace(mx.ones((3, 3)), 1.5)
    with pytest.raises(ValueError, match=r"^trace: axis 5 is out of bounds"):
        mx.trace(mx.ones((3, 3)), axis1=5)


def test_diag_offset_past_int32_raises_at_the_call():
    with pytest.raises(ValueError, match=r"^diag: k must be <= 2147483647, got 1099511627776"):
        mx.diag(mx.ones((3, 3)), k=2**40)


def test_arange_past_int32_gives_int64():
    a = mx.arange(2**31 - 2, 2**31 + 1)
    assert a.dtype == mx.int64
    assert a.tolist() == [2**31 - 2, 2**31 - 1, 2**31]


@pytest.mark.parametrize("stride", [np.int64(2), mx.array(2), 2], ids=["np.int64", "0-d", "int"])
def test_conv1d_takes_numpy_and_0d_integers(stride):
    out = mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), stride=stride)
    assert out.shape == (1, 3, 3)
    np.testing.assert_allclose(np.asarray(out), np.full((1, 3, 3), 6.0))


def test_conv1d_rejects_float_and_huge_integers():
    with pytest.raises(TypeError, match=r"^conv1d: stride must be an int or 1 ints, got 1.5"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), stride=1.5)
    with pytest.raises(ValueError, match=r"^conv1d: padding must be <= 2147483647, got "
                                         r"1099511627776"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), padding=2**40)
    with pytest.raises(TypeError, match=r"^conv1d: groups must be an int, got 'x'"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), groups="x")


def test_shared_checks_name_the_function_called():
    with pytest.raises(ValueError, match=r"^add: shapes \(3,\) and \(2,\) cannot be broadcast"):
        mx.ones((3,)) + mx.ones((2,))  # an operator keeps the op's own name
    with pytest.raises(ValueError, match=r"^broadcast_shapes: shapes"):
        mx.broadcast_shapes((2,), (3,))
    with pytest.raises(TypeError, match=r"^sum: axis must be an int, got '0'"):
        mx.sum(mx.ones((2, 2)), axis="0")


# -- wrong results -----------------------------------------------------------------------------

def test_randint_bounds_past_the_dtype_raise():
    with pytest.raises(ValueError, match=r"^randint: the Python int 1099511627776 does not fit "
                                         r"in int32"):
        mx.random.randint(0, 2**40, (3,))
    x = mx.random.randint(0, 2**40, (100,), dtype=mx.int64, key=mx.random.key(0))
    assert x.dtype == mx.int64 and 0 <= x.min().item() and x.max().item() < 2**40


@pytest.mark.parametrize("seed,message", [(2**64, r"seed must be <= 18446744073709551615"),
                                          (-1, r"seed must be >= 0, got -1")])
def test_keys_and_seeds_out_of_range_raise(seed, message):
    with pytest.raises(ValueError, match=rf"^key: {message}"):
        mx.random.key(seed)
    with pytest.raises(ValueError, match=rf"^seed: {message}"):
        mx.random.seed(seed)
    assert mx.random.key(2**64 - 1).tolist() == [2**32 - 1, 2**32 - 1]


def test_searchsorted_of_a_scalar_is_0d():
    out = mx.searchsorted(mx.array([1.0, 2.0, 3.0]), 2.5)
    assert out.shape == () and out.item() == np.searchsorted([1.0, 2.0, 3.0], 2.5)
    assert mx.searchsorted(mx.array([1, 2, 3]), 3, side="right").item() == 3


def test_convolve_rejects_0d_inputs():
    with pytest.raises(ValueError, match=r"^convolve: inputs must be 1-D, got shapes \(\) and "
                                         r"\(3,\)"):
        mx.convolve(2.5, mx.ones((3,)))
    with pytest.raises(ValueError, match=r"^convolve: inputs must be 1-D, got shapes \(3,\) and "
                                         r"\(\)"):
        mx.convolve(mx.ones((3,)), mx.array(2.0))


def test_as_strided_rejects_float_strides_and_offsets():
    with pytest.raises(TypeError, match=r"^as_strided: strides must be an int or a sequence of "
                                        r"ints, got \(1.5,\)"):
        mx.as_strided(mx.ones((4,)), (2,), (1.5,))
    with pytest.raises(TypeError, match=r"^as_strided: offset must be an int, got 0.5"):
        mx.as_strided(mx.ones((4,)), (2,), (1,), 0.5)
    out = mx.as_strided(mx.arange(4), (2,), (np.int64(2),), np.int64(1))
    assert out.tolist() == [1, 3]


def test_squeeze_rejects_repeated_axes():
    with pytest.raises(ValueError, match=r"^squeeze: repeated axis in \(0, 0\)"):
        mx.squeeze(mx.ones((1, 1, 3)), (0, 0))
    with pytest.raises(ValueError, match=r"^squeeze: repeated axis in \(0, -3\)"):
        mx.squeeze(mx.ones((1, 1, 3)), (0, -3))


# -- leaks -------------------------------------------------------------------------------------

def test_device_and_stream_arguments_are_checked():
    with pytest.raises(TypeError, match=r"^is_available: device must be a Device or DeviceType, "
                                        r"got 'cpu' \(str\)"):
        mx.is_available("cpu")
    with pytest.raises(TypeError, match=r"^synchronize: stream must be a Stream, "
                                        r"ThreadLocalStream, Device or None, got 's' \(str\)"):
        mx.synchronize("s")
    mx.synchronize(mx.cpu)
    mx.synchronize(mx.default_stream(mx.cpu))


def test_dtype_inspections_take_numpy_dtypes_and_names():
    assert mx.promote_types(np.float64, mx.float32) == mx.float64
    assert mx.promote_types("int8", np.uint8) == mx.int16
    assert mx.issubdtype("float32", mx.floating) and not mx.issubdtype(np.int8, mx.floating)
    with pytest.raises(TypeError, match=r"^promote_types: unsupported dtype <Opaque>"):
        mx.promote_types(Opaque(), mx.float32)
    with pytest.raises(ValueError, match=r"^result_type: at least one array, dtype or scalar is "
                                         r"required, got none"):
        mx.result_type()


def test_dtype_arguments_of_ops_reject_names():
    with pytest.raises(TypeError, match=r"^zeros: dtype must be a dtype such as nuvec.float32, "
                                        r"got the string 'float32'"):
        mx.zeros((2,), dtype="float32")
    with pytest.raises(TypeError, match=r"^astype: dtype must be a dtype such as nuvec.int8"):
        mx.ones((2,)).astype("int8")
    assert mx.zeros((2,), dtype=np.float16).dtype == mx.float16  # NumPy dtypes stay accepted


def test_gather_mm_negative_indices_count_from_the_end():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(40.0, dtype=np.float32).reshape(2, 4, 5)
    out = mx.gather_mm(mx.array(a), mx.array(b), mx.array([-1, 0]), mx.array([-2, -1], mx.int8))
    np.testing.assert_allclose(np.asarray(out), np.stack([a[1] @ b[0], a[0] @ b[1]]), rtol=1e-6)


@pytest.mark.parametrize("base,error,message", [
    (-1.0, ValueError, r"base must be positive, got -1.0"),
    (0.0, ValueError, r"base must be positive, got 0.0"),
    (float("nan"), ValueError, r"base must be finite, got nan"),
    ("x", TypeError, r"base must be a real number, got 'x' \(str\)"),
])
def test_rope_base_is_checked_at_the_call(base, error, message):
    x = mx.ones((1, 2, 4, 8))
    with pytest.raises(error, match=rf"^rope: {message}"):
        mx.fast.rope(x, 8, traditional=False, base=base, scale=1.0, offset=0)


@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
@pytest.mark.parametrize("eps,error,message", [
    (float("inf"), ValueError, r"eps must be finite, got inf"),
    ("x", TypeError, r"eps must be a real number, got 'x'"),
])
def test_norm_eps_is_checked_at_the_call(op, eps, error, message):
    x, w = mx.ones((2, 8)), mx.ones((8,))
    args = (x, w, eps) if op == "rms_norm" else (x, w, None, eps)
    with pytest.raises(error, match=rf"^{op}: {message}"):
        getattr(mx.fast, op)(*args)


def test_lu_of_an_empty_matrix():
    p, lower, upper = mx.linalg.lu(mx.zeros((0, 0)))
    assert (p.shape, lower.shape, upper.shape) == ((0,), (0, 0), (0, 0))
    with pytest.raises(ValueError, match=r"^lu: arrays must have at least 2 dimensions, got "
                                         r"shape \(0,\)"):
        mx.linalg.lu(mx.zeros((0,)))


# -- sizes -------------------------------------------------------------------------------------

MEMORY = r"needs (\d+) bytes, more than the (\d+) bytes of memory of Device\(\w+, 0\)"


@pytest.mark.parametrize("name,call,shape", [
    ("zeros", lambda: mx.zeros((2**20, 2**20)), r"\(1048576, 1048576\)"),
    ("ones", lambda: mx.ones((2**20, 2**20), dtype=mx.int8), r"\(1048576, 1048576\)"),
    ("eye", lambda: mx.eye(2**20), r"\(1048576, 1048576\)"),
    ("normal", lambda: mx.random.normal((2**20, 2**20)), r"\(1048576, 1048576\)"),
    ("conv1d", lambda: mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), padding=2**30),
     r"\(1, 2147483654, 3\)"),
    ("add", lambda: mx.ones((2**20, 1)) + mx.ones((1, 2**20)), r"\(1048576, 1048576\)"),
])
def test_arrays_larger_than_memory_raise_at_the_call(name, call, shape):
    with pytest.raises(ValueError, match=rf"^{name}: an array of shape {shape} and dtype \w+ "
                                         rf"{MEMORY}") as info:
        call()
    needed, limit = (int(v) for v in re.search(MEMORY, str(info.value)).groups())
    assert needed > limit == mx.device_info()["memory_size"]


def test_int32_dimensions_and_lazy_broadcasts():
    with pytest.raises(ValueError, match=r"^zeros: shape dimension falls outside the supported "
                                         r"int32 range, got \(1099511627776,\)"):
        mx.zeros((2**40,))
    with pytest.raises(ValueError, match=r"^eye: n must be <= 2147483647, got 1099511627776"):
        mx.eye(2**40, 4)
    big = mx.broadcast_to(mx.array(1.0), (2**20, 2**20))  # a view: allowed
    assert big.shape == (2**20, 2**20) and big[:2, :3].tolist() == [[1.0] * 3] * 2


# -- dtype errors outside ops are both TypeError and ValueError (MLX raises ValueError) ---------

def test_io_and_fast_dtype_errors_are_value_errors_too(tmp_path):
    cases = [
        (lambda: mx.save_gguf(str(tmp_path / "a.gguf"), {"a": mx.ones((2,), mx.complex64)}),
         r"^save_gguf: GGUF has no tensor type for complex64"),
        (lambda: mx.fast.cross_entropy(mx.ones((2, 3)), mx.ones((2,))),
         r"^cross_entropy: targets must be integer class indices, got float32"),
        (lambda: mx.fast.packed_attention(mx.ones((4, 24), mx.int32), [4], mx.ones((4, 2)),
                                          mx.ones((4, 2)), heads=2),
         r"^packed_attention: qkv must be floating-point, got int32"),
    ]
    for call, message in cases:
        for error in (TypeError, ValueError):
            with pytest.raises(error, match=message):
                call()


# -- scalar and callable arguments --------------------------------------------------------------

@pytest.mark.parametrize("call,error,message", [
    (lambda: mx.addmm(mx.ones((2, 2)), mx.ones((2, 2)), mx.ones((2, 2)), alpha="x"), TypeError,
     r"^addmm: alpha must be a real number, got 'x' \(str\)"),
    (lambda: mx.hadamard_transform(mx.ones((4,)), scale=Opaque()), TypeError,
     r"^hadamard_transform: scale must be a real number, got <Opaque>"),
    (lambda: mx.linspace("0", 1), TypeError, r"^linspace: start must be a real number, got '0'"),
    (lambda: mx.linspace(0, 1, 2**40), ValueError, r"^linspace: num must be <= 2147483647"),
    (lambda: mx.grad(3), TypeError, r"^grad: fun must be callable, got 3 \(int\)"),
    (lambda: mx.value_and_grad(lambda x: x, argnums=1.5), TypeError,
     r"^value_and_grad: argnums must be an int or a sequence of ints, got 1.5"),
    (lambda: mx.grad(lambda x: x, argnames=3), TypeError,
     r"^grad: argnames must be a str or a sequence of str, got 3"),
    (lambda: mx.vmap("f"), TypeError, r"^vmap: fun must be callable, got 'f' \(str\)"),
    (lambda: mx.vmap(lambda x: x, in_axes=1.5), ValueError,
     r"^vmap: axis must be int or None \(or a list, tuple or dict of them\) in in_axes, got 1.5"),
    (lambda: mx.vmap(lambda x: x, out_axes=2**40), ValueError,
     r"^vmap: out_axes entries must fit in int32, got 1099511627776"),
    (lambda: mx.checkpoint(3), TypeError, r"^checkpoint: fun must be callable, got 3"),
])
def test_scalar_and_callable_arguments_are_checked_at_the_call(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_valid_scalar_spellings_pass():
    out = mx.addmm(mx.ones((2, 2)), mx.ones((2, 2)), mx.ones((2, 2)), alpha=np.float32(2.0),
                   beta=mx.array(1))
    assert out.tolist() == [[5.0, 5.0], [5.0, 5.0]]
    assert mx.linspace(np.int64(0), mx.array(1.0), np.int64(3)).tolist() == [0.0, 0.5, 1.0]
    assert mx.eye(np.int64(2), k=mx.array(1)).tolist() == [[0.0, 1.0], [0.0, 0.0]]


@pytest.mark.parametrize("call,error,message", [
    (lambda: mx.printoptions(precision="x"), ValueError,
     r"^printoptions: precision must be an int in \[-1, 2\*\*31\), got 'x'"),
    (lambda: mx.set_printoptions(threshold=2**40), ValueError,
     r"^set_printoptions: threshold must be an int in \[0, 2\*\*31\), got 1099511627776"),
    (lambda: mx.stream("s"), TypeError,
     r"^stream: stream must be a Stream, ThreadLocalStream, Device or None, got 's'"),
    (lambda: mx.random.split(mx.random.key(0), num=1.5), TypeError,
     r"^split: num must be an int, got 1.5"),
    (lambda: mx.random.categorical(mx.zeros((2, 3)), num_samples="2"), TypeError,
     r"^categorical: num_samples must be an int, got '2'"),
    (lambda: mx.round(mx.ones((2,)), 2**40), ValueError,
     r"^round: decimals must be <= 2147483647, got 1099511627776"),
    (lambda: mx.roll(mx.ones((2,)), 2**70), ValueError, r"^roll: shift must fit in int64"),
    (lambda: mx.permute_dims(mx.ones((2, 3)), (0, 0)), ValueError,
     r"^permute_dims: axes \(0, 0\) are not a permutation for shape \(2, 3\)"),
    (lambda: mx.permute_dims(mx.ones((2, 3)), (0, 1.5)), TypeError,
     r"^permute_dims: axes must be an int or a sequence of ints, got \(0, 1.5\)"),
    (lambda: mx.allclose(mx.ones((2,)), mx.ones((2,)), rtol="x"), TypeError,
     r"^allclose: rtol must be a real number, got 'x'"),
    (lambda: mx.concat([mx.ones((2,)), mx.ones((2, 2))]), ValueError,
     r"^concat: all shapes must match except along axis 0"),
])
def test_options_counts_and_aliases_are_checked_at_the_call(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("op", ["squeeze", "swapaxes", "moveaxis", "real", "conj", "atleast_1d"])
def test_ops_that_record_nothing_still_check_the_stream(op):
    args = {"squeeze": (mx.ones((2,)),), "swapaxes": (mx.ones((2,)), 0, 0),
            "moveaxis": (mx.ones((2,)), 0, 0)}.get(op, (mx.ones((2,)),))
    with pytest.raises(TypeError, match=rf"^{op}: stream must be a Stream, ThreadLocalStream, "
                                        "Device or None, got 3"):
        getattr(mx, op)(*args, stream=3)
