"""Corpus: calls of user functions.

Calls of other user functions in this file and in `corpus_helpers_mod` (by attribute and by an
imported name), nested calls, calls inside loops and branches, closures returned by factories
(capturing an array, a float, or functions), a function defined inside the differentiated one,
module globals (array and float constants, also the other module's), default and keyword
arguments, keyword-only data arguments, helpers returning tuples, method calls, and recursion
(which must either differentiate correctly or raise a `srcad.SrcadError` that says so).
"""
import numpy as np
import pytest

import srcad

import corpus_helpers_mod as hm
from corpus_helpers_mod import (case, check_grad, check_grad_or_rejected, check_value_and_grad,
                                check_vjp, logsumexp, mat, mean_and_std, vec)

SCALE = 0.75
DECAY = 0.9
WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25, 1.5])


# --- helpers called by the corpus ---------------------------------------------------------------

def square(v):
    return v * v


def softplus(z):
    return np.log1p(np.exp(z))


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def affine(W, b, x):
    return W @ x + b


def mse(pred, target):
    r = pred - target
    return np.mean(r * r)


def centered_moments(x):
    d = x - np.mean(x)
    return np.mean(d ** 2), np.mean(d ** 3)


def poly(x, coeffs=(1.0, -0.5, 0.25)):
    out = np.zeros_like(x)
    for k, c in enumerate(coeffs):
        out = out + c * x ** k
    return out


def scaled_power_sum(x, scale=1.0, power=2):
    return scale * np.sum(x ** power)


# --- the corpus -------------------------------------------------------------------------------

def sum_of_squares_via_helper(x):
    return np.sum(square(x) + square(np.sin(x)))


def nested_helper_calls(x):
    return np.sum(softplus(square(x) - 1.0))


def logistic_loss(w, X, y):
    p = sigmoid(X @ w)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def two_layer_loss(W1, b1, W2, x, t):
    h = np.tanh(affine(W1, b1, x))
    return mse(W2 @ h, t)


def helper_in_loop(x):
    for _ in range(3):
        x = softplus(x) - 0.5
    return np.sum(x ** 2)


def helper_in_branch(x):
    if x.sum() > 0:
        y = square(x)
    else:
        y = softplus(x)
    return np.sum(y * np.cos(x))


def helper_in_conditional_expression(x):
    y = sigmoid(x) if x[0] < 0 else square(x)
    return np.sum(y)


def skewness(x):
    var, third = centered_moments(x)
    return third / var ** 1.5


def default_argument(x):
    return np.sum(poly(x)) + np.sum(poly(x, (0.5, 2.0)))


def keyword_arguments(x):
    a = scaled_power_sum(x, power=3, scale=0.5)
    b = scaled_power_sum(x)
    c = scaled_power_sum(scale=2.0, x=np.cos(x))
    return a + b + c


def keyword_only_data(w, *, X, y, reg=0.01):
    return mse(X @ w, y) + reg * np.sum(square(w))


def module_global_array(x):
    return np.sum(WEIGHTS * np.sin(x)) + SCALE * (x @ WEIGHTS)


def module_global_in_loop(x):
    for _ in range(4):
        x = DECAY * x + (1.0 - DECAY) * np.tanh(x)
    return np.sum(x * WEIGHTS)


def same_helper_active_and_constant(x):
    a = np.dot(x, WEIGHTS)
    b = np.sum(square(WEIGHTS))
    return square(a) * b + np.sum(square(x))


def method_calls(x, A):
    z = A @ x
    folded = x.reshape(2, 3).T.sum(axis=1)
    return x.dot(z) + A.sum(axis=0) @ x + folded @ z[:3] + x.mean() * x.std()


def local_function_closing_over_active(x):
    c = np.mean(x)

    def shifted(v):
        return (v - c) ** 2

    return np.sum(shifted(x)) + shifted(x[0])


