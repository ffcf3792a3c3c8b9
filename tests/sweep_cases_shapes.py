"""Sweep cases: constructors fed by differentiated values, shape and indexing operations.

Module-level user functions (srcad reads their source) and a list `CASES` in the style of
tests/test_rules_sweep.py: each operation is read out as np.sum(op(...) * w) with a fixed
random weight w, so every output entry gets its own cotangent.
"""
import numpy as np
import scipy.special

from test_rules_sweep import A, F, W, Case


# ---- constructors whose values come from their arguments --------------------------------------
def c_full(x, w):
    return np.sum(np.full(3, x[0]) * x[:3] * w)


def c_full_shape_array(x, w):
    return np.sum(np.full((2, 3), x[:3]) * w)


def c_full_float(s, w):
    return np.sum(np.full((2, 2), s) * w)


def c_full_like(x, w):
    return np.sum(np.full_like(x, x[1]) * np.sin(x) * w)


def c_linspace(x, w):
    return np.sum(np.linspace(x[0], x[1], 5) * w)


def c_linspace_arrays_axis1(x, w):
    return np.sum(np.linspace(x[:2], x[2:], 4, axis=1) * w)


def c_linspace_no_endpoint(x, w):
    return np.sum(np.linspace(x[:2], x[2:], 4, endpoint=False) * w)


def c_geomspace(x, w):
    return np.sum(np.geomspace(x[0], x[1], 5) * w)


def c_logspace(x, w):
    return np.sum(np.logspace(x[0], x[1], 4, base=2.0) * w)


def c_arange(x, w):
    return np.sum(np.arange(x[0], 5.5, x[1]) * w)


def c_bincount(x, w):
    return np.sum(np.bincount(np.array([0, 2, 2, 1, 4]), x, minlength=6) * w)


def c_clip_lo(x, lo, w):
    return np.sum(np.clip(x, lo, 0.5) * w)


def c_clip_hi(x, hi, w):
    return np.sum(np.clip(x, -0.5, hi) * w)


def c_lse_b(x, b, w):
    return np.sum(scipy.special.logsumexp(x, axis=1, b=b * b) * w)


# ---- sorting, gathering, tiling, rearranging ---------------------------------------------------
def s_sort(x, w):
    return np.sum(np.sort(x) * w)


def s_sort_axis0(x, w):
    return np.sum(np.sort(x, axis=0) * w)


def s_sort_flat(x, w):
    return np.sum(np.sort(x, axis=None) * w)


def s_take(x, w):
    return np.sum(np.take(x, np.array([2, 0, 2, 1])) * w)


def s_take_axis1(x, w):
    return np.sum(np.take(x, np.array([[2, 0], [2, 2]]), axis=1) * w)


def s_take_modes(x, w):
    a = np.take(x, np.array([5, -1, 7, 0]), mode="wrap")
    b = np.take(x ** 2, np.array([[4, -3], [1, 2]]), axis=1, mode="clip")
    c = x.take(np.array([-4, 9]), axis=0, mode="wrap") * x.take([2, 8], mode="clip")[0]
    return np.sum(np.concatenate([a, b.ravel(), c.ravel()]) * w)


def s_take_along_axis(x, w):
    return np.sum(np.take_along_axis(x, np.array([[0, 2, 2], [1, 1, 0]]), axis=1) * w)


def s_tile(x, w):
    return np.sum(np.tile(x, (2, 3)) * w)


def s_repeat(x, w):
    return np.sum(np.repeat(x, 2) * w)


def s_repeat_axis(x, w):
    return np.sum(np.repeat(x, np.array([1, 0, 3]), axis=1) * w)


def s_pad(x, w):
    return np.sum(np.pad(x, ((1, 0), (2, 1))) * w)


def s_pad_value(x, c, w):
    return np.sum(np.pad(x, 1, constant_values=c) * w)


def s_flip(x, w):
    return np.sum(np.flip(x, 1) * w)


def s_flip_all(x, w):
    return np.sum(np.flip(x) * w)


def s_fliplr(x, w):
    return np.sum(np.fliplr(x) * w)


def s_flipud(x, w):
    return np.sum(np.flipud(x) * w)


def s_roll(x, w):
    return np.sum(np.roll(x, 2, axis=1) * w)


def s_roll_flat(x, w):
    return np.sum(np.roll(x, -1) * w)


