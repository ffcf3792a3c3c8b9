"""Derivative rules of numpy.linalg and scipy.linalg (inv, det and solve are in numpy_rules.py).

Adjoints are written with the linear helpers of srcad/runtime/linalg/ (mm, T, sym, phi, ...)
and NumPy calls that have rules themselves, so the adjoint of cholesky, eigh, slogdet, pinv,
lstsq and solve_triangular is differentiable again (Hessians). svd, qr, matrix_power and expm
have helpers of their own, linear in the cotangent, with hand-written tangents w.r.t. the matrix
and the factors (second order). Symmetric inputs (cholesky, eigh) get a symmetric cotangent.
"""
import numpy as np
import scipy.linalg

from .. import runtime as rt
from .registry import defnondiff, defrule

L = "rt.linalg."


def _c(template):
    """Templates below write the helpers of srcad/runtime/linalg/ with a leading `L.`."""
    return None if template is None else template.replace("L.", L)


# ---- decompositions ---------------------------------------------------------------------------------
# NumPy's cholesky, eigh and eigvalsh read one triangle of `a` (the lower one, or UPLO's) and
# mirror it: the rules differentiate a -> tri_sym(a, uplo), so the triangle they never read gets
# a zero cotangent and the one they read gets g_ij + g_ji (what finite differences of NumPy see).
# cholesky: L L^T = S; S_bar = sym(L^-T phi(L^T L_bar) L^-1), L_dot = L phi(L^-1 S_dot L^-T)
# (upper=True returns U = L^T and reads the upper triangle)
_LO = "L.chol_lower(ans, upper)"
defrule(np.linalg.cholesky, "a, upper=False",
        _c(f"L.tri_fold(L.sym(L.mm(L.T(np.linalg.inv({_LO})), L.mm(L.phi(L.mm(L.T({_LO}), L.chol_lower(g, upper))), "
           f"np.linalg.inv({_LO})))), L.chol_uplo(upper))"),
        _c(f"L.chol_lower(L.mm({_LO}, L.phi(L.mm(L.mm(np.linalg.inv({_LO}), L.tri_sym(a_dot, L.chol_uplo(upper))), "
           f"L.T(np.linalg.inv({_LO}))))), upper)"), discrete="upper")

# eigh: w_dot = diag(V^T S_dot V), V_dot = V (F * (V^T S_dot V)), F[i, j] = 1 / (w[j] - w[i])
_VAV = "L.mm(L.mm(L.T(ans[1]), L.tri_sym(a_dot, UPLO)), ans[1])"
defrule(np.linalg.eigh, "a, UPLO='L'",
        _c("L.tri_fold(L.sym(L.mm(L.mm(ans[1], L.diag_plus(rt.item(g, 0), L.eigh_f(ans[0]) * "
           "L.mm(L.T(ans[1]), rt.item(g, 1)))), L.T(ans[1]))), UPLO)"),
        _c(f"[L.diag_part({_VAV}), L.mm(ans[1], L.eigh_f(ans[0]) * {_VAV})]"), discrete="UPLO")
_V = "np.linalg.eigh(a, UPLO)[1]"
defrule(np.linalg.eigvalsh, "a, UPLO='L'",
        _c(f"L.tri_fold(L.sym(L.mm(L.mm({_V}, L.diag_embed(g)), L.T({_V}))), UPLO)"),
        _c(f"L.diag_part(L.mm(L.mm(L.T({_V}), L.tri_sym(a_dot, UPLO)), {_V}))"), discrete="UPLO")

defrule(np.linalg.slogdet, "a",
        _c("L.expand2(rt.item(g, 1)) * L.T(np.linalg.inv(a))"),
        _c("[np.zeros(np.shape(ans[0])), np.sum(L.T(np.linalg.inv(a)) * a_dot, axis=(-2, -1))]"))

defrule(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False",
        "rt.linalg.svd_vjp(g, a, ans, full_matrices, compute_uv)",
        "rt.linalg.svd_jvp(a_dot, a, ans, full_matrices, compute_uv)", discrete="full_matrices compute_uv hermitian")
defrule(np.linalg.qr, "a, mode='reduced'", "rt.linalg.qr_vjp(g, a, ans, mode)", "rt.linalg.qr_jvp(a_dot, a, ans, mode)",
        discrete="mode")

# ---- pseudo-inverse and least squares (full rank) ---------------------------------------------------
# d pinv = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
_PINV_VJP = ("-L.T(L.mm(L.mm(P, L.T(G)), P)) + L.mm(L.mm(L.eye_minus(L.mm(A, P)), L.T(G)), L.mm(P, L.T(P)))"
             " + L.mm(L.mm(L.mm(L.T(P), P), L.T(G)), L.eye_minus(L.mm(P, A)))")
