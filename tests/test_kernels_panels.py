"""The column-panel path of the CSR products (a skewed A's long rows taken through X panel by
panel), sddmm's dot products of every width, and the serial path of small kernel calls: against
independent references (dense products, finite differences), bit-identical to the plain path,
and the same bits for one and two threads."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from srcad import _kernels as K
from srcad.runtime import sparse as rt_sparse

from fdcheck import assert_grad_close
from test_kernels import bits_equal, random_csr, scipy_csr, tol, with_threads


@pytest.fixture(autouse=True)
def _restore_threads():
    saved = K.get_num_threads()
    yield
    K.set_num_threads(saved)


def small_panels(indptr, indices, n_cols, row_bytes, n_panels=4):
    """A plan of n_panels panels, long rows from 8 entries: panels on a small A."""
    return K.csr_panel_plan(indptr, indices, n_cols, row_bytes, min_len=8,
                            panel_bytes=row_bytes * -(-n_cols // n_panels), min_x=0)


def skewed(seed, n_rows=3000, n_cols=4000, dtype=np.float64, itype=np.int32, sort=True):
    rng = np.random.default_rng(seed)
    indptr, indices, data = random_csr(rng, n_rows, n_cols, 6, dtype, itype, skewed=True)
    if sort:    # a canonical-looking pattern: each row's columns in order (duplicates kept)
        for i in range(n_rows):
            lo, hi = indptr[i], indptr[i + 1]
            indices[lo:hi] = np.sort(indices[lo:hi])
    return rng, indptr, indices, data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 5, 16, 32, 70])
def test_panel_product_has_the_plain_bits_and_matches_dense(dtype, k):
    rng, indptr, indices, data = skewed(1, dtype=dtype)
    n_rows, n_cols = len(indptr) - 1, 4000
    X = rng.standard_normal((n_cols, k)).astype(dtype)
    plan = small_panels(indptr, indices, n_cols, k * np.dtype(dtype).itemsize)
    assert plan is not None and len(plan.rows) > 10 and len(plan.split) // len(plan.rows) == 5
    plain = with_threads(1, K.csr_matmul, indptr, indices, data, X, n_rows)
    for nt in (1, 2):
        got = with_threads(nt, K.csr_matmul, indptr, indices, data, X, n_rows, plan)
        assert bits_equal(got, plain), nt
    dense = scipy_csr(indptr, indices, data, n_cols).toarray().astype(np.float64) @ X.astype(np.float64)
    np.testing.assert_allclose(plain, dense, **tol(dtype))


def test_panel_product_of_unsorted_rows_and_int64_indices_keeps_the_bits():
    """A plan's split only groups a row's entries in consecutive runs: with columns in any
    order the sums are still taken in stored order."""
    rng, indptr, indices, data = skewed(2, itype=np.int64, sort=False)
    X = rng.standard_normal((4000, 8))
    plan = small_panels(indptr, indices, 4000, 64)
    plain = with_threads(1, K.csr_matmul, indptr, indices, data, X, len(indptr) - 1)
    for nt in (1, 2, 2, 2, 2, 2, 2, 2, 2):       # repeated: a race between the threads would show
        assert bits_equal(with_threads(nt, K.csr_matmul, indptr, indices, data, X, len(indptr) - 1, plan), plain)
    np.testing.assert_allclose(plain, scipy_csr(indptr, indices, data, 4000) @ X, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3, 8, 13, 32, 64, 70])
def test_sddmm_dot_products_match_dense_and_panels_keep_the_bits(k):
    rng, indptr, indices, data = skewed(3)
    n_rows, n_cols = len(indptr) - 1, 4000
    G = rng.standard_normal((n_rows, k) if k > 1 else n_rows)
    X = rng.standard_normal((n_cols, k) if k > 1 else n_cols)
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))
    want = np.einsum("ij,ij->i", G.reshape(n_rows, -1)[rows], X.reshape(n_cols, -1)[indices])
    plain = with_threads(1, K.sddmm, indptr, indices, G, X)
    np.testing.assert_allclose(plain, want, rtol=1e-12, atol=1e-12)
    assert bits_equal(with_threads(2, K.sddmm, indptr, indices, G, X), plain)
    if k > 1:
        plan = small_panels(indptr, indices, n_cols, 8 * k)
        for nt in (1, 2):
            assert bits_equal(with_threads(nt, K.sddmm, indptr, indices, G, X, plan), plain), nt


def test_large_skewed_product_bit_identical_for_1_and_2_threads_with_default_plan():
    """At the default sizes (X beyond PANEL_MIN_X): the plan srcad.runtime.sparse would use."""
    rng = np.random.default_rng(4)
    n = 60_000
    lengths = np.where(rng.random(n) < 0.01, rng.integers(200, 2000, n), rng.integers(0, 4, n))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate([np.sort(rng.integers(0, n, L)) for L in lengths]).astype(np.int32)
    data = rng.standard_normal(len(indices))
    X = rng.standard_normal((n, 32))                      # 15 MB
    plan = K.csr_panel_plan(indptr, indices, n, 32 * 8)
    assert plan is not None
    plain = with_threads(1, K.csr_matmul, indptr, indices, data, X, n)
    one = with_threads(1, K.csr_matmul, indptr, indices, data, X, n, plan)
    two = with_threads(2, K.csr_matmul, indptr, indices, data, X, n, plan)
    assert bits_equal(one, plain) and bits_equal(two, plain)
    np.testing.assert_allclose(plain, scipy_csr(indptr, indices, data, n) @ X, rtol=1e-12, atol=1e-12)
    G = rng.standard_normal((n, 32))
    v = with_threads(1, K.sddmm, indptr, indices, G, X)
    assert bits_equal(with_threads(2, K.sddmm, indptr, indices, G, X, plan), v)


def test_a_plan_that_does_not_fit_is_refused_not_followed():
    rng, indptr, indices, data = skewed(5)
    X = rng.standard_normal((4000, 4))
    plan = small_panels(indptr, indices, 4000, 32)
    n_rows = len(indptr) - 1
    bad = K.PanelPlan(plan.heavy, plan.rows, plan.split.copy(), plan.cum)
    bad.split[len(bad.split) // 2] = 10**9                 # a position past the row's end
    with pytest.raises(ValueError):
        K.csr_matmul(indptr, indices, data, X, n_rows, bad)
    with pytest.raises(ValueError):
        K.sddmm(indptr, indices, rng.standard_normal((n_rows, 4)), X, bad)
    heavy = plan.heavy.copy()
    heavy[np.flatnonzero(heavy == 0)[0]] = 1              # a marked row missing from the list
    with pytest.raises(ValueError):
        K.csr_matmul(indptr, indices, data, X, n_rows, K.PanelPlan(heavy, plan.rows, plan.split, plan.cum))
    # a plan of another pattern (other row count) is not used: the plain path
    other = small_panels(indptr[:-100], indices, 4000, 32)
    np.testing.assert_allclose(K.csr_matmul(indptr, indices, data, X, n_rows, other),
                               scipy_csr(indptr, indices, data, 4000) @ X, rtol=1e-12, atol=1e-12)


def test_no_plan_where_panels_do_not_pay():
    rng, indptr, indices, data = skewed(6)
    assert K.csr_panel_plan(indptr, indices, 4000, 256) is None          # X of 1 MB: in the caches
    assert K.csr_panel_plan(indptr, indices, 4000, 256, min_x=0, min_len=10**6) is None  # no long row
    assert K.csr_panel_plan(indptr, indices, 4000, 256, min_x=0, panel_bytes=1 << 30) is None  # one panel


def lsq(A, X, T):
    return np.sum((A @ X - T) ** 2)


def test_gradient_through_the_panel_path_matches_finite_differences(monkeypatch):
    """srcad's A @ X and its gradient w.r.t. A's values (sddmm) and X, with plans in use."""
    monkeypatch.setattr(K, "PANEL_MIN_X", 0)
    monkeypatch.setattr(K, "PANEL_MIN_ROW", 8)
    monkeypatch.setattr(K, "PANEL_BYTES", 24 * 30)    # 4 panels of 30 columns (k = 3)
    rt_sparse.clear_cache()
    rng = np.random.default_rng(7)
    n_rows, n_cols, k = 40, 120, 3
    lengths = np.where(np.arange(n_rows) % 8 == 0, 30, rng.integers(0, 3, n_rows))
    A = sp.csr_array((rng.standard_normal(lengths.sum()),
                      np.concatenate([np.sort(rng.choice(n_cols, L, replace=False)) for L in lengths]),
                      np.concatenate([[0], np.cumsum(lengths)])), shape=(n_rows, n_cols))
    assert A.has_canonical_format
    X, T = rng.standard_normal((n_cols, k)), rng.standard_normal((n_rows, k))
    gA, gX = srcad.grad(lsq, wrt=(0, 1))(A, X, T)
    plans = [v for key, (_, v) in rt_sparse.pattern._CACHE.items() if key[0] == "panels"]
    assert plans and plans[0] is not None                 # the panel path ran
    np.testing.assert_allclose(srcad.sparse.matmul(A, X), A.toarray() @ X, rtol=1e-12, atol=1e-12)
    assert_grad_close(lsq, (A, X, T), gA, wrt=0)
    assert_grad_close(lsq, (A, X, T), gX, wrt=1)
    rt_sparse.clear_cache()


def test_small_calls_run_on_one_thread_with_the_same_bits():
    K.set_num_threads(2)
    assert K._threads(K.SERIAL_WORK - 1) == 1 and K._threads(K.SERIAL_WORK) == 2
    rng, indptr, indices, data = skewed(8, n_rows=300, n_cols=300)
    X = rng.standard_normal((300, 4))
    got = K.csr_matmul(indptr, indices, data, X, 300)
    np.testing.assert_allclose(got, scipy_csr(indptr, indices, data, 300) @ X, rtol=1e-12, atol=1e-12)


def test_row_max_and_its_gradient_same_bits_for_1_and_2_threads_and_match_numpy():
    """The row max kernels (which prefetch the heads of rows ahead) on a skewed pattern with
    ties: the values equal np.maximum.reduceat, the gradient (with and without the located
    positions) equals a hand-written one sharing g evenly among tied entries."""
    rng = np.random.default_rng(9)
    n = 50_000
    lengths = np.where(rng.random(n) < 0.02, rng.integers(20, 600, n), rng.integers(1, 4, n))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    data = rng.choice(np.arange(-40.0, 40.0), indptr[-1])           # many ties
    g = rng.standard_normal(n)
    runs = [with_threads(t, K.csr_row_reduce, indptr, data, n, "max", True) for t in (1, 2)]
    vals = runs[0][0]
    assert bits_equal(vals, np.maximum.reduceat(data, indptr[:-1])) and bits_equal(runs[1][0], vals)
    rows = np.repeat(np.arange(n), lengths)
    tied = data == vals[rows]
    want = np.where(tied, g[rows] / np.bincount(rows, weights=tied, minlength=n)[rows], 0.0)
    for at in (None, runs[0][1]):
        one = with_threads(1, K.csr_row_reduce_vjp, indptr, data, vals, g, at)
        two = with_threads(2, K.csr_row_reduce_vjp, indptr, data, vals, g, at)
        assert bits_equal(one, two)
        np.testing.assert_allclose(one, want, rtol=1e-15, atol=0)
