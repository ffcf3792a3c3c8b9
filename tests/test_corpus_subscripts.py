"""Corpus: reading and writing subscripts.

Reads: `x[i]`, `x[1:3]`, `x[:, 0]`, `x[::2]`, `x[::-1]`, negative indices, `x[idx]` with repeated
integer indices, `x[mask]` with a boolean mask, `x[i, j]`, `x[1:, :-1]`, `x[:, None]`, fancy 2-D
indexing. Writes: `y[i] = v`, `y[a:b] += v`, `y[idx] = v` (also with repeated indices, where
NumPy keeps only the last write), `y[i] *= x[i]`, `y[mask] = v`, writes inside `if`, inside
loops and in both, into arrays made by `np.zeros`/`np.empty` and into a copy of an input, and
writes whose right-hand side reads the array being written. Every function is checked against
central finite differences.
"""
import numpy as np
import pytest

from corpus_helpers_mod import case, check_grad, check_value_and_grad, check_vjp, mat, vec


# --- reads ------------------------------------------------------------------------------------

def pick_elements(x):
    return x[0] * x[3] + np.sin(x[2])


def slice_products(x):
    return np.sum(x[1:3] ** 2) + x[1:4] @ x[2:5]


def column_reads(A):
    return np.sum(A[:, 0] * A[:, 2]) + np.sum(A[1] ** 2)


def strided_pairs(x):
    return np.sum(x[::2] * x[1::2])


def negative_indices(x):
    return x[-1] * x[-2] + np.sum(x[-3:] ** 2) + x[:-2] @ x[2:]


def reversed_dot(x):
    return x[::-1] @ np.sin(x)


def repeated_gather(x):
    idx = np.array([0, 2, 2, 4, 0, 0])
    return np.sum(x[idx] ** 2 * np.arange(1, 7))


def gather_with_index_argument(x, idx):
    return np.sum(np.tanh(x[idx]) * x[idx[::-1]])


def masked_sum(x):
    mask = x > 0.2
    return np.sum(x[mask] ** 2) - np.sum(np.sin(x[~mask]))


def constant_mask(x):
    keep = np.array([True, False, True, True, False, True])
    return np.sum(np.exp(x[keep]))


def masked_2d(A):
    return np.sum(A[A > 0.5] ** 2) + np.sum(A[:, A[0] < 0])


def element_2d(A):
    return A[0, 1] * A[2, 2] + A[1, -1] ** 2 - A[-1, 0]


def stencil_2d(A):
    return np.sum(A[1:, :-1] * A[:-1, 1:]) + np.sum((A[2:, :] - A[:-2, :]) ** 2)


def block_read(A):
    B = A[1:3, 1:]
    return np.sum(B @ B.T)


def fancy_pairs_2d(A):
    rows = np.array([0, 2, 2, 1])
    cols = np.array([1, 1, 1, 0])
    return np.sum(A[rows, cols] ** 2)


def embedding_gram(E, idx):
    V = E[idx]
    return np.sum(V @ V.T)


def outer_via_newaxis(x):
    return np.sum(np.tanh(x[:, None] - 2.0 * x[None, :]) ** 2)


def finite_difference_loop(x):
    s = 0.0
    for i in range(1, len(x)):
        s += (x[i] - x[i - 1]) ** 2
    return s


def index_from_argument(x, i):
    return x[i] ** 3 + x[i - 1] * x[i + 1]


def argmax_then_read(x):
    k = np.argmax(x)
    return x[k] ** 2 + x[0] * x[k]


# --- writes -----------------------------------------------------------------------------------

def write_into_zeros(x):
    y = np.zeros(4)
    y[0] = 2.0 * x[1]
    y[3] = np.sin(x[0])
    y[1] = x[2] * x[3]
    return y @ y + y.sum()


def slice_accumulate(x):
    y = np.zeros(6)
    y[1:4] += x[:3] ** 2
    y[2:5] += x[3:6]
    return np.sum(y ** 2)


def scatter_by_index_array(x):
    y = np.zeros(5)
    idx = np.array([4, 0, 2])
    y[idx] = x[:3] * x[1:4]
    return np.sum(np.cos(y))