_PINV_JVP = ("-L.mm(L.mm(P, D), P) + L.mm(L.mm(L.mm(P, L.T(P)), L.T(D)), L.eye_minus(L.mm(A, P)))"
             " + L.mm(L.mm(L.eye_minus(L.mm(P, A)), L.T(D)), L.mm(L.T(P), P))")


def _pinv(template, P, A, G=None, D=None):
    out = template.replace("P", P).replace("A", A)
    return _c(out.replace("G", G) if G else out.replace("D", D))


defrule(np.linalg.pinv, "a, rcond=None, hermitian=False", _pinv(_PINV_VJP, "ans", "a", G="g"),
        _pinv(_PINV_JVP, "ans", "a", D="a_dot"), discrete="hermitian")
_GX = "rt.linalg.lstsq_check(g)"
defrule(np.linalg.lstsq, "a, b, rcond=None",
        (_pinv(_PINV_VJP, "np.linalg.pinv(a)", "a", G=f"rt.linalg.mmT({_GX}, b)"),
         _c(f"L.mm(L.T(np.linalg.pinv(a)), {_GX})")),
        ("rt.linalg.lstsq_jvp(a_dot, 0.0, a, b, ans)", "rt.linalg.lstsq_jvp(0.0, b_dot, a, b, ans)"), jvp_join=True)

defrule(np.linalg.matrix_power, "a, n", "rt.linalg.matrix_power_vjp(g, a, n)", "rt.linalg.matrix_power_jvp(a_dot, a, n)",
        discrete="n")

# every ord of np.linalg.norm (vector and matrix); ties of max/min norms share evenly
_NORM = "ord, axis, keepdims"
# ord moves a vector p-norm smoothly (rt.linalg.norm_ord_vjp: zero for +-inf and matrix norms)
defrule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
        (f"rt.linalg.norm_vjp(g, x, ans, {_NORM})", f"rt.linalg.norm_ord_vjp(g, x, ans, {_NORM})"),
        (f"rt.linalg.norm_jvp(x_dot, x, ans, {_NORM})", f"rt.linalg.norm_ord_jvp(ord_dot, x, ans, {_NORM})"),
        discrete="axis keepdims")

# ---- scipy.linalg --------------------------------------------------------------------------------------
defrule([scipy.linalg.expm, rt.linalg.expm], "a", "rt.linalg.expm_frechet(rt.linalg.T(a), g)",
        "rt.linalg.expm_frechet(a, a_dot)")
# x = op(a)^-1 b: b_bar = op(a)^-T g, a_bar = -triangle of (b_bar x^T, transposed if op transposes)
_TRI = "trans, lower, unit_diagonal"
defrule([scipy.linalg.solve_triangular, rt.linalg.solve_triangular],
        "a, b, trans=0, lower=False, unit_diagonal=False",
        (_c(f"-L.tri_part(L.trans_op(L.mmT(L.tri_solve(a, g, {_TRI}, True), ans), trans), lower, unit_diagonal)"),
         _c(f"L.tri_solve(a, g, {_TRI}, True)")),
        (_c(f"-L.tri_solve(a, L.mm(L.trans_op(L.tri_part(a_dot, lower, unit_diagonal), trans), ans), {_TRI})"),
         _c(f"L.tri_solve(a, b_dot, {_TRI})")), discrete="trans lower unit_diagonal")
defrule(scipy.linalg.inv, "a", "-rt.matmul_vjp_x(rt.matmul_vjp_y(g, ans, ans), ans, ans)", "-(ans @ a_dot @ ans)")
defrule(scipy.linalg.det, "a", "rt.linalg.expand2(g * ans) * rt.linalg.T(np.linalg.inv(a))",
        "ans * np.sum(rt.linalg.T(np.linalg.inv(a)) * a_dot, axis=(-2, -1))")