def make_weighted_sse(target):
    def weighted_sse(x):
        return np.sum(target * (x - target) ** 2)
    return weighted_sse


def make_power_loss(p):
    def power_loss(x):
        return np.sum(np.abs(x) ** p)
    return power_loss


def make_composed(outer, inner):
    def composed(x):
        return np.sum(outer(inner(x)))
    return composed


def make_regularized_loss(lam, ref):
    def loss(w, X):
        r = X @ w
        return np.mean(softplus(r)) + lam * np.sum((w - ref) ** 2)
    return loss


weighted_sse = make_weighted_sse(np.array([0.5, -0.2, 1.0, 0.3]))
power_loss = make_power_loss(2.5)
softplus_of_layer_norm = make_composed(softplus, hm.layer_norm)
regularized_loss = make_regularized_loss(0.1, np.array([0.2, -0.1, 0.4]))


def cross_module_smooth_l1(x):
    return hm.smooth_l1(x - 0.3) + hm.smooth_l1(2.0 * x)


def cross_module_imported_name(x):
    return logsumexp(x) - np.mean(x)


def cross_module_keyword(x, g):
    return np.sum(hm.layer_norm(x, gain=g) * np.arange(len(x)))


def cross_module_tuple(x):
    mu, sd = mean_and_std(x)
    return mu / sd


def cross_module_internal_calls(x):
    return hm.normalized_energy(np.exp(x))


def cross_module_global(x):
    return np.sum(hm.rbf_features(x) * np.array([1.0, -2.0, 0.5]))


def cross_module_in_loop(X, c):
    total = 0.0
    for row in X:
        total += hm.huber(row - c, delta=0.5)
    return total


def cross_module_list_builder(x):
    F = hm.poly_features(x)
    w = np.array([0.1, -0.3, 0.2, 0.05])
    return np.sum((F @ w) ** 2)


def cross_module_string_flag(W, b, x):
    h = hm.dense_layer(W, b, x, activation="softplus")
    return np.sum(hm.dense_layer(W, b, h) ** 2)


def chained_layers(x, W1, W2):
    return np.sum(hm.dense_layer(W2, 0.1, hm.dense_layer(W1, -0.2, x)))


# --- case table -------------------------------------------------------------------------------

def _logistic_args():
    X = mat(3, 8, 3)
    y = (vec(4, 8) > 0).astype(float)
    return vec(5, 3), X, y


def _mlp_args():
    return mat(6, 4, 3), vec(7, 4), mat(8, 2, 4), vec(9, 3), vec(10, 2)


def _huber_args():
    # residuals stay well away from |r| = delta = 0.5
    X = np.array([[0.1, 1.2, -0.9], [-0.2, 0.3, 2.0], [0.9, -0.1, 0.25]])
    return X, np.array([0.05, 0.1, -0.2])


