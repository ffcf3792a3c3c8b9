"""Derivative rules of sparse operations, adjoint and tangent side by side.

A sparse matrix's derivative is a sparse matrix of its class with its stored pattern, in its
order (see srcad/runtime/sparse/). `A @ X` and `A.T @ X` need no rule here: the matmul
rule in numpy_rules.py computes them as `rt.matmul`, whose helpers send a sparse operand to
the compiled kernels (`A.T` is a CSC view of a CSR A: same data, same order).

Choices:
- `A.sum(axis=...)` runs as scipy runs it (a 1-D ndarray for the `_array` classes, an
  np.matrix for the `_matrix` classes, so the generated code computes what the user's code
  computes); the adjoint takes either shape.
- `A.multiply(D)` with a dense D runs as `rt.sparse.multiply`: the result keeps A's class
  and stored pattern (scipy returns the same values as COO), so its derivatives keep them too.
- `srcad.sparse.reduce_max/min(A, axis)` runs as `rt.sparse.reduce(..., locate=True)`: over
  contiguous groups (CSR rows) it also keeps where each group's extreme is, so the adjoint
  zeroes the gradient's values in one sweep and writes one value per group instead of searching
  every group again (ties and NaNs still take the search).
- `np.take(E, idx, axis=0)` runs through the parallel row-gather kernel; its adjoint is a
  RowSparse, like that of `E[idx]`.
- Sparse results (`A @ B`, `A.multiply(B)`, `A.power(p)`, stacks, slices, `diags`) keep their
  structural pattern (srcad/runtime/sparse/structure.py): an entry whose value comes out zero stays
  stored, since its derivative is not zero. `A.power(p)` runs as `rt.sparse.power`, which
  leaves the input as it is (scipy's sums its duplicates in place); `diags` gives CSR.
"""
import ast
import builtins

import numpy as np
import scipy.sparse as sp

from .. import sparse as srcad_sparse
from ..runtime import sparse as rt_sparse  # the templates reach it as rt.sparse
from ..runtime import take, take_vjp
from .registry import defnondiff, defrule

# ---- products ---------------------------------------------------------------------------------
defrule(srcad_sparse.matmul, "A, X", ("rt.matmul_vjp_x(g, A, X)", "rt.matmul_vjp_y(g, A, X)"),
        ("rt.matmul(A_dot, X)", "rt.matmul(A, X_dot)"))
defrule(".multiply", "x, y",
        ("rt.sparse.multiply_vjp_x(g, x, y)", "rt.sparse.multiply_vjp_y(g, x, y)"),
        ("rt.sparse.multiply(x_dot, y)", "rt.sparse.multiply(x, y_dot)"),
        primal="rt.sparse.multiply(x, y)", jvp_join=True)

# ---- stored values and construction -------------------------------------------------------------
defrule(".data", "x", "rt.sparse.data_vjp(g, x)", "rt.sparse.data_jvp(x_dot, x)")
# built through rt.sparse.construct: on copies of the arrays, which scipy's in-place sorting or
# merging of the matrix later (`A.sum()`) would rewrite under the derivative code
for _cls in [sp.csr_array, sp.csr_matrix, sp.csc_array, sp.csc_matrix, sp.coo_array, sp.coo_matrix]:
    defrule(_cls, "arg1, shape=None, dtype=None, copy=False, *, maxprint=None",
            "rt.sparse.construct_vjp(g, arg1, ans)", "rt.sparse.construct_jvp(arg1_dot, arg1, ans)",
            discrete="shape dtype", primal=f"rt.sparse.construct({_cls.__name__!r}, arg1, shape, dtype)")
defrule(rt_sparse.construct, "kind, arg1, shape=None, dtype=None",
        (None, "rt.sparse.construct_vjp(g, arg1, ans)"), (None, "rt.sparse.construct_jvp(arg1_dot, arg1, ans)"),
        discrete="kind shape dtype")

# ---- sparse results (srcad/runtime/sparse/structure.py): structural patterns, scipy's values -------
# `A @ B` with two sparse operands and `A.multiply(B)` with a sparse B go through the rules above
# (their helpers dispatch on the operands); `A[i:j]` through the subscript rule (rt.index_vjp).
_rs = "rt.sparse."
defrule([".toarray"], "x, order=None, out=None", _rs + "dense_vjp(g, x)", _rs + "dense_jvp(x_dot, x, 'toarray')",
        discrete="order out")
