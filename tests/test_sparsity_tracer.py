"""The vectorised sparsity tracer (srcad/sparse_trace): the pattern it finds through the generated
tangent code equals the true pattern of the Jacobian (central finite differences of the plain
function, at a generic point), the exact per-entry sweep is used for an operation it has no rule
for, and the patterns kept per derived function are detected again when the index arrays change."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
import srcad.sparsity as S
from srcad.api.units import _call_jvp, _module
from srcad.sparse_trace import Trace, TraceUnsupported, trace_pattern

RNG = np.random.default_rng(7)
A34 = RNG.standard_normal((3, 4))
A33 = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
C3 = RNG.standard_normal((5, 3))
IDX = np.array([3, 0, 0, 5, 2, 7])


def fd_jacobian(f, x, rest, eps=1e-6):
    """Central differences in float64: a dense (y.size, x.size) Jacobian."""
    y0 = np.asarray(f(x, *rest), dtype=float).ravel()
    J = np.zeros((y0.size, x.size))
    for k in range(x.size):
        hi, lo = x.copy().ravel(), x.copy().ravel()
        hi[k] += eps
        lo[k] -= eps
        J[:, k] = (np.ravel(f(hi.reshape(x.shape), *rest)) - np.ravel(f(lo.reshape(x.shape), *rest))) / (2 * eps)
    return J


# -- the corpus: small functions of one array, each written as a user writes NumPy ------------------
def elementwise(x):
    return np.sin(x) * np.asarray(x) + x / 3.0 - np.exp(x) * 2.0


def broadcasting(x):
    return x * x[:, :1] + x[0] - x[:, 2:3] / 5.0


def reductions(x):
    return np.concatenate([np.sum(x * x, axis=0), np.mean(x, axis=1), [np.sum(x)]])


def keepdims(x):
    return np.mean(x, axis=1, keepdims=True) * x + np.sum(x, axis=0, keepdims=True)


def running(x):
    return np.concatenate([np.cumsum(x, axis=1).ravel(), np.diff(x * x, axis=0).ravel()])


def gathers(x, idx):
    v = x.ravel()
    return np.concatenate([v[idx] * v[1], v[::2] ** 2, x[idx[1:3], 1:].ravel(), np.take(v, idx[::-1])])


def masked(x):
    v = x.ravel()
    return v[v > 0] * 3.0


def matmul_plain(x):
    return np.concatenate([(A34 @ x.reshape(4, 3)).ravel(), x.reshape(3, 4)[0] @ A34.T,
                           np.dot(A34, x.reshape(4, 3)[:, 0])])


def matmul_traced(x):
    X = x.reshape(4, 3)
    return (X.T @ X).ravel()


def crosses(x):
    X = x.reshape(4, 3)
    return np.concatenate([np.cross(X[:2], X[2:]).ravel(), np.cross(X, C3[:4]).ravel()])


def where_branch(x):
    return np.where(x > 0, x ** 2, np.sin(x[::-1]))


def joined(x):
    X = x.reshape(3, 4)
    return np.concatenate([np.stack([X[0], X[2] * 2.0], axis=1).ravel(), np.hstack([X[1], X[:, 0]]),
                           np.vstack([X[:1], X[2:]]).ravel()])


def moved(x):
    X = x.reshape(3, 4)
    return np.concatenate([(X.T * 2.0).ravel(), np.swapaxes(X[None], 1, 2).ravel(), np.flip(X, 1).ravel(),
                           np.broadcast_to(X[0], (2, 4)).ravel(), np.expand_dims(X[1], 0).ravel()])


def contractions(x):
    v = x.ravel()
    return np.concatenate([np.outer(v[:3], v[3:6]).ravel(), np.linalg.solve(A33, v[:6].reshape(3, 2)).ravel(),
                           [np.trace(v[:9].reshape(3, 3))]])


def einsums(x):
    X = x.reshape(3, 4)
    return np.concatenate([np.einsum("ij,jk->ik", A34, X.T).ravel(), np.einsum("ij->j", X * X),
                           np.einsum("ij,ik->jk", X, X).ravel(), np.einsum("i,j->ij", X[0], C3[0]).ravel()])


def rodrigues(x):
    """A bundle-adjustment-like rotation of points by per-row angle-axis vectors."""
    X = x.reshape(4, 3)
    rot, pts = X[:2], X[2:]
    theta = np.sqrt(np.sum(rot * rot, axis=1, keepdims=True))
    axis = rot / theta
    return (pts * np.cos(theta) + np.cross(axis, pts) * np.sin(theta)
            + axis * np.sum(axis * pts, axis=1, keepdims=True) * (1.0 - np.cos(theta)))


def loop_write(x):
    v = x.ravel()
    out = np.zeros(v.shape[0] - 1)
    for i in range(v.shape[0] - 1):
        out[i] = v[i] * v[i + 1]
    return out


def from_scalars(x):
    v = x.ravel()
    rot = np.array([[np.cos(v[0]), -np.sin(v[0]), 0.0], [np.sin(v[0]), np.cos(v[0]), 0.0], [v[5], 1.0, v[6]]])
    return np.concatenate([(rot @ C3[0]) * v[1:4], [v[7] * v[8], np.sum(v[9:])]])


CORPUS = [from_scalars, elementwise, broadcasting, reductions, keepdims, running, gathers, masked, matmul_plain,
          matmul_traced, einsums, crosses, where_branch, joined, moved, contractions, rodrigues, loop_write]


def _sweep(f, x, rest):
    mod = _module(f, "forward", 0)
    fn = getattr(mod, mod.srcad_main)
    return lambda v: _call_jvp(fn, (x,) + tuple(rest), [v])


def _dense(rows, cols, m, n):
    P = np.zeros((m, n), bool)
    P[rows, cols] = True
    return P


@pytest.mark.parametrize("f", CORPUS, ids=lambda f: f.__name__)
def test_traced_pattern_is_the_true_pattern(f):
    x = (RNG.uniform(0.5, 1.5, 12) * RNG.choice([-1.0, 1.0], 12)).reshape(3, 4)
    rest = (IDX,) if f is gathers else ()
    y, rows, cols, m, n, method = S.find_pattern(_sweep(f, x, rest), x)
    assert method == "traced"
    true = np.abs(fd_jacobian(f, x, rest)) > 1e-7
    assert np.array_equal(_dense(rows, cols, m, n), true)
    np.testing.assert_array_equal(np.ravel(y), np.ravel(f(x, *rest)))


@pytest.mark.parametrize("f", [gathers, matmul_traced, where_branch])
def test_sparse_jacobian_values_match_finite_differences(f):
    x = (RNG.uniform(0.5, 1.5, 12) * RNG.choice([-1.0, 1.0], 12)).reshape(3, 4)
    rest = (IDX,) if f is gathers else ()
    J = srcad.jacobian(f, sparsity="auto")(x, *rest)
    assert sp.issparse(J)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(f, x, rest), rtol=1e-6, atol=1e-8)


def pad_tail(x):
    return np.pad(x[:3] * x[1:4], (0, 2)) + x[:5]


def test_an_operation_without_a_rule_falls_back_to_the_exact_sweep():
    x = RNG.uniform(0.5, 1.5, 6)
    with pytest.raises(TraceUnsupported, match="np.pad"):
        trace_pattern(_sweep(pad_tail, x, ()), x)
    y, rows, cols, m, n, method = S.find_pattern(_sweep(pad_tail, x, ()), x)
    assert method == "exact"
    assert np.array_equal(_dense(rows, cols, m, n), np.abs(fd_jacobian(pad_tail, x, ())) > 1e-7)
    J = srcad.jacobian(pad_tail, sparsity="auto")(x)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(pad_tail, x, ()), rtol=1e-6, atol=1e-8)


def test_outer_products_of_traces():
    """np.multiply.outer (srcad.runtime.outer's spelling): entry (i, j) reads entry i of a traced
    left operand and entry j of a traced right one."""
    eye = S.sp.csr_array(np.eye(5, dtype=bool))
    a, b = Trace((2,), eye[:2]), Trace((3,), eye[2:])
    got = np.multiply.outer(a, b).rows.toarray()
    want = np.zeros((6, 5), bool)
    for i in range(2):
        for j in range(3):
            want[3 * i + j, [i, 2 + j]] = True
    assert np.array_equal(got, want)
    assert np.array_equal(np.multiply.outer(np.ones(3), a).rows.toarray(), np.tile(eye[:2].toarray(), (3, 1)))


def test_the_tracer_refuses_what_it_cannot_follow():
    t = Trace((3,), S.sp.csr_array(np.eye(3, dtype=bool)))
    for bad in (lambda: np.exp(t), lambda: np.asarray(t), lambda: float(t[0]), lambda: t > 0,
                lambda: bool(t[0]), lambda: np.sort(t), lambda: np.add(t, t, out=np.zeros(3)),
                lambda: np.maximum(t, 0.0), lambda: np.cross(t, t, axis=0)):
        with pytest.raises(TraceUnsupported):
            bad()


def scaled_rows(x):
    return x * x[:, :1] - x[0] / 3.0


def test_a_pattern_that_fails_the_check_is_detected_exactly(monkeypatch):
    """A traced pattern missing an entry (simulated) is caught by the random-direction check, and
    the pattern is detected again with exact index sets."""
    x = RNG.uniform(0.5, 1.5, 12).reshape(3, 4)

    def too_small(jvp_call, x):
        y, rows, cols, m, n = trace_pattern(jvp_call, x)
        return y, rows[1:], cols[1:], m, n
    monkeypatch.setattr(S, "trace_pattern", too_small)
    J = srcad.jacobian(scaled_rows, sparsity="auto")(x)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(scaled_rows, x, ()), rtol=1e-6, atol=1e-8)
    assert [p.method for p in S.kept_patterns(scaled_rows, 0).values()] == ["exact"]


def shifted_rows(x):
    return x * x[:, :1] + x[0] / 3.0


def test_a_pattern_no_detection_gets_right_is_refused(monkeypatch):
    """Both detections missing an entry (simulated): a named error, never a wrong Jacobian."""
    x = RNG.uniform(0.5, 1.5, 12).reshape(3, 4)

    def too_small(find):
        def detect(jvp_call, x):
            y, rows, cols, m, n = find(jvp_call, x)
            return y, rows[1:], cols[1:], m, n
        return detect
    monkeypatch.setattr(S, "trace_pattern", too_small(trace_pattern))
    monkeypatch.setattr(S, "detect_exact", too_small(S.detect_exact))
    with pytest.raises(srcad.SrcadError, match="Pass sparsity=None"):
        srcad.jacobian(shifted_rows, sparsity="auto")(x)


def scalar_plus_rows(x):
    return np.trace(x[:, :3]) + np.outer(x[0], x[1, :2]) * 2.0


def test_the_exact_sweep_adds_a_scalar_set_to_an_array_of_sets():
    """Deps + an object array (a scalar's tangent plus an array's) is taken entry by entry: it
    used to return the scalar's set alone, dropping the array's dependencies."""
    x = RNG.uniform(0.5, 1.5, 12).reshape(3, 4)
    y, rows, cols, m, n = S.detect_exact(_sweep(scalar_plus_rows, x, ()), x)
    assert np.array_equal(_dense(rows, cols, m, n), np.abs(fd_jacobian(scalar_plus_rows, x, ())) > 1e-7)


def scalar_plus_rows_2(x):
    return np.trace(x[:, :3]) + np.outer(x[0], x[1, :2]) * 2.0


def test_sparse_jacobian_through_the_exact_sweep_is_right(monkeypatch):
    """The Jacobian of scalar_plus_rows by the exact sweep alone (the tracer refusing): before the
    Deps fix it came back without d/dx[0, 1:] (max error 4.2, no error raised)."""
    def refuse(jvp_call, x):
        raise TraceUnsupported("simulated")
    monkeypatch.setattr(S, "trace_pattern", refuse)
    x = RNG.uniform(0.5, 1.5, 12).reshape(3, 4)
    J = srcad.jacobian(scalar_plus_rows_2, sparsity="auto")(x)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(scalar_plus_rows_2, x, ()), rtol=1e-6, atol=1e-8)
    assert [p.method for p in S.kept_patterns(scalar_plus_rows_2, 0).values()] == ["exact"]


def gather_pairs(x, idx):
    return x[idx] * x[idx[::-1]] + x[0]


def test_patterns_are_kept_per_index_arrays_and_detected_again_when_they_change(monkeypatch):
    calls = []
    real = S.find_pattern

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(S, "find_pattern", counting)
    x = RNG.uniform(0.5, 1.5, 8)
    jf = srcad.jacobian(gather_pairs, sparsity="auto")
    idx1, idx2 = np.array([1, 2, 3, 5]), np.array([4, 6, 7, 0])
    for idx, detections in ((idx1, 1), (idx1, 1), (idx2, 2), (idx1, 2)):
        J = jf(x, idx)
        assert len(calls) == detections
        np.testing.assert_allclose(J.toarray(), fd_jacobian(gather_pairs, x, (idx,)), rtol=1e-6, atol=1e-8)
    idx1[:] = [7, 7, 2, 1]          # the same array object, refilled in place
    J = jf(x, idx1)
    assert len(calls) == 3
    np.testing.assert_allclose(J.toarray(), fd_jacobian(gather_pairs, x, (idx1,)), rtol=1e-6, atol=1e-8)


def gather_shared(x, idx):
    return x[idx] * x[idx[::-1]] - x[1]


def test_sparse_jacobians_of_one_function_share_its_patterns(monkeypatch):
    calls = []
    real = S.find_pattern
    monkeypatch.setattr(S, "find_pattern", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, idx = RNG.uniform(0.5, 1.5, 8), np.array([1, 2, 3, 5])
    for _ in range(2):
        J = srcad.jacobian(gather_shared, sparsity="auto")(x, idx)
        np.testing.assert_allclose(J.toarray(), fd_jacobian(gather_shared, x, (idx,)), rtol=1e-6, atol=1e-8)
    assert len(calls) == 1


def branch_on(x, t):
    return np.where(x > t, x * x, x[::-1])


def test_a_kept_pattern_that_no_longer_holds_is_detected_again():
    """A float argument is not in the key (it can only move a branch): the check sweep sees it."""
    x = np.array([0.3, 0.9, 1.4, 0.2, 0.7])
    jf = srcad.jacobian(branch_on, sparsity="auto")
    for t in (0.5, 1.0, 0.1):
        J = jf(x, t)
        np.testing.assert_allclose(J.toarray(), fd_jacobian(branch_on, x, (t,)), rtol=1e-6, atol=1e-8)


def test_structure_key_reads_what_decides_the_pattern():
    a, b = np.arange(4), np.arange(4)
    assert S.structure_key((1.0, a, 3), 0) == S.structure_key((2.0, b, 3), 0)
    assert S.structure_key((1.0, a, 3), 0) != S.structure_key((1.0, a[::-1].copy(), 3), 0)
    assert S.structure_key((1.0, a, 3), 0) != S.structure_key((1.0, a, 4), 0)
    assert S.structure_key((1.0, np.ones(3)), 0) == S.structure_key((1.0, np.zeros(3)), 0)
    M = sp.csr_array(np.eye(3))
    assert S.structure_key((1.0, M), 0) != S.structure_key((1.0, sp.csr_array(np.eye(3)[::-1])), 0)
