"""CPU kernels of `nuvec.fast.packed_attention`: the forward (output and log-sum-exp) and the
FlashAttention-2 backward, computed directly with NumPy one sequence at a time.

Each sequence is rotated into a small heads-first scratch buffer (so its matmuls see
contiguous `[H, n, D]` operands) and runs over blocks of query rows whose scores stay under
`SCORE_BYTES`, each block against only the keys its rows reach (the window cuts them). Every
temporary is one sequence's size and reused from one sequence to the next: memory grows with
the longest sequence, never with T², and no full-size intermediate is made. A forward
whose backward is already recorded keeps its probabilities and rotated queries and keys for
it (`Kept`, at most `KEEP_BYTES`; the sum of squared lengths, never T²), so the backward
needs four matmuls per block instead of five; the buffer of the last one freed is kept as a
spare for the next (at most `KEEP_BYTES` held between steps). Half types compute in float32,
float64 in float64.
"""

from __future__ import annotations

import weakref

import numpy as np

from nuvec.backends import vector_math
from nuvec.backends.numpy.registry import kernel
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp, spans

# The most bytes of scores one block holds (as the attention composition's CPU cap).
SCORE_BYTES = 4 << 20


def heads(x: np.ndarray, tokens: slice) -> np.ndarray:
    """`[H, n, D]` view of tokens `tokens` of token-major `[T, H, D]` data."""
    return x[tokens].transpose(1, 0, 2)


