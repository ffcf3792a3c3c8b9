"""Many tangent directions in one sweep (srcad.batching) where the gradbench problems needed them:
np.array built from a nested list of traced scalars (a rotation matrix), np.cross, and the
coloured sparse Jacobian's colours batched into one sweep. Each checked against central finite
differences; the batched path's use is observed, not assumed."""
import numpy as np

import srcad
import srcad.sparsity as sparsity
from srcad import batching


def fd_jac(f, x, h=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        cols.append((np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


def rotation(a):
    c, s = np.cos(a[0]), np.sin(a[0])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotate_points(theta):
    R = rotation(theta[:1]) @ np.array([[1.0, 0.0, 0.0], [0.0, np.cos(theta[1]), -np.sin(theta[1])],
                                        [0.0, np.sin(theta[1]), np.cos(theta[1])]])
    P = np.arange(12.0).reshape(3, 4) / 7.0
    return (R @ P + theta[2:5, None]).ravel()


def test_nested_list_array_tangents_batch(monkeypatch):
    seen = []
    real = batching.batched_array
    monkeypatch.setattr(batching, "batched_array", lambda *a: seen.append(1) or real(*a))
    x = np.array([0.3, -0.7, 0.1, 0.2, 0.5])
    J = srcad.jacobian(rotate_points, mode="forward")(x)
    np.testing.assert_allclose(J, fd_jac(rotate_points, x), rtol=1e-7, atol=1e-9)
    assert seen, "the nested-list np.array tangent did not go through the batch"


def cross_residuals(x):
    a = x[:6].reshape(2, 3)
    b = x[6:].reshape(2, 3)
    return np.cross(a, b).ravel() + np.cross(a, np.array([1.0, 2.0, 3.0])).ravel()


def test_cross_of_batched_tangents():
    x = np.random.default_rng(0).normal(size=12)
    J = srcad.jacobian(cross_residuals, mode="forward")(x)
    np.testing.assert_allclose(J, fd_jac(cross_residuals, x), rtol=1e-7, atol=1e-9)
    B = batching.Batched(np.random.default_rng(1).normal(size=(4, 2, 3)))
    plain = np.array([1.0, -2.0, 0.5])
    got = np.cross(B, plain)
    for k in range(4):
        np.testing.assert_allclose(got.data[k], np.cross(B.data[k], plain))


def chain(x):
    """A banded Jacobian (3 colours) through np.cross, indexing and ufuncs."""
    v = x.reshape(-1, 3)
    return np.concatenate([np.cross(v[:-1], v[1:]).ravel(), np.sin(x) * x])


def test_colours_in_one_batched_sweep(monkeypatch):
    calls = []
    real = sparsity.Pattern._evaluate_batched
    monkeypatch.setattr(sparsity.Pattern, "_evaluate_batched",
                        lambda self, j, x, r=None: calls.append(self.ncolors) or real(self, j, x, r))
    x = np.random.default_rng(2).normal(size=30)
    jf = srcad.jacobian(chain, sparsity="auto")
    for _ in range(2):                       # the detected pattern, then the cached one
        J = jf(x)
        np.testing.assert_allclose(J.toarray(), fd_jac(chain, x), rtol=1e-7, atol=1e-9)
    assert len(calls) == 2 and calls[0] > 1, calls


def test_batched_colours_fall_back_when_unbatchable(monkeypatch):
    def boom(self, j, x, r=None):
        raise TypeError("not implemented for a batch of tangents")
    monkeypatch.setattr(sparsity.Pattern, "_evaluate_batched", boom)
    x = np.random.default_rng(3).normal(size=12)
    J = srcad.jacobian(chain, sparsity="auto")(x)
    np.testing.assert_allclose(J.toarray(), fd_jac(chain, x), rtol=1e-7, atol=1e-9)


def _kept_pattern(f, n):
    (pat,) = [p for p in sparsity.kept_patterns(f, 0).values() if p.n == n]
    return pat


def test_the_check_direction_rides_along_in_the_batch_and_catches_a_wrong_kept_pattern(monkeypatch):
    """On a kept pattern, the random check direction is one more direction of the batched (and
    deferred) sweep, not an ordinary sweep of its own; it still reads neither the pattern nor the
    colouring, so a kept pattern missing an entry fails the check and is detected again."""
    from srcad import deferred
    monkeypatch.setattr(deferred, "LARGE", 0)       # the deferred replay, in small chunks
    monkeypatch.setattr(deferred, "SMALL", 0)
    monkeypatch.setattr(deferred, "CHUNK", 7)
    seen = []
    real = sparsity.Pattern.agrees
    monkeypatch.setattr(sparsity.Pattern, "agrees",
                        lambda self, J, j, x, r, t=None: seen.append(t is not None) or real(self, J, j, x, r, t))
    x = np.random.default_rng(5).normal(size=24)
    jf = srcad.jacobian(chain, sparsity="auto")
    ref = fd_jac(chain, x)
    np.testing.assert_allclose(jf(x).toarray(), ref, rtol=1e-7, atol=1e-9)
    assert seen == [False]                  # a new pattern: checked by an ordinary sweep
    np.testing.assert_allclose(jf(x).toarray(), ref, rtol=1e-7, atol=1e-9)
    assert seen == [False, True]            # a kept one: the check's tangent came with the colours
    pat = _kept_pattern(chain, x.size)
    keep = np.ones(len(pat.rows), bool)
    keep[len(keep) // 2] = False            # the kept pattern loses an entry
    pat.rows, pat.cols = pat.rows[keep], pat.cols[keep]
    np.testing.assert_allclose(jf(x).toarray(), ref, rtol=1e-7, atol=1e-9)
    assert seen[2] is True and len(seen) == 4   # failed in the batch, detected again, checked anew