def repeated_index_assign(x):
    y = np.zeros(4)
    idx = np.array([1, 3, 1])
    y[idx] = x[:3]  # the last write to y[1] wins: y[1] = x[2]
    return y @ np.array([1.0, 2.0, 3.0, 4.0]) + np.sum(y ** 2)


def repeated_index_add(x):
    y = x[:4].copy()
    idx = np.array([0, 2, 0])
    y[idx] += x[4:7] ** 2  # buffered: y[0] gets only the last increment, x[6] ** 2
    return np.sum(y ** 2)


def overwrite_input_copy(x):
    y = x.copy()
    y[2] = 5.0
    return np.sum(y ** 2)


def write_then_update(x):
    y = x.copy()
    y[1] = x[0] ** 2
    y[1] = y[1] * x[2]
    y[0] *= y[1]
    return np.sum(np.sin(y))


def multiply_in_place(x):
    y = x.copy()
    for i in range(len(y)):
        y[i] *= x[i]
    return np.sum(np.sqrt(1.0 + y))


def write_in_branch(x):
    y = x.copy()
    if x[0] > 0:
        y[0] = np.exp(x[0])
    else:
        y[1] = 0.0
    return np.sum(y * np.arange(1, len(x) + 1))


def manual_cumsum(x):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] + x[i] ** 2
    return np.sum(np.sin(y))


def piecewise_fill(x):
    y = np.empty_like(x)
    for i in range(len(x)):
        if x[i] > 0:
            y[i] = x[i] ** 2
        else:
            y[i] = -0.5 * x[i]
    return np.sum(y * y)


def neighbour_products(x):
    y = np.empty(len(x) - 1)
    for i in range(len(x) - 1):
        y[i] = x[i + 1] * x[i]
    return np.sum(np.exp(-y))


def write_2d(A):
    B = np.zeros((3, 3))
    B[0, :] = A[1]
    B[:, 2] += A[:, 0]
    B[1, 1] = A[0, 0] * A[2, 2]
    return np.sum(B ** 2) + np.trace(B)


def squash_column(A):
    Y = A.copy()
    Y[:, 0] = np.tanh(Y[:, 0])
    Y[-1] = Y[-1] * Y[0]
    return np.sum(Y @ Y.T)


def relu_by_mask(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y ** 3 + y)


def scale_masked(x):
    y = x.copy()
    y[x > 0.5] *= 2.0
    return np.sum(y ** 2)


def negative_index_writes(x):
    y = np.zeros(len(x) + 1)
    y[-1] = np.sum(x)
    y[:-1] = x ** 2
    y[-2] += y[-1]
    return y @ y


def self_referencing_slice(x):
    y = x.copy()
    y[1:] = y[1:] * y[:-1]
    return np.sum(y)


def overlapping_inplace_add(x):
    y = x.copy()
    y[1:] += y[:-1]
    return np.sum(y ** 2)


def running_product_in_place(x):
    y = x.copy()
    for i in range(1, len(y)):
        y[i] = y[i] * y[i - 1] + 0.1
    return y[-1] + np.sum(y)


def recurrent_rows(X):
    H = np.zeros_like(X)
    H[0] = np.tanh(X[0])
    for t in range(1, X.shape[0]):
        H[t] = np.tanh(0.5 * H[t - 1] + X[t])
    return np.sum(H ** 2)


def interleave(x):
    y = np.zeros(6)
    y[::2] = x[:3]
    y[1::2] = x[3:] ** 2
    return np.sum(np.diff(y) ** 2)


def gram_by_loops(X):
    n = X.shape[0]
    G = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            G[i, j] += X[i] @ X[j]
    return np.sum(G ** 2)


def symmetric_fill(x):
    n = 3
    S = np.zeros((n, n))
    k = 0
    for i in range(n):
        for j in range(i, n):
            S[i, j] = x[k]
            if i != j:
                S[j, i] = x[k]
            k += 1
    return np.sum(S @ S)


# --- case table -------------------------------------------------------------------------------

