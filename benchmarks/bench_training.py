"""Training-step benchmarks: the character transformer of `examples/transformer_lm.py` and the
MLP of `examples/mlp.py`, nuvec (`nuvec.nn` + `nuvec.optimizers`) against the same models in
PyTorch eager, in the same run.

Run: python benchmarks/bench_training.py [--threads 1] [--repeats 5] [--bpc-steps 600]
A step is forward, backward, gradient clipping (the LM) and the optimizer update, evaluated.
Both libraries get the same weights, batches and thread count (OpenBLAS threads for NumPy,
`torch.set_num_threads` for PyTorch); ratios are nuvec / PyTorch (lower is better). With
`--bpc-steps N` the PyTorch LM is also trained for N steps on the example's batches and its
validation bits per character printed, to set beside the example's own figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS / torch threads")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bpc-steps", type=int, default=0,
                        help="also train the PyTorch LM this many steps and report its bpc")
    return parser.parse_args()


ARGS = _parse()
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))  # before NumPy loads BLAS

import numpy as np  # noqa: E402

import nuvec as mx  # noqa: E402
import nuvec.nn as nn  # noqa: E402
import nuvec.optimizers as optim  # noqa: E402
from bench_engine import best_of, report  # noqa: E402  (benchmarks/ is the script's directory)


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(ARGS.threads)
    return torch


def torch_lm(torch, vocab: int, args: argparse.Namespace):
    """The example's transformer written with torch.nn (RoPE on the two halves, as
    `nn.RoPE`'s default)."""
    F = torch.nn.functional

    def rope(x: "torch.Tensor") -> "torch.Tensor":
        length, dims = x.shape[-2], x.shape[-1]
        freqs = 10000.0 ** (-torch.arange(0, dims, 2, dtype=torch.float32) / dims)
        angle = torch.arange(length, dtype=torch.float32)[:, None] * freqs
        cos, sin = angle.cos(), angle.sin()
        a, b = x[..., :dims // 2], x[..., dims // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            d, h = args.dims, args.hidden
            self.attention_norm = torch.nn.RMSNorm(d, eps=1e-5)
            self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
            self.out = torch.nn.Linear(d, d, bias=False)
            self.mlp_norm = torch.nn.RMSNorm(d, eps=1e-5)
            self.gate = torch.nn.Linear(d, h, bias=False)
            self.up = torch.nn.Linear(d, h, bias=False)
            self.down = torch.nn.Linear(h, d, bias=False)

        def forward(self, x):
            b, length, d = x.shape
            q, k, v = self.qkv(self.attention_norm(x)).split(d, dim=-1)
            q, k, v = (t.reshape(b, length, args.heads, -1).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
            x = x + self.out(y.transpose(1, 2).reshape(b, length, d))
            y = self.mlp_norm(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, args.dims)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(args.layers))
            self.norm = torch.nn.RMSNorm(args.dims, eps=1e-5)

        def forward(self, tokens):
            x = self.embedding(tokens)
            for block in self.blocks:
                x = block(x)
            return self.norm(x) @ self.embedding.weight.T

    return LM()


def copy_lm_weights(torch, model, torch_model) -> None:
    """The nuvec LM's weights into the PyTorch one (same names but the attention/MLP nesting)."""
    flat = dict(mx.utils.tree_flatten(model.parameters()))
    renames = {"attention.qkv": "qkv", "attention.out": "out", "mlp.gate": "gate",
               "mlp.up": "up", "mlp.down": "down"}
    with torch.no_grad():
        for name, value in flat.items():
            target = name
            for old, new in renames.items():
                target = target.replace(old, new)
            data = torch.from_numpy(np.array(value))  # a writable copy
            dict(torch_model.named_parameters())[target].copy_(data)


def _lm_schedule(args):
    warmup = max(1, min(args.warmup, args.steps // 2))

    def lr(step: int) -> float:
        if step < warmup:
            return args.lr / warmup + step * (args.lr - args.lr / warmup) / warmup
        s = min(step - warmup, max(1, args.steps - warmup))
        decay = 0.5 * (1 + math.cos(math.pi * s / max(1, args.steps - warmup)))
        return args.lr * 0.1 + decay * (args.lr - args.lr * 0.1)
    return lr


def bench_lm(torch, repeats: int) -> None:
    lm = _example("transformer_lm")
    args = lm.parse_args([])
    data = lm.CharData(lm.load_text())
    model, optimizer = lm.build(args, data)
    step_fn = nn.value_and_grad(model, lambda x, y: lm.loss_fn(model, x, y))
    rng = np.random.default_rng(0)
    batch = data.batch(rng, args.batch_size, args.context)

    def nuvec_step():
        loss, grads = step_fn(*batch)
        grads, _ = optim.clip_grad_norm(grads, args.clip)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)

    peers = {}
    if torch is not None:
        torch_model = torch_lm(torch, data.vocab_size, args)
        copy_lm_weights(torch, model, torch_model)
        x, y = (torch.from_numpy(np.asarray(t)).long() for t in batch)
        ours = lm.loss_fn(model, *batch).item()
        theirs = torch.nn.functional.cross_entropy(
            torch_model(x).flatten(0, 1), y.flatten()).item()
        print(f"same weights, same batch: loss nuvec {ours:.6f}, PyTorch {theirs:.6f}")
        torch_opt = torch.optim.AdamW(torch_model.parameters(), lr=args.lr, betas=(0.9, 0.99),
                                      weight_decay=args.weight_decay)

        def torch_step():
            torch_opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(torch_model(x).flatten(0, 1), y.flatten())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(torch_model.parameters(), args.clip)
            torch_opt.step()

        peers["torch"] = best_of(torch_step, repeats)
    name = (f"LM step (d={args.dims}, {args.layers} layers, {args.batch_size}x{args.context} "
            "tokens)")
    report(name, best_of(nuvec_step, repeats), peers)


def train_torch_lm(torch, steps: int) -> None:
    """The PyTorch LM trained like the example (same initial weights, batches, schedule and
    clipping)."""
    lm = _example("transformer_lm")
    args = lm.parse_args(["--steps", str(steps)])
    data = lm.CharData(lm.load_text())
    model = torch_lm(torch, data.vocab_size, args)
    copy_lm_weights(torch, lm.build(args, data)[0], model)  # the example's initial weights
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.99),
                            weight_decay=args.weight_decay)
    schedule = _lm_schedule(args)
    rng = np.random.default_rng(args.seed)
    began = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = schedule(step)
        x, y = (torch.from_numpy(np.asarray(t)).long()
                for t in data.batch(rng, args.batch_size, args.context))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
    seconds = time.perf_counter() - began
    total, count = 0.0, 0
    with torch.no_grad():
        for inputs, targets in data.val_batches(args.batch_size, args.context, args.val_batches):
            x, y = (torch.from_numpy(np.asarray(t)).long() for t in (inputs, targets))
            total += torch.nn.functional.cross_entropy(
                model(x).flatten(0, 1), y.flatten(), reduction="sum").item()
            count += y.numel()
    val = total / count
    print(f"PyTorch LM, {steps} steps in {seconds:.1f} s: validation loss {val:.4f} nats = "
          f"{val / math.log(2):.3f} bits per character")


