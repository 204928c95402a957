"""Overloads of np.tensordot (which Numba lacks) and of the adjoints of tensordot and np.kron
(runtime/linalg.py); np.linalg.inv, solve, det, slogdet, cholesky, eigh, eigvalsh and svd of stacks of
matrices, and the products Numba's np.dot and @ lack (two dtypes, a number, stacks that broadcast).

The result's ndim depends on how many axes are contracted, which Numba must know when it
compiles: axes is an int written in the call (a literal) or a pair of ints or of tuples of
ints (their number is in the type; their values may come at run time). A list of axes has no
length in its type: it is refused with the way out. The contraction itself transposes each
operand to (free axes, contracted axes), views it as a matrix and multiplies (np.dot), as
np.tensordot does.
"""

from __future__ import annotations

import operator

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype

from ... import runtime as rt
from .arrays import _common_dtype
from .common import _compile, _is_none, _nd, _scalar


@register_jitable
def _free(contracted, n):
    """The axes of range(n) not in contracted, in order."""
    out = np.empty(n - contracted.size, np.int64)
    k = 0
    for axis in range(n):
        if not np.any(contracted == axis):
            out[k] = axis
            k += 1
    return out


@register_jitable
def _where(free, contracted, paired):
    """The permutation that puts a's axes back in a's adjoint: the tensordot of the result's
    adjoint with b has a's free axes first, then a's contracted ones in the order of b's
    (paired), which they meet."""
    where = np.empty(free.size + contracted.size, np.int64)
    where[: free.size] = free
    order = np.argsort(paired)
    for j in range(contracted.size):
        where[free.size + j] = contracted[order[j]]
    return np.argsort(where)


@register_jitable
def _where_b(free, contracted, paired):
    """The same for b's adjoint: the tensordot of a with the result's adjoint has b's contracted
    axes first, in the order of a's (paired), then b's free axes."""
    where = np.empty(free.size + contracted.size, np.int64)
    order = np.argsort(paired)
    for j in range(contracted.size):
        where[j] = contracted[order[j]]
    where[contracted.size:] = free
    return np.argsort(where)


