"""Linear algebra primitives behind `nuvec.linalg`: inverse, solve, Cholesky, QR, SVD, eigh, LU.

Each primitive works on the last two axes and batches over the leading ones; rules are written
with nuvec operations. The public functions live in `nuvec.ops.linalg_functions` (one primitive
each) and `nuvec.ops.linalg_compose` (compositions); `nuvec.linalg` re-exports them. Nothing is
exported at the top level (MLX's `mx.linalg.*`).
"""

from __future__ import annotations


from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive, TransformError
from nuvec.ops.binary import add, divide, multiply, subtract
from nuvec.ops.creation import zeros
from nuvec.ops.families import batch_size, move_batch_to_front
from nuvec.ops.matmul import matmul
from nuvec.ops.join import concatenate
from nuvec.ops.matrices import eye, tril, triu
from nuvec.ops.reduction import sum as reduce_sum
from nuvec.ops.shape import expand_dims, swapaxes
from nuvec.ops.unary import negative

__all__: list[str] = []


# -- small helpers shared by the rules ---------------------------------------------------------
def mm(a: Array, b: Array) -> Array:
    return matmul(a, b)


def mT(a: Array) -> Array:
    """`a` with its last two axes swapped."""
    return swapaxes(a, -1, -2)


def eye_like(n: int, dtype: dt.Dtype) -> Array:
    return eye(n, dtype=dtype)


def diag_embed(v: Array) -> Array:
    """Batched vectors as batched diagonal matrices."""
    return multiply(expand_dims(v, -1), eye_like(v.shape[-1], v.dtype))


def diag_part(m: Array) -> Array:
    """The diagonals of batched square matrices."""
    return reduce_sum(multiply(m, eye_like(m.shape[-1], m.dtype)), axis=-1)


def triangle(x: Array, upper: bool, k: int = 0) -> Array:
    """The upper (`triu(x, k)`) or lower (`tril(x, -k)`) triangle of batched matrices."""
    return triu(x, k) if upper else tril(x, -k)


def sym_from_triangle(x: Array, upper: bool) -> Array:
    """The symmetric matrix a kernel sees when it reads only one triangle of `x`."""
    return add(triangle(x, upper), mT(triangle(x, upper, 1)))


def triangle_grad(s: Array, upper: bool) -> Array:
    """Pulls a gradient `s` w.r.t. `sym_from_triangle(x)` back to `x` (the adjoint map)."""
    return add(triangle(s, upper), triangle(mT(s), upper, 1))


def solve_square(a: Array, b: Array) -> Array:
    """`a^{-1} b` for equal batch shapes (a rule helper, no checks)."""
    return record1(SOLVE, (a, b), to_stream(None))


def solve_right(b: Array, a: Array) -> Array:
    """`b a^{-1}` for equal batch shapes."""
    return mT(solve_square(mT(a), mT(b)))


def off_diagonal_reciprocal(d: Array) -> Array:
    """`1 / d` off the diagonal and 0 on it (the eigen/singular gap matrix)."""
    eye = eye_like(d.shape[-1], d.dtype)
    return divide(subtract(1, eye), add(d, eye))


def real_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """The dtype of eigen/singular values: float32 for complex64 matrices."""
    return dt.float32 if dtype is dt.complex64 else dtype


def require_real(op: str, a: Array) -> None:
    """Rules of the decompositions are derived for real matrices only."""
    if a.dtype.kind == "c":
        raise TransformError(f"{op}: derivatives of complex decompositions are not supported")


class BatchedMatrix(Primitive):
    """A primitive on the last two axes: batching moves every batch axis to the front."""

    __slots__ = ()
    abstract = True

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        moved = [move_batch_to_front(x, ax, size) for x, ax in zip(inputs, axes)]
        outs = record(self, moved, to_stream(None))
        return outs, [0] * len(outs)


# -- primitives --------------------------------------------------------------------------------
class Inverse(BatchedMatrix):
    """A^{-1}; d(A^{-1}) = -A^{-1} dA A^{-1}."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        inv_t = mT(outputs[0])
        return [negative(mm(mm(inv_t, cotangents[0]), inv_t))]

    def jvp(self, primals, tangents, outputs):
        inv = outputs[0]
        return [negative(mm(mm(inv, tangents[0]), inv))]


class Solve(BatchedMatrix):
    """X = A^{-1} B for A (..., n, n), B (..., n, r); dX = A^{-1} (dB - dA X)."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[1].shape, inputs[1].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        a = primals[0]
        b_bar = solve_square(mT(a), cotangents[0])
        return [negative(mm(b_bar, mT(outputs[0]))) if i == 0 else b_bar for i in argnums]

    def jvp(self, primals, tangents, outputs):
        da, db = tangents
        rhs = db
        if da is not None:
            change = mm(da, outputs[0])
            rhs = negative(change) if db is None else subtract(db, change)
        return [solve_square(primals[0], rhs)]