defrule([".todense"], "x, order=None, out=None", _rs + "dense_vjp(g, x)", _rs + "dense_jvp(x_dot, x, 'todense')",
        discrete="order out")
# runs as rt.sparse.power: scipy's values, and scipy's in-place merge of x's duplicates after
defrule([".power", rt_sparse.power], "x, n, dtype=None",
        (_rs + "power_vjp(g, x, n, ans)", _rs + "power_vjp_n(g, x, n, ans)"),
        (_rs + "power_jvp(x_dot, x, n, ans)", _rs + "power_jvp_n(n_dot, x, n, ans)"), primal="rt.sparse.power(x, n, dtype)",
        jvp_join=True, discrete="dtype")
defrule(".diagonal", "x, k=0", _rs + "diagonal_vjp(g, x, k)", _rs + "diagonal_jvp(x_dot, x, k)", discrete="k")
for _how, _fn in (("h", sp.hstack), ("v", sp.vstack)):
    defrule(_fn, "blocks, format=None, dtype=None", _rs + f"stack_vjp(g, blocks, '{_how}', format)",
            _rs + f"stack_jvp(blocks_dot, blocks, '{_how}', format, dtype)",
            primal=_rs + f"stack(blocks, '{_how}', format, dtype)", discrete="dtype")
for _kind, _fn in (("matrix", sp.diags), ("array", sp.diags_array)):
    defrule(_fn, "diagonals, offsets=0, shape=None, format=None, dtype=None",
            _rs + "diags_vjp(g, diagonals, offsets, shape, format)",
            _rs + f"diags_jvp(diagonals_dot, diagonals, offsets, shape, format, dtype, '{_kind}')",
            primal=_rs + f"diags(diagonals, offsets, shape, format, dtype, '{_kind}')", discrete="shape dtype")

for _name, _sign in (("add", "1.0"), ("subtract", "-1.0")):
    defrule(getattr(srcad_sparse, _name), "A, B",
            (_rs + f"add_vjp(g, A, B, 0, {_sign})", _rs + f"add_vjp(g, A, B, 1, {_sign})"),
            (_rs + f"add_jvp(A_dot, 0.0, A, B, {_sign})", _rs + f"add_jvp(0.0, B_dot, A, B, {_sign})"),
            jvp_join=True)
defrule(rt_sparse.add_vjp, "g, A, B, which, sign=1.0", None,
        (_rs + "add_vjp(g_dot, A, B, which, sign)", "0", "0"), discrete="which")      # A, B lend their patterns only
defrule(rt_sparse.power_vjp, "g, x, n, out", None,
        (_rs + "power_vjp(g_dot, x, n, out)", _rs + "power_vjp_jvp(g, x, n, out, x_dot)", None, "0"), jvp_join=True)

# ---- max/min over stored entries, segment reductions ---------------------------------------------
for _op in ("max", "min"):
    defrule(getattr(srcad_sparse, "reduce_" + _op), "A, axis=None",
            f"rt.sparse.reduce_vjp(g, A, ans, axis, '{_op}')",
            f"rt.sparse.reduce_jvp(A_dot, A, ans, axis, '{_op}')",
            primal=f"rt.sparse.reduce(A, axis, '{_op}', locate=True)", discrete="axis")
for _op in ("sum", "max", "min"):
    defrule(getattr(srcad_sparse, "segment_" + _op), "data, segment_ids, num_segments",
            f"rt.sparse.segment_vjp(g, data, segment_ids, ans, '{_op}')",
            f"rt.sparse.segment_jvp(data_dot, data, segment_ids, ans, '{_op}')")

# ---- row gathers ----------------------------------------------------------------------------------
defrule(np.take, "x, indices, axis=None, out=None, mode='raise'", "rt.take_vjp(g, x, indices, axis, mode)",
        "rt.shapes.lin(np.take, x_dot, indices, axis, None, mode)", primal="rt.take(x, indices, axis)",
        primal_when=lambda a: isinstance(a.get("mode"), ast.Constant) and a["mode"].value == "raise",
        discrete="indices axis out mode")

