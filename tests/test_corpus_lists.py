"""Corpus: lists and tuples.

`xs = []` + `xs.append(v)` in a loop, then `np.stack(xs)` / `np.array(xs)` (of scalars and of
arrays), list literals, nested lists, `np.concatenate`, `sum(xs)`, `xs[i]`, `xs[-1]`, list item
assignment, lists of constant weights; tuple packing and unpacking (`a, b = b, a + b`), swaps,
unpacking rows and shapes, functions returning several values, and `grad(has_aux=True)` for a
function returning `(loss, aux)`. Constructs outside the contract (comprehensions, generators,
lambdas, `reversed`, star-unpacking) must give a correct gradient or a clear
`srcad.SrcadError` naming this file. Every gradient is checked against central finite differences.
"""
import os

import numpy as np
import pytest

from corpus_helpers_mod import (case, check_grad, check_grad_or_rejected, check_has_aux,
                                check_value_and_grad, check_vjp, mat, vec)


# --- lists ------------------------------------------------------------------------------------

def stack_scaled_copies(x):
    rows = []
    for i in range(3):
        rows.append((i + 1) * x + np.sin(x))
    M = np.stack(rows)
    return np.sum(M ** 2) + np.sum(M[:, 0] * M[:, -1])


def vandermonde_columns(x):
    cols = []
    for k in range(4):
        cols.append(x ** k)
    V = np.stack(cols, axis=1)
    return np.sum((V @ np.array([1.0, -2.0, 0.5, 0.1])) ** 2)


def array_of_scalars(x):
    vals = []
    for v in x:
        vals.append(v ** 2 + 1.0)
    arr = np.array(vals)
    return arr @ arr


def array_of_rows(A):
    rows = [A[0] * 2.0, A[1] ** 2, np.sin(A[2])]
    B = np.array(rows)
    return np.sum(B @ B.T)


def nested_list_matrix(x):
    M = np.array([[x[0], x[1]], [x[2], x[3]]])
    return np.sum(M @ M) + np.trace(M) * x[0]


def sum_builtin_of_scalars(x):
    terms = []
    for i in range(len(x)):
        terms.append(np.sin(x[i]) * x[i])
    return sum(terms)


def sum_builtin_of_arrays(X):
    parts = []
    for row in X:
        parts.append(np.tanh(row))
    total = sum(parts)
    return np.sum(total ** 2)


def list_literal_indexing(x):
    parts = [x[:2], x[2:4], x[4:]]
    return np.sum(parts[0] * parts[1]) + np.sum(parts[-1] ** 2)


def state_history(x):
    states = [x]
    for _ in range(3):
        states.append(np.tanh(1.5 * states[-1]))
    return np.sum(states[-1]) + np.sum(states[1] * states[2])


def list_item_update(x):
    xs = [x[0], x[1], x[2]]
    xs[1] = xs[1] * xs[2]
    xs[-1] = xs[0] + xs[1]
    return xs[0] * xs[1] * xs[2]


def running_products_list(x):
    ps = [1.0]
    for v in x:
        ps.append(ps[-1] * v)
    return sum(ps)


def spread_of_row_losses(X):
    losses = []
    for row in X:
        losses.append(np.sum((row - 0.5) ** 2))
    mean = sum(losses) / len(losses)
    return mean + np.std(np.array(losses))


def pairs_in_list(x):
    pairs = []
    for i in range(len(x) - 1):
        pairs.append((x[i], x[i + 1]))
    total = 0.0
    for a, b in pairs:
        total += a * np.cos(b)
    return total


def mlp_from_weight_list(x, Ws):
    h = x
    for W in Ws:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def zip_constant_and_active_lists(x):
    scales = [0.5, 1.0, 2.0]
    shifts = [x[0], x[1], x[2]]
    total = 0.0
    for s, b in zip(scales, shifts):
        total += np.sum(np.sin(s * x + b))
    return total


def concatenate_pieces(x):
    pieces = [2.0 * x[:2], x[2:] ** 2, np.array([x[0] * x[-1]])]
    z = np.concatenate(pieces)
    return np.sum(z * np.arange(1, len(z) + 1))


