"""Rule sweep: every built-in derivative rule, in reverse mode, against central finite differences.

In the spirit of HIPS autograd's `test_systematic.py`, but for a source transformer: each case is
a small user function defined at module top level (srcad reads it with `inspect.getsource`). An
operation `op` under test is read out as a scalar with

    np.sum(op(...) * w)

where `w` is a fixed random weight array passed as an extra, non-differentiated argument, so
that every output entry of `op` receives a different cotangent (an all-ones cotangent would hide
a transposed or mis-broadcast adjoint). The shape of `w` is found by running the function once
with a probe in place of `w` (see `_probe_weight_shape`), so the case tables only give inputs.

Sections: the case machinery; the user functions (one per operation); the case tables; the
tests:
  - `test_grad_matches_fd`     every (case, wrt) pair, float64, against `fdcheck`
  - `test_grad_tuple_wrt`      `wrt=(0, 1)` returns a tuple equal to the one-at-a-time grads
  - `test_grad_float32`        float32 inputs give float32 gradients close to float64 FD
  - `test_tie_split`           max/min/maximum/minimum at ties, against values computed by hand
  - `test_emit_standalone`     `srcad.emit` output exec'd in a fresh namespace defines `<f>_vjp`
  - `test_reference_is_smooth` (no srcad) the inputs of the table stay away from kinks/poles

Inputs are drawn from a generator seeded by the case name, so every run sees the same numbers.
"""
import ast
import inspect
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.special
from scipy.special import logsumexp

import srcad
from fdcheck import assert_grad_close, grad_values, numerical_grad


# =============================================================================================
# Case machinery
# =============================================================================================

@dataclass(frozen=True)
class A:
    """An array argument of the given shape; `kind` says where its values are drawn from."""
    shape: tuple
    kind: str = "normal"


@dataclass(frozen=True)
class F:
    """A Python float argument."""
    kind: str = "normal"


class _Weight:
    """Placeholder for the weight argument `w`; its shape is found by probing the function."""

    def __repr__(self):
        return "W"


W = _Weight()


@dataclass(frozen=True)
class Case:
    name: str
    f: object
    specs: tuple        # one entry per positional argument: A, F, W, or a literal (axis, ...)
    wrt: tuple = (0,)   # the arguments to differentiate, one test each


def _draw(rng, kind, shape):
    """Values of a given kind, chosen so that the case's rules are smooth there."""
    n = int(np.prod(shape, dtype=int))
    sign = rng.choice([-1.0, 1.0], n)
    if kind == "normal":
        v = rng.normal(0.0, 0.8, n)
    elif kind == "pos":            # log, sqrt, base of a power
        v = rng.uniform(0.5, 2.0, n)
    elif kind == "away0":          # abs, sign, where(x > 0), 1/x, maximum(x, 0)
        v = sign * rng.uniform(0.4, 1.5, n)
    elif kind == "nonzero":        # prod
        v = sign * rng.uniform(0.6, 1.4, n)
    elif kind == "unit":           # tan
        v = rng.uniform(-0.9, 0.9, n)
    elif kind == "small":          # the other side of maximum/minimum against "away0"
        v = rng.uniform(-0.3, 0.3, n)
    elif kind == "log1p":
        v = rng.uniform(-0.4, 1.5, n)
    elif kind == "distinct":       # max/min without ties: entries at least ~0.1 apart
        v = rng.permutation(np.linspace(-1.5, 1.5, max(n, 2)))[:n] + rng.uniform(-0.01, 0.01, n)
    elif kind == "clip":           # clip(x, -0.5, 0.5): some entries inside, some clipped
        inside = np.arange(n) < (n + 1) // 2
        mag = np.where(inside, rng.uniform(0.05, 0.4, n), rng.uniform(0.6, 1.5, n))
        v = rng.permutation(sign * mag)
    else:
        raise ValueError(f"unknown input kind {kind!r}")
    return v.reshape(shape)


class _ProbeHit(Exception):
    def __init__(self, shape):
        super().__init__(shape)
        self.shape = shape


class _ShapeProbe:
    """Stands in for `w`: the first product with it reports the other operand's shape."""
    __array_ufunc__ = None          # make ndarray and numpy scalars defer to __rmul__

    def __mul__(self, other):
        raise _ProbeHit(np.shape(other))

    __rmul__ = __mul__


