"""Cases of the systematic test (tests/test_systematic.py) beyond the rule sweep's tables: sparse
arguments, and programs whose generated code reaches the rules of srcad's runtime helpers.

Same `Case` machinery as tests/test_rules_sweep.py; `S(shape)` is a sparse CSR argument with a
fixed pattern (its derivative: one value per stored entry).
"""
import collections
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.special

import srcad
from srcad import runtime as rt
from srcad.runtime import sparse as rt_sparse
from test_rules_sweep import A, F, W, Case, _draw  # noqa: F401


@dataclass(frozen=True)
class ForwardOnly(Case):
    """A case whose operation has tangent rules only (a srcad helper with no adjoint template):
    the systematic test checks forward mode and forward over forward, not reverse mode."""


@dataclass(frozen=True)
class ReverseOnly(Case):
    """A case whose operation has an adjoint only (a srcad.custom_vjp function): the systematic
    test checks reverse mode and forward over reverse (hvp), not forward mode."""


@dataclass(frozen=True)
class S:
    """A sparse argument: CSR (`fmt`) of the given shape, about `density` of it stored."""
    shape: tuple
    density: float = 0.5
    fmt: str = "csr_array"

    def draw(self, rng, dtype=np.float64):
        mask = rng.uniform(size=self.shape) < self.density
        mask[np.arange(min(self.shape)), np.arange(min(self.shape))] = True   # no empty row or column
        dense = np.where(mask, rng.uniform(0.5, 1.5, self.shape) * rng.choice([-1.0, 1.0], self.shape), 0.0)
        return getattr(sp, self.fmt)(dense.astype(dtype))


@dataclass(frozen=True)
class T:
    """A namedtuple argument of class `cls`, one array leaf per spec (A)."""
    cls: type
    leaves: tuple

    def draw(self, rng, dtype=np.float64):
        return self.cls(*[np.asarray(_draw(rng, a.kind, a.shape), dtype=dtype) for a in self.leaves])


# ---- sparse operations ---------------------------------------------------------------------

def sp_matmul(A, x, w):
    return np.sum((A @ x) ** 2 * w)


def sp_rmatmul(A, x, w):
    return np.sum(np.sin(A.T @ x) * w)


def sp_sum_axis(A, w):
    return np.sum(A.sum(axis=1) ** 2 * w)


def sp_sum_all(A, w):
    return np.sum(A.sum() ** 2 * w)


def sp_multiply(A, D, w):
    return np.sum(A.multiply(D).sum(axis=0) ** 2 * w)


def sp_data(A, w):
    return np.sum(np.exp(A.data) * w)


def sp_construct(v, w):
    A = sp.csr_array((v, np.array([0, 2, 1, 0]), np.array([0, 2, 3, 4])), shape=(3, 3))
    return np.sum((A @ np.array([1.0, -2.0, 0.5])) ** 2 * w)


def sp_reduce_max(A, w):
    return np.sum(srcad.sparse.reduce_max(A, axis=1) ** 2 * w)


def sp_segment_sum(x, w):
    return np.sum(srcad.sparse.segment_sum(x ** 2, np.array([0, 2, 0, 1]), 3) * w)


def sp_take(E, w):
    return np.sum(np.take(E, np.array([2, 0, 2]), axis=0) ** 2 * w)


def sp_srcad_matmul(A, x, w):
    return np.sum(srcad.sparse.matmul(A, x) ** 2 * w)


def sp_reduce_min(A, w):
    return np.sum(np.cos(srcad.sparse.reduce_min(A, axis=0)) * w)


def sp_segment_max(x, w):
    return np.sum(srcad.sparse.segment_max(x, np.array([1, 0, 1, 0, 2]), 3) * w)


def sp_segment_min(x, w):
    return np.sum(srcad.sparse.segment_min(x * x, np.array([1, 0, 1, 0, 2]), 3) * w)


