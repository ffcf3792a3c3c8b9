"""Kinds (srcad/transform/kinds/): the abstract signature of a call, the kind inference over a
normalized function, and what the adjoint does with them (checked against finite differences)."""
import ast
import re

import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from srcad import cache
from srcad.frontend.analyze import Analysis
from srcad.transform.kinds import UNKNOWN, Kind, Kinds, param_kinds, signature
from srcad.transform.pipeline import prepare

from fdcheck import assert_grad_close


def _kinds(f, *args):
    parsed, fn, normalizer = prepare(f)
    an = Analysis(fn, parsed, normalizer.locals, [fn.args.args[0].arg])
    k = Kinds(fn, an, param_kinds(f, signature(args)) if args else {})
    out = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
            out.setdefault(st.targets[0].id, []).append(k.result(st))
    return out, k


# ---- the signature ------------------------------------------------------------------------------
def test_signature_separates_kinds():
    x = np.zeros(3)
    keys = {signature((a,)) for a in (1.5, 2, True, x, x.astype(np.float32), np.zeros((2, 2)),
                                       np.float64(1.0), sp.csr_array(np.eye(2)), sp.csc_matrix(np.eye(2)),
                                       [x], (x,), {"a": x})}
    assert len(keys) == 12
    assert signature((x,)) == signature((np.ones(7),))      # the shape itself is not in the key
    assert signature((x,), {"b": 1.0}) != signature((x,), {"b": x})


def test_param_kinds_from_signature_and_defaults():
    def f(x, s, A, n=3):
        return x
    k = param_kinds(f, signature((np.zeros(2), 1.0, sp.csr_array(np.eye(2)))))
    assert k["x"] == Kind("array", "d", 1, ("dims", 2))      # the signature's class of its one axis
    assert k["s"] == Kind("py", "d", 0, ())
    assert k["A"].cat == "sparse" and k["A"].shape is None
    assert k["n"] == Kind("py", "l", 0, ())
    assert param_kinds(f, None) == {}


# ---- the inference ------------------------------------------------------------------------------
def f_ops(x, M):
    a = x * 2.0
    b = np.sin(a)
    c = np.sum(b)
    d = x[0]
    e = M @ x
    f = e + b
    g = c * d
    return g + np.mean(f)


def test_inference_over_ops():
    k, _ = _kinds(f_ops, np.zeros(3), np.zeros((3, 3)))
    x = ("dims", 2)         # x's axis, M's two: one class (all of size 3)
    assert k["a"] == [Kind("array", "d", 1, x)]
    assert k["b"] == [Kind("array", "d", 1, x)]
    assert k["c"][0].rank0 and k["c"][0].dtype == "d"
    assert k["d"][0] == Kind("np", "d", 0, ())
    assert k["e"][0].ndim == 1 and k["e"][0].shape == x        # (3, 3) @ (3,): proven x's shape
    assert k["f"][0].shape == x
    assert k["g"][0].rank0
    k, _ = _kinds(f_ops, np.zeros(3), np.zeros((4, 3)))      # M @ x of another length than x
    assert k["e"][0].shape == ("dims", 3)
    assert k["f"][0].ndim == 1 and k["f"][0].shape not in (None, x)      # a broadcast of two shapes
    assert k["f"][0].dimensions is None      # (a broadcast of unequal classes: numpy raises unless one is 1)


def test_without_signature_only_literals_are_known():
    k, _ = _kinds(f_ops)
    assert k["a"] == [UNKNOWN] and k["e"] == [UNKNOWN]
    assert k["c"][0].rank0 and k["c"][0].dtype is None     # np.sum over every axis: a number, of some dtype


def f_loop(x, n):
    s = 0.0
    y = x
    for i in range(n):
        y = y * 0.5 + np.cos(y)
        s = s + y[i]
        if s > 1.0:
            y = y[1:]
    return s


def test_loops_join_to_a_fixed_point():
    k, kinds = _kinds(f_loop, np.zeros(4), 3)
    # y keeps its rank but, cut by y[1:] in some iterations, not a fixed shape
    ys = k["y"]
    assert all(v.ndim == 1 for v in ys)
    assert any(v.shape is None for v in ys)
    assert all(v.rank0 for v in k["s"])       # Python float joined with NumPy scalars: rank 0


def f_rank_changes(x, n):
    for i in range(n):
        x = np.sum(x)
    return x


def test_a_name_whose_rank_changes_in_a_loop_is_unknown():
    k, kinds = _kinds(f_rank_changes, np.zeros(4), 3)
    assert k["x"][0].rank0
    summing = [sid for sid, name, kind in kinds.names() if name == "x"]
    assert any(kinds._before[sid]["x"].ndim is None for sid in summing)     # array or number: unknown


# ---- one module per signature, each gradient right ----------------------------------------------
def f_mixed(x, c):
    y = x * c + np.sin(x)
    return np.sum(y * y) + np.mean(x)


