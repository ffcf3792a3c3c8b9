"""Corpus: control flow in reverse mode.

`if/elif/else` (also on array values such as `x.sum() > 0`), conditional expressions, `for` over
`range` (start/stop/step, negative step, zero trips), over the rows of a 2-D array, `enumerate`,
`zip`, `while` with a data-dependent condition, `break`, `continue`, early `return` in branches
and loops, nested loops, loops that overwrite a variable (`x = np.sin(x)`, Horner), accumulators
and loop-carried arrays, keyword-only data arguments.

Each function is checked against central finite differences. Kinks (a branch taken exactly at
its threshold, tied maxima) are checked against values computed by hand, and the 10,000-step
`x = np.sin(x)` chain against the product of cosines.
"""
import numpy as np
import pytest

import srcad
from corpus_helpers_mod import (case, check_grad, check_value_and_grad, check_vjp, mat, vec)


# --- branches ---------------------------------------------------------------------------------

def branch_on_sum(x):
    if x.sum() > 0:
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def piecewise_by_temperature(x, t):
    if t < -1.0:
        y = 2.0 * x
    elif t < 1.0:
        y = np.exp(x) * t
    else:
        y = x ** 3 / t
    return np.sum(y) + t ** 2


def branch_on_norm(x):
    n = np.linalg.norm(x)
    if n > 1.0:
        x = x / n
    return np.sum(x * np.arange(len(x)))


def conditional_scale(x):
    scale = 2.0 if x.mean() > 0 else -0.5
    return np.sum(scale * x ** 2)


def conditional_expression_arrays(x, y):
    z = np.sin(x) if x[0] > y[0] else np.cos(y)
    return np.sum(z * x * y)


def one_sided_update(x):
    y = x * 1.0
    if x.max() > 0.5:
        y = y * x
    return np.sum(y)


def nested_branches(x):
    s = x.sum()
    if s > 0:
        if x[0] > x[1]:
            out = s * x[0]
        else:
            out = s * x[1]
    else:
        out = -s ** 2
    return out


def elementwise_select(x):
    return np.sum(np.where(x > 0.0, np.log1p(x ** 2), x ** 3))


def ridge_loss(w, *, X, y, lam):
    r = X @ w - y
    loss = r @ r
    if lam > 0:
        loss = loss + lam * (w @ w)
    return loss


# --- for loops --------------------------------------------------------------------------------

def weighted_square_sum(x):
    total = 0.0
    for i in range(len(x)):
        total += (i + 1) * x[i] ** 2
    return total


def odd_neighbour_products(x):
    total = 0.0
    for i in range(1, len(x) - 1, 2):
        total += x[i] * x[i - 1] - 0.5 * x[i + 1]
    return total


def backward_recurrence(x):
    acc = 0.0
    for i in range(len(x) - 1, -1, -1):
        acc = 0.5 * acc + np.sin(x[i]) * x[i]
    return acc


def backward_stride(x):
    total = 0.0
    for i in range(len(x) - 1, 0, -2):
        total += x[i] * np.cos(x[i - 1])
    return total


def rows_tanh_score(A, w):
    total = 0.0
    for row in A:
        total += np.tanh(row @ w)
    return total


def enumerate_decay(x):
    total = 0.0
    for i, v in enumerate(x):
        total += v * 0.9 ** i + v ** 2 / (i + 1)
    return total


def zip_mismatch(x, y):
    total = 0.0
    for a, b in zip(x, y):
        total += a * b + np.sin(a - b)
    return total


def enumerate_zip_rows(A, B):
    total = 0.0
    for i, (a, b) in enumerate(zip(A, B)):
        total += (i + 1.0) * np.dot(a, b)
    return total


def parity_branch_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        if i % 2 == 0:
            s += x[i] ** 2
        else:
            s -= np.sin(x[i])
    return s


def data_branch_in_loop(x):
    s = 0.0
    for v in x:
        if v > 0:
            s += np.log1p(v)
        else:
            s += v ** 2
    return s


def elif_chain_in_loop(x):
    total = 0.0
    for v in x:
        if v < -0.5:
            total += -v
        elif v < 0.5:
            total += v ** 2
        else:
            total += np.sqrt(v)
    return total


def pairwise_interaction(A):
    n = A.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            total += A[i, j] * A[j, i]
    return total


def pairwise_energy(P):
    e = 0.0
    for i in range(len(P)):
        for j in range(len(P)):
            if i != j:
                d = P[i] - P[j]
                e += 1.0 / (1.0 + np.dot(d, d))
    return e