def sp_construct_classes(v, w):
    rows, cols = np.array([0, 1, 2, 2]), np.array([1, 0, 2, 0])
    x = np.array([1.0, -2.0, 0.5])
    total = sp.coo_array((v, (rows, cols)), shape=(3, 3)) @ x
    total = total + sp.coo_matrix((v * v, (rows, cols)), shape=(3, 3)) @ x
    total = total + sp.csr_matrix((np.sin(v), cols, np.array([0, 1, 2, 4])), shape=(3, 3)) @ x
    total = total + sp.csc_array((v ** 3, rows, np.array([0, 2, 3, 4])), shape=(3, 3)) @ x
    total = total + sp.csc_matrix((np.exp(v), rows, np.array([0, 2, 3, 4])), shape=(3, 3)) @ x
    return np.sum(total * w)


CASES = [
    Case("sparse_matmul", sp_matmul, (S((3, 4)), A((4,)), W), wrt=(0, 1)),
    Case("sparse_rmatmul", sp_rmatmul, (S((3, 4)), A((3,)), W), wrt=(0, 1)),
    Case("sparse_sum_axis", sp_sum_axis, (S((3, 4)), W)),
    Case("sparse_sum_all", sp_sum_all, (S((3, 4)), W)),
    Case("sparse_multiply", sp_multiply, (S((3, 4)), A((3, 4)), W), wrt=(0, 1)),
    Case("sparse_data", sp_data, (S((3, 4)), W)),
    Case("sparse_construct", sp_construct, (A((4,)), W)),
    Case("sparse_reduce_max", sp_reduce_max, (S((3, 4), 0.6), W)),
    Case("segment_sum", sp_segment_sum, (A((4,)), W)),
    Case("take_rows", sp_take, (A((3, 2)), W)),
    Case("sparse_srcad_matmul", sp_srcad_matmul, (S((3, 4)), A((4, 2)), W), wrt=(0, 1)),
    Case("sparse_reduce_min", sp_reduce_min, (S((3, 4), 0.6), W)),
    Case("segment_max", sp_segment_max, (A((5, 2), "distinct"), W)),
    Case("segment_min", sp_segment_min, (A((5,), "distinct"), W)),
    Case("sparse_construct_classes", sp_construct_classes, (A((4,), "unit"), W)),
]


# ---- Python scalars: math and builtins ----------------------------------------------------

def m_trig(s, w):
    return np.sum(w * (math.sin(s) + math.cos(s) + math.tan(s) + math.atan(s) + math.sinh(s)
                       + math.cosh(s) + math.tanh(s) + math.asin(s) + math.acos(s)))


def m_exp_log(s, w):
    return np.sum(w * (math.exp(s) + math.expm1(s) + math.log(s) + math.log1p(s) + math.sqrt(s)))


def b_scalars(s, t, w):
    return np.sum(w * (abs(s) * max(s, t) + min(s, t) ** 2 + float(s * t)))


def b_containers(x, w):
    parts = list(x)
    pair = tuple(x * 2.0)
    return np.sum(np.stack(parts) * np.stack(pair) * w) + sum([x[0], x[1] * x[2]]) * np.sum(w)


def b_over_array(x, w):
    return np.sum(w * (sum(x) * max(x) + min(x ** 2)))


def b_item_tolist(x, w):
    return np.sum(w * (x.item(1) * np.sum(np.array(x.tolist()) ** 2)))


def b_dict(x, w):
    d = {"a": x * 2.0}
    d["b"] = np.sin(x)
    d["a"] = d["a"] * d["b"]
    return np.sum(w * (d["a"] + d.get("b", x)))


def b_dict_union(x, w):
    d = {"a": x, "b": x ** 2} | {"b": np.sin(x), "c": x * 3.0}
    d |= {"a": d["a"] * d["c"]}
    return np.sum(w * (d["a"] * d["b"] + d["c"]))


def b_joined_repeated_sorted(x, w):
    xs = [x[0] ** 2, x[1]] + [np.sin(x[2])]
    ys = [x[1] * x[0]] * 2
    s = sorted(x * 1.5)
    zs = [x[0], x[1] ** 2, 1.0, x[3]] * np.cos(x)      # a list times an array: NumPy's product
    return np.sum(w * (xs[0] * xs[2] + xs[1] + ys[0] * ys[1] ** 2 + s[0] * s[-1] ** 2 + np.sum(zs ** 2)))