def _tuple(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _contracted_axes(na: int, nb: int, axes):
    """(source of the lines that set `ca` and `cb`, the arrays of the contracted axes of a and b,
    paired in order; their number), or (None, None) for an int axes not yet literal."""
    if isinstance(axes, types.Omitted):
        axes = axes.value
    if isinstance(axes, int) or isinstance(axes, types.IntegerLiteral):
        n = axes if isinstance(axes, int) else axes.literal_value
        if not 0 <= n <= min(na, nb):
            raise TypingError(f"s2s: np.tensordot contracts {n} axes of arrays of {na} and {nb} dimensions")
        a_items = [str(na - n + i) for i in range(n)]
        b_items = [str(i) for i in range(n)]
    elif isinstance(axes, types.Integer):
        return None, None
    elif isinstance(axes, types.BaseTuple) and len(axes) == 2:
        sides = []
        for side, t in enumerate(axes.types):
            if isinstance(t, types.Integer):
                sides.append([f"axes[{side}]"])
            elif isinstance(t, types.BaseTuple) and all(isinstance(i, types.Integer) for i in t.types):
                sides.append([f"axes[{side}][{i}]" for i in range(len(t))])
            else:
                raise TypingError("s2s: under s2s.jit, np.tensordot takes axes as an int or a pair of ints or of "
                                  "tuples of ints (a list has no length Numba knows when it compiles): write "
                                  "axes=((1, 0), (0, 1))")
        if len(sides[0]) != len(sides[1]):
            raise TypingError("s2s: np.tensordot pairs as many axes of a as of b")
        a_items = [f"{item} % {na}" for item in sides[0]]
        b_items = [f"{item} % {nb}" for item in sides[1]]
    else:
        raise TypingError("s2s: under s2s.jit, np.tensordot takes axes as an int or a pair of ints or of tuples "
                          "of ints")
    k = len(a_items)
    lines = [f"ca = np.empty({k}, np.int64)", f"cb = np.empty({k}, np.int64)"]
    lines += [f"ca[{i}] = {item}" for i, item in enumerate(a_items)]
    lines += [f"cb[{i}] = {item}" for i, item in enumerate(b_items)]
    return lines, k


def _literal_axes(params: str):
    """An implementation that makes an int axes literal (Numba compiles again for its value)."""
    return _compile(f"def impl({params}):\n    numba.literally(axes)\n", "impl", numba=numba)


def _compiled(params: str, lines: list[str], **env):
    body = "".join(f"    {line}\n" for line in lines)
    return _compile(f"def impl({params}):\n{body}", "impl", _free=_free, _where=_where, _where_b=_where_b, **env)


def _with_a_number(a, b, axes, params: str, result: str):
    """tensordot where a or b is a number: nothing is contracted (axes 0), the result is the
    product a * b; `result` is the source of what the function returns. None where both are arrays."""
    if isinstance(a, types.Array) and isinstance(b, types.Array):
        return None
    if not (_scalar(a) or isinstance(a, types.Array)) or not (_scalar(b) or isinstance(b, types.Array)):
        raise TypingError("s2s: under s2s.jit, np.tensordot takes arrays and numbers")
    if not isinstance(axes, (types.Integer, types.Omitted, int)):
        raise TypingError("s2s: under s2s.jit, np.tensordot of a number takes axes=0")
    return _compile(f"def impl({params}):\n    if axes != 0:\n"
                    "        raise ValueError('s2s: np.tensordot of a number contracts no axes: axes=0')\n"
                    f"    return {result}\n", "impl")


@overload(rt.tensordot, prefer_literal=True)
def _tensordot(a, b, axes=2):
    number = _with_a_number(a, b, axes, "a, b, axes=2", "a * b")
    if number is not None:
        return number
    na, nb = a.ndim, b.ndim
    setup, k = _contracted_axes(na, nb, axes)
    if setup is None:
        return _literal_axes("a, b, axes=2")
    fa, fb = na - k, nb - k
    common = _common_dtype(a, b)
    cast = ".astype(common)" if common is not None else ""
    lines = setup + [
        f"fa = _free(ca, {na})",
        f"fb = _free(cb, {nb})",
        "at = np.ascontiguousarray(np.transpose(a, "
        f"{_tuple([f'fa[{i}]' for i in range(fa)] + [f'ca[{i}]' for i in range(k)])})){cast}",
        "bt = np.ascontiguousarray(np.transpose(b, "
        f"{_tuple([f'cb[{i}]' for i in range(k)] + [f'fb[{i}]' for i in range(fb)])})){cast}",
        "m = " + " * ".join(["1"] + [f"a.shape[fa[{i}]]" for i in range(fa)]),
        "n = " + " * ".join(["1"] + [f"b.shape[fb[{i}]]" for i in range(fb)]),
        "inner = " + " * ".join(["1"] + [f"a.shape[ca[{i}]]" for i in range(k)]),
        "out = np.dot(at.reshape((m, inner)), bt.reshape((inner, n)))",
        "return out.reshape("
        f"{_tuple([f'a.shape[fa[{i}]]' for i in range(fa)] + [f'b.shape[fb[{i}]]' for i in range(fb)])})",
    ]
    return _compiled("a, b, axes=2", lines, common=common)


def _bar(g, a, b, axes, side: str):
    # (with a number: the adjoint of a * b, summed where the other operand is the array)
    mine, other = ("a", "b") if side == "a" else ("b", "a")
    number = _with_a_number(a, b, axes, "g, a, b, axes=2",
                            f"np.sum(g * {other}) * 1.0" if _scalar({"a": a, "b": b}[mine]) else f"g * {other}")
    if number is not None:
        return number
    na, nb = a.ndim, b.ndim
    setup, k = _contracted_axes(na, nb, axes)
    params = "g, a, b, axes=2"
    if setup is None:
        return _literal_axes(params)
    fa, fb = na - k, nb - k
    lines = setup + [f"fa = _free(ca, {na})", f"fb = _free(cb, {nb})"]
    if side == "a":
        # tensordot(g, b) over g's b-part and b's free axes: a's free axes, then b's contracted ones.
        pair = _tuple([str(fa + i) for i in range(fb)]), _tuple([f"fb[{i}]" for i in range(fb)])
        product = "g * b" if _scalar(g) else f"rt.tensordot(g, b, ({pair[0]}, {pair[1]}))"
        lines += [f"t = {product}", "p = _where(fa, ca, cb)",
                  f"return np.transpose(t, {_tuple([f'p[{i}]' for i in range(na)])})"]
    else:
        # tensordot(a, g) over a's free axes and g's a-part: a's contracted axes, then b's free ones.
        pair = _tuple([f"fa[{i}]" for i in range(fa)]), _tuple([str(i) for i in range(fa)])
        product = "a * g" if _scalar(g) else f"rt.tensordot(a, g, ({pair[0]}, {pair[1]}))"
        lines += [f"t = {product}", "p = _where_b(fb, cb, ca)",
                  f"return np.transpose(t, {_tuple([f'p[{i}]' for i in range(nb)])})"]
    return _compiled(params, lines)


@overload(rt.tensordot_bar_a, prefer_literal=True)
def _tensordot_bar_a(g, a, b, axes=2):
    return _bar(g, a, b, axes, "a")


@overload(rt.tensordot_bar_b, prefer_literal=True)
def _tensordot_bar_b(g, a, b, axes=2):
    return _bar(g, a, b, axes, "b")


# ---- kron -------------------------------------------------------------------------------


def _kron_ndims(g, a, b):
    if _nd(a) != _nd(b) or _nd(a) not in (1, 2):
        raise TypingError("s2s: the derivative of np.kron is for two 1-d or two 2-d arrays")


# np.kron of a number and an array is their product (of the array's shape), as NumPy's: its
# derivatives are the product's.


@overload(rt.kron)
def _kron(a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return lambda a, b: a * b
    return lambda a, b: np.kron(np.ascontiguousarray(a), np.ascontiguousarray(b))


@overload(rt.kron_bar_a)
def _kron_bar_a(g, a, b):
    if _nd(a) == 0:
        return lambda g, a, b: np.sum(g * b)
    if _nd(b) == 0:
        return lambda g, a, b: g * b
    _kron_ndims(g, a, b)
    if _nd(a) == 1:
        def vector(g, a, b):
            view = np.ascontiguousarray(g).reshape((a.shape[0], b.shape[0]))
            out = np.zeros(a.shape, view.dtype)
            for i in range(a.shape[0]):
                out[i] = np.sum(view[i] * b)
            return out
        return vector

    def impl(g, a, b):
        view = np.ascontiguousarray(g).reshape((a.shape[0], b.shape[0], a.shape[1], b.shape[1]))
        out = np.zeros(a.shape, view.dtype)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = np.sum(view[i, :, j, :] * b)
        return out
    return impl


@overload(rt.kron_bar_b)
def _kron_bar_b(g, a, b):
    if _nd(b) == 0:
        return lambda g, a, b: np.sum(g * a)
    if _nd(a) == 0:
        return lambda g, a, b: g * a
    _kron_ndims(g, a, b)
    if _nd(a) == 1:
        def vector(g, a, b):
            view = np.ascontiguousarray(g).reshape((a.shape[0], b.shape[0]))
            out = np.zeros(b.shape, view.dtype)
            for i in range(a.shape[0]):
                out += view[i] * a[i]
            return out
        return vector

    def impl(g, a, b):
        view = np.ascontiguousarray(g).reshape((a.shape[0], b.shape[0], a.shape[1], b.shape[1]))
        out = np.zeros(b.shape, view.dtype)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out += view[i, :, j, :] * a[i, j]
        return out
    return impl


# ---- the triangles of np.linalg.cholesky's rule, the helpers of eigh's and svd's ----------------
# Each takes a matrix, or a stack of them (the leading axes): a stack goes matrix by matrix.


def _stack_dtype(x):
    return x.dtype if isinstance(x.dtype, (types.Float, types.Complex)) else types.float64


def _per_matrix(name, x, of_matrix, shape: str = "x.shape", param: str = "x"):
    """The overload of a helper of one array `param` of matrices: of_matrix (jitable) of it, or of
    each matrix of a stack into an array of `shape` (an expression of x, the same array)."""
    if _nd(x) == 2:
        return _compile(f"def impl({param}):\n    return of_matrix({param})\n", "impl", of_matrix=of_matrix)
    if _nd(x) < 2:
        raise TypingError(f"s2s: under s2s.jit, {name} takes a matrix or a stack of matrices")
    return _compile(f"def impl({param}):\n    x = {param}\n    out = np.empty({shape}, dtype)\n"
                    "    for idx in np.ndindex(x.shape[:-2]):\n        out[idx] = of_matrix(np.ascontiguousarray(x[idx]))\n"
                    "    return out\n", "impl", of_matrix=of_matrix, dtype=_stack_dtype(x))


@register_jitable
def _lower_half_matrix(x):
    return np.tril(x, -1) + 0.5 * x * np.eye(x.shape[0], x.shape[1])


@register_jitable
def _lower_symmetric_matrix(x):
    return np.tril(x) + np.tril(x, -1).T


@register_jitable
def _lower_symmetric_bar_matrix(g):
    return np.tril(g + g.T, -1) + g * np.eye(g.shape[0], g.shape[1])


@overload(rt.lower_half)
def _lower_half(x):
    return _per_matrix("lower_half", x, _lower_half_matrix)


@overload(rt.lower_symmetric)
def _lower_symmetric(x):
    return _per_matrix("lower_symmetric", x, _lower_symmetric_matrix)


@overload(rt.lower_symmetric_bar)
def _lower_symmetric_bar(g):
    return _per_matrix("lower_symmetric_bar", g, _lower_symmetric_bar_matrix, param="g")


@register_jitable
def _diagonal_of(m):
    return np.diag(m).copy()


@overload(rt.matrix_diagonal)
def _matrix_diagonal(m):
    return _per_matrix("matrix_diagonal", m, _diagonal_of, "x.shape[:-1]", param="m")


@overload(rt.diagonal_matrix)
def _diagonal_matrix(d):
    if _nd(d) == 1:
        return lambda d: np.diag(d)
    if _nd(d) < 1:
        raise TypingError("s2s: under s2s.jit, diagonal_matrix takes a vector or a stack of them")
    dtype = _stack_dtype(d)

    def impl(d):
        out = np.zeros(d.shape + d.shape[-1:], dtype)
        for idx in np.ndindex(d.shape[:-1]):
            out[idx] = np.diag(np.ascontiguousarray(d[idx]))
        return out
    return impl


@register_jitable
def _pair_differences_of(w):
    n = w.shape[0]
    out = np.empty((n, n), w.dtype)
    for i in range(n):
        for j in range(n):
            out[i, j] = w[j] - w[i]
    return out


@overload(rt.pair_differences)
def _pair_differences(w):
    if _nd(w) == 1:
        return lambda w: _pair_differences_of(w)
    if _nd(w) < 1:
        raise TypingError("s2s: under s2s.jit, pair_differences takes a vector or a stack of them")

    def impl(w):
        out = np.empty(w.shape + w.shape[-1:], w.dtype)
        for idx in np.ndindex(w.shape[:-1]):
            out[idx] = _pair_differences_of(np.ascontiguousarray(w[idx]))
        return out
    return impl


@register_jitable
def _eigen_quotient_of(w, x):
    n = x.shape[0]
    out = np.zeros_like(x * 1.0)
    for i in range(n):
        for j in range(n):
            if i != j and x[i, j] != 0:
                out[i, j] = x[i, j] / (w[j] - w[i])
    return out


@overload(rt.eigen_quotient)
def _eigen_quotient(w, x):
    if _nd(x) == 2:
        return lambda w, x: _eigen_quotient_of(w, x)
    if _nd(x) < 2 or _nd(w) != _nd(x) - 1:
        raise TypingError("s2s: under s2s.jit, eigen_quotient takes a matrix or a stack of them, with their vectors")
    dtype = _stack_dtype(x)

    def impl(w, x):
        out = np.empty(x.shape, dtype)
        for idx in np.ndindex(x.shape[:-2]):
            out[idx] = _eigen_quotient_of(np.ascontiguousarray(w[idx]), np.ascontiguousarray(x[idx]))
        return out
    return impl


def _matrix(name, x):
    if _nd(x) != 2:
        raise TypingError(f"s2s: under s2s.jit, {name} takes a matrix: Numba's np.linalg takes no stack of matrices")


@overload(rt.strict_lower)
def _strict_lower(x):
    _matrix("strict_lower", x)
    return lambda x: np.tril(x, -1)


@overload(rt.qr_inner_bar)
def _qr_inner_bar(e):
    _matrix("qr_inner_bar", e)
    return lambda e: np.tril(e - e.T, -1) - e


@overload(rt.right_solve)
def _right_solve(x, r):
    _matrix("right_solve", r)

    def impl(x, r):
        if r.shape[0] != r.shape[1]:
            raise ValueError("s2s: the derivative of np.linalg.qr is for a matrix with at least as many rows as "
                             "columns (R square)")
        return np.linalg.solve(np.ascontiguousarray(r.T), np.ascontiguousarray(x.T)).T
    return impl


def _flag(value, default):
    """A bool option as Numba types it: its value where the type holds it (a literal, an
    omitted argument, the default), None where it is known at run time only."""
    if value is None or isinstance(value, bool):
        return default if value is None else value
    if isinstance(value, types.Omitted):
        return bool(value.value)
    if isinstance(value, (types.BooleanLiteral, types.IntegerLiteral)):
        return bool(value.literal_value)
    return None


@overload(rt.linalg_eig)
def _linalg_eig(a):
    if _nd(a) != 2:
        raise TypingError("s2s: under s2s.jit, np.linalg.eig takes a matrix: Numba's np.linalg takes no stack of "
                          "matrices")
    message = rt.linalg.EIG_COMPLEX

    def impl(a):
        w = np.linalg.eigvals(a.astype(np.complex128))  # (Numba's eig raises its own error where they are complex)
        if np.any(w.imag != 0.0):
            raise ValueError(message)
        return np.linalg.eig(a)
    return impl


@overload(rt.linalg_eigvals)
def _linalg_eigvals(a):
    if _nd(a) != 2:
        raise TypingError("s2s: under s2s.jit, np.linalg.eigvals takes a matrix: Numba's np.linalg takes no stack of "
                          "matrices")
    message = rt.linalg.EIG_COMPLEX

    def impl(a):
        w = np.linalg.eigvals(a.astype(np.complex128))  # (Numba's eigvals raises its own error where they are complex)
        if np.any(w.imag != 0.0):
            raise ValueError(message)
        return w.real.copy()
    return impl


@overload(rt.real_eigenvalues)
def _real_eigenvalues(w):
    return lambda w: w  # (real: rt.linalg_eig refused complex ones)


@overload(rt.singular_values)
def _singular_values(s, u, vh):
    message = rt.linalg.SVD_FULL

    def impl(s, u, vh):
        k = s.shape[-1]
        if u.shape[-1] != k or vh.shape[-2] != k:
            raise ValueError(message)
        return s
    return impl


def _triangle(UPLO):
    """The triangle np.linalg.eigh reads: "L" or "U" (either case), as Numba types the argument."""
    value = getattr(UPLO, "literal_value", None) if not isinstance(UPLO, (str, types.Omitted)) else UPLO
    if isinstance(value, types.Omitted):
        value = value.value
    if not isinstance(value, str) or value.upper() not in ("L", "U"):
        raise TypingError("s2s: under s2s.jit, np.linalg.eigh and eigvalsh take UPLO as a constant, 'L' or 'U'")
    return value.upper()


@register_jitable
def _eigh_lower(a):
    return np.linalg.eigh(np.tril(a) + np.tril(a, -1).T)


def _eigh_upper(a):
    """np.linalg.eigh(a, "U") of a matrix, as NumPy computes it: LAPACK's xxxevd told to read the
    upper triangle. (Numba's np.linalg.eigh always reads the lower one; of the matrix symmetrised
    from the upper triangle it finds the same eigenvalues, but LAPACK's reduction from the other
    triangle may give an eigenvector the opposite sign to NumPy's.)"""


@overload(_eigh_upper)
def _eigh_upper_impl(a):
    from numba.np import linalg as numba_linalg  # (Numba's LAPACK bindings, as its own eigh calls them)

    numba_linalg.ensure_lapack()
    evd = numba_linalg._LAPACK().numba_ez_xxxevd(a.dtype)
    kind = ord(numba_linalg.get_blas_kind(a.dtype, "eigh"))
    w_dtype = as_dtype(getattr(a.dtype, "underlying_float", a.dtype))
    jobz, uplo = ord("V"), ord("U")

    def impl(a):
        n = a.shape[-1]
        if a.shape[-2] != n:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square.")
        vectors = np.empty((n, n), a.dtype).T  # (Fortran order: LAPACK overwrites it with the eigenvectors)
        vectors[:, :] = a
        w = np.empty(n, dtype=w_dtype)
        if n == 0:
            return w, vectors
        if evd(kind, jobz, uplo, n, vectors.ctypes, n, w.ctypes) != 0:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        return w, vectors

    return impl


def _eigh_of_each(eigh, a, values_only: bool):
    """eigh (jitable, of a matrix) of each matrix of the stack a: the eigenvalues and vectors, or the values."""
    source = ("def impl(a, UPLO='L'):\n    w = np.empty(a.shape[:-1], dtype)\n    v = np.empty(a.shape, dtype)\n"
              "    for idx in np.ndindex(a.shape[:-2]):\n        w[idx], v[idx] = eigh(np.ascontiguousarray(a[idx]))\n"
              f"    return {'w' if values_only else 'w, v'}\n")
    return _compile(source, "impl", eigh=eigh, dtype=_stack_dtype(a))


@overload(rt.linalg_eigh)
def _linalg_eigh(a, UPLO="L"):
    eigh = _eigh_upper if _triangle(UPLO) == "U" else _eigh_lower  # (Numba's eigh reads the matrix whole)
    if _nd(a) > 2:
        return _eigh_of_each(eigh, a, False)
    _matrix("linalg_eigh", a)
    return lambda a, UPLO="L": eigh(a)


@overload(rt.linalg_eigvalsh)
def _linalg_eigvalsh(a, UPLO="L"):
    eigh = _eigh_upper if _triangle(UPLO) == "U" else _eigh_lower
    if _nd(a) > 2:
        return _eigh_of_each(eigh, a, True)
    _matrix("linalg_eigvalsh", a)
    return lambda a, UPLO="L": eigh(a)[0]


@overload(rt.linalg_svd)
def _linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if _nd(a) < 2:
        raise TypingError("s2s: under s2s.jit, np.linalg.svd takes a matrix or a stack of matrices")
    uv = _flag(compute_uv, True)
    if uv is None:  # compute_uv=flag: compiled again for its value, which sets the result's type
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: numba.literally(compute_uv)
    if _flag(hermitian, False) is not False:
        raise TypingError("s2s: under s2s.jit, np.linalg.svd takes hermitian=False (its default) only")
    if _nd(a) == 2:
        if uv:
            return lambda a, full_matrices=True, compute_uv=True, hermitian=False: np.linalg.svd(a, full_matrices)
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: np.linalg.svd(a, False)[1]
    full = _flag(full_matrices, True) if uv else False
    if full is None:
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: numba.literally(full_matrices)
    each = _svd_of_each(_stack_dtype(a), full)
    if uv:
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: each(a)
    return lambda a, full_matrices=True, compute_uv=True, hermitian=False: each(a)[1]


def _svd_of_each(dtype, full: bool):
    """np.linalg.svd of each matrix of a stack (U, s, Vh), with full or reduced U and Vh."""
    source = ("def each(a):\n    m, n = a.shape[-2], a.shape[-1]\n    k = min(m, n)\n"
              f"    rows, columns = {'(m, n)' if full else '(k, k)'}\n"
              "    u = np.empty(a.shape[:-2] + (m, rows), dtype)\n    s = np.empty(a.shape[:-2] + (k,), dtype)\n"
              "    vh = np.empty(a.shape[:-2] + (columns, n), dtype)\n    for idx in np.ndindex(a.shape[:-2]):\n"
              f"        u[idx], s[idx], vh[idx] = np.linalg.svd(np.ascontiguousarray(a[idx]), {full})\n"
              "    return u, s, vh\n")
    return register_jitable(_compile(source, "each", dtype=dtype))


# np.linalg.lstsq's helpers (runtime/linalg.py): one matrix a, b a vector or a matrix of columns.


def _lstsq_operands(name, a, b):
    if _nd(a) != 2 or _nd(b) not in (1, 2):
        raise TypingError(f"s2s: under s2s.jit, {name} (np.linalg.lstsq's derivative) takes a matrix a and a "
                          "vector or matrix b")


@overload(rt.full_rank_solution)
def _full_rank_solution(x, rank, a):
    _lstsq_operands("full_rank_solution", a, x)

    def impl(x, rank, a):
        if rank != min(a.shape[0], a.shape[1]):
            raise ValueError("s2s: the derivative of np.linalg.lstsq is for a matrix of full rank (rank min(m, n)): "
                             "below it the solution jumps where a singular value crosses rcond")
        return x
    return impl


@overload(rt.lstsq_residuals)
def _lstsq_residuals(value, residuals):
    if _scalar(value):
        def number(value, residuals):
            return np.full(residuals.shape, value * 1.0)
        return number

    def impl(value, residuals):
        if residuals.size == 0:
            return np.zeros(residuals.shape)
        return np.ascontiguousarray(value * 1.0).reshape(residuals.shape)
    return impl


@overload(rt.residual_weights)
def _residual_weights(r, residuals_bar):
    def impl(r, residuals_bar):
        if residuals_bar.size == 0:
            return np.zeros(r.shape)
        return r * residuals_bar
    return impl


@overload(rt.linalg_lstsq)
def _linalg_lstsq(a, b, rcond=None):
    if rcond is None or _is_none(rcond) or isinstance(rcond, types.Omitted) and rcond.value is None:
        def impl(a, b, rcond=None):  # NumPy's rcond=None
            return np.linalg.lstsq(a, b, np.finfo(a.dtype).eps * max(a.shape[0], a.shape[1]))
        return impl
    return lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond)


# ---- np.linalg on stacks of matrices ------------------------------------------------------
# Numba's np.linalg.inv, pinv, solve, det, slogdet and cholesky take one matrix; NumPy's take a stack (the
# leading axes) too, as the rules' derivatives (templates/array_rules.py) do. These forms, only
# where Numba has none (3 or more dimensions), call Numba's on each matrix of the stack (eigh,
# eigvalsh and svd: at the end).


def _stack_of_matrices(a):
    return isinstance(a, types.Array) and a.ndim >= 3


def _linalg_dtype(a):
    return a.dtype if isinstance(a.dtype, (types.Float, types.Complex)) else types.float64


@overload(np.linalg.inv)
def _inv_of_a_stack(a):
    if _stack_of_matrices(a):
        def impl(a):
            out = np.empty(a.shape, dtype)
            for idx in np.ndindex(a.shape[:-2]):
                out[idx] = np.linalg.inv(np.ascontiguousarray(a[idx]))
            return out
        dtype = _linalg_dtype(a)
        return impl


@overload(np.linalg.pinv)
def _pinv_of_a_stack(a, rcond=1e-15):
    if _stack_of_matrices(a):
        def impl(a, rcond=1e-15):
            out = np.empty(a.shape[:-2] + (a.shape[-1], a.shape[-2]), dtype)
            for idx in np.ndindex(a.shape[:-2]):
                out[idx] = np.linalg.pinv(np.ascontiguousarray(a[idx]), rcond)
            return out
        dtype = _linalg_dtype(a)
        return impl


@overload(np.linalg.det)
def _det_of_a_stack(a):
    if _stack_of_matrices(a):
        def impl(a):
            out = np.empty(a.shape[:-2], dtype)
            for idx in np.ndindex(a.shape[:-2]):
                out[idx] = np.linalg.det(np.ascontiguousarray(a[idx]))
            return out
        dtype = _linalg_dtype(a)
        return impl


@overload(np.linalg.cholesky)
def _cholesky_of_a_stack(a):
    if _stack_of_matrices(a):
        def impl(a):
            out = np.empty(a.shape, dtype)
            for idx in np.ndindex(a.shape[:-2]):
                out[idx] = np.linalg.cholesky(np.ascontiguousarray(a[idx]))
            return out
        dtype = _linalg_dtype(a)
        return impl


@overload(np.linalg.slogdet)
def _slogdet_of_a_stack(a):
    if _stack_of_matrices(a):
        def impl(a):
            sign = np.empty(a.shape[:-2], dtype)
            logdet = np.empty(a.shape[:-2], dtype)
            for idx in np.ndindex(a.shape[:-2]):
                sign[idx], logdet[idx] = np.linalg.slogdet(np.ascontiguousarray(a[idx]))
            return sign, logdet
        dtype = _linalg_dtype(a)
        return impl


def _result_dtype(*arrays):
    return from_dtype(np.result_type(*(as_dtype(_linalg_dtype(a)) for a in arrays)))


@overload(np.linalg.solve)
def _solve_of_a_stack(a, b):
    """np.linalg.solve with a stack of matrices, as NumPy 2 reads it: b of one dimension is one
    vector solved with each matrix of a; b of two or more is a matrix or a stack of them, whose
    leading axes broadcast against a's (a (3, 3, 3) stack and a (3, 2) b: three (3, 2) solutions)."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or a.ndim < 2 or a.ndim <= 2 and b.ndim <= 2:
        return None
    dtype = _result_dtype(a, b)
    if b.ndim == 1:
        def impl(a, b):
            out = np.empty(a.shape[:-1], dtype)
            for idx in np.ndindex(a.shape[:-2]):
                out[idx] = np.linalg.solve(np.ascontiguousarray(a[idx]), np.ascontiguousarray(b))
            return out
        return impl

    def impl(a, b):
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        x = np.broadcast_to(a, lead + a.shape[-2:])
        y = np.broadcast_to(b, lead + b.shape[-2:])
        out = np.empty(lead + b.shape[-2:], dtype)
        for idx in np.ndindex(lead):
            out[idx] = np.linalg.solve(np.ascontiguousarray(x[idx]), np.ascontiguousarray(y[idx]))
        return out
    return impl


# ---- products Numba's np.dot and @ lack -----------------------------------------------------
# Numba multiplies matrices and vectors of one float or complex dtype; NumPy also multiplies
# operands of two dtypes (a float vector @ an int64 one, in float64), a number (np.dot(A, 2.0):
# A * 2.0) and stacks of matrices whose leading axes broadcast ((2, 1, 3, 3) @ (4, 3, 3): (2, 4, 3, 3)).
# These forms answer only where Numba's have none (they return None where Numba's compile).


def _product_dtype(a, b):
    """NumPy's dtype of a product of arrays a and b, where it is a float or complex (BLAS's); else None."""
    dtype = np.result_type(as_dtype(a.dtype), as_dtype(b.dtype))
    return from_dtype(dtype) if dtype.kind in "fc" else None


def _contiguous_as(m, dtype):
    """m, C-contiguous and of dtype (a copy only where it is neither)."""


@overload(_contiguous_as)
def _contiguous_as_overload(m, dtype):
    if m.dtype == dtype.instance_type:
        return lambda m, dtype: np.ascontiguousarray(m)
    return lambda m, dtype: np.ascontiguousarray(m).astype(dtype)


@register_jitable
def _broadcast_matmul(a, b, dtype):
    """a @ b of two arrays of 2 or more dimensions, their leading axes broadcast against each other.
    Each product is written by np.dot into its place in the result (an assignment of a matrix to
    out[idx] costs Numba seconds more to compile)."""
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = np.broadcast_to(a, lead + a.shape[-2:])
    y = np.broadcast_to(b, lead + b.shape[-2:])
    out = np.empty(lead + (a.shape[-2], b.shape[-1]), dtype)
    for idx in np.ndindex(lead):
        np.dot(_contiguous_as(x[idx], dtype), _contiguous_as(y[idx], dtype), out[idx])
    return out


@overload(operator.matmul)
def _matmul_beyond_numba(a, b):
    """a @ b of operands of two dtypes, or with a stack of matrices (NumPy's broadcasting of the
    leading axes; a vector operand is a matrix of one row or column, dropped from the result)."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or a.ndim == 0 or b.ndim == 0:
        return None
    dtype = _product_dtype(a, b)
    if dtype is None or a.ndim <= 2 and b.ndim <= 2 and a.dtype == b.dtype:
        return None  # (Numba's, or its refusal: integer products)
    if a.ndim <= 2 and b.ndim <= 2:
        return lambda a, b: np.ascontiguousarray(a).astype(dtype) @ np.ascontiguousarray(b).astype(dtype)
    if a.ndim == 1:
        def row(a, b):
            out = _broadcast_matmul(np.ascontiguousarray(a).reshape((1, a.shape[0])), b, dtype)
            return np.ascontiguousarray(out).reshape(out.shape[:-2] + out.shape[-1:])
        return row
    if b.ndim == 1:
        def column(a, b):
            out = _broadcast_matmul(a, np.ascontiguousarray(b).reshape((b.shape[0], 1)), dtype)
            return np.ascontiguousarray(out).reshape(out.shape[:-1])
        return column
    return lambda a, b: _broadcast_matmul(a, b, dtype)


@overload(np.dot)
def _dot_beyond_numba(a, b):
    """np.dot with a number (a product), or of vectors and matrices of two dtypes."""
    if _scalar(a) or _scalar(b):
        if _scalar(a) and _scalar(b) or isinstance(a, types.Array) or isinstance(b, types.Array):
            return lambda a, b: a * b
        return None
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or a.dtype == b.dtype \
            or not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        return None
    dtype = _product_dtype(a, b)
    if dtype is None:
        return None
    return lambda a, b: np.dot(np.ascontiguousarray(a).astype(dtype), np.ascontiguousarray(b).astype(dtype))


@overload(np.linalg.eigh)
def _eigh_of_a_stack(a, UPLO="L"):
    """np.linalg.eigh of a stack of matrices (Numba's takes one): runtime.linalg_eigh's form."""
    if _stack_of_matrices(a):
        return _linalg_eigh(a, UPLO)


@overload(np.linalg.eigvalsh)
def _eigvalsh_of_a_stack(a, UPLO="L"):
    if _stack_of_matrices(a):
        return _linalg_eigvalsh(a, UPLO)