# --- while, break, continue, early return -------------------------------------------------------

def grow_until_large(x):
    y = x
    while np.sum(y * y) < 50.0:
        y = 1.5 * y + 0.1
    return np.sum(np.sin(y))


def newton_sqrt(a):
    r = a
    while abs(r * r - a) > 1e-10 * a:
        r = 0.5 * (r + a / r)
    return r


def counted_while(x, n):
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * np.sin(x)
        i += 1
    return np.sum(x ** 2)


def while_true_with_break(x):
    k = 0
    y = x
    while True:
        y = np.cos(y) + 0.5 * x
        k += 1
        if k >= 6 or np.sum(y) > 3.0:
            break
    return np.sum(y ** 2) + k


def sum_until_budget(x):
    total = 0.0
    for v in x:
        if total > 2.0:
            break
        total += v ** 2
    return total


def skip_negatives(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total += v ** 3
    return total


def first_index_above(x):
    for i in range(len(x)):
        if x[i] > 0.5:
            break
    return x[i] ** 2 + np.sum(x[:i])


def first_large_product(x):
    acc = 1.0
    for i in range(len(x)):
        acc = acc * x[i]
        if acc > 5.0:
            return 2.0 * acc
    return acc


def early_return_on_sign(x):
    if x[0] > 0:
        return np.sum(x ** 2)
    y = np.exp(x)
    return np.sum(y) / len(x)


def search_then_return(x, threshold):
    for i, v in enumerate(x):
        if v > threshold:
            return v * np.sum(x[:i + 1])
    return threshold * np.sum(x)


def first_argmax_value(x):
    best = x[0]
    for v in x[1:]:
        if v > best:
            best = v
    return 3.0 * best


# --- overwritten variables, accumulators, loop-carried arrays ---------------------------------

def repeated_sin(x, n):
    for _ in range(n):
        x = np.sin(x)
    return np.sum(x)


def horner(c, x):
    s = 0.0
    for ci in c:
        s = s * x + ci
    return s


def horner_vectorized(c, x):
    s = np.zeros_like(x)
    for k in range(len(c) - 1, -1, -1):
        s = s * x + c[k]
    return np.sum(s)


def running_product(x):
    p = 1.0
    for v in x:
        p *= v
    return p


def fixed_point_iteration(x):
    y = np.zeros_like(x)
    for _ in range(20):
        y = 0.5 * np.cos(y) + 0.3 * x
    return np.sum(y ** 2)


def rnn_final_state(X, W):
    h = np.zeros(W.shape[0])
    for x_t in X:
        h = np.tanh(W @ h + x_t)
    return np.sum(h ** 2)


def outer_accumulator(X):
    M = np.zeros((X.shape[1], X.shape[1]))
    for v in X:
        M += np.outer(v, v)
    return np.trace(M @ M)


def unrolled_gradient_descent(w, X, y):
    for _ in range(5):
        r = X @ w - y
        w = w - 0.05 * (X.T @ r)
    return np.sum((X @ w - y) ** 2)


def momentum_steps(x, g):
    v = np.zeros_like(x)
    for _ in range(4):
        v = 0.9 * v + g * np.cos(x)
        x = x - 0.1 * v
    return np.sum(x ** 2)


# --- case table -------------------------------------------------------------------------------

def _ridge_data():
    return dict(X=mat(41, 6, 3), y=vec(42, 6))


CASES = [
    case(branch_on_sum, lambda: (vec(1, 5, 0.1, 1.0),), tag="pos"),
    case(branch_on_sum, lambda: (vec(2, 5, -1.0, -0.1),), tag="neg"),
    case(piecewise_by_temperature, lambda: (vec(3, 4), -2.0), tag="cold"),
    case(piecewise_by_temperature, lambda: (vec(3, 4), 0.5), (0, 1), tag="mild"),
    case(piecewise_by_temperature, lambda: (vec(3, 4), 3.0), 1, tag="hot"),
    case(branch_on_norm, lambda: (vec(4, 5, 0.5, 1.0),), tag="long"),
    case(branch_on_norm, lambda: (vec(4, 5, 0.0, 0.3),), tag="short"),
    case(conditional_scale, lambda: (vec(5, 6, 0.0, 1.0),), tag="pos"),
    case(conditional_scale, lambda: (vec(5, 6, -1.0, 0.0),), tag="neg"),
    case(conditional_expression_arrays, lambda: (vec(6, 4, 0.5, 1.0), vec(7, 4, -1.0, 0.0)),
         (0, 1), tag="if"),
    case(conditional_expression_arrays, lambda: (vec(6, 4, -1.0, 0.0), vec(7, 4, 0.5, 1.0)),
         (0, 1), tag="else"),
    case(one_sided_update, lambda: (vec(8, 5),)),
    case(one_sided_update, lambda: (vec(8, 5, -1.0, 0.4),), tag="skip"),
    case(nested_branches, lambda: (np.array([0.9, 0.2, 0.3]),), tag="first"),
    case(nested_branches, lambda: (np.array([0.2, 0.9, 0.3]),), tag="second"),
    case(nested_branches, lambda: (np.array([-0.9, 0.2, 0.3]),), tag="neg"),
    case(elementwise_select, lambda: (np.array([-0.8, -0.3, 0.2, 0.6, 1.1]),)),
    case(ridge_loss, lambda: (vec(40, 3),), kwargs=dict(_ridge_data(), lam=0.1)),
    case(ridge_loss, lambda: (vec(40, 3),), kwargs=dict(_ridge_data(), lam=0.0), tag="nolam"),
    case(weighted_square_sum, lambda: (vec(9, 7),)),
    case(odd_neighbour_products, lambda: (vec(10, 8),)),
    case(backward_recurrence, lambda: (vec(11, 6),)),
    case(backward_stride, lambda: (vec(12, 7),)),
    case(rows_tanh_score, lambda: (mat(13, 4, 3), vec(14, 3)), (0, 1)),
    case(rows_tanh_score, lambda: (mat(13, 4, 3), vec(14, 3)), 1),
    case(enumerate_decay, lambda: (vec(15, 6),)),
    case(zip_mismatch, lambda: (vec(16, 5), vec(17, 5)), (0, 1)),
    case(enumerate_zip_rows, lambda: (mat(18, 3, 4), mat(19, 3, 4)), (0, 1)),
    case(parity_branch_in_loop, lambda: (vec(20, 7),)),
    case(data_branch_in_loop, lambda: (np.array([0.7, -0.4, 1.2, -1.5, 0.3]),)),
    case(elif_chain_in_loop, lambda: (np.array([-1.2, -0.2, 0.1, 0.9, 1.6, -0.7]),)),
    case(pairwise_interaction, lambda: (mat(21, 4, 4),)),
    case(pairwise_energy, lambda: (mat(22, 5, 2),)),
    case(grow_until_large, lambda: (vec(23, 4, 0.2, 1.0),)),
    case(grow_until_large, lambda: (vec(23, 4, 4.0, 5.0),), tag="zero_trips"),
    case(newton_sqrt, lambda: (2.0,)),
    case(newton_sqrt, lambda: (30.0,), tag="big"),
    case(counted_while, lambda: (vec(24, 5), 7)),
    case(counted_while, lambda: (vec(24, 5), 0), tag="zero_trips"),
    case(while_true_with_break, lambda: (vec(25, 3, -0.6, -0.2),), tag="counter"),
    case(while_true_with_break, lambda: (vec(25, 3, 1.2, 1.6),), tag="data"),
    case(sum_until_budget, lambda: (np.array([0.8, -0.9, 0.7, 1.1, 0.6, -0.5]),)),
    case(skip_negatives, lambda: (np.array([0.8, -0.9, 0.7, -1.1, 0.6, 1.3]),)),
    case(first_index_above, lambda: (np.array([0.1, -0.4, 0.3, 0.9, 0.2]),)),
    case(first_index_above, lambda: (np.array([0.1, -0.4, 0.3]),), tag="none"),
    case(first_large_product, lambda: (np.array([1.5, 2.0, 1.2, 2.5, 0.5]),), tag="early"),
    case(first_large_product, lambda: (np.array([1.5, 0.5, 1.2, 0.8]),), tag="late"),
    case(early_return_on_sign, lambda: (vec(26, 4, 0.1, 1.0),), tag="pos"),
    case(early_return_on_sign, lambda: (vec(26, 4, -1.0, -0.1),), tag="neg"),
    case(search_then_return, lambda: (np.array([0.1, 0.4, 0.9, 0.2]), 0.6), (0, 1)),
    case(search_then_return, lambda: (np.array([0.1, 0.4, 0.3]), 0.6), (0, 1), tag="none"),
    case(first_argmax_value, lambda: (vec(27, 6),)),
    case(repeated_sin, lambda: (vec(28, 4), 25)),
    case(repeated_sin, lambda: (vec(28, 4), 0), tag="zero_trips"),
    case(horner, lambda: (vec(29, 5), 0.7)),
    case(horner, lambda: (vec(29, 5), -1.3), 1),
    case(horner, lambda: (vec(29, 5), 0.7), (0, 1)),
    case(horner_vectorized, lambda: (vec(30, 4), vec(31, 6)), (0, 1)),
    case(running_product, lambda: (vec(32, 6, 0.5, 1.5),)),
    case(fixed_point_iteration, lambda: (vec(33, 5),)),
    case(rnn_final_state, lambda: (mat(34, 4, 3), 0.5 * mat(35, 3, 3)), (0, 1)),
    case(outer_accumulator, lambda: (mat(36, 4, 3),)),
    case(unrolled_gradient_descent, lambda: (vec(37, 3), mat(38, 6, 3), vec(39, 6)), (0, 1, 2)),
    case(momentum_steps, lambda: (vec(43, 4), vec(44, 4)), (0, 1)),
]


@pytest.mark.parametrize("c", CASES)
def test_grad_matches_finite_differences(c):
    check_grad(c)


VALUE_AND_GRAD_CASES = [
    case(piecewise_by_temperature, lambda: (vec(3, 4), 0.5), (0, 1)),
    case(rnn_final_state, lambda: (mat(34, 4, 3), 0.5 * mat(35, 3, 3)), 1),
    case(ridge_loss, lambda: (vec(40, 3),), kwargs=dict(_ridge_data(), lam=0.1)),
]


@pytest.mark.parametrize("c", VALUE_AND_GRAD_CASES)
def test_value_and_grad(c):
    check_value_and_grad(c)


VJP_CASES = [
    case(horner, lambda: (vec(29, 5), 0.7)),
    case(counted_while, lambda: (vec(24, 5), 7)),
    case(unrolled_gradient_descent, lambda: (vec(37, 3), mat(38, 6, 3), vec(39, 6))),
]


@pytest.mark.parametrize("c", VJP_CASES)
def test_vjp(c):
    check_vjp(c)


# --- long chains, kinks and ties, against hand-computed values --------------------------------

def test_sin_chain_of_10000_steps():
    x0 = np.array([0.3, 1.0, 2.5])
    got = srcad.grad(repeated_sin)(x0.copy(), 10_000)
    y, want = x0.copy(), np.ones_like(x0)
    for _ in range(10_000):
        want *= np.cos(y)  # d sin(y)/dy at every step, chained
        y = np.sin(y)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=0)