# ---- rules of the sparse runtime helpers -----------------------------------------------------------
# Generated adjoint code calls these helpers; their rules let forward mode run over that code (a
# Hessian or a Hessian-vector product through sparse operations). The cotangent helpers are linear
# in the cotangent they carry; the primal matrix, the result and the index arrays lend pattern,
# shape and tie weights ("0": piecewise constant, no contribution), except where a second operand
# enters bilinearly (multiply's dense factor, the product's other factor). A helper's parameter that
# receives a result is named `out` here, never `ans` (in a template `ans` is the helper's own result).
defrule(rt_sparse.multiply, "x, y",
        (_rs + "multiply_vjp_x(g, x, y)", _rs + "multiply_vjp_y(g, x, y)"),
        (_rs + "multiply(x_dot, y)", _rs + "multiply(x, y_dot)"), jvp_join=True)
# quotient_jvp_y(d, q, y) = -d * q / y (Div's tangent piece along y, entry by entry for a sparse q)
defrule(rt_sparse.quotient_jvp_y, "d, q, y", ("-g * q / y", "-g * d / y", "g * d * q / y ** 2"),
        (_rs + "quotient_jvp_y(d_dot, q, y)", _rs + "quotient_jvp_y(d, q_dot, y)",
         _rs + "quotient_jvp_y(y_dot, " + _rs + "quotient_jvp_y(d, q, y), y)"), broadcast=True, jvp_join=True)