def s_rot90(x, w):
    return np.sum(np.rot90(x) * w)


def s_rot90_k(x, w):
    return np.sum(np.rot90(x, 3) * w)


def s_diag_make(x, w):
    return np.sum(np.diag(x, 1) * w)


def s_diag_take(x, w):
    return np.sum(np.diag(x, -1) * w)


def s_diagonal(x, w):
    return np.sum(np.diagonal(x, 1, 1, 2) * w)


def s_diagonal_method(x, w):
    return np.sum(x.diagonal() * w)


def s_triu(x, w):
    return np.sum(np.triu(x, 1) * w)


def s_tril(x, w):
    return np.sum(np.tril(x) * w)


def s_broadcast_to(x, w):
    return np.sum(np.broadcast_to(x, (2, 4, 3)) * w)


def s_moveaxis(x, w):
    return np.sum(np.moveaxis(x, 0, -1) * w)


def s_split(x, w):
    a, b = np.split(x, 2, axis=1)
    return np.sum(a * w) + np.sum(b * b)


def s_split_one_used(x, w):
    parts = np.array_split(x, 3)
    return np.sum(parts[1] * w)


def s_select(x, w):
    return np.sum(np.select([x > 0.5, x < -0.5], [x ** 2, np.sin(x)], 0.0) * w)


def s_select_default(x, d, w):
    return np.sum(np.select([x > 0.5], [x], d) * w)


def s_cumprod(x, w):
    return np.sum(np.cumprod(x, axis=1) * w)


def s_cumprod_flat(x, w):
    return np.sum(np.cumprod(x) * w)


def s_where_x_const(x, w):
    return np.sum(np.where(x > 0, x, 0.0) * w)


def s_where_y_const(x, w):
    return np.sum(np.where(x > 0, 1.0, x ** 2) * w)


def s_tensordot(a, b, w):
    return np.sum(np.tensordot(a, b, axes=([0, 2], [1, 0])) * w)


def s_tensordot_int(a, b, w):
    return np.sum(np.tensordot(a, b, 1) * w)


def s_inner(a, b, w):
    return np.sum(np.inner(a, b) * w)


def s_kron(a, b, w):
    return np.sum(np.kron(a, b) * w)


def s_cross(a, b, w):
    return np.sum(np.cross(a, b) * w)


# ---- elementwise -------------------------------------------------------------------------------
def e_arctan2(x, y, w):
    return np.sum(np.arctan2(x, y) * w)


def e_hypot(x, y, w):
    return np.sum(np.hypot(x, y) * w)


def e_logaddexp(x, y, w):
    return np.sum(np.logaddexp(x, y) * w)


def e_logaddexp2(x, y, w):
    return np.sum(np.logaddexp2(x, y) * w)


def e_fmax(x, y, w):
    return np.sum(np.fmax(x, y) * w)


def e_fmin(x, y, w):
    return np.sum(np.fmin(x, y) * w)


def e_exp2(x, w):
    return np.sum(np.exp2(x) * w)


def e_arcsinh(x, w):
    return np.sum(np.arcsinh(x) * w)


def e_arccosh(x, w):
    return np.sum(np.arccosh(x + 1.0) * w)


def e_arctanh(x, w):
    return np.sum(np.arctanh(x) * w)


def e_cbrt(x, w):
    return np.sum(np.cbrt(x) * w)


def e_sinc(x, w):
    return np.sum(np.sinc(x) * w)


def e_deg2rad(x, w):
    return np.sum(np.deg2rad(x) * np.rad2deg(x) * w)


def e_square(x, w):
    return np.sum(np.square(x) * np.reciprocal(x) ** 3 * w)


def e_hyperbolic(x, w):
    return np.sum((np.sinh(x) + np.cosh(x) * x) * w)


def e_arc(x, w):
    return np.sum((np.arcsin(x) + np.arccos(x) * x) * w)


def e_logs(x, w):
    return np.sum((np.log2(x) + np.log10(x) * x) * w)


def e_var_std(x, w):
    return np.sum((np.var(x, axis=0) + np.std(x, axis=0, ddof=1)) * w)


def e_cumsum(x, w):
    return np.sum(np.cumsum(x, axis=1) * w)


def s_more(x, w):
    y = np.fabs(x) + np.nan_to_num(x) + x.clip(-0.5, 0.5)
    return np.sum(np.atleast_3d(y) * w) + np.sum(x.swapaxes(0, 1) * np.arange(6.0).reshape(3, 2))