class Cholesky(BatchedMatrix):
    """The Cholesky factor of the symmetric matrix read from one triangle of A.

    With A = L L^T (lower) and Phi(X) = tril(X) - diag(X)/2:
    dL = L Phi(L^{-1} dA L^{-T}); the gradient w.r.t. the read triangle follows by adjoints.
    The upper factor is the transpose of the lower factor of A^T.
    """

    __slots__ = ("upper",)

    def __init__(self, upper: bool):
        self.upper = bool(upper)

    def params(self):
        return (self.upper,)

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def _lower(self, outputs):
        return mT(outputs[0]) if self.upper else outputs[0]

    def vjp(self, primals, cotangents, argnums, outputs):
        low = self._lower(outputs)
        bar = mT(cotangents[0]) if self.upper else cotangents[0]
        p = phi(mm(mT(low), bar))
        s = mT(solve_square(mT(low), mT(solve_square(mT(low), p))))
        grad = triangle_grad(s, upper=False)
        return [mT(grad) if self.upper else grad]

    def jvp(self, primals, tangents, outputs):
        low = self._lower(outputs)
        da = mT(tangents[0]) if self.upper else tangents[0]
        sym = sym_from_triangle(da, upper=False)
        x = solve_right(solve_square(low, sym), mT(low))
        d_low = mm(low, phi(x))
        return [mT(d_low) if self.upper else d_low]


def phi(x: Array) -> Array:
    """The lower triangle of `x` with its diagonal halved."""
    return subtract(triangle(x, upper=False), multiply(0.5, diag_embed(diag_part(x))))


class Eigh(BatchedMatrix):
    """Eigenvalues (ascending) and, if `vectors`, eigenvectors of the symmetric matrix read
    from the `uplo` triangle. dw = diag(V^T dA V); dV = V (F o V^T dA V), F_ij = 1/(w_j - w_i).
    """

    __slots__ = ("uplo", "vectors")

    def __init__(self, uplo: str, vectors: bool):
        self.uplo, self.vectors = uplo, bool(vectors)

    def params(self):
        return (self.uplo, self.vectors)

    def output_specs(self, inputs):
        a = inputs[0]
        values = (a.shape[:-1], real_dtype(a.dtype))
        return (values, (a.shape, a.dtype)) if self.vectors else (values,)

    def _decomposition(self, primals, outputs):
        require_real("eigh", primals[0])
        if self.vectors:
            return outputs
        return record(Eigh(self.uplo, True), primals, to_stream(None))

    def vjp(self, primals, cotangents, argnums, outputs):
        w, v = self._decomposition(primals, outputs)
        w_bar = cotangents[0]
        v_bar = cotangents[1] if self.vectors else None
        inner = diag_embed(w_bar) if w_bar is not None else None
        if v_bar is not None:
            gap = off_diagonal_reciprocal(subtract(expand_dims(w, -2), expand_dims(w, -1)))
            term = multiply(gap, mm(mT(v), v_bar))
            inner = term if inner is None else add(inner, term)
        s = mm(mm(v, inner), mT(v))
        return [triangle_grad(s, upper=self.uplo == "U")]

    def jvp(self, primals, tangents, outputs):
        w, v = self._decomposition(primals, outputs)
        sym = sym_from_triangle(tangents[0], upper=self.uplo == "U")
        p = mm(mm(mT(v), sym), v)
        dw = diag_part(p)
        if not self.vectors:
            return [dw]
        gap = off_diagonal_reciprocal(subtract(expand_dims(w, -2), expand_dims(w, -1)))
        return [dw, mm(v, multiply(gap, p))]