def stack_in_while(x):
    frames = []
    y = x
    while len(frames) < 4:
        y = np.cos(y) * x
        frames.append(y)
    return np.sum(np.vstack(frames) ** 2)


# --- tuples -----------------------------------------------------------------------------------

def fibonacci_mix(a, b):
    for _ in range(6):
        a, b = b, a + 0.5 * b
    return a * b


def fibonacci_arrays(x):
    a, b = x[:3], x[3:]
    for _ in range(4):
        a, b = b, 0.5 * a * b + 0.1
    return np.sum(a + b)


def swap_if_smaller(x, y):
    if x.sum() < y.sum():
        x, y = y, x
    return np.sum(x ** 2 - 3.0 * y)


def rotate_three(x, y, z):
    for _ in range(3):
        x, y, z = y, z, 0.5 * x + y * z
    return np.sum(x * y + z)


def moments(x):
    return np.mean(x), np.mean(x ** 2), np.mean(x ** 3)


def skew_from_moments(x):
    m1, m2, m3 = moments(x)
    return m3 - 3.0 * m1 * m2 + 2.0 * m1 ** 3


def split_halves(x):
    h = len(x) // 2
    return x[:h], x[h:]


def unpack_returned_pair(x):
    lo, hi = split_halves(x)
    return np.sum(lo * hi[::-1]) + np.sum(hi) ** 2


def tuple_subscripts(x):
    t = (np.sum(x), np.prod(x), x[0])
    return t[0] * t[1] + t[-1]


def unpack_rows(A):
    a, b, c = A
    return np.sum(a * b) + np.sum(np.exp(-c ** 2))


def unpack_shape(A):
    n, m = A.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += A[i, j] ** 2 * (i - j + 0.5)
    return s


def nested_tuple_unpack(x):
    (a, b), c = (x[0], x[1]), x[2]
    return a * b * c + a ** 2


# --- case table -------------------------------------------------------------------------------

def _weight_list():
    return [mat(60, 4, 3), mat(61, 4, 4), mat(62, 2, 4)]


def comprehension_of_squares(x):
    return np.sum(np.array([v ** 2 for v in x]))


def comprehension_with_filter_and_generator(x, W):
    rows = [np.tanh(w @ x) for w in W if np.sum(w) > -10]
    return sum(r ** 2 for r in rows) + np.sum(np.stack([x * i for i in range(3)]))


def comprehension_keeps_outer_name(x):
    v = 5.0
    ys = [v * 2 for v in x]
    return np.sum(np.array(ys)) * v


CASES = [
    case(comprehension_of_squares, lambda: (vec(90, 4),)),
    case(comprehension_with_filter_and_generator, lambda: (vec(91, 4), mat(92, 3, 4)), (0, 1)),
    case(comprehension_keeps_outer_name, lambda: (vec(93, 4),)),
    case(stack_scaled_copies, lambda: (vec(1, 4),)),
    case(vandermonde_columns, lambda: (vec(2, 5),)),
    case(array_of_scalars, lambda: (vec(3, 5),)),
    case(array_of_rows, lambda: (mat(4, 3, 4),)),
    case(nested_list_matrix, lambda: (vec(5, 4),)),
    case(sum_builtin_of_scalars, lambda: (vec(6, 5),)),
    case(sum_builtin_of_arrays, lambda: (mat(7, 4, 3),)),
    case(list_literal_indexing, lambda: (vec(8, 7),)),
    case(state_history, lambda: (vec(9, 4),)),
    case(list_item_update, lambda: (vec(10, 3),)),
    case(running_products_list, lambda: (vec(11, 5, 0.5, 1.5),)),
    case(spread_of_row_losses, lambda: (mat(12, 4, 3),)),
    case(pairs_in_list, lambda: (vec(13, 5),)),
    case(mlp_from_weight_list, lambda: (vec(14, 3), _weight_list())),
    case(zip_constant_and_active_lists, lambda: (vec(15, 4),)),
    case(concatenate_pieces, lambda: (vec(16, 5),)),
    case(stack_in_while, lambda: (vec(17, 3),)),
    case(fibonacci_mix, lambda: (0.3, -0.7), (0, 1)),
    case(fibonacci_arrays, lambda: (vec(18, 6),)),
    case(swap_if_smaller, lambda: (vec(19, 4, 0.0, 1.0), vec(20, 4, 1.0, 2.0)), (0, 1),
         tag="swap"),
    case(swap_if_smaller, lambda: (vec(20, 4, 1.0, 2.0), vec(19, 4, 0.0, 1.0)), (0, 1),
         tag="keep"),
    case(rotate_three, lambda: (vec(21, 3), vec(22, 3), vec(23, 3)), (0, 1, 2)),
    case(skew_from_moments, lambda: (vec(24, 6),)),
    case(unpack_returned_pair, lambda: (vec(25, 6),)),
    case(tuple_subscripts, lambda: (vec(26, 4),)),
    case(unpack_rows, lambda: (mat(27, 3, 4),)),
    case(unpack_shape, lambda: (mat(28, 3, 4),)),
    case(nested_tuple_unpack, lambda: (vec(29, 3),)),
]