@pytest.mark.parametrize("x", [1.3, np.array([0.3, -0.7, 1.1]), np.array([0.3, -0.7], dtype=np.float32),
                               np.array([[0.3, 1.0], [-0.7, 0.2]]), np.float64(0.4)])
def test_each_signature_its_module_and_a_right_gradient(x):
    g = srcad.grad(f_mixed)(x, 0.7)
    assert isinstance(g, float) if type(x) is float else isinstance(g, (np.ndarray, np.generic))
    assert np.shape(g) == np.shape(x)
    tol = 2e-3 if getattr(x, "dtype", None) == np.float32 else 1e-5
    assert_grad_close(f_mixed, (np.asarray(x, dtype=np.float64) if np.ndim(x) else float(x), 0.7), g,
                      rtol=tol, atol=tol)


def test_signatures_get_separate_modules():
    cache.clear_memory()
    for x in (1.3, np.ones(3), np.ones(3, np.float32), np.ones((2, 2)), sp.csr_array(np.eye(3))):
        srcad.grad(f_sparse_ok)(x)
    keys = {k[5] for k in cache._MODULES if k[0] is f_sparse_ok}
    assert len(keys) == 5


def f_sparse_ok(A):
    return np.sum(A * 2.0)


def test_sparse_gradient_right():
    A = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    g = srcad.grad(f_sparse_ok)(A)
    assert_grad_close(f_sparse_ok, (A,), g)


def f_broadcasting(x, y):
    return np.sum(x * y + x)


def test_broadcasting_keeps_unbroadcast():
    x, y = np.array([[1.0], [2.0]]), np.array([0.5, -1.0, 3.0])
    text = srcad.emit(f_broadcasting, args=(x, y))
    assert "rt.unbroadcast" in text
    g = srcad.grad(f_broadcasting)(x, y)
    assert_grad_close(f_broadcasting, (x, y), g)
    g = srcad.grad(f_broadcasting, wrt=1)(x, y)
    assert_grad_close(f_broadcasting, (x, y), g, wrt=1)


def f_size_one(x):
    return x * 3.0


def test_size_one_array_output_gets_a_seed_of_its_shape():
    x = np.array([0.5])
    g = srcad.grad(f_size_one)(x)
    assert g.shape == (1,)
    assert_grad_close(f_size_one, (x,), g)


# ---- the emitted scalar loop --------------------------------------------------------------------
def scalar_loop(x, n=200):
    s = 0.0
    for i in range(n):
        x = x * 0.99 + np.sin(x) * 0.01
        s += x[0] * x[1]
    return s


