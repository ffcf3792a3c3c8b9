"""The runtime's fast paths for small dense values (the nested problems' 2-element arrays, the
batched tangents of a rotation built from scalars) give the values of the general paths: checked
against analytic derivatives, finite differences and plain NumPy."""
import numpy as np
import pytest

import srcad
from srcad import batching
from srcad import runtime as rt


def fd_jac(f, x, h=1e-6):
    """Central finite differences, column by column."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def test_add_in_place_only_when_the_dtype_is_kept():
    a = np.array([1.0, 2.0], dtype=np.float32)
    out = rt.add(a * np.float32(1), np.float64(0.5))     # a float64 scalar promotes: a new array
    assert out.dtype == np.float64 and np.allclose(out, [1.5, 2.5])
    b = np.array([1.0, 2.0])
    held = [b]                                            # another reference: not in place
    out = rt.add(b, 0.5)
    assert held[0] is b
    assert np.allclose(b, [1.0, 2.0]) and np.allclose(out, [1.5, 2.5])
    out = rt.add(b * 1.0, np.array([[1.0], [2.0]]))       # broadcasting to a new shape
    assert out.shape == (2, 2) and np.allclose(out, [[2.0, 3.0], [3.0, 4.0]])
    assert rt.add(0.5, b).tolist() == [1.5, 2.5]


def test_index_adjoint_and_tangent_of_small_arrays():
    def f(x, y):
        return x[0] * y[1] - x[1] * x[1] + np.sum(y[1:] * x[:1])
    x, y = np.array([0.3, -1.2]), np.array([2.0, 0.7])
    gx, gy = srcad.grad(f, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [y[1] + y[1], -2 * x[1]], rtol=1e-14)
    np.testing.assert_allclose(gy, [0.0, x[0] + x[0]], rtol=1e-14)
    _, t = srcad.jvp(f, (x, y), (np.array([1.0, 0.5]), np.array([0.0, -1.0])))
    assert t == pytest.approx(np.dot(gx, [1.0, 0.5]) + np.dot(gy, [0.0, -1.0]), rel=1e-13)
    view = rt.index_jvp(np.array([1.0, 2.0, 3.0]), np.zeros(3), slice(1, None))
    assert not view.flags.writeable      # a view of a tangent is never written through


def potential(x, c):
    d = x - c
    return 1.0 / np.sqrt(np.sum(d * d))


force = srcad.grad(potential)


def nested(w):
    x = np.array([0.0, 1.0])
    v = np.array([0.5, 0.0])
    for _ in range(5):
        x = x + 0.1 * v
        v = v - 0.1 * force(x, np.array([2.0, w[0]]))
    return x[0] * x[1]


def test_nested_gradient_of_a_small_simulation():
    w = np.array([0.3])
    g = srcad.grad(nested)(w)
    np.testing.assert_allclose(g, fd_jac(lambda u: np.atleast_1d(nested(u)), w)[0], rtol=1e-7)


def test_batched_ufunc_and_array_of_scalars():
    B = batching.Batched(np.arange(6.0).reshape(3, 2))          # 3 tangents of shape (2,)
    wide = np.array([[1.0, 2.0], [3.0, 4.0]])                   # more axes than the batch's own
    got = B * wide
    assert got.data.shape == (3, 2, 2)
    for k in range(3):
        np.testing.assert_array_equal(got.data[k], B.data[k] * wide)
        np.testing.assert_array_equal(np.sin(B).data[k], np.sin(B.data[k]))
    s = batching.Batched(np.array([1.0, 2.0, 3.0]))             # 3 scalar tangents
    arr = batching.batched_array([[s, 0.0], [2.0, -s]], 3, np.float64, (2, 2))
    for k in range(3):
        np.testing.assert_array_equal(arr.data[k], [[s.data[k], 0.0], [2.0, -s.data[k]]])
    with pytest.raises(ValueError):
        batching.batched_array([[s, B]], 3, np.float64, (1, 2))   # an item of the wrong shape


def rotation_of_scalars(t):
    c, s = np.cos(t[0]), np.sin(t[1])
    R = np.array([[c, -s * t[2], 0.0], [s, c, t[2]], [0.0, 0.0, 1.0]])
    return (R @ np.array([1.0, 2.0, 3.0])).ravel()


def test_jacobian_of_a_rotation_built_from_scalars():
    t = np.array([0.4, -0.3, 1.7])
    J = srcad.jacobian(rotation_of_scalars)(t)
    np.testing.assert_allclose(J, fd_jac(rotation_of_scalars, t), rtol=1e-7, atol=1e-9)


def test_plain_signature_is_the_signature_of_plain_arguments():
    from srcad.inputs import plain, plain_signature
    from srcad.transform.kinds import signature
    kinds = [np.ones(2), np.ones((2, 3), np.float32), 1.5, np.float64(2.0), np.float32(1.0), np.float16(1.0),
             None, "s", np.ones(2, int), 3, True, np.ones(2, complex), [1.0], (1.0,), {"a": 1.0},
             np.int64(2), np.ones((), np.float64)]
    for a in kinds:
        for args in [(a,), (np.ones(3), a), (a, 2.0, None)]:
            want = signature(args, {}) if plain(args) else None
            assert plain_signature(args) == want, args


def scatter_rows(t):
    P = np.zeros((3, 2))
    P[0] = t[:2]
    P[1, 0] = t[2] * t[0]
    P[2] = np.sin(t[1:3])
    return (P @ np.array([1.0, -2.0])) * t[0]


def test_tangent_of_writes_into_an_array():
    t = np.array([0.4, -0.3, 1.7])
    for mode in ("forward", "reverse"):
        J = srcad.jacobian(scatter_rows, mode=mode)(t)
        np.testing.assert_allclose(J, fd_jac(scatter_rows, t), rtol=1e-7, atol=1e-9)