def bench_mlp(torch, repeats: int) -> None:
    mlp = _example("mlp")
    features, labels = mlp.make_spirals()
    mx.random.seed(1)
    model = mlp.MLP([2, 64, 64, 3])
    optimizer = optim.Adam(learning_rate=0.01)
    x_np, y_np = features[:90], labels[:90]
    x, y = mx.array(x_np), mx.array(y_np)
    step_fn = nn.value_and_grad(
        model, lambda: nn.losses.cross_entropy(model(x), y, reduction="mean"))

    def nuvec_step():
        loss, grads = step_fn()
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)

    peers = {}
    if torch is not None:
        layers = []
        for i, layer in enumerate(model.layers):
            linear = torch.nn.Linear(*reversed(layer.weight.shape))
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(np.asarray(layer.weight)))
                linear.bias.copy_(torch.from_numpy(np.asarray(layer.bias)))
            layers += [linear, torch.nn.ReLU()] if i < len(model.layers) - 1 else [linear]
        torch_model = torch.nn.Sequential(*layers)
        torch_opt = torch.optim.Adam(torch_model.parameters(), lr=0.01)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np).long()

        def torch_step():
            torch_opt.zero_grad()
            torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
            torch_opt.step()

        peers["torch"] = best_of(torch_step, repeats * 10)
    report("MLP step (2-64-64-3, batch 90, Adam)", best_of(nuvec_step, repeats * 10), peers)


def main() -> None:
    torch = _torch()
    print(f"threads: {ARGS.threads}; PyTorch: {torch.__version__ if torch else 'not installed'}")
    bench_lm(torch, ARGS.repeats)
    bench_mlp(torch, ARGS.repeats)
    if ARGS.bpc_steps and torch is not None:
        train_torch_lm(torch, ARGS.bpc_steps)


if __name__ == "__main__":
    main()
