"""Products: matmul (a scipy sparse operand through srcad's kernels), outer, solve and einsum,
with their adjoints."""
import numpy as np
import scipy.sparse as sp

from .. import _kernels
from .._kernels import blas as _blas
from .accumulate import add
from .broadcasting import unbroadcast
from .sparse.products import matmul_vjp_values, sparse_matmul, sparse_rmatmul, spgemm_vjp_y
from .values import _KERNEL_FLOATS, _float_dtype, _is_zero, _plain


def _mm(x, y):
    """x @ y; two numpy arrays big enough for BLAS's threads on one thread when the product is
    small for threads (srcad/_kernels/blas.py: threads waiting for each other on a busy machine)."""
    if type(x) is np.ndarray and type(y) is np.ndarray and x.size * y.size >= _blas.MIN_WORK:
        return _blas.matmul(x, y)
    return x @ y


def matmul(x, y):
    """x @ y, through srcad's compiled kernel when x is a scipy sparse matrix."""
    if type(x) is np.ndarray and type(y) is np.ndarray:     # the common case first
        return _mm(x, y)
    if sp.issparse(x):
        return sparse_matmul(x, y)
    if sp.issparse(y) and _plain(x):          # x @ A = (A.T @ x.T).T, through the transposed kernel
        return sparse_rmatmul(y, x) if np.ndim(x) == 1 else sparse_rmatmul(y, np.swapaxes(x, -1, -2)).T
    return x @ y



def matmul_vjp_x(g, x, y):
    """Cotangent of x in x @ y (1-D and 2-D operands, either side sparse)."""
    if _is_zero(g):
        return g
    if sp.issparse(x):
        return matmul_vjp_values(g, x, y)
    if sp.issparse(y) and _plain(g):          # x @ A: g @ A.T = (A @ g.T).T
        return sparse_matmul(y, g) if np.ndim(g) == 1 else sparse_matmul(y, np.swapaxes(g, -1, -2)).T
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(y) == 1:
        return outer(g, y) if np.ndim(x) >= 2 else g * y
    if np.ndim(x) == 1:     # (k,) @ (..., k, m): the stacked products' cotangents summed
        return _mm(y, g) if np.ndim(y) == 2 else unbroadcast(_mm(y, g[..., None])[..., 0], x)
    return unbroadcast(_mm(g, np.swapaxes(y, -1, -2)), x)



def matmul_vjp_y(g, x, y):
    """Cotangent of y in x @ y."""
    if _is_zero(g):
        return g
    if sp.issparse(x):
        if sp.issparse(y):
            return spgemm_vjp_y(g, x, y)
        return sparse_rmatmul(x, g)
    if sp.issparse(y) and _plain(g) and _plain(x):   # x @ A: A's cotangent at (i, j) is x[:, i] . g[:, j]
        if np.ndim(x) == 1:
            return matmul_vjp_values(np.asarray(x), y, np.asarray(g))
        return matmul_vjp_values(np.swapaxes(x, -1, -2), y, np.swapaxes(g, -1, -2))
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) == 1:
        if np.ndim(y) <= 2:
            return g * x if np.ndim(y) == 1 else outer(x, g)
        return unbroadcast(x[:, None] * g[..., None, :], y)
    xt = np.swapaxes(x, -1, -2)
    if np.ndim(y) == 1:     # (..., n, k) @ (k,): summed over the stack
        return _mm(xt, g) if np.ndim(x) == 2 else unbroadcast(_mm(xt, g[..., None])[..., 0], y)
    return unbroadcast(_mm(xt, g), y)



def _dot_is_matmul(x, y):
    """Does np.dot(x, y) compute x @ y? For a 1-D y (a sum over the last axes), and for operands of
    at most two axes; with a scalar, or a >= 3-D operand and a >= 2-D y, it does not."""
    return sp.issparse(x) or sp.issparse(y) or np.ndim(y) == 1 and np.ndim(x) >= 1 or \
        1 <= np.ndim(x) <= 2 and 1 <= np.ndim(y) <= 2


def dot(x, y):
    """np.dot(x, y) (and x.dot(y)): a product with a scalar, x @ y where that is the same, else the
    sum over the last axis of x and the second-to-last of y (np.tensordot(x, y, (-1, -2)))."""
    if _dot_is_matmul(x, y):
        return matmul(x, y)
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return np.multiply(x, y)
    return np.tensordot(x, y, axes=([np.ndim(x) - 1], [np.ndim(y) - 2]))


def dot_vjp_x(g, x, y):
    """Cotangent of x in np.dot(x, y)."""
    if _is_zero(g):
        return g
    if _dot_is_matmul(x, y):
        return matmul_vjp_x(g, x, y)
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(np.asarray(g) * y, x)
    nx, ny = np.ndim(x), np.ndim(y)       # g: x's leading axes, y's axes but its second-to-last
    return np.tensordot(g, y, axes=(list(range(nx - 1, np.ndim(g))), [a for a in range(ny) if a != ny - 2]))


def dot_vjp_y(g, x, y):
    """Cotangent of y in np.dot(x, y)."""
    if _is_zero(g):
        return g
    if _dot_is_matmul(x, y):
        return matmul_vjp_y(g, x, y)
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(np.asarray(g) * x, y)
    lead = list(range(np.ndim(x) - 1))
    return np.moveaxis(np.tensordot(x, g, axes=(lead, lead)), 0, -2)


