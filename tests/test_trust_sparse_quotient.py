"""Forward mode through `A / y` (A sparse with entries stored twice, y a dense vector) with both
tangents set: each stored entry of the result gets its own tangent, as finite differences of that
entry give (the piece along y's tangent was computed by scipy's `*`, which merges a COO's duplicates,
and each duplicate then got the merged value; a np.matrix-style class made it a matrix product)."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad

DATA = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
INDICES = np.array([1, 1, 0, 2, 2])         # (0, 1) and (2, 2) stored twice
INDPTR = np.array([0, 2, 3, 5])
Y = np.array([1.5, 2.0, 3.0])
DATA_DOT = np.array([0.3, -0.2, 0.5, 0.7, 0.1])
Y_DOT = np.array([0.1, 0.2, -0.3])


def _matrix(cls, data):
    if cls in (sp.coo_array, sp.coo_matrix):
        return cls((data.copy(), (np.array([0, 0, 1, 2, 2]), INDICES.copy())), shape=(3, 3))
    return cls((data.copy(), INDICES.copy(), INDPTR.copy()), shape=(3, 3))


def quotient(A, y):
    return A / y


def quotient_then_square(A, y):
    B = A / y
    return np.sum(B.data ** 2)      # reads each stored entry: a merged tangent would be wrong here


@pytest.mark.parametrize("cls", [sp.csr_array, sp.csc_array, sp.csr_matrix, sp.csc_matrix, sp.coo_array])
@pytest.mark.parametrize("which", ["both", "A", "y"])
def test_quotient_tangent_per_stored_entry(cls, which):
    A = _matrix(cls, DATA)
    dA = DATA_DOT if which != "y" else np.zeros(5)
    dy = Y_DOT if which != "A" else np.zeros(3)
    out, tan = srcad.jvp(quotient, (A, Y), (_matrix(cls, dA), dy))
    eps = 1e-6
    hi, lo = quotient(_matrix(cls, DATA + eps * dA), Y + eps * dy), quotient(_matrix(cls, DATA - eps * dA), Y - eps * dy)
    np.testing.assert_allclose(out.toarray(), quotient(A, Y).toarray(), rtol=1e-14)
    # the result stores what scipy's primal stores (duplicates kept or merged): entry by entry
    assert tan.data.shape == hi.data.shape
    np.testing.assert_allclose(tan.data, (hi.data - lo.data) / (2 * eps), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(tan.toarray(), (hi.toarray() - lo.toarray()) / (2 * eps), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("cls", [sp.csr_array, sp.csc_array])
def test_quotient_entries_read_both_modes(cls):
    A = _matrix(cls, DATA)
    _, tan = srcad.jvp(quotient_then_square, (A, Y), (_matrix(cls, DATA_DOT), Y_DOT))
    eps = 1e-6
    fd = (quotient_then_square(_matrix(cls, DATA + eps * DATA_DOT), Y + eps * Y_DOT)
          - quotient_then_square(_matrix(cls, DATA - eps * DATA_DOT), Y - eps * Y_DOT)) / (2 * eps)
    np.testing.assert_allclose(tan, fd, rtol=1e-7)
    gA, gy = srcad.grad(quotient_then_square, wrt=(0, 1))(A, Y)
    # analytic: f = sum_e (a_e / y_c(e))^2
    cols = np.array([1, 1, 0, 2, 2]) if cls is sp.csr_array else np.array([0, 0, 1, 2, 2])
    np.testing.assert_allclose(gA.data, 2 * DATA / Y[cols] ** 2, rtol=1e-12)
    np.testing.assert_allclose(gy, np.bincount(cols, -2 * DATA ** 2 / Y[cols] ** 3, minlength=3), rtol=1e-12)


def test_dense_quotient_tangent_unchanged():
    x, y = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.5])
    dx, dy = np.array([0.2, 0.1, -0.3]), np.array([-0.4, 0.3, 0.2])
    _, tan = srcad.jvp(lambda x, y: x / y, (x, y), (dx, dy))
    np.testing.assert_allclose(tan, dx / y - x * dy / y ** 2, rtol=1e-14)
    H = srcad.hessian(lambda y: np.sum(x / y))(y)      # forward over reverse through the division
    np.testing.assert_allclose(H, np.diag(2 * x / y ** 3), rtol=1e-12)


def test_quotient_forward_over_forward():
    """The tangent helper has rules of its own: forward mode over forward-mode code."""
    x = np.array([1.0, -2.0, 3.0])

    def f(y):
        return x / y
    y = np.array([0.5, 4.0, -1.5])
    J2 = srcad.jacobian(srcad.jacobian(f, mode="forward"), mode="forward")(y)
    want = np.zeros((3, 3, 3))
    for i in range(3):
        want[i, i, i] = 2 * x[i] / y[i] ** 3
    np.testing.assert_allclose(J2, want, rtol=1e-12)
    J2r = srcad.jacobian(srcad.jacobian(f, mode="forward"), mode="reverse")(y)
    np.testing.assert_allclose(J2r, want, rtol=1e-12)
