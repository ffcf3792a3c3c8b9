"""What generated code calls for scipy sparse matrices (as `rt.sparse.<name>`), and their derivatives.

A sparse matrix's derivative (cotangent or tangent) is a scipy sparse matrix of its class with
its stored pattern, in its order: `.data` holds one derivative per stored entry (explicit zeros
too); a zero derivative is the Python float 0.0. Products go through srcad's compiled kernels.
Results whose pattern differs from the operands' (`A @ B`, `A.multiply(B)`, stacks, slices)
keep their *structural* pattern: an entry whose value cancels to zero stays stored.

This module only gathers the names; the helpers live by topic, each module importing only those
above it in this list:

  pattern.py       the stored pattern: checks, groupings by row/column for the kernels (cached per
                   pattern), duplicate entries merged as scipy merges them, matrices built from entries
  derivative.py    derivatives with a pattern: built sharing the primal's index arrays, cotangents
                   that multiply entry by entry, a cotangent read at a matrix's stored entries
  accumulation.py  two derivatives added, the gradient handed to the user, srcad.accumulate (in place)
  reductions.py    sums, max/min over the stored entries, segment reductions of rows
  methods.py       scipy.sparse methods on a differentiated matrix: elementwise (sin, abs, ...),
                   max/min, casts, conversions and selections (A[i], getrow), each keeping the pattern
  products.py      A @ X and A.T @ G with a dense X (kernels), A @ B of two sparse matrices (spgemm)
  construction.py  csr_array((values, indices, indptr)) and the like built in the function, `.data`
  elementwise.py   x.multiply(y) (y dense or sparse), the quotient's tangent, x.power(n)
  structure.py     results with a structural pattern: diagonal, row slices, hstack/vstack, diags,
                   srcad.sparse.add/subtract, toarray/todense
"""
from .pattern import check_pattern, clear_cache, col_groups, merged, row_groups, unmerged
from .derivative import check_covers
from .accumulation import accumulate, sparse_add, sparse_finalize
from .reductions import reduce, reduce_jvp, reduce_vjp, segment, segment_jvp, segment_vjp, sparse_sum_vjp, sum_jvp
from .methods import (abs_, abs_jvp, abs_vjp, cast_jvp, cast_vjp, extreme, extreme_jvp, extreme_vjp, select,
                      select_jvp, select_vjp, unary, unary_jvp, unary_vjp, unary_vjp_jvp)
from .products import matmul_vjp_values, sparse_matmul, sparse_rmatmul, spgemm, spgemm_vjp_x, spgemm_vjp_y
from .construction import construct, construct_jvp, construct_vjp, data_jvp, data_vjp
from .elementwise import (multiply, multiply_ss, multiply_ss_vjp_x, multiply_ss_vjp_y, multiply_vjp_x,
                          multiply_vjp_y, power, power_jvp, power_jvp_n, power_vjp, power_vjp_jvp, power_vjp_n,
                          quotient_jvp_y)
from .structure import (add, add_jvp, add_vjp, dense_jvp, dense_vjp, diagonal_jvp, diagonal_vjp, diags, diags_jvp,
                        diags_vjp, index_jvp, index_vjp, stack, stack_jvp, stack_vjp)

__all__ = ["check_pattern", "clear_cache", "col_groups", "merged", "row_groups", "unmerged", "check_covers",
           "accumulate", "sparse_add", "sparse_finalize", "reduce", "reduce_jvp", "reduce_vjp", "segment",
           "segment_jvp", "segment_vjp", "sparse_sum_vjp", "sum_jvp", "abs_", "abs_jvp", "abs_vjp", "cast_jvp",
           "cast_vjp", "extreme", "extreme_jvp", "extreme_vjp", "select", "select_jvp", "select_vjp", "unary",
           "unary_jvp", "unary_vjp", "unary_vjp_jvp", "matmul_vjp_values", "sparse_matmul", "sparse_rmatmul",
           "spgemm", "spgemm_vjp_x", "spgemm_vjp_y", "construct", "construct_jvp", "construct_vjp", "data_jvp",
           "data_vjp", "multiply", "multiply_ss", "multiply_ss_vjp_x", "multiply_ss_vjp_y", "multiply_vjp_x",
           "multiply_vjp_y", "power", "power_jvp", "power_jvp_n", "power_vjp", "power_vjp_jvp", "power_vjp_n",
           "quotient_jvp_y", "add", "add_jvp", "add_vjp", "dense_jvp", "dense_vjp", "diagonal_jvp", "diagonal_vjp",
           "diags", "diags_jvp", "diags_vjp", "index_jvp", "index_vjp", "stack", "stack_jvp", "stack_vjp"]