# ---- the helpers' own rules (tangents; generated adjoints call them) ---------------------------------
defrule(rt.linalg.T, "x", None, "rt.linalg.T(x_dot)")
defrule(rt.linalg.mm, "a, b", None, ("rt.linalg.mm(a_dot, b)", "rt.linalg.mm(a, b_dot)"))
defrule(rt.linalg.mmT, "u, v", None, ("rt.linalg.mmT(u_dot, v)", "rt.linalg.mmT(u, v_dot)"))
defrule(rt.linalg.sym, "x", None, "rt.linalg.sym(x_dot)")
defrule(rt.linalg.phi, "x", None, "rt.linalg.phi(x_dot)")
defrule(rt.linalg.diag_embed, "d", None, "rt.linalg.diag_embed(d_dot)")
defrule(rt.linalg.diag_plus, "d, m", None, ("rt.linalg.diag_plus(d_dot, 0.0)", "m_dot"), jvp_join=True)
defrule(rt.linalg.diag_part, "m", None, "rt.linalg.diag_part(m_dot)")
defrule(rt.linalg.expand2, "s", None, "rt.linalg.expand2(s_dot)")
defrule(rt.linalg.eye_minus, "p", None, "-p_dot")
defrule(rt.linalg.tri_sym, "m, uplo='L'", None, "rt.linalg.tri_sym(m_dot, uplo)", discrete="uplo")
defrule(rt.linalg.tri_fold, "g, uplo='L'", None, "rt.linalg.tri_fold(g_dot, uplo)", discrete="uplo")
defrule(rt.linalg.chol_lower, "m, upper=False", None, "rt.linalg.chol_lower(m_dot, upper)", discrete="upper")
defnondiff([rt.linalg.chol_uplo])
defrule(rt.linalg.eigh_f, "w", None, "rt.linalg.eigh_f_jvp(w, w_dot)")
defrule(rt.linalg.tri_part, "m, lower=False, unit_diagonal=False", None, "rt.linalg.tri_part(m_dot, lower, unit_diagonal)",
        discrete="lower unit_diagonal")
defrule(rt.linalg.trans_op, "m, trans=0", None, "rt.linalg.trans_op(m_dot, trans)", discrete="trans")
defrule(rt.linalg.tri_solve, "a, b, trans=0, lower=False, unit_diagonal=False, flip=False", None,
        ("-rt.linalg.tri_solve(a, rt.linalg.mm(rt.linalg.trans_op(rt.linalg.tri_part(a_dot, lower, unit_diagonal), "
         "rt.linalg.flip_trans(trans, flip)), ans), trans, lower, unit_diagonal, flip)",
         "rt.linalg.tri_solve(a, b_dot, trans, lower, unit_diagonal, flip)"), discrete="trans lower unit_diagonal")
defrule(rt.linalg.lstsq_check, "g", None, "rt.linalg.lstsq_check(g_dot)")
defrule(rt.linalg.expm_frechet, "a, e", None, ("rt.linalg.expm_frechet2(a, e, a_dot)", "rt.linalg.expm_frechet(a, e_dot)"))
defrule(rt.linalg.svd_vjp, "g, a, ans_, full_matrices=True, compute_uv=True", None,
        ("rt.linalg.svd_vjp(g_dot, a, ans_, full_matrices, compute_uv)",
         "rt.linalg.svd_vjp_dot(g, a, ans_, a_dot, 0.0, full_matrices, compute_uv)",
         "rt.linalg.svd_vjp_dot(g, a, ans_, 0.0, ans__dot, full_matrices, compute_uv)"), jvp_join=True,
        discrete="full_matrices compute_uv")
defrule(rt.linalg.qr_vjp, "g, a, ans_, mode='reduced'", None,
        ("rt.linalg.qr_vjp(g_dot, a, ans_, mode)", "0", "rt.linalg.qr_vjp_dot(g, a, ans_, ans__dot, mode)"),
        jvp_join=True, discrete="mode")      # a lends its shape only: qr_vjp reads the factors
defrule(rt.linalg.matrix_power_vjp, "g, a, n", None,
        ("rt.linalg.matrix_power_vjp(g_dot, a, n)", "rt.linalg.matrix_power_vjp_dot(g, a, a_dot, n)"), discrete="n")
defnondiff([rt.linalg.flip_trans])
defrule(rt.linalg.norm_vjp, "g, x, out, ord=None, axis=None, keepdims=False", None,
        (f"rt.linalg.norm_vjp(g_dot, x, out, {_NORM})", f"rt.linalg.norm_vjp_dot(g, x, x_dot, out, 0.0, {_NORM})",
         f"rt.linalg.norm_vjp_dot(g, x, 0.0, out, out_dot, {_NORM})",
         f"rt.linalg.norm_vjp_ord(g, x, out, ord_dot, {_NORM})"), jvp_join=True, discrete="axis keepdims")
# the norm_ord helpers read x only (out: "0"); their second derivative in ord is written out too
defrule(rt.linalg.norm_ord_vjp, "g, x, out, ord=None, axis=None, keepdims=False", None,
        (f"rt.linalg.norm_ord_vjp(g_dot, x, out, {_NORM})", f"rt.linalg.norm_ord_vjp_dot(g, x, x_dot, {_NORM})",
         "0", f"rt.linalg.norm_ord_vjp_ord(g, x, ord_dot, {_NORM})"), jvp_join=True, discrete="axis keepdims")
defrule(rt.linalg.norm_ord_jvp, "d, x, out, ord=None, axis=None, keepdims=False", None,
        (f"rt.linalg.norm_ord_jvp(d_dot, x, out, {_NORM})", f"rt.linalg.norm_ord_jvp_dot(d, x, x_dot, {_NORM})",
         "0", f"rt.linalg.norm_ord_jvp_ord(d, x, ord_dot, {_NORM})"), jvp_join=True, discrete="axis keepdims")

