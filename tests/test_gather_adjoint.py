"""The adjoint of a gather `x[idx]` (rt.add_at): written straight into a fresh or owned float64
buffer where no entry can be named twice (ints and slices, a boolean mask, a long strictly
monotone integer array on one side of zero), np.add.at wherever an entry may repeat. Every
gradient is compared with central finite differences, det by minors with HIPS autograd (its
finite-difference and analytic checks are in test_split_callees)."""
import numpy as np
import pytest

import srcad
from srcad.runtime import indexing
from fdcheck import assert_grad_close
from test_split_callees import det_of     # det by minors, recursive: the same function as there


def test_det_by_minors_matches_autograd():
    # finite differences and the analytic det(A) inv(A)^T: test_split_callees; here HIPS autograd
    # (the same recursion with list indices), where it is installed
    autograd = pytest.importorskip("autograd")

    def adet(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            total = total + sign * A[0, j] * adet(A[1:, [c for c in range(n) if c != j]])
            sign = -sign
        return total
    A = np.random.default_rng(5).random((4, 4))
    expected = autograd.grad(adet)(A)
    np.testing.assert_allclose(srcad.grad(det_of)(A), expected, rtol=1e-13, atol=1e-15)


def gather_cols(x, idx):
    # the same column gather read twice: the second accumulates into the owned buffer
    return np.sum(np.sin(x[1:, idx]) * np.arange(1.0, 1.0 + len(idx))) + np.sum(x[1:, idx] ** 2)


def gather_flat(x, idx):
    return np.sum(np.cos(x[idx]) * np.linspace(0.5, 1.5, len(idx)))


def gather_mask(x, mask):
    return np.sum(x[mask] ** 3) + np.sum(np.exp(x[:, 0][mask[:, 0]]))


@pytest.mark.parametrize("idx", [
    np.array([2, 0, 2, 1, 0]),                  # repeats: must add up
    np.array([-1, 2]),                          # -1 and 2 are one column of 3: must add up
    np.array([0, 2]),                           # distinct, short
])
def test_column_gathers_small(idx):
    x = np.random.default_rng(1).normal(size=(4, 3))
    assert_grad_close(lambda x: gather_cols(x, idx), (x,), srcad.grad(gather_cols)(x, idx))


@pytest.mark.parametrize("make", [
    lambda n: np.arange(n),                                 # increasing, distinct: written directly
    lambda n: np.arange(n)[::-1],                           # decreasing
    lambda n: -1 - np.arange(n),                            # all negative, decreasing
    lambda n: np.concatenate((np.arange(n // 2), np.arange(n // 2 + 1, n))),
    lambda n: np.concatenate((np.arange(n - 1), [-n])),     # increasing but -n is column 0 again
    lambda n: np.arange(n) // 2,                            # repeats, non-decreasing
])
def test_long_gathers_repeated_or_not(make):
    n = indexing._DISTINCT_MIN + 6
    idx = make(n)
    x = np.random.default_rng(2).normal(size=(3, n))
    g = srcad.grad(gather_cols)(x, idx)
    assert_grad_close(lambda x: gather_cols(x, idx), (x,), g)
    y = np.random.default_rng(3).normal(size=n)
    assert_grad_close(lambda y: gather_flat(y, idx), (y,), srcad.grad(gather_flat)(y, idx))


def test_boolean_mask_gather():
    x = np.random.default_rng(4).normal(size=(5, 4))
    mask = x > 0.1
    assert_grad_close(lambda x: gather_mask(x, mask), (x,), srcad.grad(gather_mask)(x, mask))


def test_add_at_kinds_of_index():
    """The index classification behind the direct writes: only what cannot repeat is distinct."""
    x = np.zeros((4, indexing._DISTINCT_MIN + 2))
    n = x.shape[1]
    kind = indexing._index_kind
    assert kind((0, 1), x) == indexing._BASIC
    assert kind((slice(1, None), 2), x) == indexing._BASIC
    assert kind((slice(1, None), np.arange(n)), x) == indexing._DISTINCT
    assert kind((slice(1, None), np.arange(n)[::-1] - n), x) == indexing._DISTINCT
    assert kind((slice(1, None), np.r_[np.arange(n - 1), -n]), x) == indexing._ADVANCED
    assert kind((slice(1, None), np.zeros(n, dtype=int)), x) == indexing._ADVANCED
    assert kind((np.arange(3), np.arange(3)), x) == indexing._ADVANCED     # two advanced parts
    assert kind(x > 0, x) == indexing._DISTINCT
    assert kind(np.arange(3), x) is None            # a row gather: RowSparse, the general path
    assert kind([0, 1], x) is None


def test_add_at_accumulates_and_leaves_shared_buffers_alone():
    x = np.zeros((3, 4))
    idx = (slice(1, None), np.array([1, 1, 3]))
    g = np.arange(6.0).reshape(2, 3)
    expected = np.zeros((3, 4))
    for r in range(2):
        for c, col in enumerate([1, 1, 3]):
            expected[1 + r, col] += g[r, c]
    fresh = indexing.add_at(0.0, x, idx, g)
    np.testing.assert_array_equal(fresh, expected)
    np.testing.assert_array_equal(indexing.index_vjp(g, x, idx), expected)
    flat = indexing.index_vjp(np.array([1.0, 2.0, 4.0]), np.zeros(3), np.array([2, 0, 2]))
    np.testing.assert_array_equal(flat, [2.0, 0.0, 5.0])
    held = np.ones((3, 4))
    alias = held
    out = indexing.add_at(held, x, idx, g)
    np.testing.assert_array_equal(out, expected + 1)
    np.testing.assert_array_equal(alias, np.ones((3, 4)))     # another name holds it: not written
    assert indexing.add_at(0.0, x, (0, 1), 0.0) == 0.0          # a zero cotangent stays symbolic
