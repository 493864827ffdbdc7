"""MLX's call conventions, pinned: every audited function keeps `mlx.core`'s parameter names,
order, positional-only and keyword-only markers and defaults, so MLX code runs unchanged.

The table was checked against MLX's Python bindings (`python/src/*.cpp`). Where nuvec is more
permissive than MLX's binding (`gather_mm`'s `sorted_indices` may be positional, `linspace`'s
`stream` is keyword-only as on every nuvec op) MLX calls still work. nuvec-only parameters
asked for by the issues (`sinks`, `window`, `max_score_bytes`) come after MLX's. The quantized
ops keep `biases` required: MLX makes it optional for its non-affine modes, which nuvec lacks.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nuvec as mx

SIGNATURES = {
    "acos": "(a, /, *, stream=None)",
    "acosh": "(a, /, *, stream=None)",
    "asin": "(a, /, *, stream=None)",
    "asinh": "(a, /, *, stream=None)",
    "atan": "(a, /, *, stream=None)",
    "atan2": "(a, b, /, *, stream=None)",
    "atanh": "(a, /, *, stream=None)",
    "bitwise_left_shift": "(a, b, /, *, stream=None)",
    "bitwise_right_shift": "(a, b, /, *, stream=None)",
    "contiguous": "(a, /, allow_col_major=False, *, stream=None)",
    "cumulative_prod": (
        "(a, /, axis=None, *, reverse=False, inclusive=True, dtype=No"
        "ne, stream=None)"
    ),
    "cumulative_sum": (
        "(a, /, axis=None, *, reverse=False, inclusive=True, dtype=No"
        "ne, stream=None)"
    ),
    "diff": "(a, /, n=1, axis=-1, *, stream=None)",
    "empty": "(shape, dtype=nuvec.float32, *, stream=None)",
    "flip": "(a, /, axis=None, *, stream=None)",
    "matrix_transpose": "(a, /, *, stream=None)",
    "minmax": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "positive": "(a, /, *, stream=None)",
    "pow": "(a, b, /, *, stream=None)",
    "unique": (
        "(a, /, size, return_index=False, return_inverse=False, retur"
        "n_counts=False, fill_value=None, *, stream=None)"
    ),
    "unstack": "(x, /, *, axis=0, stream=None)",
    "abs": "(a, /, *, stream=None)",
    "add": "(a, b, /, *, stream=None)",
    "addmm": "(c, a, b, /, alpha=1.0, beta=1.0, *, stream=None)",
    "all": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "allclose": "(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, stream=None)",
    "any": "(a, /, axis=None, keepdims=False, *, stream=None)",
    # MLX's two overloads, (start, stop, step=None, dtype=None) and (stop, step=None,
    # dtype=None), in one signature: the first bound positional, `start=` by keyword
    "arange": "(bound=None, /, stop=None, step=None, dtype=None, *, start=None, stream=None)",
    "arccos": "(a, /, *, stream=None)",
    "arccosh": "(a, /, *, stream=None)",
    "arcsin": "(a, /, *, stream=None)",
    "arcsinh": "(a, /, *, stream=None)",
    "arctan": "(a, /, *, stream=None)",
    "arctan2": "(a, b, /, *, stream=None)",
    "arctanh": "(a, /, *, stream=None)",
    "argmax": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "argmin": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "argpartition": "(a, /, kth, axis=-1, *, stream=None)",
    "argsort": "(a, /, axis=-1, *, stream=None)",
    "array": "(val, dtype=None, *, copy=True)",
    "array_equal": "(a, b, /, equal_nan=False, *, stream=None)",
    "as_strided": "(a, /, shape=None, strides=None, offset=0, *, stream=None)",
    "asarray": "(a, dtype=None, *, copy=None)",
    "astype": "(a, dtype, /, *, stream=None)",
    "async_eval": "(*arrays)",
    "atleast_1d": "(*arys, stream=None)",
    "atleast_2d": "(*arys, stream=None)",
    "atleast_3d": "(*arys, stream=None)",
    "bartlett": "(M)",
    "bitwise_and": "(a, b, /, *, stream=None)",
    "bitwise_invert": "(a, /, *, stream=None)",
    "bitwise_or": "(a, b, /, *, stream=None)",
    "bitwise_xor": "(a, b, /, *, stream=None)",
    "blackman": "(M)",
    "block_masked_mm": (
        "(a, b, /, block_size=64, mask_out=None, mask_lhs=None, mask_rhs=None, *, stream=None)"
    ),
    "broadcast_arrays": "(*arrays, stream=None)",
    "broadcast_shapes": "(*shapes)",
    "broadcast_to": "(a, /, shape, *, stream=None)",
    "can_cast": "(from_, to)",
    "ceil": "(a, /, *, stream=None)",
    "checkpoint": "(fun)",
    "clear_cache": "()",
    "device_count": "(device_type)",
    "device_info": "(d=None)",
    "clip": "(a, /, a_min, a_max, *, stream=None)",
    "compile": "(fun, inputs=None, outputs=None, shapeless=False)",
    "concat": "(arrays, axis=0, *, stream=None)",
    "concatenate": "(arrays, axis=0, *, stream=None)",
    "conj": "(a, /, *, stream=None)",
    "conjugate": "(a, /, *, stream=None)",
    "conv1d": "(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None)",
    "conv2d": "(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None)",
    "conv3d": "(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None)",
    "conv_general": (
        "(input, weight, /, stride=1, padding=0, kernel_dilation=1, input_dilation=1, groups=1, "
        "flip=False, *, stream=None)"
    ),
    "conv_transpose1d": (
        "(input, weight, /, stride=1, padding=0, dilation=1, output_padding=0, groups=1, *, "
        "stream=None)"
    ),
    "conv_transpose2d": (
        "(input, weight, /, stride=1, padding=0, dilation=1, output_padding=0, groups=1, *, "
        "stream=None)"
    ),
    "conv_transpose3d": (
        "(input, weight, /, stride=1, padding=0, dilation=1, output_padding=0, groups=1, *, "
        "stream=None)"
    ),
    "convolve": "(a, v, /, mode='full', *, stream=None)",
    "cos": "(a, /, *, stream=None)",
    "cosh": "(a, /, *, stream=None)",
    "count_nonzero": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "cummax": "(a, /, axis=None, *, reverse=False, inclusive=True, stream=None)",
    "cummin": "(a, /, axis=None, *, reverse=False, inclusive=True, stream=None)",
    "cumprod": "(a, /, axis=None, *, reverse=False, inclusive=True, dtype=None, stream=None)",
    "cumsum": "(a, /, axis=None, *, reverse=False, inclusive=True, dtype=None, stream=None)",
    "default_device": "()",
    "default_stream": "(device)",
    "degrees": "(a, /, *, stream=None)",
    "depends": "(inputs, dependencies)",
    "dequantize": (
        "(w, /, scales, biases=None, group_size=None, bits=None, mode='affine', "
        "global_scale=None, dtype=None, *, stream=None)"
    ),
    "diag": "(a, /, k=0, *, stream=None)",
    "diagonal": "(a, offset=0, axis1=0, axis2=1, *, stream=None)",
    "disable_compile": "()",
    "divide": "(a, b, /, *, stream=None)",
    "divmod": "(a, b, /, *, stream=None)",
    "einsum": "(subscripts, *operands, stream=None)",
    "einsum_path": "(subscripts, *operands)",
    "empty_like": "(a, /, dtype=None, *, stream=None)",
    "enable_compile": "()",
    "equal": "(a, b, /, *, stream=None)",
    "erf": "(a, /, *, stream=None)",
    "erfinv": "(a, /, *, stream=None)",
    "eval": "(*arrays)",
    "exp": "(a, /, *, stream=None)",
    "expand_dims": "(a, /, axis, *, stream=None)",
    "expm1": "(a, /, *, stream=None)",
    "eye": "(n, m=None, k=0, dtype=nuvec.float32, *, stream=None)",
    "flatten": "(a, /, start_axis=0, end_axis=-1, *, stream=None)",
    "floor": "(a, /, *, stream=None)",
    "from_dlpack": "(x, /, *, copy=None)",
    "from_fp8": "(x, dtype=nuvec.bfloat16, *, stream=None)",
    "floor_divide": "(a, b, /, *, stream=None)",
    "full": "(shape, vals, dtype=None, *, stream=None)",
    "full_like": "(a, /, vals, dtype=None, *, stream=None)",
    "gather_mm": (
        "(a, b, /, lhs_indices=None, rhs_indices=None, *, sorted_indices=False, stream=None)"
    ),
    "gather_qmm": (
        "(x, w, /, scales, biases=None, lhs_indices=None, rhs_indices=None, transpose=True, "
        "group_size=None, bits=None, mode='affine', global_scale=None, *, "
        "sorted_indices=False, stream=None)"
    ),
    "gather_qqmm": (
        "(x, w, /, scales=None, lhs_indices=None, rhs_indices=None, group_size=None, bits=None, "
        "mode='nvfp4', global_scale_x=None, global_scale_w=None, *, sorted_indices=False, "
        "stream=None)"
    ),
    "get_active_memory": "()",
    "get_num_threads": "()",  # nuvec's own (MLX has no CPU thread pool)
    "set_num_threads": "(n)",  # nuvec's own
    "set_cache_limit": "(limit)",
    "set_memory_limit": "(limit)",
    "set_wired_limit": "(limit)",
    "get_cache_memory": "()",
    "export_function": "(file_or_callback, fun, *args, shapeless=False, metadata=None, **kwargs)",
    "export_to_dot": "(file, *args, **kwargs)",
    "exporter": "(file, fun, *, shapeless=False, metadata=None)",
    "get_array_buffer_size": "(*args)",
    "import_function": "(file, return_metadata=False)",
    "get_memory_limit": "()",
    "get_peak_memory": "()",
    "get_printoptions": "()",
    "grad": "(fun, argnums=None, argnames=())",
    "greater": "(a, b, /, *, stream=None)",
    "greater_equal": "(a, b, /, *, stream=None)",
    "hadamard_transform": "(a, /, scale=None, *, stream=None)",
    "hamming": "(M)",
    "hanning": "(M)",
    "identity": "(n, dtype=nuvec.float32, *, stream=None)",
    "imag": "(a, /, *, stream=None)",
    "inner": "(a, b, /, *, stream=None)",
    "is_available": "(device)",
    "isclose": "(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, stream=None)",
    "isdtype": "(dtype, kind)",
    "isfinite": "(a, /, *, stream=None)",
    "isinf": "(a, /, *, stream=None)",
    "isnan": "(a, /, *, stream=None)",
    "isneginf": "(a, /, *, stream=None)",
    "isposinf": "(a, /, *, stream=None)",
    "issubdtype": "(arg1, arg2)",
    "jvp": "(fun, primals, tangents)",
    "kron": "(a, b, *, stream=None)",
    "left_shift": "(a, b, /, *, stream=None)",
    "less": "(a, b, /, *, stream=None)",
    "less_equal": "(a, b, /, *, stream=None)",
    "linspace": "(start, stop, num=50, dtype=nuvec.float32, *, endpoint=True, stream=None)",
    "load": "(file, /, format=None, return_metadata=False, *, stream=None)",
    "log": "(a, /, *, stream=None)",
    "log10": "(a, /, *, stream=None)",
    "log1p": "(a, /, *, stream=None)",
    "log2": "(a, /, *, stream=None)",
    "logaddexp": "(a, b, /, *, stream=None)",
    "logcumsumexp": "(a, /, axis=None, *, reverse=False, inclusive=True, stream=None)",
    "logical_and": "(a, b, /, *, stream=None)",
    "logical_not": "(a, /, *, stream=None)",
    "logical_or": "(a, b, /, *, stream=None)",
    "logical_xor": "(a, b, /, *, stream=None)",
    "logsumexp": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "masked_scatter": "(a, mask, src, *, stream=None)",
    "matmul": "(a, b, /, *, stream=None)",
    "matrix_norm": "(a, /, ord=None, axis=None, keepdims=False, *, stream=None)",
    "max": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "maximum": "(a, b, /, *, stream=None)",
    "mean": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "median": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "meshgrid": "(*arrays, sparse=False, indexing='xy', stream=None)",
    "min": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "minimum": "(a, b, /, *, stream=None)",
    "moveaxis": "(a, /, source, destination, *, stream=None)",
    "multiply": "(a, b, /, *, stream=None)",
    "nan_to_num": "(a, nan=0.0, posinf=None, neginf=None, *, stream=None)",
    "negative": "(a, /, *, stream=None)",
    "clear_streams": "()",
    "new_stream": "(device)",
    "new_thread_local_stream": "(device)",
    "new_thread_unsafe_stream": "(device)",
    "not_equal": "(a, b, /, *, stream=None)",
    "ones": "(shape, dtype=nuvec.float32, *, stream=None)",
    "ones_like": "(a, /, dtype=None, *, stream=None)",
    "outer": "(a, b, /, *, stream=None)",
    "pad": "(a, pad_width, mode='constant', constant_values=0, *, stream=None)",
    "partition": "(a, /, kth, axis=-1, *, stream=None)",
    "permute_dims": "(a, /, axes=None, *, stream=None)",
    "power": "(a, b, /, *, stream=None)",
    "printoptions": "(precision=-1, threshold=None, edgeitems=None)",
    "prod": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "promote_types": "(a, b)",
    "put_along_axis": "(a, /, indices, values, axis=None, *, stream=None)",
    "quantize": (
        "(w, /, group_size=None, bits=None, mode='affine', *, global_scale=None, stream=None)"),
    "qqmm": (
        "(x, w, scales=None, group_size=None, bits=None, mode='nvfp4', global_scale_x=None, "
        "global_scale_w=None, *, stream=None)"
    ),
    "quantized_matmul": (
        "(x, w, /, scales, biases=None, transpose=True, group_size=None, bits=None, "
        "mode='affine', *, stream=None)"
    ),
    "radians": "(a, /, *, stream=None)",
    "real": "(a, /, *, stream=None)",
    "reciprocal": "(a, /, *, stream=None)",
    "remainder": "(a, b, /, *, stream=None)",
    "repeat": "(array, repeats, axis=None, *, stream=None)",
    "reset_peak_memory": "()",
    "reshape": "(a, /, shape, *, stream=None)",
    "result_type": "(*arrays_and_dtypes)",
    "right_shift": "(a, b, /, *, stream=None)",
    "roll": "(a, shift, axis=None, *, stream=None)",
    "round": "(a, /, decimals=0, *, stream=None)",
    "rsqrt": "(a, /, *, stream=None)",
    "save": "(file, arr)",
    "savez": "(file, *args, **kwargs)",
    "save_safetensors": "(file, arrays, metadata=None)",
    "save_gguf": "(file, arrays, metadata=None)",
    "savez_compressed": "(file, *args, **kwargs)",
    "searchsorted": "(a, v, /, side='left', *, stream=None)",
    "segmented_mm": "(a, b, /, segments, *, stream=None)",
    "set_default_device": "(device)",
    "set_default_stream": "(s)",
    "set_printoptions": "(precision=-1, threshold=None, edgeitems=None)",
    "sigmoid": "(a, /, *, stream=None)",
    "sign": "(a, /, *, stream=None)",
    "sin": "(a, /, *, stream=None)",
    "sinh": "(a, /, *, stream=None)",
    "slice": "(a, start_indices, axes, slice_size, *, stream=None)",
    "slice_update": "(a, update, start_indices, axes, *, stream=None)",
    "softmax": "(a, /, axis=None, *, precise=False, stream=None)",
    "sort": "(a, /, axis=-1, *, stream=None)",
    "split": "(a, /, indices_or_sections, axis=0, *, stream=None)",
    "sqrt": "(a, /, *, stream=None)",
    "square": "(a, /, *, stream=None)",
    "squeeze": "(a, /, axis=None, *, stream=None)",
    "stack": "(arrays, axis=0, *, stream=None)",
    "std": "(a, /, axis=None, keepdims=False, ddof=0, *, stream=None)",
    "stop_gradient": "(a, /, *, stream=None)",
    "stream": "(s)",
    "subtract": "(a, b, /, *, stream=None)",
    "sum": "(a, /, axis=None, keepdims=False, *, stream=None)",
    "swapaxes": "(a, /, axis1, axis2, *, stream=None)",
    "synchronize": "(stream=None)",
    "take": "(a, /, indices, axis=None, *, stream=None)",
    "take_along_axis": "(a, /, indices, axis=None, *, stream=None)",
    "tan": "(a, /, *, stream=None)",
    "tanh": "(a, /, *, stream=None)",
    "tensordot": "(a, b, /, axes=2, *, stream=None)",
    "tile": "(a, reps, /, *, stream=None)",
    "to_fp8": "(x, *, stream=None)",
    "topk": "(a, /, k, axis=-1, *, stream=None)",
    "trace": "(a, /, offset=0, axis1=0, axis2=1, dtype=None, *, stream=None)",
    "transpose": "(a, /, axes=None, *, stream=None)",
    "tri": "(n, m=None, k=0, dtype=nuvec.float32, *, stream=None)",
    "tril": "(x, k=0, *, stream=None)",
    "triu": "(x, k=0, *, stream=None)",
    "trunc": "(a, /, *, stream=None)",
    "unflatten": "(a, /, axis, shape, *, stream=None)",
    "value_and_grad": "(fun, argnums=None, argnames=())",
    "var": "(a, /, axis=None, keepdims=False, ddof=0, *, stream=None)",
    "vecdot": "(a, b, /, *, axis=-1, stream=None)",
    "view": "(a, /, dtype, *, stream=None)",
    "vjp": "(fun, primals, cotangents)",
    "vmap": "(fun, in_axes=0, out_axes=0)",
    "where": "(condition, x, y, /, *, stream=None)",
    "zeros": "(shape, dtype=nuvec.float32, *, stream=None)",
    "zeros_like": "(a, /, dtype=None, *, stream=None)",
    "random.bernoulli": "(p=0.5, shape=None, key=None, *, stream=None)",
    "random.bits": "(shape=(), width=4, key=None, *, stream=None)",
    "random.categorical": (
        "(logits, axis=-1, shape=None, num_samples=None, key=None, *, stream=None)"
    ),
    "random.gumbel": "(shape=(), dtype=nuvec.float32, key=None, *, stream=None)",
    "random.key": "(seed)",
    "random.laplace": (
        "(shape=(), dtype=nuvec.float32, loc=0.0, scale=1.0, key=None, *, stream=None)"
    ),
    "random.multivariate_normal": (
        "(mean, cov, shape=(), dtype=nuvec.float32, key=None, *, stream=None)"
    ),
    "random.normal": (
        "(shape=(), dtype=nuvec.float32, loc=None, scale=None, key=None, *, stream=None)"
    ),
    "random.permutation": "(x, axis=0, key=None, *, stream=None)",
    "random.randint": "(low, high, shape=(), dtype=nuvec.int32, key=None, *, stream=None)",
    "random.seed": "(seed)",
    "random.split": "(key, num=2, *, stream=None)",
    "random.truncated_normal": (
        "(lower, upper, shape=None, dtype=nuvec.float32, key=None, *, stream=None)"
    ),
    "random.uniform": "(low=0, high=1, shape=(), dtype=nuvec.float32, key=None, *, stream=None)",
    "linalg.cholesky": "(a, upper=False, *, stream=None)",
    "linalg.cholesky_inv": "(a, upper=False, *, stream=None)",
    "linalg.cross": "(a, b, axis=-1, *, stream=None)",
    "linalg.det": "(a, *, stream=None)",
    "linalg.eig": "(a, *, stream=None)",
    "linalg.eigh": "(a, UPLO='L', *, stream=None)",
    "linalg.eigvals": "(a, *, stream=None)",
    "linalg.eigvalsh": "(a, UPLO='L', *, stream=None)",
    "linalg.inv": "(a, *, stream=None)",
    "linalg.lu": "(a, *, stream=None)",
    "linalg.lu_factor": "(a, *, stream=None)",
    "linalg.norm": "(a, /, ord=None, axis=None, keepdims=False, *, stream=None)",
    "linalg.pinv": "(a, *, stream=None)",
    "linalg.qr": "(a, *, stream=None)",
    "linalg.slogdet": "(a, *, stream=None)",
    "linalg.solve": "(a, b, *, stream=None)",
    "linalg.solve_triangular": "(a, b, *, upper=False, stream=None)",
    "linalg.svd": "(a, compute_uv=True, *, stream=None)",
    "linalg.tri_inv": "(a, upper=False, *, stream=None)",
    "fft.fft": "(a, n=None, axis=-1, norm='backward', *, stream=None)",
    "fft.fft2": "(a, s=None, axes=(-2, -1), norm='backward', *, stream=None)",
    "fft.fftn": "(a, s=None, axes=None, norm='backward', *, stream=None)",
    "fft.fftfreq": "(n, d=1.0, *, stream=None)",
    "fft.fftshift": "(a, axes=None, *, stream=None)",
    "fft.ifft": "(a, n=None, axis=-1, norm='backward', *, stream=None)",
    "fft.ifft2": "(a, s=None, axes=(-2, -1), norm='backward', *, stream=None)",
    "fft.ifftn": "(a, s=None, axes=None, norm='backward', *, stream=None)",
    "fft.ifftshift": "(a, axes=None, *, stream=None)",
    "fft.irfft": "(a, n=None, axis=-1, norm='backward', *, stream=None)",
    "fft.irfft2": "(a, s=None, axes=(-2, -1), norm='backward', *, stream=None)",
    "fft.irfftn": "(a, s=None, axes=None, norm='backward', *, stream=None)",
    "fft.istft": (
        "(stft_matrix, n_fft=None, hop_length=None, win_length=None, window=None, center=True, "
        "norm='backward', onesided=None, length=None, *, stream=None)"),
    "fft.rfft": "(a, n=None, axis=-1, norm='backward', *, stream=None)",
    "fft.rfft2": "(a, s=None, axes=(-2, -1), norm='backward', *, stream=None)",
    "fft.rfftfreq": "(n, d=1.0, *, stream=None)",
    "fft.rfftn": "(a, s=None, axes=None, norm='backward', *, stream=None)",
    "fft.stft": (
        "(x, n_fft=2048, hop_length=None, win_length=None, window=None, center=True, "
        "pad_mode='reflect', norm='backward', onesided=None, *, stream=None)"),
    "fast.add_rms_norm": "(x, residual, weight, eps, *, stream=None)",
    "fast.cross_entropy": "(logits, targets, *, stream=None)",
    "fast.cuda_kernel": (
        "(name, input_names, output_names, source, header='', ensure_row_contiguous=True, "
        "shared_memory=0)"
    ),
    "fast.gated_delta": "(q, k, v, g, beta, state, *, stream=None)",
    "fast.gated_delta_slots": "(q, k, v, g, beta, pool, slots, *, stream=None)",
    "fast.gated_delta_steps": "(q, k, v, g, beta, state, *, stream=None)",
    "fast.gated_delta_from_projections": (
        "(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, use_kernel=True, "
        "lower_bound=None, *, stream=None)"
    ),
    "fast.gated_delta_update": (
        "(q, k, v, gamma, beta, initial_state=None, mask=None, *, stream=None)"),
    "fast.layer_norm": "(x, weight, bias, eps, *, stream=None)",
    "fast.logsumexp": "(x, *, stream=None)",
    "fast.norm_rope": (
        "(x, weight=None, eps=None, *, dims, traditional=False, base=None, scale=1.0, offset=0, "
        "freqs=None, cache=None, stream=None)"
    ),
    "fast.packed_attention": (
        "(qkv, lengths, cos, sin, *, heads, scale=None, window=None, return_lse=False, "
        "stream=None)"
    ),
    "fast.paged_attention": "(q, k_cache, v_cache, block_tables, lengths, *, scale, stream=None)",
    "fast.paged_write": "(cache, new, slots, *, stream=None)",
    "fast.precompiled_cuda_kernel": (
        "(*, name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, "
        "threadgroup, shared_memory=0, init_value=None, ensure_row_contiguous=False, "
        "stream=None)"
    ),
    "fast.plan_attention": (
        "(q_shape, k_shape, v_shape, dtype, *, mask=None, sinks=None, window=None, "
        "max_score_bytes=None, stream=None)"
    ),
    "fast.rms_norm": "(x, weight, eps, *, stream=None)",
    "fast.rope": "(a, dims, *, traditional, base, scale, offset, freqs=None, stream=None)",
    "fast.scaled_dot_product_attention": (
        "(q, k, v, *, scale, mask=None, sinks=None, force_fused=False, window=None, "
        "max_score_bytes=None, stream=None)"
    ),
    "fast.softmax": "(x, *, stream=None)",
}

ARRAY_METHODS = {
    "abs": "(*, stream=None)",
    "all": "(axis=None, keepdims=False, *, stream=None)",
    "any": "(axis=None, keepdims=False, *, stream=None)",
    "argmax": "(axis=None, keepdims=False, *, stream=None)",
    "argmin": "(axis=None, keepdims=False, *, stream=None)",
    "astype": "(dtype, stream=None)",
    "conj": "(*, stream=None)",
    "cos": "(*, stream=None)",
    "cummax": "(axis=None, *, reverse=False, inclusive=True, stream=None)",
    "cummin": "(axis=None, *, reverse=False, inclusive=True, stream=None)",
    "cumprod": "(axis=None, *, reverse=False, inclusive=True, stream=None)",
    "cumsum": "(axis=None, *, reverse=False, inclusive=True, stream=None)",
    "diag": "(k=0, *, stream=None)",
    "diagonal": "(offset=0, axis1=0, axis2=1, stream=None)",
    "exp": "(*, stream=None)",
    "flatten": "(start_axis=0, end_axis=-1, *, stream=None)",
    "item": "()",
    "log": "(*, stream=None)",
    "log10": "(*, stream=None)",
    "log1p": "(*, stream=None)",
    "log2": "(*, stream=None)",
    "logcumsumexp": "(axis=None, *, reverse=False, inclusive=True, stream=None)",
    "logsumexp": "(axis=None, keepdims=False, *, stream=None)",
    "max": "(axis=None, keepdims=False, *, stream=None)",
    "mean": "(axis=None, keepdims=False, *, stream=None)",
    "min": "(axis=None, keepdims=False, *, stream=None)",
    "moveaxis": "(source, destination, *, stream=None)",
    "prod": "(axis=None, keepdims=False, *, stream=None)",
    "reciprocal": "(*, stream=None)",
    "reshape": "(*shape, stream=None)",
    "round": "(decimals=0, *, stream=None)",
    "rsqrt": "(*, stream=None)",
    "sin": "(*, stream=None)",
    "split": "(indices_or_sections, axis=0, *, stream=None)",
    "sqrt": "(*, stream=None)",
    "square": "(*, stream=None)",
    "squeeze": "(axis=None, *, stream=None)",
    "std": "(axis=None, keepdims=False, ddof=0, *, stream=None)",
    "sum": "(axis=None, keepdims=False, *, stream=None)",
    "swapaxes": "(axis1, axis2, *, stream=None)",
    "tolist": "()",
    "transpose": "(*axes, stream=None)",
    "var": "(axis=None, keepdims=False, ddof=0, *, stream=None)",
    "view": "(dtype, *, stream=None)",
}


def _plain(fn) -> str:
    """`fn`'s signature without annotations: names, kinds (`/`, `*`) and defaults."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=p.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=sig.empty))