# ---- np.linalg.eig of a real matrix with real distinct eigenvalues (else MissingRuleError) ----------------
# A = V diag(w) V^-1, the columns of V of unit length. With F[i, j] = 1 / (w[j] - w[i]):
# P = V^-1 dA V, dw = diag(P), dV = V (F * P) - V diag(V^T V (F * P)) (the columns kept of unit length);
# A_bar = V^-T (diag(w_bar) + F * (V^T V_bar) - F * (V^T V diag(V^T V_bar))) V^T
_EW = "L.eig_check(ans[0])"
_EV = "ans[1]"
_EF = f"L.eigh_f({_EW})"
_EP = f"L.mm(L.mm(np.linalg.inv({_EV}), a_dot), {_EV})"
_EDV = f"L.mm({_EV}, {_EF} * {_EP})"
defrule(np.linalg.eig, "a",
        _c(f"L.mm(L.mm(L.T(np.linalg.inv({_EV})), L.diag_plus(rt.item(g, 0), {_EF} * L.mm(L.T({_EV}), rt.item(g, 1))"
           f" - {_EF} * L.mm(L.mm(L.T({_EV}), {_EV}), L.diag_embed(L.diag_part(L.mm(L.T({_EV}), rt.item(g, 1))))))),"
           f" L.T({_EV}))"),
        _c(f"[L.diag_part({_EP}), {_EDV} - L.mm({_EV}, L.diag_embed(L.diag_part(L.mm(L.T({_EV}), {_EDV}))))]"))
defrule(rt.linalg.eig_check, "w", "g", "w_dot")

# ---- scipy.linalg.solve_sylvester: A X + X B = Q ----------------------------------------------------------
# dX = sylv(A, B, dQ - dA X - X dB); Q_bar = sylv(A^T, B^T, G), A_bar = -Q_bar X^T, B_bar = -X^T Q_bar
_SYL = "rt.linalg.solve_sylvester(L.T(a), L.T(b), g)"
defrule(rt.linalg.solve_sylvester, "a, b, q",
        (_c(f"-L.mmT({_SYL}, ans)"), _c(f"-L.mm(L.T(ans), {_SYL})"), _c(_SYL)),
        (_c("rt.linalg.solve_sylvester(a, b, -L.mm(a_dot, ans))"), _c("rt.linalg.solve_sylvester(a, b, -L.mm(ans, b_dot))"),
         "rt.linalg.solve_sylvester(a, b, q_dot)"), jvp_join=True)

# ---- scipy.linalg.solve_banded((l, u), ab, b): x = A^-1 b, A the matrix whose band ab stores ------------------
# b_bar = A^-T g (a banded solve with the transposed band), ab_bar = -band(b_bar x^T); l_and_u is discrete
_BT = "L.band_part(L.band_flip(l_and_u), L.T(L.band_full(l_and_u, ab)))"
_BB = f"rt.linalg.solve_banded(L.band_flip(l_and_u), {_BT}, g)"
defrule(rt.linalg.solve_banded, "l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True",
        (None, _c(f"-L.band_part(l_and_u, L.mmT({_BB}, ans))"), _c(_BB)),
        (None, _c("-rt.linalg.solve_banded(l_and_u, ab, L.mm(L.band_full(l_and_u, ab_dot), ans))"),
         "rt.linalg.solve_banded(l_and_u, ab, b_dot)"), jvp_join=True,
        discrete="l_and_u overwrite_ab overwrite_b check_finite")
defrule(rt.linalg.band_full, "l_and_u, ab", None, (None, "rt.linalg.band_full(l_and_u, ab_dot)"), discrete="l_and_u")
defrule(rt.linalg.band_part, "l_and_u, m", None, (None, "rt.linalg.band_part(l_and_u, m_dot)"), discrete="l_and_u")
defnondiff([rt.linalg.band_flip])

# ---- scipy.linalg.sqrtm: X X = A, so X dX + dX X = dA (a Sylvester equation); A_bar = sylv(X^T, X^T, G) --------
defrule(scipy.linalg.sqrtm, "a, disp=True, blocksize=64",
        _c("rt.linalg.solve_sylvester(L.T(rt.linalg.sqrtm_real(ans)), L.T(rt.linalg.sqrtm_real(ans)), g)"),
        "rt.linalg.solve_sylvester(rt.linalg.sqrtm_real(ans), rt.linalg.sqrtm_real(ans), a_dot)",
        discrete="disp blocksize")
defrule(rt.linalg.sqrtm_real, "x", "g", "x_dot")