CASES = [
    case(sum_of_squares_via_helper, lambda: (vec(1, 5),)),
    case(nested_helper_calls, lambda: (vec(2, 5),)),
    case(logistic_loss, _logistic_args),
    case(logistic_loss, _logistic_args, (0, 1)),
    case(two_layer_loss, _mlp_args, (0, 1, 2)),
    case(two_layer_loss, _mlp_args, 3),
    case(helper_in_loop, lambda: (vec(11, 5),)),
    case(helper_in_branch, lambda: (vec(12, 5, 0.1, 1.0),), tag="pos"),
    case(helper_in_branch, lambda: (vec(12, 5, -1.0, -0.1),), tag="neg"),
    case(helper_in_conditional_expression, lambda: (vec(13, 4, -1.0, -0.1),), tag="neg"),
    case(helper_in_conditional_expression, lambda: (vec(13, 4, 0.1, 1.0),), tag="pos"),
    case(skewness, lambda: (vec(14, 7),)),
    case(default_argument, lambda: (vec(15, 5),)),
    case(keyword_arguments, lambda: (vec(16, 5),)),
    case(keyword_only_data, lambda: (vec(17, 3),), kwargs=dict(X=mat(18, 5, 3), y=vec(19, 5))),
    case(keyword_only_data, lambda: (vec(17, 3),),
         kwargs=dict(X=mat(18, 5, 3), y=vec(19, 5), reg=1.5), tag="reg"),
    case(module_global_array, lambda: (vec(20, 5),)),
    case(module_global_in_loop, lambda: (vec(21, 5),)),
    case(same_helper_active_and_constant, lambda: (vec(22, 5),)),
    case(method_calls, lambda: (vec(23, 6), mat(24, 6, 6)), (0, 1)),
    case(local_function_closing_over_active, lambda: (vec(25, 5),)),
    case(weighted_sse, lambda: (vec(26, 4),)),
    case(power_loss, lambda: (np.array([0.5, -1.2, 0.8, -0.3, 1.1]),)),
    case(softplus_of_layer_norm, lambda: (vec(27, 6),), tag="softplus_of_layer_norm"),
    case(regularized_loss, lambda: (vec(28, 3), mat(29, 5, 3)), (0, 1), tag="regularized"),
    case(cross_module_smooth_l1, lambda: (vec(30, 5),)),
    case(cross_module_imported_name, lambda: (vec(31, 6),)),
    case(cross_module_keyword, lambda: (vec(32, 5), 1.7), (0, 1)),
    case(cross_module_tuple, lambda: (vec(33, 6, 0.0, 2.0),)),
    case(cross_module_internal_calls, lambda: (vec(34, 6),)),
    case(cross_module_global, lambda: (vec(35, 4),)),
    case(cross_module_in_loop, _huber_args, (0, 1)),
    case(cross_module_list_builder, lambda: (vec(36, 5),)),
    case(cross_module_string_flag, lambda: (mat(37, 3, 3), vec(38, 3), vec(39, 3)), (0, 1, 2)),
    case(chained_layers, lambda: (vec(40, 3), mat(41, 4, 3), mat(42, 2, 4)), (0, 1, 2)),
]


@pytest.mark.parametrize("c", CASES)
def test_grad_matches_finite_differences(c):
    check_grad(c)


VALUE_AND_GRAD_CASES = [
    case(logistic_loss, _logistic_args),
    case(cross_module_tuple, lambda: (vec(33, 6, 0.0, 2.0),)),
    case(keyword_only_data, lambda: (vec(17, 3),), kwargs=dict(X=mat(18, 5, 3), y=vec(19, 5))),
]


@pytest.mark.parametrize("c", VALUE_AND_GRAD_CASES)
def test_value_and_grad(c):
    check_value_and_grad(c)


VJP_CASES = [
    case(two_layer_loss, _mlp_args),
    case(cross_module_keyword, lambda: (vec(32, 5), 1.7)),
    case(regularized_loss, lambda: (vec(28, 3), mat(29, 5, 3)), tag="regularized"),
]


@pytest.mark.parametrize("c", VJP_CASES)
def test_vjp(c):
    check_vjp(c)


# --- recursion: a correct gradient or a clear SrcadError, never a wrong gradient ---------------

def recursive_power(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * recursive_power(x, n - 1)


def recursive_horner(c, x, k):
    if k == len(c) - 1:
        return c[k]
    return c[k] + x * recursive_horner(c, x, k + 1)


def power_sum(x, n):
    return np.sum(recursive_power(x, n))


def horner_sum(c, x):
    return np.sum(recursive_horner(c, x, 0))


@pytest.mark.parametrize("c", [
    case(power_sum, lambda: (vec(50, 4), 3)),
    case(recursive_horner, lambda: (vec(51, 4), 0.6, 0), (0, 1)),
    case(horner_sum, lambda: (vec(51, 4), vec(52, 3)), (0, 1)),
])
def test_recursion_is_differentiated_or_rejected(c):
    check_grad_or_rejected(c, mentions="recurs")