def _lookup(name: str):
    obj = mx
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_matches_mlx(name):
    assert _plain(_lookup(name)) == SIGNATURES[name]


@pytest.mark.parametrize("name", sorted(ARRAY_METHODS))
def test_array_method_signature_matches_mlx(name):
    assert _plain(getattr(mx.ones((1,)), name)) == ARRAY_METHODS[name]


def test_every_public_function_is_pinned():
    """A new public function gets a row here (after checking it against MLX)."""
    unlisted = []
    for ns, prefix in ((mx, ""), (mx.random, "random."), (mx.linalg, "linalg."),
                       (mx.fft, "fft."), (mx.fast, "fast.")):
        names = [n for n in dir(ns) if not n.startswith("_")] if ns is mx else ns.__all__
        unlisted += [prefix + n for n in names
                     if inspect.isfunction(getattr(ns, n)) and prefix + n not in SIGNATURES]
    assert set(unlisted) <= {"fast.record_or_fallback", "fast.run_on_cpu"}, unlisted


# -- call forms of MLX code ---------------------------------------------------------------


@pytest.mark.parametrize(
    "make, dtype",
    [
        (lambda: mx.eye(2, dtype=None), mx.float32),
        (lambda: mx.identity(2, None), mx.float32),
        (lambda: mx.tri(2, 3, 0, None), mx.float32),
        (lambda: mx.linspace(0, 1, 5, None), mx.float32),
        (lambda: mx.zeros((2,), None), mx.float32),
        (lambda: mx.ones(2, dtype=None), mx.float32),
        (lambda: mx.random.uniform(shape=(2,), dtype=None), mx.float32),
        (lambda: mx.random.normal((2,), None), mx.float32),
        (lambda: mx.random.gumbel((2,), None), mx.float32),
        (lambda: mx.random.laplace((2,), None), mx.float32),
        (lambda: mx.random.truncated_normal(-1, 1, (2,), None), mx.float32),
        (lambda: mx.random.multivariate_normal(mx.zeros(2), mx.eye(2), (3,), None), mx.float32),
        (lambda: mx.random.randint(0, 5, (2,), None), mx.int32),
    ],
    ids=["eye", "identity", "tri", "linspace", "zeros", "ones", "uniform", "normal", "gumbel",
         "laplace", "truncated_normal", "multivariate_normal", "randint"],
)
def test_dtype_none_means_the_mlx_default(make, dtype):
    assert make().dtype is dtype


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: mx.arange(5), [0, 1, 2, 3, 4]),
        (lambda: mx.arange(stop=3), [0, 1, 2]),
        (lambda: mx.arange(10, step=4), [0, 4, 8]),
        (lambda: mx.arange(1, 4), [1, 2, 3]),
        (lambda: mx.arange(start=1, stop=7, step=3), [1, 4]),
        (lambda: mx.arange(3, dtype=mx.float32), [0.0, 1.0, 2.0]),
    ],
    ids=["stop", "stop-kw", "stop-step", "start-stop", "all-kw", "dtype"],
)
def test_arange_overloads(call, expected):
    assert call().tolist() == expected