def _loop_body(text, header):
    """The lines of the first loop whose header contains `header`."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.strip().startswith("for ") and header in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def test_scalar_loop_adjoint_is_lean():
    x = np.array([0.5, -0.3, 0.8])
    text = srcad.emit(scalar_loop, args=(x,))
    assert "rt.unbroadcast" not in text
    primal = _loop_body(text, "in range(n)")
    appends = [line for line in primal if "tape.append(" in line]
    assert len(appends) <= 3, text
    g = srcad.grad(scalar_loop)(x)
    assert_grad_close(scalar_loop, (x,), g, rtol=1e-6, atol=1e-7)


def test_sum_of_known_array_adjoint_is_plain_numpy():
    def tiny(x):
        return np.sum(x * x)
    x = np.array([0.3, -1.2, 2.0])
    text = srcad.emit(tiny, args=(x,))
    # the sum's cotangent is its one number, spread by the product with x (reverse/shapes.py)
    assert "sum_vjp" not in text and "x_bar = tiny_bar * x" in text and "unbroadcast" not in text
    assert_grad_close(tiny, (x,), srcad.grad(tiny)(x))


def p_model(w, b, X, y, lam):
    z = X @ w + b
    h = np.tanh(z)
    s = np.zeros_like(h)
    total = 0.0
    for i in range(len(h)):
        if h[i] > 0:
            s[i] = h[i] ** 2
        else:
            s[i] = -h[i]
        total = total + s[i]
    r = h - y
    m = np.max(h)
    lse = m + np.log(np.sum(np.exp(h - m)))
    parts = []
    for j in range(3):
        parts.append(w * j)
    stacked = np.stack(parts)
    extra = np.sum(stacked[1:] ** 2)
    return np.mean(r ** 2) + lam * np.sum(w ** 2) + 0.1 * lse + 0.01 * total + 0.0001 * extra


def _model_args():
    rng = np.random.default_rng(1)
    return rng.normal(size=3), 0.1, rng.normal(size=(6, 3)), rng.normal(size=6), 0.1


def test_list_items_and_item_writes():
    args = _model_args()
    k, _ = _kinds(p_model, *args)
    assert k["stacked"][0] == Kind("array", "d", 2, None, dims=(None, 2))    # rows of w's length
    assert k["extra"][0].rank0 and k["extra"][0].dtype == "d"
    text = srcad.emit(p_model, args=args)
    assert "s_bar[i] = 0.0" in text and "h_bar[i] += " in text and "rt.add_at" not in text
    # a sum's adjoint is its number times 2 * w: nothing taped for the shape of w * j, w * k
    assert "w_bar = sum_w_sq_bar * 2 * w" in text and "np.copy" not in text
    assert_grad_close(p_model, args, srcad.grad(p_model)(*args))


def p_list_alias(x):
    parts = [x * 2.0]
    other = parts
    other.append(x * 3.0)
    return np.sum(np.stack(other) ** 2)


def test_a_list_with_another_name_has_unknown_items():
    x = np.array([0.3, -0.5])
    k, _ = _kinds(p_list_alias, x)
    assert k["parts"][0].item == Kind("array", "d", 1, ("dims", 2))
    assert all(v.item is None for v in k["other"])
    assert_grad_close(p_list_alias, (x,), srcad.grad(p_list_alias)(x))


@pytest.mark.parametrize("f, args", [(scalar_loop, (np.array([0.5, -0.3, 0.8]), 20)),
                                     (p_model, _model_args()), (f_mixed, (np.array([0.4, -0.8, 0.25]), 0.7))])
def test_specialised_adjoints_transform_again(f, args):
    """Forward mode over the specialised adjoint (in-place buffers included): a Hessian-vector
    product, against central differences of the gradient."""
    mod = cache.module(f, "reverse", 0, (), "plain", signature(args))
    adjoint = getattr(mod, mod.srcad_main)
    x = args[0]
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    _, hv = srcad.jvp(adjoint, args, (v,) + (None,) * (len(args) - 1))
    eps = 1e-5
    g = srcad.grad(f)
    fd = (g(x + eps * v, *args[1:]) - g(x - eps * v, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)


def test_emitted_forms_transform_again():
    """Forward mode over the specialised adjoint (a Hessian-vector product by hand)."""
    x = np.array([0.5, -0.3, 0.8])
    ns = {}
    text = srcad.emit(f_mixed, args=(x, 0.7))
    assert "np.full(x.shape" in text
    path = cache.module(f_mixed, "reverse", 0, (), "plain", signature((x, 0.7)))
    adjoint = getattr(path, path.srcad_main)
    v = np.array([1.0, 0.5, -2.0])
    _, hv = srcad.jvp(adjoint, (x, 0.7), (v, None))
    eps = 1e-5
    fd = (srcad.grad(f_mixed)(x + eps * v, 0.7) - srcad.grad(f_mixed)(x - eps * v, 0.7)) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)
    del ns


# ---- owned cotangent arrays: in-place updates only where nothing else sees them -------------------
def p_branch_reads(x, n=5):
    s = 0.0
    for i in range(n):
        if s > 0.3:
            s = s + x[0] * x[2]
        else:
            s = s + np.sin(x[1])
        x = x * 0.9 + 0.1 * np.cos(x)
    return s


def p_alias(x):
    y = x
    a = y[0] * x[1]
    z = y * a
    return np.sum(z * x) + a


def p_shape_changes(x, n=3):
    s = 0.0
    for i in range(n):
        s = s + x[0] * x[-1]
        x = x[1:] * 1.5
    return s + np.sum(x)


def p_reuse(x):
    a = x * 2.0
    b = a[0]
    c = a * b
    d = c[1] + a[2]
    return np.sum(c) * d


def p_while(x):
    k = 0
    t = 0.0
    while k < 4:
        t = t + x[k % 3] * x[(k + 1) % 3]
        x = np.tanh(x) + x
        k += 1
    return t


def p_nested(x, m=3):
    s = 0.0
    for i in range(m):
        for j in range(m):
            s = s + x[j] * x[i] * 0.5
        x = np.sin(x) + x * 0.5
    return s


def p_maybe_unbound(x, n=0):
    s = np.sum(x * x)
    for i in range(n):
        y = x * 2.0
        s = s + y[0]
    return s


@pytest.mark.parametrize("f", [p_branch_reads, p_alias, p_shape_changes, p_reuse, p_while, p_nested, p_maybe_unbound])
def test_owned_cotangents_give_right_gradients(f):
    x = np.array([0.4, -0.8, 0.25])
    g = srcad.grad(f)(x)
    assert_grad_close(f, (x,), g, rtol=1e-6, atol=1e-7)
    # the plain adjoint with a seed other than 1 (vjp) scales the same gradient
    _, pullback = srcad.vjp(f, x, *f.__defaults__ or ())
    np.testing.assert_allclose(pullback(2.5)[0], 2.5 * g, rtol=1e-12, atol=1e-12)


def test_scalar_loop_reads_go_into_an_owned_buffer():
    x = np.array([0.5, -0.3, 0.8])
    text = srcad.emit(scalar_loop, args=(x,))
    assert "rt.add_at" not in text and "rt.add(" not in text
    assert "x_bar = np.zeros(x.shape)" in text and "x_bar[0] += " in text
    assert "rt." not in text.split("def scalar_loop_vjp")[1]      # plain NumPy and list operations only