defrule(rt_sparse.multiply_vjp_x, "g, x, y", None,
        (_rs + "multiply_vjp_x(g_dot, x, y)", "0", _rs + "multiply_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(rt_sparse.multiply_vjp_y, "g, x, y", None,
        (_rs + "multiply_vjp_y(g_dot, x, y)", _rs + "multiply_vjp_y(g, x_dot, y)", "0"), jvp_join=True)
defrule(rt_sparse.data_vjp, "g, x", None, (_rs + "data_vjp(g_dot, x)", "0"))
defrule(rt_sparse.data_jvp, "x_dot, x", None, (_rs + "data_jvp(x_dot_dot, x)", "0"))
defrule(rt_sparse.construct_vjp, "g, arg1, out", None, (_rs + "construct_vjp(g_dot, arg1, out)", "0", "0"))
defrule(rt_sparse.construct_jvp, "arg1_dot, arg1, out", None,
        (_rs + "construct_jvp(arg1_dot_dot, arg1, out)", "0", "0"))
defrule(rt_sparse.reduce, "A, axis, op, locate=False", None, _rs + "reduce_jvp(A_dot, A, ans, axis, op)",
        discrete="axis")
defrule(rt_sparse.reduce_vjp, "g, A, out, axis, op", None,
        (_rs + "reduce_vjp(g_dot, A, out, axis, op)", "0", "0"), discrete="axis")
defrule(rt_sparse.reduce_jvp, "A_dot, A, out, axis, op", None,
        (_rs + "reduce_jvp(A_dot_dot, A, out, axis, op)", "0", "0"), discrete="axis")
defrule(rt_sparse.segment, "data, segment_ids, num_segments, op", None,
        _rs + "segment_jvp(data_dot, data, segment_ids, ans, op)")
defrule(rt_sparse.segment_vjp, "g, data, segment_ids, out, op", None,
        (_rs + "segment_vjp(g_dot, data, segment_ids, out, op)", "0", None, "0"))
defrule(rt_sparse.segment_jvp, "data_dot, data, segment_ids, out, op", None,
        (_rs + "segment_jvp(data_dot_dot, data, segment_ids, out, op)", "0", None, "0"))
defrule(take, "x, indices, axis=None", "rt.take_vjp(g, x, indices, axis)", "rt.take(x_dot, indices, axis)",
        discrete="indices axis")
defrule(take_vjp, "g, x, indices, axis=None, mode='raise'", None, ("rt.take_vjp(g_dot, x, indices, axis, mode)", "0"),
        discrete="indices axis mode")
# the helpers behind rt.matmul / rt.add / rt.finalize / rt.sum_vjp (not called by generated code
# directly today; the same rules as those of their dispatchers)
defrule(rt_sparse.sparse_matmul, "A, X", ("rt.matmul_vjp_x(g, A, X)", "rt.matmul_vjp_y(g, A, X)"),
        (_rs + "sparse_matmul(A_dot, X)", _rs + "sparse_matmul(A, X_dot)"), jvp_join=True)
defrule(rt_sparse.sparse_rmatmul, "A, G", None,
        (_rs + "sparse_rmatmul(A_dot, G)", _rs + "sparse_rmatmul(A, G_dot)"), jvp_join=True)
defrule(rt_sparse.matmul_vjp_values, "g, A, X", None,
        (_rs + "matmul_vjp_values(g_dot, A, X)", "0", _rs + "matmul_vjp_values(g, A, X_dot)"), jvp_join=True)
defrule(rt_sparse.sparse_add, "a, b", ("g", "g"), ("a_dot", "b_dot"), jvp_join=True)
defrule(rt_sparse.sparse_finalize, "bar, A", ("g", "0"), (_rs + "sparse_finalize(bar_dot, A)", "0"))
defrule(rt_sparse.sparse_sum_vjp, "g, A, axis=None", None, (_rs + "sparse_sum_vjp(g_dot, A, axis)", "0"),
        discrete="axis")
defrule(rt_sparse.sum_jvp, "x_dot, axis=None, keepdims=False", None, _rs + "sum_jvp(x_dot_dot, axis, keepdims)",
        discrete="axis keepdims")

# the helpers of structural results in generated code (linear in the cotangent they carry)
defrule(rt_sparse.stack, "blocks, how, format=None, dtype=None", None,
        _rs + "stack_jvp(blocks_dot, blocks, how, format, dtype)", discrete="how dtype")
defrule(rt_sparse.diags, "diagonals, offsets=0, shape=None, format=None, dtype=None, kind='matrix'", None,
        _rs + "diags_jvp(diagonals_dot, diagonals, offsets, shape, format, dtype, kind)", discrete="shape dtype kind")
defrule(rt_sparse.dense_vjp, "g, x", None, (_rs + "dense_vjp(g_dot, x)", "0"))
defrule(rt_sparse.diagonal_vjp, "g, x, k=0", None, (_rs + "diagonal_vjp(g_dot, x, k)", "0"), discrete="k")
defrule(rt_sparse.stack_vjp, "g, blocks, how, format=None", None, (_rs + "stack_vjp(g_dot, blocks, how, format)", "0"),
        discrete="how")
defrule(rt_sparse.diags_vjp, "g, diagonals, offsets=0, shape=None, format=None", None,
        (_rs + "diags_vjp(g_dot, diagonals, offsets, shape, format)", "0"), discrete="shape")
defrule(rt_sparse.index_vjp, "g, x, idx", None, (_rs + "index_vjp(g_dot, x, idx)", "0"), discrete="idx")
defrule(rt_sparse.spgemm_vjp_x, "g, A, B", None,
        (_rs + "spgemm_vjp_x(g_dot, A, B)", "0", _rs + "spgemm_vjp_x(g, A, B_dot)"), jvp_join=True)
defrule(rt_sparse.spgemm_vjp_y, "g, A, B", None,
        (_rs + "spgemm_vjp_y(g_dot, A, B)", _rs + "spgemm_vjp_y(g, A_dot, B)", "0"), jvp_join=True)
defrule(rt_sparse.multiply_ss_vjp_x, "g, x, y", None,
        (_rs + "multiply_ss_vjp_x(g_dot, x, y)", "0", _rs + "multiply_ss_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(rt_sparse.multiply_ss_vjp_y, "g, x, y", None,
        (_rs + "multiply_ss_vjp_y(g_dot, x, y)", _rs + "multiply_ss_vjp_y(g, x_dot, y)", "0"), jvp_join=True)

# ---- the methods of a sparse matrix (srcad/runtime/sparse/methods.py) -------------------------------
# The zero-preserving elementwise methods run as rt.sparse.unary: scipy's values, without
# scipy's in-place merge of a non-canonical operand. The step functions carry no derivative.
for _name in ("sin", "tan", "arcsin", "arctan", "arcsinh", "arctanh", "sinh", "tanh", "sqrt", "expm1", "log1p",
              "deg2rad", "rad2deg"):
    defrule("." + _name, "x", _rs + f"unary_vjp(g, x, {_name!r}, ans)", _rs + f"unary_jvp(x_dot, x, {_name!r}, ans)",
            primal=_rs + f"unary(x, {_name!r})")
defrule(rt_sparse.unary, "x, name", None, _rs + "unary_jvp(x_dot, x, name, ans)", discrete="name")
defrule(rt_sparse.unary_vjp, "g, x, name, out", None,
        (_rs + "unary_vjp(g_dot, x, name, out)", _rs + "unary_vjp_jvp(g, x, name, out, x_dot)", None, "0"),
        jvp_join=True, discrete="name")
# abs(x): g * sign(x), also for a sparse x (this replaces numpy_rules' entry for builtins.abs; np.abs
# keeps its own). scipy's abs(A) merges a non-canonical A's duplicates in place first.
defrule(builtins.abs, "x", _rs + "abs_vjp(g, x, ans)", _rs + "abs_jvp(x_dot, x, ans)", primal=_rs + "abs_(x)",
        primal_sparse=True)
defrule(rt_sparse.abs_, "x", None, _rs + "abs_jvp(x_dot, x, ans)")
# x.max()/x.min() (these replace numpy_rules' entries for the methods; np.max/np.min keep theirs): run as
# rt.sparse.extreme, scipy's own on a merged copy of a non-canonical sparse x (scipy's would
# merge x in place); implicit zeros take part, the derivative split evenly among tied elements
for _op in ("max", "min"):
    defrule("." + _op, "x, axis=None, out=None, keepdims=False", "rt.extreme_vjp(g, x, ans, axis, keepdims)",
            "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="axis out keepdims",
            primal=_rs + f"extreme(x, {_op!r}, axis, out, keepdims)", primal_sparse=True)
defrule(rt_sparse.extreme, "x, op, axis=None, out=None, keepdims=False", None,
        "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="op axis out keepdims")
defrule(rt_sparse.abs_vjp, "g, x, out", None, (_rs + "abs_vjp(g_dot, x, out)", "0", "0"))
# format conversions and rows/columns: selections (each result entry a stored entry of A's), traced
# through scipy's own operation on the entries' labels; A[...] goes through the subscript rule
# (rt.index_vjp sends a sparse A here)
for _how, _params in (("tocsr", "x, copy=False"), ("tocsc", "x, copy=False"), ("tocoo", "x, copy=False"),
                      ("getrow", "x, i"), ("getcol", "x, j")):
    _extra = "" if _params.endswith("copy=False") else ", " + _params.split(", ")[1]
    defrule("." + _how, _params, _rs + f"select_vjp(g, x, {_how!r}{_extra})",
            _rs + f"select_jvp(x_dot, x, {_how!r}{_extra})", discrete=_params.split(", ")[1].split("=")[0])
defrule(rt_sparse.select_vjp, "g, x, how, *args", None, (_rs + "select_vjp(g_dot, x, how, *args)", "0"),
        discrete="how args")
defrule(rt_sparse.select_jvp, "x_dot, x, how, *args", None, (_rs + "select_jvp(x_dot_dot, x, how, *args)", "0"),
        discrete="how args")
defrule(rt_sparse.extreme_vjp, "g, x, out, axis=None", None,
        (_rs + "extreme_vjp(g_dot, x, out, axis)", "0", "0"), discrete="axis")
defrule(rt_sparse.extreme_jvp, "x_dot, x, out, axis=None", None,
        (_rs + "extreme_jvp(x_dot_dot, x, out, axis)", "0", "0"), discrete="axis")
defrule(rt_sparse.cast_vjp, "g, x, out", None, (_rs + "cast_vjp(g_dot, x, out)", "0", "0"))
defrule(rt_sparse.cast_jvp, "x_dot, out", None, (_rs + "cast_jvp(x_dot_dot, out)", "0"))

# ---- no derivative ----------------------------------------------------------------------------------
defnondiff([".trunc", ".floor", ".ceil", ".rint", ".sign"])      # sparse step functions: piecewise constant
defnondiff([".getnnz", ".count_nonzero", ".format", rt_sparse.clear_cache, rt_sparse.row_groups,
            rt_sparse.col_groups])
# an in-place update: no rule, so differentiating through one raises MissingRuleError
defrule([srcad_sparse.accumulate, rt_sparse.accumulate], "acc, g")
