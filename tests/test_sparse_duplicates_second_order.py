"""Second order through sparse matrices with duplicate entries (COO duplicates, repeated CSR
column indices), against references independent of srcad.

A cotangent of a sparse matrix has the matrix's pattern, and a duplicate entry holds its own
cotangent. In forward mode over the adjoint the tangent pieces of such a cotangent must be added
entry by entry (rt.add), never by scipy's `+`, which sums the duplicates as a matrix: the merged
value was then read back at each duplicate, counting it twice (the Hessian through a COO whose
values and dense operand both depend on x was wrong; first order and forward mode were right).

References: the Hessian from second differences of f itself (tests/fd_second.py), and on random
sparse programs (tests/test_property.py's generator) differences of the gradient plus d.Hd from
second differences of the program.
"""
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import strategies as st

import srcad
from fd_second import numerical_hessian
from fdcheck import numerical_grad
from test_property import MAX_MAGNITUDE, N, find_inputs, import_program, programs
from test_property_modes import hessian_vector_product

ROWS, COLS = np.array([0, 1, 1, 3, 0, 2]), np.array([1, 2, 2, 0, 1, 3])   # (0,1) and (1,2) twice
PICK = [0, 1, 2, 3, 0, 2]
X = np.array([0.69, 0.61, -0.17, 0.53])
U = np.array([0.3, 1.0, -0.5, 0.2])


def coo_times_x(x):           # the case that was wrong
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    v = A @ x
    return np.sum(v * v)


def x_times_coo(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum((x @ A) ** 2)


def coo_times_csr(x):          # sparse @ sparse, both with repeated entries
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    B = sp.csr_array((np.sin(x)[PICK], np.array([1, 1, 2, 0, 1, 3]), np.array([0, 2, 3, 5, 6])), shape=(4, 4))
    return np.sum(((A @ B) @ x) ** 2)


def coo_multiply(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum(A.multiply(np.outer(x, x)).toarray() ** 2)


def coo_power_diagonal(x):
    A = sp.coo_array((np.cos(x)[PICK] + x[[1, 1, 0, 2, 3, 3]], (ROWS, ROWS)), shape=(4, 4))
    return np.sum(A.power(3).toarray() * x) + np.sum(A.diagonal() * x) + np.sum(A.toarray() @ x) ** 2


def coo_add(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    D = sp.coo_array((x[PICK] ** 2, (ROWS, COLS)), shape=(4, 4))
    return np.sum((srcad.sparse.add(A, D) @ x) ** 2)


def coo_vstack(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum((sp.vstack([A, A * 2.0]) @ x) ** 3)


CASES = [coo_times_x, x_times_coo, coo_times_csr, coo_multiply, coo_power_diagonal, coo_add, coo_vstack]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_through_duplicates(f):
    want = numerical_hessian(f, (X,))
    np.testing.assert_allclose(srcad.hessian(f)(X), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(srcad.hvp(f)(X, U), want @ U, rtol=1e-4, atol=1e-5)


def test_hvp_coo_duplicates_against_gradient_differences():
    """The case the property generator found, with the hand-written gradient as the reference:
    f = |A(x) x|^2, A's values cos(x[PICK]) on entries (ROWS, COLS) with duplicates summed."""
    def gradient(x):
        M = np.zeros((4, 4))
        np.add.at(M, (ROWS, COLS), np.cos(x)[PICK])
        v = M @ x
        g = 2.0 * M.T @ v
        dA = 2.0 * v[ROWS] * x[COLS]            # d f / d (each stored value)
        np.add.at(g, PICK, -np.sin(x)[PICK] * dA)
        return g
    eps = 1e-6
    np.testing.assert_allclose(gradient(X), srcad.grad(coo_times_x)(X), rtol=1e-12)   # the reference itself
    want = (gradient(X + eps * U) - gradient(X - eps * U)) / (2 * eps)
    np.testing.assert_allclose(srcad.hvp(coo_times_x)(X, U), want, rtol=1e-6, atol=1e-7)


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("srcad_sparse_second_order_programs")


@settings(max_examples=25, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(program=programs(sparse=True, extended=False), seed=st.integers(0, 2 ** 32 - 1))
def test_random_sparse_programs_second_order(program, seed, prog_dir):
    """Random programs that build non-canonical sparse matrices from their inputs: forward over
    the adjoint (H [u; v]) against differences of the gradient and d.Hd against second differences."""
    assume("sparse" in program.features)
    note(program.source)
    inputs = find_inputs(program, seed)
    assume(inputs is not None)
    x, y, _ = inputs
    module = import_program(program.source, prog_dir)
    try:
        prog = module.prog
        rng = np.random.default_rng(seed)
        u, v = rng.normal(size=N), rng.normal(size=N)
        where = f"\nprogram:\n{program.source}x = np.array({x.tolist()!r})\ny = np.array({y.tolist()!r})"

        def gradient(s):
            return np.concatenate(srcad.vjp(prog, x + s * u, y + s * v)[1](1.0))

        eps = 1e-5
        want = (gradient(eps) - gradient(-eps)) / (2 * eps)
        wide = (gradient(10 * eps) - gradient(-10 * eps)) / (20 * eps)
        scale = max(1.0, float(np.max(np.abs(want))))
        assume(scale < MAX_MAGNITUDE and np.allclose(want, wide, rtol=1e-4, atol=1e-5 * scale))
        hv = np.concatenate(hessian_vector_product(prog, x, y, u, v))
        np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-6 * scale, err_msg="H [u; v]" + where)
        d = np.concatenate([u, v])

        def second(h):
            at = lambda s: float(prog(x + s * u, y + s * v))   # noqa: E731
            return (at(h) - 2.0 * at(0.0) + at(-h)) / h ** 2
        s1, s2 = second(1e-4), second(2e-4)
        if abs(s1 - s2) <= 1e-4 * max(1.0, abs(s1)):
            np.testing.assert_allclose(float(hv @ d), s1, rtol=1e-3, atol=1e-4 * max(1.0, abs(s1)),
                                       err_msg="d.Hd vs second differences" + where)
    finally:
        sys.modules.pop(module.__name__, None)


# ---- a COO with duplicates times an active scalar: its entries stay apart (was wrong) ----------
def coo_scaled(x):             # scipy keeps the duplicates of a COO times a scalar
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum(((A * x[1]) @ x) ** 2)


def coo_scaled_data(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum((A * x[1]).data ** 3)


def coo_divided(x):
    A = sp.coo_array((np.cos(x)[PICK], (ROWS, COLS)), shape=(4, 4))
    return np.sum((A / x[1]).data ** 3) + np.sum(((x[2] * A) @ x) ** 2)


@pytest.mark.parametrize("f", [coo_scaled, coo_scaled_data, coo_divided], ids=lambda f: f.__name__)
def test_coo_duplicates_times_active_scalar(f):
    want = numerical_grad(f, (X,))
    np.testing.assert_allclose(srcad.grad(f)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.jvp(f, (X,), (U,))[1], want @ U, rtol=1e-6, atol=1e-8)