CASES += [
    Case("dict_items", b_dict, (A((3,)), W)),
    Case("dict_union", b_dict_union, (A((3,)), W)),
    Case("lists_joined_repeated_sorted", b_joined_repeated_sorted, (A((4,), "distinct"), W)),
    Case("math_trig", m_trig, (F("unit"), W)),
    Case("math_exp_log", m_exp_log, (F("pos"), W)),
    Case("builtins_scalars", b_scalars, (F("away0"), F("small"), W), wrt=(0, 1)),
    Case("builtins_containers", b_containers, (A((3,)), W)),
    Case("builtins_over_array", b_over_array, (A((4,), "distinct"), W)),
    Case("item_tolist", b_item_tolist, (A((3,)), W)),
]


# ---- numpy names of operators, elementwise functions ---------------------------------------

def n_operator_names(x, y, w):
    a = np.add(x, y) * np.subtract(x, y)
    b = np.divide(np.multiply(x, y), np.power(y, 2.0))
    return np.sum((np.negative(a) + np.positive(b)) * w)


def n_mod(x, y, w):
    return np.sum(((x + 3.3) % (y * 0.1 + 1.3) + np.remainder(x + 3.3, y * 0.1 + 1.3)) * w)


def n_uadd(x, w):
    return np.sum(+x * w)


def n_elementwise(x, w):
    return np.sum((np.square(x) + np.reciprocal(x) + np.sinh(x) + np.cosh(x) + scipy.special.expit(x)) * w)


def n_inverse_trig(x, w):
    return np.sum((np.arcsin(x) + np.arccos(x) * x) * w)


def n_logs(x, w):
    return np.sum((np.log2(x) + np.log10(x) * x) * w)


CASES += [
    Case("numpy_operator_names", n_operator_names, (A((2, 3)), A((3,), "pos"), W), wrt=(0, 1)),
    Case("mod", n_mod, (A((3,), "small"), A((3,), "small"), W), wrt=(0, 1)),
    Case("uadd", n_uadd, (A((3,)), W)),
    Case("elementwise_more", n_elementwise, (A((2, 3), "away0"), W)),
    Case("inverse_trig", n_inverse_trig, (A((3,), "unit"), W)),
    Case("logs", n_logs, (A((3,), "pos"), W)),
]


# ---- reductions, shapes and linear algebra -------------------------------------------------

def r_amax_amin(x, w):
    return np.sum((np.amax(x, axis=0) + np.amin(x, axis=1, keepdims=True)) * w)


def r_var_std(x, w):
    a = np.var(x, axis=0) + x.std(axis=0) + x.var()
    return np.sum(np.concatenate([a, np.std(x, axis=1, ddof=1)]) * w)


def r_norm(x, w):
    return np.sum((np.linalg.norm(x) + np.linalg.norm(x, axis=1)) * w)


def r_cumsum_diff(x, w):
    return np.sum((np.cumsum(x, axis=1) + x.cumsum(axis=0) + np.cumsum(x ** 2, axis=0)) * w) \
        + np.sum(np.diff(x, axis=1) ** 2 * w[:, :2])


def s_shapes(x, w):
    a = np.atleast_2d(x[0]) + np.atleast_1d(x[1, 2])
    b = np.ravel(x) + x.ravel() + x.flatten() + np.copy(x).reshape(6) + x.copy().reshape(6)
    c = np.swapaxes(x, 0, 1).reshape(6) + x.transpose().reshape(6) + x[None].squeeze().reshape(6)
    return np.sum(np.concatenate([np.ravel(a), b + c * x.reshape(6)]) * w)


def s_casts(x, s, w):
    y = np.asarray(x) * np.float64(s) + x.astype(np.float64)
    return np.sum(y * y * w)


def s_joined(x, y, w):
    return np.sum(np.vstack([x, y]) * np.hstack([y, x]).reshape(2, 3) * w)


def l_trace_outer(x, y, w):
    return np.sum((np.trace(x) + x.trace() + np.outer(x[0], y)) * w)