def relu_by_branch(x):
    total = 0.0
    for v in x:
        if v > 0:
            total += v ** 2
        else:
            total += 0.5 * v
    return total


def test_branch_exactly_at_threshold_follows_the_branch_taken():
    # v = 0 takes the else branch, whose derivative is 0.5.
    got = srcad.grad(relu_by_branch)(np.array([0.0, 1.5, -2.0]))
    np.testing.assert_allclose(got, [0.5, 3.0, 0.5])


@pytest.mark.parametrize("x, want", [
    ([1.0, 4.0, 2.0, 4.0], [0.0, 3.0, 0.0, 0.0]),  # strict `>`: the first maximum is kept
    ([2.0, 2.0, 2.0], [3.0, 0.0, 0.0]),
])
def test_loop_argmax_with_ties_follows_the_comparisons(x, want):
    got = srcad.grad(first_argmax_value)(np.array(x))
    np.testing.assert_allclose(got, want)


def peak_score(x):
    return 2.0 * np.max(x) + np.sum(x)


def row_peaks(A):
    return np.sum(A.max(axis=1) * np.array([1.0, 2.0]))


def trough_score(x):
    return x.min() * 4.0


def weighted_maximum(x, y):
    return np.sum(np.maximum(x, y) * np.arange(1.0, len(x) + 1.0))


def test_tied_maxima_split_the_gradient_evenly():
    np.testing.assert_allclose(srcad.grad(peak_score)(np.array([1.0, 3.0, 3.0, 0.0])),
                               [1.0, 2.0, 2.0, 1.0])
    np.testing.assert_allclose(srcad.grad(row_peaks)(np.array([[1.0, 5.0, 5.0], [2.0, 0.0, 2.0]])),
                               [[0.0, 0.5, 0.5], [1.0, 0.0, 1.0]])
    np.testing.assert_allclose(srcad.grad(trough_score)(np.array([0.5, -1.0, -1.0, -1.0])),
                               [0.0, 4.0 / 3, 4.0 / 3, 4.0 / 3])


def test_maximum_at_equal_arguments_splits_evenly():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    gx, gy = srcad.grad(weighted_maximum, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [0.5, 2.0, 1.5])
    np.testing.assert_allclose(gy, [0.5, 0.0, 1.5])
