"""User functions for the API tests: custom rules, numerics checks, gradient checks."""
import numpy as np

import srcad


@srcad.custom_vjp
def clipped_identity(x):
    return x


def _fwd(x):
    return x, None


def _bwd(res, dy):
    return (np.clip(dy, -1.0, 1.0),)


clipped_identity.defvjp(_fwd, _bwd)


@srcad.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


def _softplus_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return np.log1p(np.exp(x)), x_dot / (1.0 + np.exp(-x))


softplus.defjvp(_softplus_jvp)


def uses_clipped(x):
    return np.sum(clipped_identity(3.0 * x) ** 2)


def uses_softplus(x):
    return np.sum(softplus(x) * x)


def sqrt_sum(x):
    y = x * 2.0
    r = np.sqrt(y)
    return np.sum(r)


def wrong_on_purpose(x):
    return np.sum(fake_rule_target(x))


def fake_rule_target(x):
    return x ** 2


def embedding_loss(E, idx, W):
    rows = E[idx]
    return np.sum(rows * W)


@srcad.grad
def decorated_bare(x):
    return np.sum(np.sin(x) * x)


@srcad.grad(wrt=(0, 1))
def decorated_with_args(x, y):
    return np.sum(x * np.exp(y))


@srcad.value_and_grad(wrt=1)
def decorated_value_and_grad(x, y):
    return np.sum(x ** 2 * y)


SCALE = 2.0
WEIGHTS = np.array([1.0, -2.0, 0.5])


def uses_globals(x):
    return SCALE * np.sum(WEIGHTS * x ** 2)


# module globals with the names of a function's parameter and local: the function never reads them
x = 7.0
hidden = 3.0


def shadows_globals(x):
    hidden = x * SCALE
    return np.sum(hidden ** 2)


def sparse_quad(A, x):
    return np.sum((A @ x) ** 2)
