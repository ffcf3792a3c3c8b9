"""User functions over SciPy sparse inputs, shared by the sparse reverse- and forward-mode tests."""
import numpy as np
import scipy.sparse as sp

import srcad


def lsq(A, X, T):
    return np.sum((A @ X - T) ** 2)


def lsq_kernel(A, X, T):
    return np.sum((srcad.sparse.matmul(A, X) - T) ** 2)


def transposed(A, G):
    return np.sum(np.sin(A.T @ G))


def total(A):
    return A.sum() * 3.0


def row_sums(A, w):
    s = np.asarray(A.sum(axis=1)).ravel()
    return np.sum(np.sin(s) * w)


def col_sums(A, w):
    s = np.asarray(A.sum(axis=0)).ravel()
    return np.sum(np.sin(s) * w)


def scaled(A, D):
    return A.multiply(D).sum()


def scaled_data(A, D):
    return np.sum(np.sin(A.multiply(D).data))


def values_weighted(A, w):
    return np.sum(np.sin(A.data) * w)


def from_csr_parts(values, indices, indptr, X):
    A = sp.csr_array((values, indices, indptr), shape=(6, 7))
    return np.sum(np.tanh(A @ X)) + np.sum(A.data ** 3)


def from_csr_parts_matrix(values, indices, indptr, X):
    A = sp.csr_matrix((values, indices, indptr), shape=(6, 7))
    return np.sum(np.tanh(A @ X))


def from_coo_parts(values, row, col, X):
    A = sp.coo_array((values, (row, col)), shape=(6, 7))
    return np.sum(np.tanh(A @ X)) + np.sum(A.data * values)


def csr_from_pairs(values, row, col, X):
    A = sp.csr_array((values, (row, col)), shape=(6, 7))
    return np.sum(np.tanh(A @ X))


def row_max(A, w):
    return np.sum(srcad.sparse.reduce_max(A, axis=1)[:-1] * w)


def col_min(A, w):
    m = srcad.sparse.reduce_min(A, axis=0)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * w)


def seg_sum(data, ids, W):
    return np.sum(np.sin(srcad.sparse.segment_sum(data, ids, 5)) * W)


def seg_max(data, ids, W):
    m = srcad.sparse.segment_max(data, ids, 5)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * W)


def seg_min(data, ids, W):
    m = srcad.sparse.segment_min(data, ids, 5)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * W)


def two_uses(A, X):
    Y = A @ X
    Z = A.T @ Y
    return np.sum(Z ** 2) + np.sum(A.data) + A.multiply(X[:6, :1]).sum()


def product(A, X):
    return A @ X


def dense_times_sparse(X, A):
    return np.sum(np.sin(X @ A) * 2.0) + np.sum((X[0] @ A) ** 2)