def l_dot_method(x, y, w):
    return np.sum(x.dot(y) ** 2 * w)


def l_einsum(x, y, w):
    return np.sum(np.einsum("ij,jk->ik", x, y) * np.einsum("ij->i", x)[:, None] * w)


def l_inverse_det(a, w):
    m = a + 3.0 * np.eye(3)          # well conditioned
    return np.sum((np.linalg.inv(m) + np.linalg.det(m)) * w)


def l_solve(a, b, w):
    m = a + 3.0 * np.eye(3)
    return np.sum(np.linalg.solve(m, b) ** 2 * w)


CASES += [
    Case("amax_amin", r_amax_amin, (A((2, 3), "distinct"), W)),
    Case("var_std", r_var_std, (A((2, 3)), W)),
    Case("norm", r_norm, (A((2, 3), "away0"), W)),
    Case("cumsum_diff", r_cumsum_diff, (A((2, 3)), W)),
    Case("shapes_more", s_shapes, (A((2, 3)), W)),
    Case("casts", s_casts, (A((3,)), F(), W), wrt=(0, 1)),
    Case("vstack_hstack", s_joined, (A((3,)), A((3,)), W), wrt=(0, 1)),
    Case("trace_outer", l_trace_outer, (A((3, 3)), A((3,)), W), wrt=(0, 1)),
    Case("dot_method", l_dot_method, (A((2, 3)), A((3, 2)), W), wrt=(0, 1)),
    Case("einsum", l_einsum, (A((2, 3)), A((3, 2)), W), wrt=(0, 1)),
    Case("inverse_det", l_inverse_det, (A((3, 3)), W)),
    Case("solve", l_solve, (A((3, 3)), A((3, 2)), W), wrt=(0, 1)),
]


# ---- programs: lists, subscript writes, variable indices, namedtuple fields ---------------

Pair = collections.namedtuple("Pair", ["a", "b"])


def p_list_append(x, w):
    xs = []
    for i in range(3):
        xs.append(np.sin(x * (i + 1.0)))
    return np.sum(np.stack(xs) * w)


def p_setitem(x, w):
    y = np.zeros(4)
    y[1:3] = x[:2] ** 2
    y[0] = x[3] * x[2]
    z = y * 1.0
    z[2] = np.sin(z[1])
    return np.sum(z * y * w)


def p_variable_index(E, w):
    idx = np.array([2, 0, 2])
    return np.sum(E[idx] ** 2 * w)


def p_gather_matmul(E, v, w):
    idx = np.array([2, 0, 2])
    return np.sum(np.tanh(E[idx] @ v) * w)


def p_field(p, w):
    return np.sum(np.sin(p.a) * p.b * w)


CASES += [
    Case("list_append", p_list_append, (A((3,)), W)),
    Case("setitem", p_setitem, (A((4,)), W)),
    Case("variable_index", p_variable_index, (A((3, 2)), W)),
    Case("gather_matmul", p_gather_matmul, (A((3, 2)), A((2,)), W), wrt=(0, 1)),
    Case("namedtuple_field", p_field, (T(Pair, (A((3,)), A((3,)))), W)),
]


# ---- srcad's own helpers called directly (their rules, where no transformation reaches them) --

def h_outer_snapshot(x, y, w):
    return np.sum(rt.outer(x, y) * rt.snapshot(y)[:, None].T * w)


def h_sparse_helpers(A, x, w):
    y = rt_sparse.sparse_matmul(A, x)
    return np.sum(y * y * w) + np.sum(rt_sparse.sparse_add(A, A).data ** 3 * w[0])


CASES += [
    Case("helper_outer_snapshot", h_outer_snapshot, (A((2,)), A((3,)), W), wrt=(0, 1)),
    Case("helper_sparse", h_sparse_helpers, (S((3, 4)), A((4,)), W), wrt=(0, 1)),
]