class SVD(BatchedMatrix):
    """A = U diag(S) Vt with full U (m, m) and Vt (n, n), or S alone.

    Rules use the thin factors (the first k = min(m, n) columns of U and rows of Vt) and
    assume distinct nonzero singular values; the extra columns of a full U or Vt (any
    orthonormal completion) get a zero tangent and their cotangents are ignored.
    """

    __slots__ = ("compute_uv",)

    def __init__(self, compute_uv: bool):
        self.compute_uv = bool(compute_uv)

    def params(self):
        return (self.compute_uv,)

    def output_specs(self, inputs):
        a = inputs[0]
        *batch, m, n = a.shape
        s = ((*batch, min(m, n)), real_dtype(a.dtype))
        if not self.compute_uv:
            return (s,)
        return (((*batch, m, m), a.dtype), s, ((*batch, n, n), a.dtype))

    def _thin(self, primals, outputs):
        """(U_k, S, V_k) with V_k = Vt[:k]^T."""
        require_real("svd", primals[0])
        u, s, vt = outputs if self.compute_uv else record(SVD(True), primals, to_stream(None))
        m, n = primals[0].shape[-2:]
        k = min(m, n)
        if m > k:
            u = u[..., :, :k]
        if n > k:
            vt = vt[..., :k, :]
        return u, s, mT(vt)

    def vjp(self, primals, cotangents, argnums, outputs):
        u, s, v = self._thin(primals, outputs)
        m, n = primals[0].shape[-2:]
        k = min(m, n)
        if not self.compute_uv:
            return [mm(multiply(u, expand_dims(cotangents[0], -2)), mT(v))]
        u_bar, s_bar, vt_bar = cotangents
        if u_bar is not None and m > k:
            u_bar = u_bar[..., :, :k]
        v_bar = None
        if vt_bar is not None:
            v_bar = mT(vt_bar[..., :k, :] if n > k else vt_bar)
        gap = self._gap(s)
        srow = expand_dims(s, -2)  # multiplies columns by s_j
        inner = diag_embed(s_bar) if s_bar is not None else multiply(0.0, diag_embed(s))
        extra = []
        if u_bar is not None:
            j = multiply(gap, mm(mT(u), u_bar))
            inner = add(inner, multiply(add(j, mT(j)), srow))
            if m > k:
                proj = subtract(u_bar, mm(u, mm(mT(u), u_bar)))
                extra.append(mm(divide_columns(proj, s), mT(v)))
        if v_bar is not None:
            kk = multiply(gap, mm(mT(v), v_bar))
            inner = add(inner, multiply(expand_dims(s, -1), add(kk, mT(kk))))
            if n > k:
                proj = subtract(v_bar, mm(v, mm(mT(v), v_bar)))
                extra.append(mm(u, mT(divide_columns(proj, s))))
        grad = mm(mm(u, inner), mT(v))
        for e in extra:
            grad = add(grad, e)
        return [grad]

    @staticmethod
    def _gap(s: Array) -> Array:
        sq = multiply(s, s)
        return off_diagonal_reciprocal(subtract(expand_dims(sq, -2), expand_dims(sq, -1)))

    def jvp(self, primals, tangents, outputs):
        u, s, v = self._thin(primals, outputs)
        da = tangents[0]
        m, n = primals[0].shape[-2:]
        k = min(m, n)
        p = mm(mm(mT(u), da), v)
        ds = diag_part(p)
        if not self.compute_uv:
            return [ds]
        gap = self._gap(s)
        srow, scol = expand_dims(s, -2), expand_dims(s, -1)
        du = mm(u, multiply(gap, add(multiply(p, srow), multiply(scol, mT(p)))))
        dv = mm(v, multiply(gap, add(multiply(scol, p), multiply(mT(p), srow))))
        if m > k:
            rest = mm(da, v)
            du = add(du, divide_columns(subtract(rest, mm(u, mm(mT(u), rest))), s))
            du = pad_last(du, m - k)
        if n > k:
            rest = mm(mT(da), u)
            dv = add(dv, divide_columns(subtract(rest, mm(v, mm(mT(v), rest))), s))
            dv = pad_last(dv, n - k)
        return [du, ds, mT(dv)]


def divide_columns(x: Array, s: Array) -> Array:
    return divide(x, expand_dims(s, -2))


def pad_last(x: Array, extra: int) -> Array:
    """`x` with `extra` zero columns appended (the tangent of a full factor's completion)."""
    padding = zeros((*x.shape[:-1], extra), x.dtype)
    return concatenate([x, padding], axis=-1)