def s_rollaxis(x, w):
    return np.sum(np.rollaxis(x, 2, 0) * w) + np.sum(np.rollaxis(x, 0, 3) * np.arange(24.0).reshape(3, 4, 2))


def s_partition(x, w):
    return np.sum(np.partition(x, 1, axis=1) * w)


def s_vhd_split(x, w):
    a, b = np.vsplit(x, 2)
    c, d = np.hsplit(x, [1])
    e, f = np.dsplit(x.reshape(2, 3, 2), 2)
    return np.sum(a * w) + np.sum(b * b) + np.sum(c) * 2.0 + np.sum(d * d * d) + np.sum(e * f)


def s_hsplit_1d(x, w):
    a, b = np.hsplit(x, 2)
    return np.sum(a * w) + np.sum(b * b)


def s_dstack(a, b, w):
    return np.sum(np.dstack([a, b * b]) * w)


def s_column_stack(a, b, w):
    return np.sum(np.column_stack((a, b)) * w)


# ---- np.r_[...] / np.c_[...]: the items are the arguments ----------------------------------------
def c_r_(x, w):
    return np.sum(np.r_[x, x[:2] ** 2, 1.5] * w)


def c_c_(x, w):
    return np.sum(np.c_[x, np.sin(x)] * w)


def c_c_matrix(a, w):
    return np.sum(np.c_[a, a ** 2] * w)