# the helpers of srcad/composition.py's plain functions (grad's seed, jacobian's columns) and the
# zero-aware product of matmul adjoints' adjoints
def h_composition(x, y, w):
    cols = [x * y[0], np.sin(x)]
    J = rt.stack_columns(cols, y[:2])                      # (3,) + (2,)
    back = rt.unstack_columns(J * J, cols, y[:2])
    s = rt.seed(np.sum(x), y[1] ** 2)
    return np.sum(rt.matmul_or_zero(J, y[:2]) * w) + np.sum(back[0] * back[1] * w) + s * w[0]


CASES += [
    Case("helper_composition", h_composition, (A((3,)), A((2,)), W), wrt=(0, 1)),
]


# forward-only helpers: rules that let tangent code be transformed again, where no generated code
# reaches them today
def f_replace_at(x, w):
    return np.sum(np.stack(rt.replace_at([x, x * 2.0], 1, np.sin(x))) * w)


def f_sum_list_vjp(g, x, w):
    return np.sum(np.stack(rt.sum_list_vjp(g * x, [x, x])) * w)


def f_sparse_rmatmul(A, G, w):
    return np.sum(np.sin(rt_sparse.sparse_rmatmul(A, G)) * w)


def f_matmul_vjp_values(g, A, X, w):
    return np.sum(rt_sparse.matmul_vjp_values(g, A, X).data ** 2 * w)


def f_sparse_sum_vjp(g, A, w):
    return np.sum(np.exp(rt_sparse.sparse_sum_vjp(g, A, 1).data) * w)


def f_sparse_sum_jvp(A, w):
    return np.sum(rt_sparse.sum_jvp(A, 0) ** 2 * w)


def f_segment(x, w):
    return np.sum(rt_sparse.segment(x ** 2, np.array([1, 0, 1, 2]), 3, "sum") * w)


def h_sparse_finalize(x, A, w):
    return np.sum(rt_sparse.sparse_finalize(A.multiply(x ** 2), A).data * w)


CASES += [
    ForwardOnly("helper_replace_at", f_replace_at, (A((3,)), W)),
    ForwardOnly("helper_sum_list_vjp", f_sum_list_vjp, (A((3,)), A((3,)), W), wrt=(0, 1)),
    ForwardOnly("helper_sparse_rmatmul", f_sparse_rmatmul, (S((3, 4)), A((3,)), W), wrt=(0, 1)),
    ForwardOnly("helper_matmul_vjp_values", f_matmul_vjp_values, (A((3,)), S((3, 4)), A((4,)), W), wrt=(0, 2)),
    ForwardOnly("helper_sparse_sum_vjp", f_sparse_sum_vjp, (A((3,)), S((3, 4)), W)),
    ForwardOnly("helper_sparse_sum_jvp", f_sparse_sum_jvp, (S((3, 4)), W)),
    ForwardOnly("helper_segment", f_segment, (A((4,)), W)),
    Case("helper_sparse_finalize", h_sparse_finalize, (A((3, 4)), S((3, 4)), W)),
]


# ---- sparse results: products, powers, slices, stacks, diagonals ---------------------------

def ss_spgemm(A, B, w):
    return np.sum((A @ B).toarray() ** 2 * w)


def ss_multiply(A, B, w):
    return np.sum(np.sin(A.multiply(B).todense()) * w)


def ss_power_diagonal(A, w):
    return np.sum(np.concatenate([A.power(3).toarray().ravel(), A.diagonal(1) ** 2]) * w)


def ss_slice(A, w):
    return np.sum(A[1:3].toarray() ** 2 * w)


def ss_stacks(A, B, w):
    h = sp.hstack([A, B]).toarray()
    v = sp.vstack([A, B], format="csr").toarray()
    return np.sum(np.concatenate([h.ravel(), np.sin(v).ravel()]) * w)


def ss_diags(x, w):
    a = sp.diags(x, 1, shape=(4, 4)).toarray()
    b = sp.diags_array(x ** 2).toarray()
    return np.sum(np.concatenate([a.ravel(), b.ravel()]) * w)


def ss_add_subtract(A, B, w):
    return np.sum((srcad.sparse.add(A, B).toarray() * srcad.sparse.subtract(A, B).toarray()) * w)