def outer(a, b):
    """np.multiply.outer(a, b); two large 1-D float arrays of one dtype through the parallel kernel."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 1 and b.ndim == 1
            and a.dtype == b.dtype and a.dtype in _KERNEL_FLOATS and a.size * b.size >= 65536):
        return _kernels.outer(a, b)
    return np.multiply.outer(a, b)



def outer_vjp(g, x, y):
    """Cotangent of x in np.outer(x, y)."""
    return g if _is_zero(g) else np.reshape(_mm(g, np.ravel(y)), np.shape(x))



def _solve_vector(v, a):
    """Does np.linalg.solve(a, b) read b (and give x) as vectors? NumPy 2 does exactly when b is 1-D,
    and then x has a's batch shape plus one axis: one axis fewer than a."""
    return np.ndim(v) == np.ndim(a) - 1


def solve_apply(m, v):
    """m applied to v as np.linalg.solve applies a to its solution: m @ v for matrices (stacks
    too), and a matrix-vector product per batch entry when v holds vectors. Zero stays zero."""
    if _is_zero(m) or _is_zero(v):
        return 0.0
    if _solve_vector(v, m):
        return (m @ np.asarray(v)[..., None])[..., 0]
    return m @ v


def solve_as(a, r):
    """np.linalg.solve(a, r) with r read as solve read the b that r stands for: a stack of vectors
    (one per matrix of a) when r has one axis fewer than a, as NumPy 2 reads a 1-D b."""
    if _is_zero(r):
        return r
    if _solve_vector(r, a) and np.ndim(r) > 1:
        return np.linalg.solve(a, np.asarray(r)[..., None])[..., 0]
    return np.linalg.solve(a, r)


def solve_vjp_b(g, a):
    """Cotangent of b in x = np.linalg.solve(a, b), in x's shape (the rule unbroadcasts it to b)."""
    if _is_zero(g):
        return g
    return solve_as(np.swapaxes(a, -1, -2), g)


def solve_vjp_a(g, a, ans):
    """Cotangent of a in x = np.linalg.solve(a, b) (in the broadcast shape; the rule unbroadcasts)."""
    if _is_zero(g) or _is_zero(ans):
        return 0.0
    b_bar = solve_vjp_b(g, a)
    if _solve_vector(ans, a):
        return -(np.asarray(b_bar)[..., :, None] * np.asarray(ans)[..., None, :])
    return -_mm(b_bar, np.swapaxes(ans, -1, -2))


def _einsum_parts(subscripts, operands):
    """(input subscripts, output subscript) of an einsum, with '...' spelled out as letters of its
    own (right-aligned, as NumPy broadcasts the axes it stands for). A letter may repeat inside an
    operand (a diagonal: 'ii->i', 'ii->', 'iij,j->i')."""
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"np.einsum({subscripts!r}, ...) names {len(ins)} operands, and {len(operands)} are given")
    if "..." in s:
        spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in s]
        widths = [np.ndim(a) - len(i.replace("...", "")) if "..." in i else 0 for i, a in zip(ins, operands)]
        wide = max(widths)
        pool = "".join(spare[:wide])
        ins = [i.replace("...", pool[wide - w:]) for i, w in zip(ins, widths)]
        if arrow:
            out = out.replace("...", pool)
        else:
            letters = "".join(i for i in ins)
            out = pool + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in pool))
            arrow = "->"
    if not arrow:
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return ins, out



def einsum_vjp(g, subscripts, operands, k):
    """Cotangent of operand k of np.einsum(subscripts, *operands). A letter repeated inside operand
    k reads a diagonal: the cotangent is written on that diagonal, zeros elsewhere."""
    if _is_zero(g):
        return g
    ins, out = _einsum_parts(subscripts, operands)
    others = [(s, a) for j, (s, a) in enumerate(zip(ins, operands)) if j != k]
    known = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    mine = "".join(dict.fromkeys(ins[k]))               # operand k's letters, each once
    kept = "".join(c for c in mine if c in known)      # letters summed only inside operand k broadcast
    spec = ",".join([out] + [s for s, _ in others]) + "->" + kept
    part = np.einsum(spec, g, *[a for _, a in others])
    xshape = np.shape(operands[k])
    shape = tuple(xshape[ins[k].index(c)] if c in kept else 1 for c in mine)
    order = [kept.index(c) for c in mine if c in kept]
    part = np.transpose(part, order) if order else part
    part = np.reshape(part, shape)
    if mine == ins[k]:
        return unbroadcast(np.broadcast_to(part, xshape), operands[k])
    full = np.zeros(xshape, np.result_type(part, _float_dtype(operands[k])))
    np.einsum(ins[k] + "->" + mine, full)[...] = part      # a writeable view of the diagonal
    return full



def einsum_jvp(subscripts, operands, k, dot):
    """Tangent of np.einsum(subscripts, *operands) along operand k's tangent."""
    return np.einsum(subscripts, *replace_at(operands, k, dot))



def einsum_vjp_dot(g, subscripts, operands, k, operands_dot):
    """Tangent of einsum_vjp(g, subscripts, operands, k) along the other operands' tangents."""
    total = 0.0
    for m, d in enumerate(operands_dot):
        if m != k and not _is_zero(d):
            total = add(total, einsum_vjp(g, subscripts, replace_at(operands, m, d), k))
    return total



def einsum_jvp_dot(subscripts, operands, k, dot, operands_dot):
    """Tangent of einsum_jvp(subscripts, operands, k, dot) along the other operands' tangents."""
    total = 0.0
    for m, d in enumerate(operands_dot):
        if m != k and not _is_zero(d):
            total = add(total, np.einsum(subscripts, *replace_at(replace_at(operands, k, dot), m, d)))
    return total



def replace_at(items, k, value):
    """A list of the items with item k replaced."""
    out = list(items)
    out[k] = value
    return out