@pytest.mark.parametrize("c", CASES)
def test_grad_matches_finite_differences(c):
    check_grad(c)


VALUE_AND_GRAD_CASES = [
    case(fibonacci_mix, lambda: (0.3, -0.7), (0, 1)),
    case(stack_scaled_copies, lambda: (vec(1, 4),)),
]


@pytest.mark.parametrize("c", VALUE_AND_GRAD_CASES)
def test_value_and_grad(c):
    check_value_and_grad(c)


VJP_CASES = [
    case(mlp_from_weight_list, lambda: (vec(14, 3), _weight_list())),
    case(rotate_three, lambda: (vec(21, 3), vec(22, 3), vec(23, 3))),
    case(fibonacci_mix, lambda: (0.3, -0.7)),
]


@pytest.mark.parametrize("c", VJP_CASES)
def test_vjp(c):
    check_vjp(c)


# --- several return values: grad(has_aux=True) ------------------------------------------------

def loss_with_residuals(w, X, y):
    r = X @ w - y
    loss = np.mean(r ** 2)
    return loss, (r, np.max(np.abs(r)))


def loss_with_history(x):
    history = []
    for _ in range(3):
        x = np.tanh(x) + 0.1
        history.append(np.sum(x))
    return np.sum(x ** 2), np.array(history)


def loss_with_named_stats(x, scale):
    z = scale * np.exp(x)
    return np.log(np.sum(z)), {"total": np.sum(z), "first": z[0]}


@pytest.mark.parametrize("c", [
    case(loss_with_residuals, lambda: (vec(40, 3), mat(41, 6, 3), vec(42, 6))),
    case(loss_with_residuals, lambda: (vec(40, 3), mat(41, 6, 3), vec(42, 6)), (0, 2)),
    case(loss_with_history, lambda: (vec(43, 4),)),
    case(loss_with_named_stats, lambda: (vec(44, 4), 2.0), (0, 1)),
])
def test_grad_with_aux(c):
    check_has_aux(c)


# --- outside the contract: a correct gradient or a clear error naming this file ---------------

def list_comprehension(x):
    return sum([np.sin(v) * v for v in x])


def generator_in_sum(x):
    return sum(v ** 2 for v in x)


def local_lambda(x):
    cube = lambda v: v ** 3 + v  # noqa: E731
    return np.sum(cube(x))


def reversed_states(x):
    states = [x, np.sin(x), np.cos(x)]
    acc = 0.0
    for s in reversed(states):
        acc = 0.5 * acc + np.sum(s ** 2)
    return acc


def star_unpacking(x):
    first, *rest = x
    return first * np.sum(np.array(rest) ** 2)


@pytest.mark.parametrize("c", [
    case(list_comprehension, lambda: (vec(50, 5),)),
    case(generator_in_sum, lambda: (vec(51, 5),)),
    case(local_lambda, lambda: (vec(52, 5),)),
    case(reversed_states, lambda: (vec(53, 4),)),
    case(star_unpacking, lambda: (vec(54, 5),)),
])
def test_outside_contract_is_correct_or_rejected(c):
    check_grad_or_rejected(c, mentions=os.path.basename(__file__))
