"""Derivative rules of sparse operations, adjoint and tangent side by side.

A sparse matrix's derivative is a sparse matrix of its class with its stored pattern, in its
order (see srcad/runtime/sparse_ops.py). `A @ X` and `A.T @ X` need no rule here: the matmul
rule in numpy_rules.py computes them as `rt.matmul`, whose helpers send a sparse operand to
the compiled kernels (`A.T` is a CSC view of a CSR A: same data, same order).

Choices:
- `A.sum(axis=...)` runs as scipy runs it (a 1-D ndarray for the `_array` classes, an
  np.matrix for the `_matrix` classes, so the generated code computes what the user's code
  computes); the adjoint takes either shape.
- `A.multiply(D)` with a dense D runs as `rt.sparse_ops.multiply`: the result keeps A's class
  and stored pattern (scipy returns the same values as COO), so its derivatives keep them too.
- `np.take(E, idx, axis=0)` runs through the parallel row-gather kernel; its adjoint is a
  RowSparse, like that of `E[idx]`.
"""
import numpy as np
import scipy.sparse as sp

from .. import sparse as srcad_sparse
from ..runtime import sparse_ops  # noqa: F401  (the templates reach it as rt.sparse_ops)
from .registry import defnondiff, defrule

# ---- products ---------------------------------------------------------------------------------
defrule(srcad_sparse.matmul, "A, X", ("rt.matmul_vjp_x(g, A, X)", "rt.matmul_vjp_y(g, A, X)"),
        ("rt.matmul(A_dot, X)", "rt.matmul(A, X_dot)"))
defrule(".multiply", "x, y",
        ("rt.sparse_ops.multiply_vjp_x(g, x, y)", "rt.sparse_ops.multiply_vjp_y(g, x, y)"),
        ("rt.sparse_ops.multiply(x_dot, y)", "rt.sparse_ops.multiply(x, y_dot)"),
        primal="rt.sparse_ops.multiply(x, y)")

# ---- stored values and construction -------------------------------------------------------------
defrule(".data", "x", "rt.sparse_ops.data_vjp(g, x)", "rt.sparse_ops.data_jvp(x_dot, x)")
defrule([sp.csr_array, sp.csr_matrix, sp.csc_array, sp.csc_matrix, sp.coo_array, sp.coo_matrix],
        "arg1, shape=None, dtype=None, copy=False, *, maxprint=None",
        "rt.sparse_ops.construct_vjp(g, arg1, ans)", "rt.sparse_ops.construct_jvp(arg1_dot, arg1, ans)")

# ---- max/min over stored entries, segment reductions ---------------------------------------------
for _op in ("max", "min"):
    defrule(getattr(srcad_sparse, "reduce_" + _op), "A, axis=None",
            f"rt.sparse_ops.reduce_vjp(g, A, ans, axis, '{_op}')",
            f"rt.sparse_ops.reduce_jvp(A_dot, A, ans, axis, '{_op}')")
for _op in ("sum", "max", "min"):
    defrule(getattr(srcad_sparse, "segment_" + _op), "data, segment_ids, num_segments",
            f"rt.sparse_ops.segment_vjp(g, data, segment_ids, ans, '{_op}')",
            f"rt.sparse_ops.segment_jvp(data_dot, data, segment_ids, ans, '{_op}')")

# ---- row gathers ----------------------------------------------------------------------------------
defrule(np.take, "x, indices, axis=None", "rt.sparse_ops.take_vjp(g, x, indices, axis)",
        "np.take(x_dot, indices, axis=axis)", primal="rt.sparse_ops.take(x, indices, axis)")

# ---- no derivative ----------------------------------------------------------------------------------
defnondiff([".getnnz", ".count_nonzero", ".format",
            srcad_sparse.accumulate])