class Scratch:
    """Named flat buffers reused across sequences; `take` views the first elements of one as
    a contiguous array of the given shape (grown when too small)."""

    def __init__(self, dtype):
        self.dtype, self.buffers = dtype, {}

    def take(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = int(np.prod(shape))
        buf = self.buffers.get(name)
        if buf is None or buf.size < size:
            buf = self.buffers[name] = np.empty(size, self.dtype)
        return buf[:size].reshape(shape)


class Pack:
    """A node's pack: its geometry, the rotation as complex factors `c + i·s` in the compute
    dtype (`[2, 1, P, D/2]`: the queries' scaled by the softmax scale, the keys' plain) and
    scratch buffers.

    The queries and keys are stored with the halves of each head interleaved (`x1[0], x2[0],
    x1[1], x2[1], ...`): each rotated pair is then one complex number, and the rotation one
    contiguous complex product. The scores do not change (both sides are permuted alike); the
    gradients are permuted back when written out.
    """

    def __init__(self, p, qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray):
        self.f = np.float64 if qkv.dtype == np.float64 else np.float32
        self.t, width = qkv.shape
        self.h, self.window, self.lengths = p.heads, p.window, p.lengths
        self.d = width // (3 * self.h)
        self.x = qkv.reshape(self.t, 3, self.h, self.d)
        longest = max(self.lengths, default=0)
        c = cos[:longest].astype(self.f)
        z = np.empty((2, 1, longest, self.d // 2), np.result_type(self.f, np.complex64))
        z.real, z.imag = c, sin[:longest].astype(self.f)
        z[0] *= self.f(p.scale)
        self.turn, self.turn_back = z, np.conj(z)
        self.scratch = Scratch(self.f)

    def tokens(self, a: int, n: int) -> np.ndarray:
        """Tokens `a..a+n` as `[n, 3, H, D]` (a view of qkv)."""
        return self.x[a:a + n]

    def rotated(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The sequence `x [n, 3, H, D]`'s queries (rotated, scaled) and keys (rotated),
        halves interleaved, as a contiguous `[2, H, n, D]` in the compute dtype (`out`, else
        scratch)."""
        n, half = x.shape[0], self.d // 2
        if out is None:
            out = self.scratch.take("qk", (2, self.h, n, self.d))
        src = x[:, :2].transpose(1, 2, 0, 3)
        out[..., 0::2] = src[..., :half]
        out[..., 1::2] = src[..., half:]
        pairs = out.view(self.turn.dtype)
        np.multiply(pairs, self.turn[:, :, :n], out=pairs)
        return out

    def rotate_back(self, grads: np.ndarray, out: np.ndarray) -> None:
        """Writes `grads [2, H, n, D]` (of the interleaved rotated queries and keys) rotated
        back and de-interleaved into `out [2, H, n, D]` (a view of the qkv gradient)."""
        n, half = grads.shape[2], self.d // 2
        pairs = grads.view(self.turn.dtype)
        np.multiply(pairs, self.turn_back[:, :, :n], out=pairs)
        out[..., :half] = grads[..., 0::2]
        out[..., half:] = grads[..., 1::2]

    def blocks(self, n: int):
        """`(rows, keys, hidden)` per block of one sequence of `n` tokens: slices of the
        queries and of the keys they reach, and the `[R, K]` mask of the pairs out of the
        window (None if none is)."""
        w = self.window
        reach = n if w is None else min(n, 2 * w + 1)
        step = max(1, SCORE_BYTES // (self.h * reach * np.dtype(self.f).itemsize))
        for r0 in range(0, n, step):
            r1 = min(n, r0 + step)
            k0, k1 = (0, n) if w is None else (max(0, r0 - w), min(n, r1 + w))
            hidden = None
            if w is not None:
                gap = np.abs(np.arange(r0, r1)[:, None] - np.arange(k0, k1)[None, :])
                hidden = gap > w
                if not hidden.any():
                    hidden = None
            yield slice(r0, r1), slice(k0, k1), hidden

    def scores(self, name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """`a bᵀ` of `[H, R, D]` and `[H, K, D]` into the scratch buffer `name`."""
        s = self.scratch.take(name, (self.h, a.shape[1], b.shape[1]))
        return np.matmul(a, b.transpose(0, 2, 1), out=s)


def product(a: np.ndarray, b: np.ndarray, out: np.ndarray, first: bool, pack: Pack):
    """`out = a @ b` when `first`, else `out += a @ b` (through a scratch buffer)."""
    if first:
        np.matmul(a, b, out=out)
    else:
        out += np.matmul(a, b, out=pack.scratch.take("product", out.shape))


def root(a: np.ndarray) -> np.ndarray:
    """The array that owns `a`'s memory (following views)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class Kept:
    """The probabilities `P [H, n, n]` and the rotated queries and keys of each sequence (by
    first token) that a forward keeps for the backward of its outputs: the backward then
    skips the rotation, `Q Kᵀ` and its exponential. Found through the forward's output buffer
    while it lives, and only for the same inputs and parameters; forwards whose probabilities
    exceed `KEEP_BYTES` keep none."""

    def __init__(self, p, arrays):
        self.params = p.params()
        self.refs = [weakref.ref(root(a)) for a in arrays]
        self.probs: dict[int, np.ndarray] = {}
        self.qk: dict[int, np.ndarray] = {}
        self.buffer, self.used = np.empty(0, np.float32), 0

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        """The next `shape` elements of one buffer allocated for all the sequences."""
        size = int(np.prod(shape))
        part = self.buffer[self.used:self.used + size].reshape(shape)
        self.used += size
        return part

    def matches(self, p, arrays) -> bool:
        return self.params == p.params() and all(
            r() is root(a) for r, a in zip(self.refs, arrays))


# The most bytes of probabilities a forward keeps for its backward.
KEEP_BYTES = 64 << 20
# Forward output buffer id -> its `Kept` (removed when the buffer is freed).
KEPT: dict[int, Kept] = {}
# The buffer of the last `Kept` freed, reused by the next (a training loop then keeps its
# probabilities without touching fresh pages every step).
SPARE: list[np.ndarray] = []


def release(key: int, buffer: np.ndarray) -> None:
    """Forgets the `Kept` of a freed output and keeps its buffer as the spare."""
    KEPT.pop(key, None)
    SPARE[:] = [buffer]


def keeping(p, pack: Pack, arrays) -> Kept | None:
    """A `Kept` for this forward when its backward is recorded, its probabilities fit
    `KEEP_BYTES`, every sequence is one block and the output has the compute dtype (else
    None: a forward alone keeps nothing)."""
    if not p.backward_recorded or arrays[0].dtype != pack.f:
        return None
    elements = pack.h * sum(n * n + 2 * n * pack.d for n in pack.lengths)
    size = elements * np.dtype(pack.f).itemsize
    if size > KEEP_BYTES or any(len(list(pack.blocks(n))) > 1 for n in set(pack.lengths) if n):
        return None
    keep = Kept(p, arrays)
    spare = SPARE.pop() if SPARE else None
    if spare is None or spare.dtype != pack.f or spare.size < elements:
        spare = np.empty(elements, pack.f)
    keep.buffer = spare
    return keep


def forward_block(pack: Pack, q, k, v, hidden, s: np.ndarray, out: np.ndarray,
                  lse: np.ndarray, normalize: bool) -> None:
    """One block: scores into `s`, softmax, `out [H, R, D] = P V` and `lse [H, R]`; with
    `normalize`, `s` is left holding the probabilities."""
    np.matmul(q, k.transpose(0, 2, 1), out=s)
    if hidden is not None:
        np.copyto(s, -np.inf, where=hidden)
    m = s.max(axis=-1, keepdims=True)
    np.subtract(s, m, out=s)
    vector_math.exp(s, s)
    total = s.sum(axis=-1, keepdims=True)
    if normalize:
        np.divide(s, total, out=s)
        np.matmul(s, v, out=out)
    else:
        o = np.matmul(s, v, out=pack.scratch.take("o", out.shape))
        np.divide(o, total, out=out)
    np.log(total, out=total)
    np.add(m, total, out=m)
    lse[...] = m[..., 0]


@kernel(PackedAttention)
def packed_attention(p, qkv, cos, sin):
    pack = Pack(p, qkv, cos, sin)
    out = np.empty((pack.t, pack.h, pack.d), pack.f)
    lse = np.empty((pack.h, pack.t), pack.f)
    keep = keeping(p, pack, (qkv, cos, sin, out))
    for a, n in spans(pack.lengths):
        x = pack.tokens(a, n)
        if keep is None:
            q, k = pack.rotated(x)
        else:
            q, k = keep.qk[a] = pack.rotated(x, keep.take((2, pack.h, n, pack.d)))
        v = x[:, 2].transpose(1, 0, 2).astype(pack.f, copy=False)
        for rows, keys, hidden in pack.blocks(n):
            shape = (pack.h, rows.stop - rows.start, keys.stop - keys.start)
            s = pack.scratch.take("s", shape) if keep is None else keep.take(shape)
            tokens = slice(a + rows.start, a + rows.stop)
            forward_block(pack, q[:, rows], k[:, keys], v[:, keys], hidden, s,
                          heads(out, tokens), lse[:, tokens], keep is not None)
            if keep is not None:
                keep.probs[a] = s
    if keep is not None:
        KEPT[id(out)] = keep
        weakref.finalize(out, release, id(out), keep.buffer)
    return out.reshape(pack.t, pack.h * pack.d), lse


def probabilities(pack: Pack, q, k, lse: np.ndarray, hidden) -> np.ndarray:
    """`P = exp(Q Kᵀ − lse)` of one block (zero out of the window), in scratch."""
    probs = pack.scores("s", q, k)
    np.subtract(probs, lse[..., None], out=probs)
    if hidden is not None:
        np.copyto(probs, -np.inf, where=hidden)
    return vector_math.exp(probs, probs)


@kernel(PackedAttentionVjp)
def packed_attention_vjp(p, qkv, cos, sin, out, lse, dout, dlse=None):
    pack = Pack(p, qkv, cos, sin)
    h, d, f = pack.h, pack.d, pack.f
    keep = KEPT.get(id(root(out)))
    if keep is not None and not keep.matches(p, (qkv, cos, sin, out)):
        keep = None
    o_all, do_all = out.reshape(pack.t, h, d), dout.reshape(pack.t, h, d)
    lse = lse.astype(f, copy=False)
    dqkv = np.empty((pack.t, 3, h, d), f)
    for a, n in spans(pack.lengths):
        tokens = slice(a, a + n)
        x = pack.tokens(a, n)
        q, k = pack.rotated(x) if keep is None else keep.qk[a]
        v = x[:, 2].transpose(1, 0, 2).astype(f, copy=False)
        # contiguous: a broadcast cotangent (the gradient of a sum) would take NumPy's matmul
        # off BLAS
        do = np.ascontiguousarray(heads(do_all, tokens), dtype=f)
        delta = np.einsum("hnd,hnd->hn", do, heads(o_all, tokens).astype(f, copy=False))
        if dlse is not None:
            delta -= dlse[:, tokens]
        grads = pack.scratch.take("grads", (2, h, n, d))  # dq, dk before the back rotation
        dq, dk = grads
        dv = dqkv[tokens, 2].transpose(1, 0, 2)
        blocks = list(pack.blocks(n))
        first = len(blocks) == 1  # else dK and dV add up over the row blocks
        if not first:
            dv[...] = 0
            dk[...] = 0
        for rows, keys, hidden in blocks:
            if keep is None:
                probs = probabilities(pack, q[:, rows], k[:, keys],
                                      lse[:, a + rows.start:a + rows.stop], hidden)
            else:
                probs = keep.probs[a]
            do_r = do[:, rows]
            ds = pack.scores("ds", do_r, v[:, keys])
            np.subtract(ds, delta[:, rows, None], out=ds)
            np.multiply(ds, probs, out=ds)
            np.matmul(ds, k[:, keys], out=dq[:, rows])
            product(probs.transpose(0, 2, 1), do_r, dv[:, keys], first, pack)
            product(ds.transpose(0, 2, 1), q[:, rows], dk[:, keys], first, pack)
        pack.rotate_back(grads, dqkv[tokens, :2].transpose(1, 2, 0, 3))
    return dqkv.reshape(qkv.shape)