CASES += [
    Case("sparse_spgemm", ss_spgemm, (S((3, 4)), S((4, 2)), W), wrt=(0, 1)),
    Case("sparse_multiply_sparse", ss_multiply, (S((3, 4)), S((3, 4)), W), wrt=(0, 1)),
    Case("sparse_power_diagonal", ss_power_diagonal, (S((3, 4)), W)),
    Case("sparse_slice", ss_slice, (S((4, 3)), W)),
    Case("sparse_stacks", ss_stacks, (S((3, 4)), S((3, 4)), W), wrt=(0, 1)),
    Case("sparse_diags", ss_diags, (A((3,)), W)),
    Case("sparse_add_subtract", ss_add_subtract, (S((3, 4)), S((3, 4)), W), wrt=(0, 1)),
]


# ---- more math, angles, namedtuple construction, array methods ------------------------------

def m_hyperbolic(s, t, w):
    return np.sum(w * (math.asinh(s) + math.acosh(t + 1.5) + math.atanh(s * 0.5)
                       + math.atan2(s, t) + math.hypot(s, t)))


def n_angles(x, w):
    return np.sum((np.degrees(x) * np.radians(x)) * w)


def p_namedtuple(x, w):
    p = Pair(x, x * 2.0)
    return np.sum(np.sin(p.a) * p.b * w)


def a_methods(x, w):
    a = x.cumprod(axis=1).ravel()
    b = x.repeat(2, axis=0).ravel()
    c = x.take(np.array([2, 0]), axis=1).ravel()
    return np.sum(np.concatenate([a, b * b, np.sin(c)]) * w)


CASES += [
    Case("math_hyperbolic", m_hyperbolic, (F("unit"), F("pos"), W), wrt=(0, 1)),
    Case("degrees_radians", n_angles, (A((3,)), W)),
    Case("namedtuple_construct", p_namedtuple, (A((3,)), W)),
    Case("array_methods", a_methods, (A((2, 3), "nonzero"), W)),
]


# ---- scipy.sparse methods (srcad/runtime/sparse/methods.py), custom rules' checked seams ----------

def ss_unary_methods(A, w):
    B = A * 0.5
    parts = [B.sin(), B.tan(), B.arcsin(), B.arctan(), B.arctanh(), B.arcsinh(), B.sinh(), B.tanh(),
             B.expm1(), B.log1p(), B.deg2rad(), B.rad2deg(), abs(A).sqrt()]
    return np.sum(np.concatenate([p.toarray().ravel() for p in parts]) * w)


def ss_conversions(A, w):
    parts = [A.tocsc().toarray(), A.tocoo().toarray() ** 2, A.tocsr().toarray() * 3.0,
             A.getrow(1).toarray(), np.sin(A.getcol(2).toarray())]
    return np.sum(np.concatenate([p.ravel() for p in parts]) * w)


@srcad.custom_vjp
def c_soft_clip(x):
    return np.tanh(x) * 2.0


def _soft_clip_fwd(x):
    return np.tanh(x) * 2.0, x


def _soft_clip_bwd(x, g):
    return (g * 2.0 * (1.0 - np.tanh(x) ** 2),)


c_soft_clip.defvjp(_soft_clip_fwd, _soft_clip_bwd)


@srcad.custom_jvp
def c_soft_plus(x):
    return np.log1p(np.exp(x))


def _soft_plus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return np.log1p(np.exp(x)), dx / (1.0 + np.exp(-x))


c_soft_plus.defjvp(_soft_plus_jvp)


def cr_custom_vjp(x, w):
    return np.sum((c_soft_clip(x) + c_soft_clip(x * 0.5) ** 2) * w)


def cr_custom_jvp(x, w):
    return np.sum((c_soft_plus(x) + c_soft_plus(x * 0.5) ** 2) * w)


CASES += [
    Case("sparse_unary_methods", ss_unary_methods, (S((3, 4)), W)),
    Case("sparse_conversions", ss_conversions, (S((3, 4), fmt="csr_matrix"), W)),
    ReverseOnly("custom_vjp_checked", cr_custom_vjp, (A((3,)), W)),
    Case("custom_jvp_checked", cr_custom_jvp, (A((3,)), W)),
]