def _probe_weight_shape(f, args, k):
    args = list(args)
    args[k] = _ShapeProbe()
    try:
        f(*args)
    except _ProbeHit as hit:
        return hit.shape
    raise AssertionError(f"{f.__name__} never multiplies by its weight argument")


def build_args(case, dtype=np.float64):
    """The case's arguments: arrays of `dtype`, Python floats, literals, and the weight."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    args, weight_at = [], None
    for k, spec in enumerate(case.specs):
        if isinstance(spec, A):
            args.append(np.asarray(_draw(rng, spec.kind, spec.shape), dtype=dtype))
        elif isinstance(spec, F):
            args.append(float(_draw(rng, spec.kind, ())))
        elif spec is W:
            args.append(None)
            weight_at = k
        else:
            args.append(spec)
    if weight_at is not None:
        shape = _probe_weight_shape(case.f, args, weight_at)
        args[weight_at] = np.asarray(rng.uniform(-2.0, 2.0, shape), dtype=dtype)
    return args


def _snapshot(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_unchanged(before, after):
    for b, a in zip(before, after):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg="srcad modified an input array in place")


def assert_like(g, arg, dtype=np.float64):
    """A gradient has the shape and type of its argument (API.md: `grad`)."""
    if isinstance(arg, np.ndarray):
        assert isinstance(g, np.ndarray), (
            f"gradient for an ndarray argument should be an ndarray, got {type(g).__name__}")
        assert g.shape == arg.shape, f"gradient shape {g.shape}, argument shape {arg.shape}"
        assert g.dtype == dtype, f"gradient dtype {g.dtype}, expected {np.dtype(dtype)}"
    elif isinstance(arg, float):
        assert isinstance(g, float), (
            f"gradient for a Python float argument should be a float, got {type(g).__name__}")
    else:
        raise AssertionError(f"differentiating a {type(arg).__name__} argument")


def _shape_id(spec):
    if isinstance(spec, A):
        return "x".join(map(str, spec.shape)) if spec.shape else "0d"
    if isinstance(spec, F):
        return "float"
    return None


# =============================================================================================
# User functions. Every one ends in `np.sum(<op> * w)`; `w` is never differentiated.
# =============================================================================================

# --- unary elementwise and arithmetic with constants -----------------------------------------

def u_neg(x, w):
    return np.sum(-x * w)


def u_square(x, w):
    return np.sum(x ** 2 * w)


def u_cube_float(x, w):
    return np.sum(x ** 3.0 * w)


def u_pow_half(x, w):
    return np.sum(x ** 0.5 * w)


def u_const_pow(x, w):
    return np.sum(2.5 ** x * w)


def u_reciprocal(x, w):
    return np.sum(1.0 / x * w)


def u_const_minus(x, w):
    return np.sum((3.0 - x) * w)


def u_times_int(x, w):
    return np.sum((x * 2) * w)


def u_plus_const(x, w):
    return np.sum((x + 1.5) * w)


def u_div_const(x, w):
    return np.sum((x / 4.0) * w)


def u_sin(x, w):
    return np.sum(np.sin(x) * w)


def u_cos(x, w):
    return np.sum(np.cos(x) * w)


def u_tan(x, w):
    return np.sum(np.tan(x) * w)


def u_exp(x, w):
    return np.sum(np.exp(x) * w)


def u_log(x, w):
    return np.sum(np.log(x) * w)


def u_log1p(x, w):
    return np.sum(np.log1p(x) * w)


def u_expm1(x, w):
    return np.sum(np.expm1(x) * w)


def u_sqrt(x, w):
    return np.sum(np.sqrt(x) * w)


def u_tanh(x, w):
    return np.sum(np.tanh(x) * w)


def u_arctan(x, w):
    return np.sum(np.arctan(x) * w)


def u_abs(x, w):
    return np.sum(np.abs(x) * w)


def u_sign(x, w):
    return np.sum(np.sign(x) * w)


def u_sign_times_square(x, w):
    return np.sum(np.sign(x) * x ** 2 * w)


def u_maximum_zero(x, w):
    return np.sum(np.maximum(x, 0.0) * w)


def u_minimum_zero(x, w):
    return np.sum(np.minimum(x, 0.0) * w)


def u_where_scale(x, w):
    return np.sum(np.where(x > 0, x, 2 * x) * w)


def u_where_two_exprs(x, w):
    return np.sum(np.where(x > 0.1, np.sin(x), x ** 2) * w)


def u_clip(x, w):
    return np.sum(np.clip(x, -0.5, 0.5) * w)


# --- binary arithmetic (broadcasting) ---------------------------------------------------------

def b_add(x, y, w):
    return np.sum((x + y) * w)


def b_sub(x, y, w):
    return np.sum((x - y) * w)


def b_mul(x, y, w):
    return np.sum((x * y) * w)


def b_div(x, y, w):
    return np.sum((x / y) * w)


def b_pow(x, y, w):
    return np.sum((x ** y) * w)


def b_maximum(x, y, w):
    return np.sum(np.maximum(x, y) * w)


def b_minimum(x, y, w):
    return np.sum(np.minimum(x, y) * w)


# --- reductions: axis and keepdims passed as (non-differentiated) arguments -------------------

def red_sum(x, w, axis, keepdims):
    return np.sum(np.sum(x, axis=axis, keepdims=keepdims) * w)


def red_mean(x, w, axis, keepdims):
    return np.sum(np.mean(x, axis=axis, keepdims=keepdims) * w)


def red_max(x, w, axis, keepdims):
    return np.sum(np.max(x, axis=axis, keepdims=keepdims) * w)


def red_min(x, w, axis, keepdims):
    return np.sum(np.min(x, axis=axis, keepdims=keepdims) * w)


def red_prod(x, w, axis, keepdims):
    return np.sum(np.prod(x, axis=axis, keepdims=keepdims) * w)


# --- reductions written with literal axes, and as methods -------------------------------------

def lit_sum_all(x, w):
    return np.sum(np.sum(x) * w)


def lit_sum_axis0(x, w):
    return np.sum(np.sum(x, axis=0) * w)


def lit_sum_axis1_keep(x, w):
    return np.sum(np.sum(x, axis=1, keepdims=True) * w)


def lit_sum_axes01(x, w):
    return np.sum(np.sum(x, axis=(0, 1)) * w)


def lit_sum_positional_axis(x, w):
    return np.sum(np.sum(x, 0) * w)


def lit_mean_last(x, w):
    return np.sum(np.mean(x, axis=-1) * w)


def lit_max_axis0(x, w):
    return np.sum(np.max(x, axis=0) * w)


def lit_max_positional_axis(x, w):
    return np.sum(np.max(x, -1) * w)


def lit_min_axis1_keep(x, w):
    return np.sum(np.min(x, axis=1, keepdims=True) * w)


def lit_prod_axis1(x, w):
    return np.sum(np.prod(x, axis=1) * w)


def lit_prod_all(x, w):
    return np.sum(np.prod(x) * w)


def meth_sum_all(x, w):
    return np.sum(x.sum() * w)


def meth_sum_axis0(x, w):
    return np.sum(x.sum(axis=0) * w)


def meth_sum_positional(x, w):
    return np.sum(x.sum(1) * w)


def meth_mean_all(x, w):
    return np.sum(x.mean() * w)


def meth_mean_axis1_keep(x, w):
    return np.sum(x.mean(axis=1, keepdims=True) * w)


def meth_max_all(x, w):
    return np.sum(x.max() * w)


def meth_max_axis1(x, w):
    return np.sum(x.max(axis=1) * w)


def meth_min_all(x, w):
    return np.sum(x.min() * w)


def meth_min_axis0(x, w):
    return np.sum(x.min(axis=0) * w)


def meth_prod_all(x, w):
    return np.sum(x.prod() * w)


def meth_prod_axis0(x, w):
    return np.sum(x.prod(axis=0) * w)


# --- linear algebra ---------------------------------------------------------------------------

def la_dot(a, b, w):
    return np.sum(np.dot(a, b) * w)


def la_matmul(a, b, w):
    return np.sum(np.matmul(a, b) * w)


def la_at(a, b, w):
    return np.sum((a @ b) * w)


def la_gram(x, w):
    return np.sum((x.T @ x) * w)


def la_dot_self(x, w):
    return np.sum(np.dot(x, x) * w)


# --- shapes: transpose, reshape, squeeze, expand_dims, concatenate, stack ---------------------

def sh_transpose(x, w):
    return np.sum(np.transpose(x) * w)


def sh_dot_T(x, w):
    return np.sum(x.T * w)


def sh_transpose_axes(x, w):
    return np.sum(np.transpose(x, (2, 0, 1)) * w)


def sh_reshape_args(x, w):
    return np.sum(x.reshape(3, 2) * w)


def sh_reshape_tuple(x, w):
    return np.sum(x.reshape((3, 2)) * w)


def sh_reshape_flat(x, w):
    return np.sum(x.reshape(-1) * w)


def sh_np_reshape(x, w):
    return np.sum(np.reshape(x, (3, 2)) * w)


def sh_np_reshape_column(x, w):
    return np.sum(np.reshape(x, (-1, 1)) * w)


def sh_squeeze(x, w):
    return np.sum(np.squeeze(x) * w)


def sh_squeeze_axis(x, w):
    return np.sum(np.squeeze(x, axis=1) * w)


def sh_expand_dims_0(x, w):
    return np.sum(np.expand_dims(x, 0) * w)


def sh_expand_dims_last(x, w):
    return np.sum(np.expand_dims(x, axis=-1) * w)


def sh_concat_axis0(a, b, w):
    return np.sum(np.concatenate([a, b], axis=0) * w)


def sh_concat_axis1(a, b, w):
    return np.sum(np.concatenate((b, a), axis=1) * w)


def sh_concat_default(a, b, w):
    return np.sum(np.concatenate([a, np.sin(b)]) * w)


def sh_concat_same(x, w):
    return np.sum(np.concatenate([x, 2.0 * x]) * w)


def sh_stack_axis0(a, b, w):
    return np.sum(np.stack([a, b], axis=0) * w)


def sh_stack_axis1(a, b, w):
    return np.sum(np.stack([a, b], axis=1) * w)


def sh_stack_same(x, w):
    return np.sum(np.stack((x, x * x)) * w)


# --- scipy.special.logsumexp ------------------------------------------------------------------

def lse_all(x, w):
    return np.sum(logsumexp(x) * w)


def lse_axis1(x, w):
    return np.sum(logsumexp(x, axis=1) * w)


def lse_axis0_keepdims(x, w):
    return np.sum(logsumexp(x, axis=0, keepdims=True) * w)


def lse_module_attribute(x, w):
    return np.sum(scipy.special.logsumexp(x, axis=-1) * w)


# --- integers, booleans and shapes are constants ----------------------------------------------

def int_shape_entry(x, w):
    n = x.shape[0]
    return np.sum(x * w) * n


def int_count_positive(x, w):
    return (x > 0).sum() * np.sum(x * w)


def int_len(x, w):
    return np.sum(np.sin(x) * w) / len(x)


def int_size_and_ndim(x, w):
    return np.sum(x * w) * x.size + x.ndim


def int_bool_mask_times(x, w):
    m = x > 0
    return np.sum(m * x * w)


def int_np_count(x, w):
    k = np.sum(x > 0.0)
    return np.sum(np.sin(x) * w) * k


def int_shape_unpack(x, w):
    n, m = x.shape
    return np.sum(x * w) * (n + 2 * m)


def int_float_of_shape(x, w):
    return np.sum(x * w) * float(x.shape[1])


# --- ties (checked against values computed by hand) -------------------------------------------

def tie_max(x):
    return np.max(x)


def tie_min(x):
    return np.min(x)


def tie_max_method(x):
    return x.max()


def tie_max_axis1(x, w):
    return np.sum(np.max(x, axis=1) * w)


def tie_max_axis0(x, w):
    return np.sum(np.max(x, axis=0) * w)


def tie_min_axis1_keepdims(x, w):
    return np.sum(np.min(x, axis=1, keepdims=True) * w)


def tie_maximum(x, y, w):
    return np.sum(np.maximum(x, y) * w)


def tie_minimum(x, y, w):
    return np.sum(np.minimum(x, y) * w)


def tie_maximum_self(x, w):
    return np.sum(np.maximum(x, x) * w)


def tie_maximum_const(x, w):
    return np.sum(np.maximum(x, 2.0) * w)


def tie_minimum_const(x, w):
    return np.sum(np.minimum(x, 2.0) * w)


# =============================================================================================
# Case tables
# =============================================================================================

CASES = []


def add(name, f, specs, wrt=(0,)):
    CASES.append(Case(name, f, tuple(specs), tuple(wrt)))


UNARY = [
    (u_neg, "normal"), (u_square, "normal"), (u_cube_float, "normal"), (u_pow_half, "pos"),
    (u_const_pow, "normal"), (u_reciprocal, "away0"), (u_const_minus, "normal"),
    (u_times_int, "normal"), (u_plus_const, "normal"), (u_div_const, "normal"),
    (u_sin, "normal"), (u_cos, "normal"), (u_tan, "unit"), (u_exp, "normal"), (u_log, "pos"),
    (u_log1p, "log1p"), (u_expm1, "normal"), (u_sqrt, "pos"), (u_tanh, "normal"),
    (u_arctan, "normal"), (u_abs, "away0"), (u_sign, "away0"),
    (u_sign_times_square, "away0"), (u_maximum_zero, "away0"), (u_minimum_zero, "away0"),
    (u_where_scale, "away0"), (u_where_two_exprs, "away0"), (u_clip, "clip"),
]
for _f, _kind in UNARY:
    for _shape in [(3,), (2, 3)]:
        add(f"{_f.__name__[2:]}-{_shape_id(A(_shape))}", _f, [A(_shape, _kind), W])

# (left kind, right kind) per binary operation: denominators away from 0, positive bases,
# maximum/minimum operands at least 0.1 apart.
BINARY = [
    (b_add, "normal", "normal"), (b_sub, "normal", "normal"), (b_mul, "normal", "normal"),
    (b_div, "normal", "away0"), (b_pow, "pos", "normal"),
    (b_maximum, "away0", "small"), (b_minimum, "away0", "small"),
]
# () is a 0-d array; None is a Python float.
BROADCAST_PAIRS = [
    ((3,), (3,)), ((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
    ((), (2, 3)), ((2, 3), ()), (None, (2, 3)), ((2, 3), None),
]


def _arg(shape, kind):
    return F(kind) if shape is None else A(shape, kind)


for _f, _kx, _ky in BINARY:
    for _sx, _sy in BROADCAST_PAIRS:
        _specs = [_arg(_sx, _kx), _arg(_sy, _ky), W]
        add(f"{_f.__name__[2:]}-{_shape_id(_specs[0])}-{_shape_id(_specs[1])}", _f, _specs,
            wrt=(0, 1))

REDUCTIONS = [(red_sum, "normal"), (red_mean, "normal"), (red_max, "distinct"),
              (red_min, "distinct"), (red_prod, "nonzero")]
REDUCTION_AXES = (
    [((2, 3), axis) for axis in [None, 0, 1, -1, (0, 1)]]
    + [((3,), axis) for axis in [None, 0, -1]]
    + [((2, 3, 4), axis) for axis in [1, (0, 2)]]
)
for _f, _kind in REDUCTIONS:
    for _shape, _axis in REDUCTION_AXES:
        for _keep in (False, True):
            add(f"{_f.__name__[4:]}-{_shape_id(A(_shape))}-axis={_axis}-keepdims={_keep}",
                _f, [A(_shape, _kind), W, _axis, _keep])

# prod where one entry is exactly zero: the derivative is the product of the other entries
# (a rule computing prod / x would give nan here).
CASES.append(Case("prod-with-a-zero", red_prod, (A((2, 3), "nonzero"), W, 1, False)))

LITERAL_REDUCTIONS = [
    (lit_sum_all, "normal"), (lit_sum_axis0, "normal"), (lit_sum_axis1_keep, "normal"),
    (lit_sum_axes01, "normal"), (lit_sum_positional_axis, "normal"), (lit_mean_last, "normal"),
    (lit_max_axis0, "distinct"), (lit_max_positional_axis, "distinct"),
    (lit_min_axis1_keep, "distinct"), (lit_prod_axis1, "nonzero"), (lit_prod_all, "nonzero"),
    (meth_sum_all, "normal"), (meth_sum_axis0, "normal"), (meth_sum_positional, "normal"),
    (meth_mean_all, "normal"), (meth_mean_axis1_keep, "normal"), (meth_max_all, "distinct"),
    (meth_max_axis1, "distinct"), (meth_min_all, "distinct"), (meth_min_axis0, "distinct"),
    (meth_prod_all, "nonzero"), (meth_prod_axis0, "nonzero"),
]
for _f, _kind in LITERAL_REDUCTIONS:
    add(_f.__name__, _f, [A((2, 3), _kind), W])
for _f in [lit_sum_all, lit_mean_last, meth_max_all, meth_sum_all]:
    add(f"{_f.__name__}-3", _f, [A((3,), "distinct"), W])

LINALG_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]
for _f in [la_dot, la_matmul, la_at]:
    for _sa, _sb in LINALG_SHAPES:
        add(f"{_f.__name__[3:]}-{_shape_id(A(_sa))}-{_shape_id(A(_sb))}", _f,
            [A(_sa), A(_sb), W], wrt=(0, 1))
add("gram-2x3", la_gram, [A((2, 3)), W])
add("dot_self-3", la_dot_self, [A((3,)), W])

add("transpose", sh_transpose, [A((2, 3)), W])
add("dot_T", sh_dot_T, [A((2, 3)), W])
add("transpose_axes", sh_transpose_axes, [A((2, 3, 4)), W])
add("reshape_args", sh_reshape_args, [A((2, 3)), W])
add("reshape_tuple", sh_reshape_tuple, [A((6,)), W])
add("reshape_flat", sh_reshape_flat, [A((2, 3)), W])
add("np_reshape", sh_np_reshape, [A((2, 3)), W])
add("np_reshape_column", sh_np_reshape_column, [A((2, 3)), W])
add("squeeze", sh_squeeze, [A((1, 3)), W])
add("squeeze_axis", sh_squeeze_axis, [A((2, 1)), W])
add("expand_dims_0-3", sh_expand_dims_0, [A((3,)), W])
add("expand_dims_last-2x3", sh_expand_dims_last, [A((2, 3)), W])
add("concat_axis0", sh_concat_axis0, [A((2, 3)), A((1, 3)), W], wrt=(0, 1))
add("concat_axis1", sh_concat_axis1, [A((2, 3)), A((2, 2)), W], wrt=(0, 1))
add("concat_default", sh_concat_default, [A((3,)), A((2,)), W], wrt=(0, 1))
add("concat_same", sh_concat_same, [A((3,)), W])
add("stack_axis0", sh_stack_axis0, [A((3,)), A((3,)), W], wrt=(0, 1))
add("stack_axis1", sh_stack_axis1, [A((2, 3)), A((2, 3)), W], wrt=(0, 1))
add("stack_same", sh_stack_same, [A((2, 3)), W])

add("lse_all-3", lse_all, [A((3,)), W])
add("lse_all-2x3", lse_all, [A((2, 3)), W])
add("lse_axis1", lse_axis1, [A((2, 3)), W])
add("lse_axis0_keepdims", lse_axis0_keepdims, [A((2, 3)), W])
add("lse_module_attribute", lse_module_attribute, [A((2, 3)), W])

add("int_shape_entry", int_shape_entry, [A((2, 3)), W])
add("int_count_positive", int_count_positive, [A((2, 3), "away0"), W])
add("int_len", int_len, [A((2, 3)), W])
add("int_size_and_ndim", int_size_and_ndim, [A((2, 3)), W])
add("int_bool_mask_times", int_bool_mask_times, [A((2, 3), "away0"), W])
add("int_np_count", int_np_count, [A((2, 3), "away0"), W])
add("int_shape_unpack", int_shape_unpack, [A((2, 3)), W])
add("int_float_of_shape", int_float_of_shape, [A((2, 3)), W])

CASE_BY_NAME = {c.name: c for c in CASES}
assert len(CASE_BY_NAME) == len(CASES), "case names must be unique"


def _special_args(case):
    """Arguments of `case`, with the fixed edits that some cases need."""
    args = build_args(case)
    if case.name == "prod-with-a-zero":
        args[0][0, 1] = 0.0
    return args


# =============================================================================================
# Tests
# =============================================================================================

GRAD_PARAMS = [pytest.param(c, k, id=f"{c.name}-wrt{k}") for c in CASES for k in c.wrt]


@pytest.mark.parametrize("case, k", GRAD_PARAMS)
def test_grad_matches_fd(case, k):
    args = _special_args(case)
    before = _snapshot(args)
    g = srcad.grad(case.f, wrt=k)(*args)
    assert_unchanged(before, args)
    assert_like(g, args[k])
    assert_grad_close(case.f, args, g, wrt=k)


TUPLE_WRT = [c for c in CASES if c.wrt == (0, 1)]


@pytest.mark.parametrize("case", TUPLE_WRT, ids=[c.name for c in TUPLE_WRT])
def test_grad_tuple_wrt(case):
    args = _special_args(case)
    gs = srcad.grad(case.f, wrt=(0, 1))(*args)
    assert isinstance(gs, tuple) and len(gs) == 2, f"wrt=(0, 1) should give a 2-tuple, got {gs!r}"
    for k, g in zip((0, 1), gs):
        assert_like(g, args[k])
        assert_grad_close(case.f, args, g, wrt=k)


FLOAT32_CASES = [
    "sin-2x3", "exp-3", "tanh-2x3", "log-2x3", "sqrt-3", "abs-2x3", "where_scale-2x3",
    "mul-3-2x3", "div-2x3-3", "pow-2x1-1x3", "mul-float-2x3", "maximum-2x3-3",
    "matmul-2x3-3x4", "dot-3-3", "at-2x3-3",
    "sum-2x3-axis=1-keepdims=False", "mean-2x3-axis=None-keepdims=True",
    "max-2x3-axis=0-keepdims=False", "prod-3-axis=None-keepdims=False",
    "lse_axis1", "transpose", "concat_axis1", "stack_axis1", "int_shape_entry",
]


@pytest.mark.parametrize("name", FLOAT32_CASES)
def test_grad_float32(name):
    case = CASE_BY_NAME[name]
    args = build_args(case, dtype=np.float32)
    args64 = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
    for k in case.wrt:
        g = srcad.grad(case.f, wrt=k)(*args)
        if isinstance(args[k], np.ndarray):
            assert_like(g, args[k], dtype=np.float32)
        else:
            assert_like(g, args[k])
        # The reference is FD of the same function with every array in float64; float32
        # arithmetic earns a loose tolerance.
        assert_grad_close(case.f, args64, g, wrt=k, rtol=2e-3, atol=2e-4)


def _a(*values):
    return np.array(values, dtype=np.float64)


# (function, arguments, wrt, expected gradient): ties split the gradient evenly (API.md).
TIE_CASES = [
    pytest.param(tie_max, [_a(1, 3, 3, 2)], 0, _a(0, .5, .5, 0), id="max-two-way"),
    pytest.param(tie_max, [_a(3, 1, 3, 3)], 0, _a(1, 0, 1, 1) / 3, id="max-three-way"),
    pytest.param(tie_min, [_a(2, 1, 4, 1)], 0, _a(0, .5, 0, .5), id="min-two-way"),
    pytest.param(tie_max, [np.array([[1., 4.], [4., 0.]])], 0,
                 np.array([[0., .5], [.5, 0.]]), id="max-2d-all"),
    pytest.param(tie_max_method, [_a(2, 2, 1)], 0, _a(.5, .5, 0), id="max-method"),
    pytest.param(tie_max_axis1, [np.array([[1., 3., 3.], [2., 2., 0.]]), _a(1, 2)], 0,
                 np.array([[0., .5, .5], [1., 1., 0.]]), id="max-axis1"),
    pytest.param(tie_max_axis0, [np.array([[1., 3., 0.], [1., 2., 0.]]), _a(1, 2, 3)], 0,
                 np.array([[.5, 2., 1.5], [.5, 0., 1.5]]), id="max-axis0"),
    pytest.param(tie_min_axis1_keepdims,
                 [np.array([[5., 1., 1.], [0., 2., 0.]]), np.array([[2.], [4.]])], 0,
                 np.array([[0., 1., 1.], [2., 0., 2.]]), id="min-axis1-keepdims"),
    pytest.param(tie_maximum, [_a(1, 2, 3), _a(1, 5, 0), _a(1, 2, 3)], 0, _a(.5, 0, 3),
                 id="maximum-wrt-x"),
    pytest.param(tie_maximum, [_a(1, 2, 3), _a(1, 5, 0), _a(1, 2, 3)], 1, _a(.5, 2, 0),
                 id="maximum-wrt-y"),
    pytest.param(tie_minimum, [_a(1, 2, 3), _a(1, 5, 0), _a(1, 2, 3)], 0, _a(.5, 2, 0),
                 id="minimum-wrt-x"),
    pytest.param(tie_minimum, [_a(1, 2, 3), _a(1, 5, 0), _a(1, 2, 3)], 1, _a(.5, 0, 3),
                 id="minimum-wrt-y"),
    pytest.param(tie_maximum, [_a(1, 2), _a(1, 2), _a(3, 5)], 1, _a(1.5, 2.5),
                 id="maximum-all-equal"),
    pytest.param(tie_maximum_self, [_a(1, -2, 3), _a(1, 2, 3)], 0, _a(1, 2, 3),
                 id="maximum-of-x-and-x"),
    pytest.param(tie_maximum_const, [_a(1, 2, 3), _a(1, 2, 3)], 0, _a(0, 1, 3),
                 id="maximum-against-constant"),
    pytest.param(tie_minimum_const, [_a(1, 2, 3), _a(1, 2, 3)], 0, _a(1, 1, 0),
                 id="minimum-against-constant"),
]


@pytest.mark.parametrize("f, args, k, expected", TIE_CASES)
def test_tie_split(f, args, k, expected):
    g = srcad.grad(f, wrt=k)(*args)
    assert_like(g, args[k])
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)


# Which modules emitted code may import (API.md: numpy, scipy and srcad.runtime only).
def _assert_standalone_imports(src):
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            mods = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module == "srcad":
                mods = [f"srcad.{alias.name}" for alias in node.names]
            else:
                mods = [node.module or ""]
        else:
            continue
        for mod in mods:
            ok = (mod.split(".")[0] in ("numpy", "scipy", "__future__")
                  or mod == "srcad.runtime" or mod.startswith("srcad.runtime."))
            assert ok, f"emitted code imports {mod!r}; only numpy, scipy, srcad.runtime allowed"


EMIT_CASES = [
    ("sin-2x3", 0), ("mul-3-2x3", 0), ("mul-3-2x3", 1), ("mul-3-2x3", (0, 1)),
    ("div-2x1-1x3", 1), ("matmul-2x3-3", 0), ("at-3-3x4", 1), ("sum-2x3-axis=1-keepdims=True", 0),
    ("max-2x3-axis=0-keepdims=False", 0), ("lse_axis1", 0), ("concat_axis1", 1),
    ("where_scale-2x3", 0), ("int_shape_entry", 0),
]


@pytest.mark.parametrize("name, wrt", EMIT_CASES, ids=[f"{n}-wrt{w}" for n, w in EMIT_CASES])
def test_emit_standalone(name, wrt):
    case = CASE_BY_NAME[name]
    args = build_args(case)
    src = srcad.emit(case.f, mode="reverse", wrt=wrt)
    assert isinstance(src, str)
    _assert_standalone_imports(src)
    ns = {}
    exec(compile(src, "<emitted>", "exec"), ns)
    fname = case.f.__name__ + "_vjp"
    assert fname in ns, f"emitted module does not define {fname}:\n{src}"
    vjp = ns[fname]

    # Signature: f's parameters, then one seed `<out>_bar` defaulting to 1.0.
    params = list(inspect.signature(vjp).parameters.values())
    user = list(inspect.signature(case.f).parameters)
    assert [p.name for p in params[:len(user)]] == user, f"{fname} parameters: {params}"
    assert len(params) == len(user) + 1, f"{fname} parameters: {params}"
    seed = params[-1]
    assert seed.name.endswith("_bar") and seed.default == 1.0, f"seed parameter: {seed}"

    ks = wrt if isinstance(wrt, tuple) else (wrt,)
    got = vjp(*args)
    got2 = vjp(*args, **{seed.name: 2.0})
    if not isinstance(wrt, tuple):
        got, got2 = (got,), (got2,)
    assert len(got) == len(ks)
    for k, g, g2 in zip(ks, got, got2):
        assert_like(g, args[k])
        assert_grad_close(case.f, args, g, wrt=k)
        np.testing.assert_allclose(grad_values(g2), 2.0 * grad_values(g), rtol=1e-12, atol=0)


@pytest.mark.parametrize("case, k", GRAD_PARAMS)
def test_reference_is_smooth(case, k):
    """No srcad here: the table's inputs are away from kinks, so FD is a sound reference.

    Central differences with two step sizes three decades apart must agree; a kink or a pole
    within reach of the larger step would make them differ.
    """
    args = _special_args(case)
    small = numerical_grad(case.f, args, k, eps=1e-6)
    large = numerical_grad(case.f, args, k, eps=1e-3)
    np.testing.assert_allclose(small, large, rtol=1e-4, atol=1e-5)
