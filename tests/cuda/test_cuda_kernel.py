"""`mx.fast.cuda_kernel` on the CPU stream (the kernel emulator), with MLX's keywords."""

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx


def test_template_shapes_strides_and_two_outputs():
    k = mx.fast.cuda_kernel(
        "scale_rows", ["x", "w"], ["y", "total"],
        """
        unsigned r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= x_shape[x_ndim - 1]) return;
        float v = static_cast<float>(x[r * x_strides[0] + c]) * static_cast<float>(w[c]) * S;
        y[r * x_shape[1] + c] = static_cast<T>(v);
        atomicAdd(total, v);
        """)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.array([1, 2, 3, 4], np.float32)
    y, total = k(inputs=[mx.array(x), mx.array(w)], output_shapes=[(3, 4), (1,)],
                 output_dtypes=[mx.bfloat16, mx.float32], grid=(4, 3, 1),
                 threadgroup=(32, 1, 1), template=[("T", mx.bfloat16), ("S", 2)],
                 init_value=0)
    assert y.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), x * w * 2)
    assert total.item() == float((x * w * 2).sum())


def test_shared_memory_and_bool_template():
    k = mx.fast.cuda_kernel(
        "reverse", ["x"], ["y"],
        """
        extern __shared__ float buf[];
        buf[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        y[threadIdx.x] = FLIP ? buf[blockDim.x - 1 - threadIdx.x] : buf[threadIdx.x];
        """, shared_memory=64 * 4)
    x = mx.arange(64, dtype=mx.float32)
    (y,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[mx.float32], grid=(64,),
             threadgroup=(64,), template=[("FLIP", True)])
    assert y.tolist() == list(range(63, -1, -1))


def test_header_and_verbose(capsys):
    k = mx.fast.cuda_kernel("plus_one", ["a"], ["b"],
                            "if (threadIdx.x < 3) b[threadIdx.x] = add_one(a[threadIdx.x]);",
                            header="__device__ inline int add_one(int v) { return v + 1; }")
    (b,) = k(inputs=[mx.array([1, 2, 3], mx.int32)], output_shapes=[(3,)],
             output_dtypes=[mx.int32], grid=(3,), threadgroup=(32,), verbose=True)
    assert b.tolist() == [2, 3, 4]
    out = capsys.readouterr().out
    assert "__global__ void custom_kernel_plus_one(const int* __restrict__ a" in out


def _one(**kw):
    k = mx.fast.cuda_kernel("k", ["x"], ["y"], "y[0] = x[0];")
    args = dict(inputs=[mx.zeros((2,))], output_shapes=[(2,)], output_dtypes=[mx.float32],
                grid=(1,), threadgroup=(1,))
    args.update(kw)
    return k(**args)


@pytest.mark.parametrize("kw,error,match", [
    (dict(inputs=[]), ValueError, r"cuda_kernel: k takes 1 inputs \(x\), got 0"),
    (dict(output_shapes=[]), ValueError, "cuda_kernel: k has 1 outputs, got 0 shapes and 1"),
    (dict(grid=(0,)), ValueError, r"cuda_kernel: grid must be 1 to 3 positive ints, got \(0,\)"),
    (dict(threadgroup=(64, 32)), ValueError, "at most 1024 threads, got \\(64, 32, 1\\)"),
    (dict(output_dtypes=["float32"]), TypeError, "output dtypes must be dtypes, got 'float32'"),
    (dict(template=[("T", 1.5)]), TypeError, "template argument T must be a dtype, int or bool"),
    (dict(template=["T"]), TypeError, r"template entries are \(name, value\) pairs"),
    (dict(inputs=[mx.zeros((2,), mx.complex64)]), TypeError,
     "input x has unsupported dtype complex64"),
])
def test_rejected_calls(kw, error, match):
    with pytest.raises(error, match=match):
        _one(**kw)


def test_rejected_definitions():
    with pytest.raises(ValueError, match="cuda_kernel: '1x' is not a C identifier"):
        mx.fast.cuda_kernel("k", ["1x"], ["y"], "")
    with pytest.raises(TypeError, match="cuda_kernel: source and header must be strings"):
        mx.fast.cuda_kernel("k", ["x"], ["y"], None)
    with pytest.raises(ValueError, match="shared_memory must be an int >= 0, got -1"):
        mx.fast.cuda_kernel("k", ["x"], ["y"], "", shared_memory=-1)


def test_compile_error_reaches_the_caller():
    k = mx.fast.cuda_kernel("broken", ["x"], ["y"], "y[0] = undefined_thing;")
    (y,) = k(inputs=[mx.zeros((1,))], output_shapes=[(1,)], output_dtypes=[mx.float32],
             grid=(1,), threadgroup=(1,))
    with pytest.raises(Exception, match="undefined_thing"):
        mx.eval(y)


def test_bfloat16_inputs():
    k = mx.fast.cuda_kernel("half_of", ["x"], ["y"],
                            "unsigned i = threadIdx.x; if (i < 5) y[i] = 0.5f * (float)x[i];")
    x = np.array([1, 2, 3, 4, 5], ml_dtypes.bfloat16)
    (y,) = k(inputs=[mx.array(x)], output_shapes=[(5,)], output_dtypes=[mx.float32],
             grid=(5,), threadgroup=(32,))
    assert y.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5]