class QR(BatchedMatrix):
    """Reduced QR: Q (m, k) with orthonormal columns, R (k, n) upper triangular.

    Tall (m >= n): with C = Q^T dA R^{-1} and B = triu(C) + tril(C, -1)^T, dR = B R and
    dQ = dA R^{-1} - Q B. Wide matrices split A = [X | Y] with X square.
    """

    __slots__ = ()

    def output_specs(self, inputs):
        a = inputs[0]
        *batch, m, n = a.shape
        k = min(m, n)
        return (((*batch, m, k), a.dtype), ((*batch, k, n), a.dtype))

    def jvp(self, primals, tangents, outputs):
        q, r = outputs
        a, da = primals[0], tangents[0]
        m, n = a.shape[-2:]
        if m >= n:
            return list(_qr_tall_jvp(q, r, da))
        x_dot, y_dot = da[..., :, :m], da[..., :, m:]
        u, y = r[..., :, :m], a[..., :, m:]
        dq, du = _qr_tall_jvp(q, u, x_dot)
        dv = add(mm(mT(dq), y), mm(mT(q), y_dot))
        return [dq, concatenate([du, dv], axis=-1)]

    def vjp(self, primals, cotangents, argnums, outputs):
        q, r = outputs
        a = primals[0]
        q_bar, r_bar = cotangents
        m, n = a.shape[-2:]
        if m >= n:
            return [_qr_tall_vjp(q, r, q_bar, r_bar)]
        u, y = r[..., :, :m], a[..., :, m:]
        u_bar = r_bar[..., :, :m] if r_bar is not None else None
        v_bar = r_bar[..., :, m:] if r_bar is not None else None
        if v_bar is not None:
            extra = mm(y, mT(v_bar))
            q_bar = extra if q_bar is None else add(q_bar, extra)
        x_bar = _qr_tall_vjp(q, u, q_bar, u_bar)
        y_bar = mm(q, v_bar) if v_bar is not None else multiply(0.0, y)
        return [concatenate([x_bar, y_bar], axis=-1)]


def _qr_tall_jvp(q: Array, r: Array, da: Array) -> tuple[Array, Array]:
    a_rinv = solve_right(da, r)
    c = mm(mT(q), a_rinv)
    b = add(triangle(c, upper=True), mT(triangle(c, upper=False, k=1)))
    return subtract(a_rinv, mm(q, b)), mm(b, r)


def _qr_tall_vjp(q: Array, r: Array, q_bar: Array | None, r_bar: Array | None) -> Array:
    parts = []
    if r_bar is not None:
        parts.append(mm(r_bar, mT(r)))
    if q_bar is not None:
        parts.append(negative(mm(mT(q), q_bar)))
    m = parts[0] if len(parts) == 1 else add(*parts)
    nn = add(triangle(m, upper=True), triangle(mT(m), upper=False, k=1))
    left = mm(q, nn) if q_bar is None else add(q_bar, mm(q, nn))
    return solve_right(left, mT(r))


class LUFactor(BatchedMatrix):
    """LU with partial pivoting: packed LU (m, n), LAPACK pivots (k,) and row indices (m,)
    such that A = L[rows] @ U. Pivots are integers, so there is no derivative.
    """

    __slots__ = ()

    def output_specs(self, inputs):
        a = inputs[0]
        *batch, m, n = a.shape
        return ((a.shape, a.dtype), ((*batch, min(m, n)), dt.uint32), ((*batch, m), dt.uint32))


class Eig(BatchedMatrix):
    """Eigenvalues (and, if `vectors`, unit eigenvectors) of general square matrices, as
    complex64 in LAPACK's order. Not differentiable (eigenvalues of general matrices may be
    defective), as in MLX.
    """

    __slots__ = ("vectors",)

    def __init__(self, vectors: bool):
        self.vectors = bool(vectors)

    def params(self):
        return (self.vectors,)

    def output_specs(self, inputs):
        a = inputs[0]
        values = (a.shape[:-1], dt.complex64)
        return (values, (a.shape, dt.complex64)) if self.vectors else (values,)


class SlogDet(BatchedMatrix):
    """(sign, log|det A|); d log|det A| = tr(A^{-1} dA), the sign has no derivative."""

    __slots__ = ()

    def output_specs(self, inputs):
        a = inputs[0]
        return ((a.shape[:-2], a.dtype), (a.shape[:-2], a.dtype))

    def vjp(self, primals, cotangents, argnums, outputs):
        bar = cotangents[1]
        if bar is None:
            return [None]
        inv_t = mT(record1(INVERSE, (primals[0],), to_stream(None)))
        return [multiply(inv_t, expand_dims(bar, (-2, -1)))]

    def jvp(self, primals, tangents, outputs):
        inv_t = mT(record1(INVERSE, (primals[0],), to_stream(None)))
        return [None, reduce_sum(multiply(inv_t, tangents[0]), axis=(-2, -1))]


SOLVE, INVERSE, QR_ = Solve(), Inverse(), QR()
SLOGDET = SlogDet()
LU_FACTOR = LUFactor()