CASES = [
    Case("r_", c_r_, (A((4,)), W)),
    Case("c_", c_c_, (A((4,)), W)),
    Case("c_matrix", c_c_matrix, (A((2, 3)), W)),
    Case("full", c_full, (A((4,)), W)),
    Case("full_shape_array", c_full_shape_array, (A((4,)), W)),
    Case("full_float", c_full_float, (F(), W)),
    Case("full_like", c_full_like, (A((4,)), W)),
    Case("linspace", c_linspace, (A((2,)), W)),
    Case("linspace_arrays_axis1", c_linspace_arrays_axis1, (A((4,)), W)),
    Case("linspace_no_endpoint", c_linspace_no_endpoint, (A((4,)), W)),
    Case("geomspace", c_geomspace, (A((2,), "pos"), W)),
    Case("logspace", c_logspace, (A((2,)), W)),
    Case("arange", c_arange, (A((2,), "pos"), W)),
    Case("bincount", c_bincount, (A((5,)), W)),
    Case("clip_lo", c_clip_lo, (A((6,), "clip"), F("small"), W), wrt=(0, 1)),
    Case("clip_hi", c_clip_hi, (A((6,), "clip"), F("small"), W), wrt=(0, 1)),
    Case("lse_b", c_lse_b, (A((2, 3)), A((3,), "pos"), W), wrt=(0, 1)),
    Case("sort", s_sort, (A((2, 4), "distinct"), W)),
    Case("sort_axis0", s_sort_axis0, (A((3, 2), "distinct"), W)),
    Case("sort_flat", s_sort_flat, (A((2, 3), "distinct"), W)),
    Case("take", s_take, (A((2, 3)), W)),
    Case("take_axis1", s_take_axis1, (A((2, 3)), W)),
    Case("take_modes", s_take_modes, (A((2, 3)), W)),
    Case("take_along_axis", s_take_along_axis, (A((2, 3)), W)),
    Case("tile", s_tile, (A((2,)), W)),
    Case("repeat", s_repeat, (A((2, 3)), W)),
    Case("repeat_axis", s_repeat_axis, (A((2, 3)), W)),
    Case("pad", s_pad, (A((2, 3)), W)),
    Case("pad_value", s_pad_value, (A((2, 3)), F(), W), wrt=(0, 1)),
    Case("flip", s_flip, (A((2, 3)), W)),
    Case("flip_all", s_flip_all, (A((2, 3)), W)),
    Case("fliplr", s_fliplr, (A((2, 3)), W)),
    Case("flipud", s_flipud, (A((2, 3)), W)),
    Case("roll", s_roll, (A((2, 3)), W)),
    Case("roll_flat", s_roll_flat, (A((2, 3)), W)),
    Case("rot90", s_rot90, (A((2, 3)), W)),
    Case("rot90_k", s_rot90_k, (A((2, 3)), W)),
    Case("diag_make", s_diag_make, (A((3,)), W)),
    Case("diag_take", s_diag_take, (A((3, 4)), W)),
    Case("diagonal", s_diagonal, (A((2, 3, 4)), W)),
    Case("diagonal_method", s_diagonal_method, (A((3, 2)), W)),
    Case("triu", s_triu, (A((3, 4)), W)),
    Case("tril", s_tril, (A((4, 3)), W)),
    Case("broadcast_to", s_broadcast_to, (A((4, 1)), W)),
    Case("moveaxis", s_moveaxis, (A((2, 3, 4)), W)),
    Case("split", s_split, (A((2, 4)), W)),
    Case("split_one_used", s_split_one_used, (A((5,)), W)),
    Case("select", s_select, (A((2, 4), "away0"), W)),
    Case("select_default", s_select_default, (A((2, 4), "away0"), F(), W), wrt=(0, 1)),
    Case("cumprod", s_cumprod, (A((2, 3), "nonzero"), W)),
    Case("cumprod_flat", s_cumprod_flat, (A((2, 3), "nonzero"), W)),
    Case("where_x_const", s_where_x_const, (A((2, 3), "away0"), W)),
    Case("where_y_const", s_where_y_const, (A((2, 3), "away0"), W)),
    Case("tensordot", s_tensordot, (A((2, 3, 4)), A((4, 2, 5)), W), wrt=(0, 1)),
    Case("tensordot_int", s_tensordot_int, (A((2, 3)), A((3, 4)), W), wrt=(0, 1)),
    Case("inner", s_inner, (A((2, 3)), A((4, 3)), W), wrt=(0, 1)),
    Case("inner_1d", s_inner, (A((3,)), A((3,)), W), wrt=(0, 1)),
    Case("kron", s_kron, (A((2, 3)), A((2, 2)), W), wrt=(0, 1)),
    Case("cross", s_cross, (A((2, 3)), A((3,)), W), wrt=(0, 1)),
    Case("arctan2", e_arctan2, (A((2, 3)), A((3,), "away0"), W), wrt=(0, 1)),
    Case("hypot", e_hypot, (A((2, 3), "away0"), A((3,), "away0"), W), wrt=(0, 1)),
    Case("logaddexp", e_logaddexp, (A((2, 3)), A((3,)), W), wrt=(0, 1)),
    Case("logaddexp2", e_logaddexp2, (A((2, 3)), F(), W), wrt=(0, 1)),
    Case("fmax", e_fmax, (A((2, 3), "away0"), A((3,), "small"), W), wrt=(0, 1)),
    Case("fmin", e_fmin, (A((2, 3), "away0"), A((3,), "small"), W), wrt=(0, 1)),
    Case("exp2", e_exp2, (A((2, 3)), W)),
    Case("arcsinh", e_arcsinh, (A((2, 3)), W)),
    Case("arccosh", e_arccosh, (A((2, 3), "pos"), W)),
    Case("arctanh", e_arctanh, (A((2, 3), "unit"), W)),
    Case("cbrt", e_cbrt, (A((2, 3), "away0"), W)),
    Case("sinc", e_sinc, (A((2, 3)), W)),
    Case("deg2rad", e_deg2rad, (A((3,)), W)),
    Case("square_reciprocal", e_square, (A((3,), "away0"), W)),
    Case("sinh_cosh", e_hyperbolic, (A((3,)), W)),
    Case("arcsin_arccos", e_arc, (A((3,), "unit"), W)),
    Case("log2_log10", e_logs, (A((3,), "pos"), W)),
    Case("var_std", e_var_std, (A((3, 2)), W)),
    Case("cumsum", e_cumsum, (A((2, 3)), W)),
    Case("fabs_nan_to_num_atleast_3d_methods", s_more, (A((2, 3), "clip"), W)),
    Case("rollaxis", s_rollaxis, (A((2, 3, 4)), W)),
    Case("partition", s_partition, (A((2, 4), "distinct"), W)),
    Case("vsplit_hsplit_dsplit", s_vhd_split, (A((2, 6)), W)),
    Case("hsplit_1d", s_hsplit_1d, (A((4,)), W)),
    Case("dstack", s_dstack, (A((2, 3)), A((2, 3)), W), wrt=(0, 1)),
    Case("column_stack", s_column_stack, (A((3,)), A((3, 2)), W), wrt=(0, 1)),
]
