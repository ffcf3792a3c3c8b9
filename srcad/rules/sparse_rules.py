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
- `srcad.sparse.reduce_max/min(A, axis)` runs as `rt.sparse_ops.reduce(..., locate=True)`: over
  contiguous groups (CSR rows) it also keeps where each group's extreme is, so the adjoint
  zeroes the gradient's values in one sweep and writes one value per group instead of searching
  every group again (ties and NaNs still take the search).
- `np.take(E, idx, axis=0)` runs through the parallel row-gather kernel; its adjoint is a
  RowSparse, like that of `E[idx]`.
- Sparse results (`A @ B`, `A.multiply(B)`, `A.power(p)`, stacks, slices, `diags`) keep their
  structural pattern (srcad/runtime/sparse_struct.py): an entry whose value comes out zero stays
  stored, since its derivative is not zero. `A.power(p)` runs as `rt.sparse_struct.power`, which
  leaves the input as it is (scipy's sums its duplicates in place); `diags` gives CSR.
"""
import ast
import builtins

import numpy as np
import scipy.sparse as sp

from .. import sparse as srcad_sparse
from ..runtime import sparse_methods  # the templates reach it as rt.sparse_methods
from ..runtime import sparse_ops  # the templates reach it as rt.sparse_ops
from ..runtime import sparse_struct  # and this one as rt.sparse_struct
from ..runtime import take, take_vjp
from .registry import defnondiff, defrule

# ---- products ---------------------------------------------------------------------------------
defrule(srcad_sparse.matmul, "A, X", ("rt.matmul_vjp_x(g, A, X)", "rt.matmul_vjp_y(g, A, X)"),
        ("rt.matmul(A_dot, X)", "rt.matmul(A, X_dot)"))
defrule(".multiply", "x, y",
        ("rt.sparse_ops.multiply_vjp_x(g, x, y)", "rt.sparse_ops.multiply_vjp_y(g, x, y)"),
        ("rt.sparse_ops.multiply(x_dot, y)", "rt.sparse_ops.multiply(x, y_dot)"),
        primal="rt.sparse_ops.multiply(x, y)", jvp_join=True)

# ---- stored values and construction -------------------------------------------------------------
defrule(".data", "x", "rt.sparse_ops.data_vjp(g, x)", "rt.sparse_ops.data_jvp(x_dot, x)")
# built through rt.sparse_ops.construct: on copies of the arrays, which scipy's in-place sorting or
# merging of the matrix later (`A.sum()`) would rewrite under the derivative code
for _cls in [sp.csr_array, sp.csr_matrix, sp.csc_array, sp.csc_matrix, sp.coo_array, sp.coo_matrix]:
    defrule(_cls, "arg1, shape=None, dtype=None, copy=False, *, maxprint=None",
            "rt.sparse_ops.construct_vjp(g, arg1, ans)", "rt.sparse_ops.construct_jvp(arg1_dot, arg1, ans)",
            discrete="shape dtype", primal=f"rt.sparse_ops.construct({_cls.__name__!r}, arg1, shape, dtype)")
defrule(sparse_ops.construct, "kind, arg1, shape=None, dtype=None",
        (None, "rt.sparse_ops.construct_vjp(g, arg1, ans)"), (None, "rt.sparse_ops.construct_jvp(arg1_dot, arg1, ans)"),
        discrete="kind shape dtype")

# ---- sparse results (srcad/runtime/sparse_struct.py): structural patterns, scipy's values ----------------
# `A @ B` with two sparse operands and `A.multiply(B)` with a sparse B go through the rules above
# (their helpers dispatch on the operands); `A[i:j]` through the subscript rule (rt.index_vjp).
_ss = "rt.sparse_struct."
defrule([".toarray"], "x, order=None, out=None", _ss + "dense_vjp(g, x)", _ss + "dense_jvp(x_dot, x, 'toarray')",
        discrete="order out")
defrule([".todense"], "x, order=None, out=None", _ss + "dense_vjp(g, x)", _ss + "dense_jvp(x_dot, x, 'todense')",
        discrete="order out")
# runs as rt.sparse_ops.power: scipy's values, and scipy's in-place merge of x's duplicates after
defrule([".power", sparse_ops.power], "x, n, dtype=None",
        (_ss + "power_vjp(g, x, n, ans)", _ss + "power_vjp_n(g, x, n, ans)"),
        (_ss + "power_jvp(x_dot, x, n, ans)", _ss + "power_jvp_n(n_dot, x, n, ans)"), primal="rt.sparse_ops.power(x, n, dtype)",
        jvp_join=True, discrete="dtype")
defrule(".diagonal", "x, k=0", _ss + "diagonal_vjp(g, x, k)", _ss + "diagonal_jvp(x_dot, x, k)", discrete="k")
for _how, _fn in (("h", sp.hstack), ("v", sp.vstack)):
    defrule(_fn, "blocks, format=None, dtype=None", _ss + f"stack_vjp(g, blocks, '{_how}', format)",
            _ss + f"stack_jvp(blocks_dot, blocks, '{_how}', format, dtype)",
            primal=_ss + f"stack(blocks, '{_how}', format, dtype)", discrete="dtype")
for _kind, _fn in (("matrix", sp.diags), ("array", sp.diags_array)):
    defrule(_fn, "diagonals, offsets=0, shape=None, format=None, dtype=None",
            _ss + "diags_vjp(g, diagonals, offsets, shape, format)",
            _ss + f"diags_jvp(diagonals_dot, diagonals, offsets, shape, format, dtype, '{_kind}')",
            primal=_ss + f"diags(diagonals, offsets, shape, format, dtype, '{_kind}')", discrete="shape dtype")

for _name, _sign in (("add", "1.0"), ("subtract", "-1.0")):
    defrule(getattr(srcad_sparse, _name), "A, B",
            (_ss + f"add_vjp(g, A, B, 0, {_sign})", _ss + f"add_vjp(g, A, B, 1, {_sign})"),
            (_ss + f"add_jvp(A_dot, 0.0, A, B, {_sign})", _ss + f"add_jvp(0.0, B_dot, A, B, {_sign})"),
            jvp_join=True)
defrule(sparse_struct.add_vjp, "g, A, B, which, sign=1.0", None,
        (_ss + "add_vjp(g_dot, A, B, which, sign)", "0", "0"), discrete="which")      # A, B lend their patterns only
defrule(sparse_struct.power_vjp, "g, x, n, out", None,
        (_ss + "power_vjp(g_dot, x, n, out)", _ss + "power_vjp_jvp(g, x, n, out, x_dot)", None, "0"), jvp_join=True)

# ---- max/min over stored entries, segment reductions ---------------------------------------------
for _op in ("max", "min"):
    defrule(getattr(srcad_sparse, "reduce_" + _op), "A, axis=None",
            f"rt.sparse_ops.reduce_vjp(g, A, ans, axis, '{_op}')",
            f"rt.sparse_ops.reduce_jvp(A_dot, A, ans, axis, '{_op}')",
            primal=f"rt.sparse_ops.reduce(A, axis, '{_op}', locate=True)", discrete="axis")
for _op in ("sum", "max", "min"):
    defrule(getattr(srcad_sparse, "segment_" + _op), "data, segment_ids, num_segments",
            f"rt.sparse_ops.segment_vjp(g, data, segment_ids, ans, '{_op}')",
            f"rt.sparse_ops.segment_jvp(data_dot, data, segment_ids, ans, '{_op}')")

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
_so = "rt.sparse_ops."
defrule(sparse_ops.multiply, "x, y",
        (_so + "multiply_vjp_x(g, x, y)", _so + "multiply_vjp_y(g, x, y)"),
        (_so + "multiply(x_dot, y)", _so + "multiply(x, y_dot)"), jvp_join=True)
# quotient_jvp_y(d, q, y) = -d * q / y (Div's tangent piece along y, entry by entry for a sparse q)
defrule(sparse_ops.quotient_jvp_y, "d, q, y", ("-g * q / y", "-g * d / y", "g * d * q / y ** 2"),
        (_so + "quotient_jvp_y(d_dot, q, y)", _so + "quotient_jvp_y(d, q_dot, y)",
         _so + "quotient_jvp_y(y_dot, " + _so + "quotient_jvp_y(d, q, y), y)"), broadcast=True, jvp_join=True)
defrule(sparse_ops.multiply_vjp_x, "g, x, y", None,
        (_so + "multiply_vjp_x(g_dot, x, y)", "0", _so + "multiply_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(sparse_ops.multiply_vjp_y, "g, x, y", None,
        (_so + "multiply_vjp_y(g_dot, x, y)", _so + "multiply_vjp_y(g, x_dot, y)", "0"), jvp_join=True)
defrule(sparse_ops.data_vjp, "g, x", None, (_so + "data_vjp(g_dot, x)", "0"))
defrule(sparse_ops.data_jvp, "x_dot, x", None, (_so + "data_jvp(x_dot_dot, x)", "0"))
defrule(sparse_ops.construct_vjp, "g, arg1, out", None, (_so + "construct_vjp(g_dot, arg1, out)", "0", "0"))
defrule(sparse_ops.construct_jvp, "arg1_dot, arg1, out", None,
        (_so + "construct_jvp(arg1_dot_dot, arg1, out)", "0", "0"))
defrule(sparse_ops.reduce, "A, axis, op, locate=False", None, _so + "reduce_jvp(A_dot, A, ans, axis, op)",
        discrete="axis")
defrule(sparse_ops.reduce_vjp, "g, A, out, axis, op", None,
        (_so + "reduce_vjp(g_dot, A, out, axis, op)", "0", "0"), discrete="axis")
defrule(sparse_ops.reduce_jvp, "A_dot, A, out, axis, op", None,
        (_so + "reduce_jvp(A_dot_dot, A, out, axis, op)", "0", "0"), discrete="axis")
defrule(sparse_ops.segment, "data, segment_ids, num_segments, op", None,
        _so + "segment_jvp(data_dot, data, segment_ids, ans, op)")
defrule(sparse_ops.segment_vjp, "g, data, segment_ids, out, op", None,
        (_so + "segment_vjp(g_dot, data, segment_ids, out, op)", "0", None, "0"))
defrule(sparse_ops.segment_jvp, "data_dot, data, segment_ids, out, op", None,
        (_so + "segment_jvp(data_dot_dot, data, segment_ids, out, op)", "0", None, "0"))
defrule(take, "x, indices, axis=None", "rt.take_vjp(g, x, indices, axis)", "rt.take(x_dot, indices, axis)",
        discrete="indices axis")
defrule(take_vjp, "g, x, indices, axis=None, mode='raise'", None, ("rt.take_vjp(g_dot, x, indices, axis, mode)", "0"),
        discrete="indices axis mode")
# the helpers behind rt.matmul / rt.add / rt.finalize / rt.sum_vjp (not called by generated code
# directly today; the same rules as those of their dispatchers)
defrule(sparse_ops.sparse_matmul, "A, X", ("rt.matmul_vjp_x(g, A, X)", "rt.matmul_vjp_y(g, A, X)"),
        (_so + "sparse_matmul(A_dot, X)", _so + "sparse_matmul(A, X_dot)"), jvp_join=True)
defrule(sparse_ops.sparse_rmatmul, "A, G", None,
        (_so + "sparse_rmatmul(A_dot, G)", _so + "sparse_rmatmul(A, G_dot)"), jvp_join=True)
defrule(sparse_ops.matmul_vjp_values, "g, A, X", None,
        (_so + "matmul_vjp_values(g_dot, A, X)", "0", _so + "matmul_vjp_values(g, A, X_dot)"), jvp_join=True)
defrule(sparse_ops.sparse_add, "a, b", ("g", "g"), ("a_dot", "b_dot"), jvp_join=True)
defrule(sparse_ops.sparse_finalize, "bar, A", ("g", "0"), (_so + "sparse_finalize(bar_dot, A)", "0"))
defrule(sparse_ops.sparse_sum_vjp, "g, A, axis=None", None, (_so + "sparse_sum_vjp(g_dot, A, axis)", "0"),
        discrete="axis")
defrule(sparse_ops.sum_jvp, "x_dot, axis=None, keepdims=False", None, _so + "sum_jvp(x_dot_dot, axis, keepdims)",
        discrete="axis keepdims")

# the sparse_struct helpers in generated code (linear in the cotangent they carry)
defrule(sparse_struct.stack, "blocks, how, format=None, dtype=None", None,
        _ss + "stack_jvp(blocks_dot, blocks, how, format, dtype)", discrete="how dtype")
defrule(sparse_struct.diags, "diagonals, offsets=0, shape=None, format=None, dtype=None, kind='matrix'", None,
        _ss + "diags_jvp(diagonals_dot, diagonals, offsets, shape, format, dtype, kind)", discrete="shape dtype kind")
defrule(sparse_struct.power, "x, n, dtype=None", None,
        (_ss + "power_jvp(x_dot, x, n, ans)", _ss + "power_jvp_n(n_dot, x, n, ans)"), jvp_join=True, discrete="dtype")
defrule(sparse_struct.dense_vjp, "g, x", None, (_ss + "dense_vjp(g_dot, x)", "0"))
defrule(sparse_struct.diagonal_vjp, "g, x, k=0", None, (_ss + "diagonal_vjp(g_dot, x, k)", "0"), discrete="k")
defrule(sparse_struct.stack_vjp, "g, blocks, how, format=None", None, (_ss + "stack_vjp(g_dot, blocks, how, format)", "0"),
        discrete="how")
defrule(sparse_struct.diags_vjp, "g, diagonals, offsets=0, shape=None, format=None", None,
        (_ss + "diags_vjp(g_dot, diagonals, offsets, shape, format)", "0"), discrete="shape")
defrule(sparse_struct.index_vjp, "g, x, idx", None, (_ss + "index_vjp(g_dot, x, idx)", "0"), discrete="idx")
defrule(sparse_struct.spgemm_vjp_x, "g, A, B", None,
        (_ss + "spgemm_vjp_x(g_dot, A, B)", "0", _ss + "spgemm_vjp_x(g, A, B_dot)"), jvp_join=True)
defrule(sparse_struct.spgemm_vjp_y, "g, A, B", None,
        (_ss + "spgemm_vjp_y(g_dot, A, B)", _ss + "spgemm_vjp_y(g, A_dot, B)", "0"), jvp_join=True)
defrule(sparse_struct.multiply_ss_vjp_x, "g, x, y", None,
        (_ss + "multiply_ss_vjp_x(g_dot, x, y)", "0", _ss + "multiply_ss_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(sparse_struct.multiply_ss_vjp_y, "g, x, y", None,
        (_ss + "multiply_ss_vjp_y(g_dot, x, y)", _ss + "multiply_ss_vjp_y(g, x_dot, y)", "0"), jvp_join=True)

# ---- the methods of a sparse matrix (srcad/runtime/sparse_methods.py) ------------------------------------
# The zero-preserving elementwise methods run as rt.sparse_methods.unary: scipy's values, without
# scipy's in-place merge of a non-canonical operand. The step functions carry no derivative.
_sm = "rt.sparse_methods."
for _name in ("sin", "tan", "arcsin", "arctan", "arcsinh", "arctanh", "sinh", "tanh", "sqrt", "expm1", "log1p",
              "deg2rad", "rad2deg"):
    defrule("." + _name, "x", _sm + f"unary_vjp(g, x, {_name!r}, ans)", _sm + f"unary_jvp(x_dot, x, {_name!r}, ans)",
            primal=_sm + f"unary(x, {_name!r})")
defrule(sparse_methods.unary, "x, name", None, _sm + "unary_jvp(x_dot, x, name, ans)", discrete="name")
defrule(sparse_methods.unary_vjp, "g, x, name, out", None,
        (_sm + "unary_vjp(g_dot, x, name, out)", _sm + "unary_vjp_jvp(g, x, name, out, x_dot)", None, "0"),
        jvp_join=True, discrete="name")
# abs(x): g * sign(x), also for a sparse x (this replaces numpy_rules' entry for builtins.abs; np.abs
# keeps its own). scipy's abs(A) merges a non-canonical A's duplicates in place first.
defrule(builtins.abs, "x", _sm + "abs_vjp(g, x, ans)", _sm + "abs_jvp(x_dot, x, ans)", primal=_sm + "abs_(x)",
        primal_sparse=True)
defrule(sparse_methods.abs_, "x", None, _sm + "abs_jvp(x_dot, x, ans)")
# x.max()/x.min() (these replace numpy_rules' entries for the methods; np.max/np.min keep theirs): run as
# rt.sparse_methods.extreme, scipy's own on a merged copy of a non-canonical sparse x (scipy's would
# merge x in place); implicit zeros take part, the derivative split evenly among tied elements
for _op in ("max", "min"):
    defrule("." + _op, "x, axis=None, out=None, keepdims=False", "rt.extreme_vjp(g, x, ans, axis, keepdims)",
            "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="axis out keepdims",
            primal=_sm + f"extreme(x, {_op!r}, axis, out, keepdims)", primal_sparse=True)
defrule(sparse_methods.extreme, "x, op, axis=None, out=None, keepdims=False", None,
        "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="op axis out keepdims")
defrule(sparse_methods.abs_vjp, "g, x, out", None, (_sm + "abs_vjp(g_dot, x, out)", "0", "0"))
# format conversions and rows/columns: selections (each result entry a stored entry of A's), traced
# through scipy's own operation on the entries' labels; A[...] goes through the subscript rule
# (rt.index_vjp sends a sparse A here)
for _how, _params in (("tocsr", "x, copy=False"), ("tocsc", "x, copy=False"), ("tocoo", "x, copy=False"),
                      ("getrow", "x, i"), ("getcol", "x, j")):
    _extra = "" if _params.endswith("copy=False") else ", " + _params.split(", ")[1]
    defrule("." + _how, _params, _sm + f"select_vjp(g, x, {_how!r}{_extra})",
            _sm + f"select_jvp(x_dot, x, {_how!r}{_extra})", discrete=_params.split(", ")[1].split("=")[0])
defrule(sparse_methods.select_vjp, "g, x, how, *args", None, (_sm + "select_vjp(g_dot, x, how, *args)", "0"),
        discrete="how args")
defrule(sparse_methods.select_jvp, "x_dot, x, how, *args", None, (_sm + "select_jvp(x_dot_dot, x, how, *args)", "0"),
        discrete="how args")
defrule(sparse_methods.extreme_vjp, "g, x, out, axis=None", None,
        (_sm + "extreme_vjp(g_dot, x, out, axis)", "0", "0"), discrete="axis")
defrule(sparse_methods.extreme_jvp, "x_dot, x, out, axis=None", None,
        (_sm + "extreme_jvp(x_dot_dot, x, out, axis)", "0", "0"), discrete="axis")
defrule(sparse_methods.cast_vjp, "g, x, out", None, (_sm + "cast_vjp(g_dot, x, out)", "0", "0"))
defrule(sparse_methods.cast_jvp, "x_dot, out", None, (_sm + "cast_jvp(x_dot_dot, out)", "0"))

# ---- no derivative ----------------------------------------------------------------------------------
defnondiff([".trunc", ".floor", ".ceil", ".rint", ".sign"])      # sparse step functions: piecewise constant
defnondiff([".getnnz", ".count_nonzero", ".format", sparse_ops.clear_cache, sparse_ops.row_groups,
            sparse_ops.col_groups])
# an in-place update: no rule, so differentiating through one raises MissingRuleError
defrule([srcad_sparse.accumulate, sparse_ops.accumulate], "acc, g")
