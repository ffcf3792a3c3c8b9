"""Deferred batches of tangents (srcad/deferred.py): a large batched sweep records its tangent
operations while the primal runs once and replays them a few directions at a time. The Jacobians
are checked against central finite differences and JAX (when installed); the deferred path's use
is observed, not assumed, and its replay is compared with the same operations on a Batched."""
import numpy as np
import pytest

import srcad
from srcad import batching, deferred
from srcad.batching import Batched
from srcad.deferred import Deferred


@pytest.fixture
def defer_all(monkeypatch):
    """Every batched sweep deferred, nothing computed at once, two directions per replay chunk."""
    monkeypatch.setattr(deferred, "LARGE", 0)
    monkeypatch.setattr(deferred, "SMALL", 0)
    monkeypatch.setattr(deferred, "CHUNK", 1)
    calls = []
    real = deferred.evaluate
    monkeypatch.setattr(deferred, "evaluate", lambda outs: calls.append(len(outs)) or real(outs))
    return calls


def fd_jac(f, x, h=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        cols.append((np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


# -- bundle adjustment's shape: gathers, a rotation with a small-angle branch, np.cross ----------
N_CAM, N_PT, N_OBS = 3, 4, 7
OBS = np.stack([np.arange(N_OBS) % N_CAM, (3 * np.arange(N_OBS)) % N_PT], axis=1)


def rodrigues(rot, X):
    sqtheta = np.sum(rot * rot, axis=1, keepdims=True)
    small = sqtheta < 1e-30
    theta = np.sqrt(np.where(small, 1.0, sqtheta))
    axis = rot / theta
    cos, sin = np.cos(theta), np.sin(theta)
    rotated = X * cos + np.cross(axis, X) * sin + axis * (np.sum(axis * X, axis=1, keepdims=True) * (1.0 - cos))
    return np.where(small, X + np.cross(rot, X), rotated)


def residuals(params):
    cams = params[:N_CAM * 7].reshape(N_CAM, 7)
    X = params[N_CAM * 7:].reshape(N_PT, 3)
    cam = cams[OBS[:, 0]]
    Xc = rodrigues(cam[:, 0:3], X[OBS[:, 1]] - cam[:, 3:6])
    p = Xc[:, :2] / Xc[:, 2:3]
    return np.concatenate([(p * cam[:, 6:7]).ravel(), np.cross(np.array([0.5, -1.0, 2.0]), Xc).ravel()])


def ba_params(zero_rotations=()):
    rng = np.random.default_rng(3)
    cams = rng.normal(size=(N_CAM, 7)) * 0.3
    cams[:, 6] += 1.0
    for c in zero_rotations:
        cams[c, :3] = 0.0          # the small-angle branch for this camera's observations
    X = rng.normal(size=(N_PT, 3)) + np.array([0.0, 0.0, 6.0])
    return np.concatenate([cams.ravel(), X.ravel()])


def jax_jacobian(params):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def rod(rot, X):
        sq = jnp.sum(rot * rot, axis=1, keepdims=True)
        small = sq < 1e-30
        theta = jnp.sqrt(jnp.where(small, 1.0, sq))
        axis = rot / theta
        rotated = X * jnp.cos(theta) + jnp.cross(axis, X) * jnp.sin(theta) + \
            axis * (jnp.sum(axis * X, axis=1, keepdims=True) * (1.0 - jnp.cos(theta)))
        return jnp.where(small, X + jnp.cross(rot, X), rotated)

    def res(v):
        cams = v[:N_CAM * 7].reshape(N_CAM, 7)
        X = v[N_CAM * 7:].reshape(N_PT, 3)
        cam = cams[OBS[:, 0]]
        Xc = rod(cam[:, 0:3], X[OBS[:, 1]] - cam[:, 3:6])
        p = Xc[:, :2] / Xc[:, 2:3]
        return jnp.concatenate([(p * cam[:, 6:7]).ravel(), jnp.cross(jnp.array([0.5, -1.0, 2.0]), Xc).ravel()])
    return np.asarray(jax.jacfwd(res)(jnp.asarray(params)))


@pytest.mark.parametrize("zero", [(), (1,)], ids=["no-small-angle", "small-angle-branch"])
def test_sparse_jacobian_deferred_matches_fd(defer_all, zero):
    x = ba_params(zero)
    J = srcad.jacobian(residuals, sparsity="auto")(x)
    assert defer_all, "the coloured sweep was not deferred"
    np.testing.assert_allclose(J.toarray(), fd_jac(residuals, x), rtol=1e-6, atol=1e-8)


def test_dense_jacobian_deferred_matches_fd(defer_all):
    x = ba_params((0,))
    J = srcad.jacobian(residuals, mode="forward")(x)
    assert defer_all, "the forward columns were not deferred"
    np.testing.assert_allclose(J, fd_jac(residuals, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("zero", [(), (1,)], ids=["no-small-angle", "small-angle-branch"])
def test_deferred_jacobians_match_jax(defer_all, zero):
    pytest.importorskip("jax")
    x = ba_params(zero)
    want = jax_jacobian(x)
    np.testing.assert_allclose(srcad.jacobian(residuals, sparsity="auto")(x).toarray(), want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(srcad.jacobian(residuals, mode="forward")(x), want, rtol=1e-12, atol=1e-13)
    assert defer_all


# -- shape operations, writes, products ----------------------------------------------------------
A = np.arange(12.0).reshape(4, 3) / 5.0 - 1.0


def shapes_and_writes(x):
    m = x.reshape(3, 4)
    t = np.transpose(m) @ np.array([1.0, -2.0, 0.5])         # (4,)
    y = np.zeros(6)
    y[1:5] = t * x[:4]
    s = np.sum(m * m, axis=0) + np.mean(m, axis=1).sum()
    a, b = np.split(x, 2)
    z = np.stack([a * b, np.cumsum(a)], axis=1).ravel()
    w = np.where(x[:6] > 0.0, np.sin(x[:6]), x[6:] ** 2)
    return np.concatenate([y, s, z, w, (A @ m[:, :3].T).ravel(), np.cross(m[:, :3], A[:3])[0]])


def test_shape_operations_and_writes_deferred(defer_all):
    x = np.linspace(-1.0, 1.3, 12)
    J = srcad.jacobian(shapes_and_writes, mode="forward")(x)
    assert defer_all
    np.testing.assert_allclose(J, fd_jac(shapes_and_writes, x), rtol=1e-6, atol=1e-8)


# -- the replay against the same operations on a Batched -----------------------------------------
def _ops(t, P):
    u = np.where(P[:, :1] > 0, t * P, -t) + np.cross(P, t) - np.cross(t, P[::-1]) + (-t) * P / P[::-1]
    u = np.broadcast_to(u, (5, 3)) + P * (-t) + np.sum(t[:, :, None] * P[:, None, :], axis=2)
    v = np.sum(u, axis=1, keepdims=True) * P[:, 1:2] + u[:, ::2].sum(axis=1)[:, None]
    w = np.concatenate([np.reshape(u, (-1,)), np.ravel(v.T), np.ravel(P.T @ t)])
    return w[3:] - 0.0


def test_replay_equals_batched_operations(monkeypatch):
    monkeypatch.setattr(deferred, "LARGE", 0)
    monkeypatch.setattr(deferred, "SMALL", 0)
    monkeypatch.setattr(deferred, "CHUNK", 7)
    rng = np.random.default_rng(5)
    P, data = rng.normal(size=(5, 3)), rng.normal(size=(4, 5, 3))
    want = _ops(Batched(data.copy()), P).data
    lazy = _ops(deferred.seed(data.copy()), P)
    assert type(lazy) is Deferred
    np.testing.assert_array_equal(lazy.data, want)          # the same operations: the same bits
    np.testing.assert_array_equal(batching.unwrap(lazy, 4, want.shape[1:]), want)


def test_where_with_a_condition_that_picks_one_side_reads_only_that_side(monkeypatch):
    monkeypatch.setattr(deferred, "LARGE", 0)
    monkeypatch.setattr(deferred, "SMALL", 0)
    t = deferred.seed(np.ones((3, 4, 2)))
    other = t * 2.0
    none, every = np.zeros((4, 1), bool), np.ones((4, 1), bool)
    assert np.where(none, other, t) is t and np.where(every, t, other) is t
    r = np.where(none, other, 0.0)             # picks nothing of `other`: zeros, `other` not read
    assert not isinstance(r, Batched) and r.shape == (4, 2) and not r.any()
    assert (t + np.zeros((4, 1))) is t


def test_write_after_read_is_refused_and_falls_back(monkeypatch):
    monkeypatch.setattr(deferred, "LARGE", 0)
    monkeypatch.setattr(deferred, "SMALL", 0)
    t = deferred.seed(np.ones((2, 3))).copy()
    _ = t * 2.0
    with pytest.raises(TypeError):
        t[0] = 1.0


def test_small_results_computed_at_once_feed_deferred_ones(monkeypatch):
    """Results of at most SMALL entries are computed when recorded (leaves of the replay); what
    is computed from them is still deferred."""
    monkeypatch.setattr(deferred, "LARGE", 0)
    monkeypatch.setattr(deferred, "SMALL", 400)
    monkeypatch.setattr(deferred, "CHUNK", 40)
    x = ba_params((2,))
    J = srcad.jacobian(residuals, mode="forward")(x)
    np.testing.assert_allclose(J, fd_jac(residuals, x), rtol=1e-6, atol=1e-8)
    t = deferred.seed(np.eye(x.size))
    leaf = t[:3] * 2.0                          # 33 x 3 entries: computed at once
    assert type(leaf) is Deferred and leaf.full is not None
    node = leaf * np.ones((20, 3))              # 33 x 60 entries: deferred, reading the leaf
    assert type(node) is Deferred and node.full is None
    np.testing.assert_array_equal(node.data, np.broadcast_to(2.0 * np.eye(x.size)[:, None, :3], (x.size, 20, 3)))


def written_after_read(x):
    y = np.ones(x.size)
    z = x * y               # the tangent reads y ...
    y[0] = 5.0              # ... which is written afterwards
    return z + x * y


def test_an_array_written_after_a_tangent_read_it(defer_all):
    """The replay sees the values each recorded operation saw (operands copied when recorded)."""
    x = np.linspace(0.5, 1.5, 4)
    J = srcad.jacobian(written_after_read, mode="forward")(x)
    assert defer_all
    np.testing.assert_allclose(J, fd_jac(written_after_read, x), rtol=1e-7, atol=1e-9)
    lazy = deferred.seed(np.eye(4))
    y = np.ones(4)
    z = lazy * y
    y[0] = 5.0
    np.testing.assert_array_equal(z.data, np.eye(4))
