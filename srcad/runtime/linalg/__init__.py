"""Helpers of the linear-algebra rules (srcad/rules/linalg_rules.py), as generated code names them:
`rt.linalg.<name>`.

The small ones (mm, T, sym, phi, ...) are linear in each argument and treat the zero derivative
0.0 as zero, so the adjoint templates of cholesky, eigh, pinv and solve_triangular are written
with them and stay differentiable (Hessians). The decompositions whose adjoints need a loop or
a long formula (svd, qr, matrix_power, expm) have helpers of their own, each with a hand-written
tangent (`*_vjp_dot`: the product rule applied to the helper line by line), so second order goes
through them too.

This module only gathers the names; each module imports only those above it in this list:

  blocks.py          linear building blocks, eigh's weights, triangular solves' transpositions,
                     cholesky's two forms, eig's and sqrtm's checks, band storage (solve_banded)
  decompositions.py  svd, qr, matrix_power, expm's Frechet derivatives, lstsq
  norms.py           np.linalg.norm of every order, along x and along the order
"""
from .blocks import (T, band_flip, band_full, band_part, chol_lower, chol_uplo, diag_embed, diag_part, diag_plus,
                     eig_check, eigh_f, eigh_f_jvp, expand2, expm, eye_minus, flip_trans, mm, mmT, phi, solve_banded,
                     solve_sylvester, solve_triangular, sqrtm_real, sym, trans_op, tri_fold, tri_part, tri_solve,
                     tri_sym)
from .decompositions import (expm_frechet, expm_frechet2, lstsq_check, lstsq_jvp, matrix_power_jvp, matrix_power_vjp,
                             matrix_power_vjp_dot, qr_jvp, qr_vjp, qr_vjp_dot, svd_jvp, svd_vjp, svd_vjp_dot)
from .norms import (norm_jvp, norm_ord_jvp, norm_ord_jvp_dot, norm_ord_jvp_ord, norm_ord_vjp, norm_ord_vjp_dot,
                    norm_ord_vjp_ord, norm_vjp, norm_vjp_dot, norm_vjp_ord)

__all__ = ["T", "band_flip", "band_full", "band_part", "chol_lower", "chol_uplo", "diag_embed", "diag_part",
           "diag_plus", "eig_check", "eigh_f", "eigh_f_jvp", "expand2", "expm", "eye_minus", "flip_trans", "mm", "mmT",
           "phi", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm_real", "sym", "trans_op", "tri_fold",
           "tri_part", "tri_solve", "tri_sym", "expm_frechet", "expm_frechet2", "lstsq_check", "lstsq_jvp",
           "matrix_power_jvp", "matrix_power_vjp", "matrix_power_vjp_dot", "qr_jvp", "qr_vjp", "qr_vjp_dot", "svd_jvp",
           "svd_vjp", "svd_vjp_dot", "norm_jvp", "norm_ord_jvp", "norm_ord_jvp_dot", "norm_ord_jvp_ord",
           "norm_ord_vjp", "norm_ord_vjp_dot", "norm_ord_vjp_ord", "norm_vjp", "norm_vjp_dot", "norm_vjp_ord"]