def test_aliases_and_keyword_forms():
    x = mx.array([[1, 2], [3, 4]])
    assert mx.concat([x, x], axis=1).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert mx.permute_dims(x, (1, 0)).tolist() == [[1, 3], [2, 4]]
    assert mx.kron(a=mx.array([1, 2]), b=mx.array([1, 10])).tolist() == [1, 10, 2, 20]
    assert mx.array_equal(x, x, True).item() is True
    assert mx.clip(x, None, 2).tolist() == [[1, 2], [2, 2]]
    assert mx.take(mx.array([5, 6, 7]), 1).item() == 6
    assert x.reshape(4).tolist() == x.reshape((4,)).tolist() == [1, 2, 3, 4]
    assert x.transpose(1, 0).tolist() == x.transpose((1, 0)).tolist() == x.T.tolist()


def test_random_state_is_the_global_key():
    assert isinstance(mx.random.state, list) and mx.random.state[0].dtype is mx.uint32
    mx.random.seed(5)
    key = mx.random.state[0]
    first = mx.random.uniform(shape=(3,)).tolist()
    assert mx.random.state[0].tolist() != key.tolist()  # drawing advances the key
    mx.random.state[0] = key  # code that restores the state replays the draws
    assert mx.random.uniform(shape=(3,)).tolist() == first
    mx.random.seed(5)
    assert mx.random.state[0].tolist() == key.tolist()


def test_array_methods_follow_the_functions():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    np.testing.assert_allclose(np.asarray(a.var(1, True, 1)), x.var(1, keepdims=True, ddof=1))
    np.testing.assert_allclose(np.asarray(a.cumsum(0, reverse=True)), x[::-1].cumsum(0)[::-1])
    np.testing.assert_allclose(np.asarray(a.logsumexp()), np.log(np.exp(x).sum()), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(a.exp()), np.exp(x), rtol=1e-6)