CASES = [
    case(pick_elements, lambda: (vec(1, 5),)),
    case(slice_products, lambda: (vec(2, 6),)),
    case(column_reads, lambda: (mat(3, 4, 3),)),
    case(strided_pairs, lambda: (vec(4, 8),)),
    case(negative_indices, lambda: (vec(5, 6),)),
    case(reversed_dot, lambda: (vec(6, 5),)),
    case(repeated_gather, lambda: (vec(7, 5),)),
    case(gather_with_index_argument, lambda: (vec(8, 6), np.array([5, 1, 1, 3]))),
    case(masked_sum, lambda: (np.array([0.9, -0.4, 0.1, 0.5, -1.2, 0.35]),)),
    case(constant_mask, lambda: (vec(9, 6),)),
    case(masked_2d, lambda: (np.array([[0.9, -0.4, 0.1], [0.55, 0.25, -0.8], [1.3, 0.7, 0.3]]),)),
    case(element_2d, lambda: (mat(10, 3, 3),)),
    case(stencil_2d, lambda: (mat(11, 4, 4),)),
    case(block_read, lambda: (mat(12, 4, 3),)),
    case(fancy_pairs_2d, lambda: (mat(13, 3, 3),)),
    case(embedding_gram, lambda: (mat(14, 5, 3), np.array([3, 0, 3, 1]))),
    case(outer_via_newaxis, lambda: (vec(15, 4),)),
    case(finite_difference_loop, lambda: (vec(16, 7),)),
    case(index_from_argument, lambda: (vec(17, 6), 2)),
    case(index_from_argument, lambda: (vec(17, 6), -2), tag="negative"),
    case(argmax_then_read, lambda: (vec(18, 6),)),
    case(write_into_zeros, lambda: (vec(19, 4),)),
    case(slice_accumulate, lambda: (vec(20, 6),)),
    case(scatter_by_index_array, lambda: (vec(21, 4),)),
    case(repeated_index_assign, lambda: (vec(22, 3),)),
    case(repeated_index_add, lambda: (vec(23, 7),)),
    case(overwrite_input_copy, lambda: (vec(24, 5),)),
    case(write_then_update, lambda: (vec(25, 4),)),
    case(multiply_in_place, lambda: (vec(26, 5),)),
    case(write_in_branch, lambda: (vec(27, 4, 0.1, 1.0),), tag="pos"),
    case(write_in_branch, lambda: (vec(27, 4, -1.0, -0.1),), tag="neg"),
    case(manual_cumsum, lambda: (vec(28, 6),)),
    case(piecewise_fill, lambda: (np.array([0.7, -0.4, 1.2, -1.5, 0.3]),)),
    case(neighbour_products, lambda: (vec(29, 6),)),
    case(write_2d, lambda: (mat(30, 3, 3),)),
    case(squash_column, lambda: (mat(31, 3, 4),)),
    case(relu_by_mask, lambda: (np.array([0.9, -0.4, 0.1, 0.5, -1.2]),)),
    case(scale_masked, lambda: (np.array([0.9, -0.4, 0.1, 0.65, 1.2]),)),
    case(negative_index_writes, lambda: (vec(32, 4),)),
    case(self_referencing_slice, lambda: (vec(33, 5),)),
    case(overlapping_inplace_add, lambda: (vec(34, 5),)),
    case(running_product_in_place, lambda: (vec(35, 5),)),
    case(recurrent_rows, lambda: (mat(36, 4, 3),)),
    case(interleave, lambda: (vec(37, 6),)),
    case(gram_by_loops, lambda: (mat(38, 3, 4),)),
    case(symmetric_fill, lambda: (vec(39, 6),)),
]


@pytest.mark.parametrize("c", CASES)
def test_grad_matches_finite_differences(c):
    check_grad(c)


VALUE_AND_GRAD_CASES = [
    case(repeated_index_add, lambda: (vec(23, 7),)),
    case(recurrent_rows, lambda: (mat(36, 4, 3),)),
]


@pytest.mark.parametrize("c", VALUE_AND_GRAD_CASES)
def test_value_and_grad(c):
    check_value_and_grad(c)


VJP_CASES = [
    case(embedding_gram, lambda: (mat(14, 5, 3), np.array([3, 0, 3, 1]))),
    case(index_from_argument, lambda: (vec(17, 6), 2)),
    case(write_2d, lambda: (mat(30, 3, 3),)),
]


@pytest.mark.parametrize("c", VJP_CASES)
def test_vjp(c):
    check_vjp(c)
