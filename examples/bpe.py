"""A byte-level BPE tokenizer (GPT-2's scheme) built from a GGUF file's vocabulary and merges,
and the file's chat template.

Encoding: special (control) tokens such as `<|im_start|>` are matched whole; the text between
them is split into words by the pre-tokenizer's pattern (SmolLM's: every digit alone, then
GPT-2's pattern), each word's UTF-8 bytes are mapped to printable characters (GPT-2's
`bytes_to_unicode`) and merged pair by pair, lowest merge rank first, into vocabulary tokens.
Decoding maps the characters back to bytes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

try:  # the `regex` module has Unicode classes (\p{L}); `re` approximates them
    import regex as _regex

    _LETTER, _NUMBER, _OTHER = r"\p{L}", r"\p{N}", r"[^\s\p{L}\p{N}]"
except ImportError:  # depends on the environment
    _regex = re
    _LETTER, _NUMBER, _OTHER = r"[^\W\d_]", r"\d", r"(?:[^\s\w]|_)"

# llama.cpp's pre-tokenizer patterns by `tokenizer.ggml.pre` (those of GPT-2-style models).
_GPT2 = rf"'s|'t|'re|'ve|'m|'ll|'d| ?{_LETTER}+| ?{_NUMBER}+| ?{_OTHER}+|\s+(?!\S)|\s+"
PRE_TOKENIZERS = {"smollm": [_NUMBER, _GPT2], "gpt2": [_GPT2], "default": [_GPT2]}
SPECIAL_TYPES = (3, 4)  # GGUF token types matched whole: control and user-defined


@lru_cache(maxsize=1)
def byte_to_char() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class Tokenizer:
    """`encode(text) -> ids`, `decode(ids) -> text`, from GGUF tokenizer metadata."""

    def __init__(self, metadata: dict[str, Any]):
        model = metadata.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"expected a byte-level BPE (gpt2) tokenizer, got {model!r}")
        self.tokens: list[str] = metadata["tokenizer.ggml.tokens"]
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(
            metadata["tokenizer.ggml.merges"])}
        types = metadata.get("tokenizer.ggml.token_type")
        types = types.tolist() if types is not None else [1] * len(self.tokens)
        self.special = {t: i for i, t in enumerate(self.tokens) if types[i] in SPECIAL_TYPES}
        self.bos_id = _scalar(metadata.get("tokenizer.ggml.bos_token_id"))
        self.eos_id = _scalar(metadata.get("tokenizer.ggml.eos_token_id"))
        self.add_bos = bool(_scalar(metadata.get("tokenizer.ggml.add_bos_token")) or False)
        patterns = PRE_TOKENIZERS.get(metadata.get("tokenizer.ggml.pre"),
                                      PRE_TOKENIZERS["default"])
        self.patterns = [_regex.compile(p) for p in patterns]
        by_length = sorted(self.special, key=len, reverse=True)
        self.special_pattern = re.compile("|".join(re.escape(t) for t in by_length))
        self.to_char = byte_to_char()
        self.to_byte = {c: b for b, c in self.to_char.items()}
        self._cache: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        ids = [self.bos_id] if self.add_bos and self.bos_id is not None else []
        start = 0
        for match in self.special_pattern.finditer(text) if self.special else ():
            ids += self._encode_plain(text[start:match.start()])
            ids.append(self.special[match.group()])
            start = match.end()
        return ids + self._encode_plain(text[start:])

    def _encode_plain(self, text: str) -> list[int]:
        pieces = [text]
        for pattern in self.patterns:  # each pattern splits the pieces of the one before
            pieces = [w for piece in pieces for w in _split(pattern, piece)]
        ids = []
        for word in pieces:
            if word not in self._cache:
                chars = "".join(self.to_char[b] for b in word.encode("utf-8"))
                self._cache[word] = [self.ids[t] for t in self._merge(chars)]
            ids += self._cache[word]
        return ids

    def _merge(self, chars: str) -> list[str]:
        """Applies the merges to one word's characters, the lowest-ranked pair first."""
        parts = list(chars)
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b), 1 << 62), i)
                     for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            rank, i = min(pairs)
            if rank == 1 << 62:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return parts

    def decode_bytes(self, ids: list[int]) -> bytes:
        out = bytearray()
        for i in ids:
            token = self.tokens[i]
            if token in self.special:
                out += token.encode("utf-8")
            else:
                out += bytes(self.to_byte[c] for c in token)
        return bytes(out)

    def decode(self, ids: list[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


def _split(pattern: Any, text: str) -> list[str]:
    """`text` cut into the pattern's matches, keeping any unmatched stretches as pieces."""
    out, pos = [], 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        if m.group():
            out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def _scalar(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


# ChatML, the template of SmolLM2 (and of the Qwen and Hermes families): the renderer used when
# jinja2 is not installed. `default_system` is the system message the template adds when the
# conversation has none.
_CHATML_SYSTEM = re.compile(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", re.S)


def render_chat(template: str, messages: list[dict[str, str]],
                add_generation_prompt: bool = True) -> str:
    """The prompt text of a conversation under a GGUF file's `tokenizer.chat_template`.

    Uses jinja2 (sandboxed) when installed; otherwise renders ChatML, the only template family
    it knows, raising ValueError for other templates.
    """
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return render_chatml(template, messages, add_generation_prompt)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages,
                                            add_generation_prompt=add_generation_prompt)


def render_chatml(template: str, messages: list[dict[str, str]],
                  add_generation_prompt: bool = True) -> str:
    """ChatML without jinja2: `<|im_start|>role\\ncontent<|im_end|>\\n` per message, the
    template's default system message first when the conversation has none."""
    if "<|im_start|>" not in template:
        raise ValueError("render_chatml: the chat template is not ChatML; install jinja2")
    out = []
    default = _CHATML_SYSTEM.search(template)
    if messages and messages[0]["role"] != "system" and default:
        out.append(f"<|im_start|>system\n{default.group(1)}<|im_end|>\n")
    for m in messages:
        out.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)
