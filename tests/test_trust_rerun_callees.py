"""A called user function that reverse mode runs again in the adjoint must repeat its first run.
One that draws from a shared generator or writes into module-level state would not, and its
gradient would be of other values than f returned (main gave 0.400 where 1.764 was right for a
draw of np.random.normal inside the callee). Such calls are refused by name; a deterministic
callee called twice with the same arguments and a draw made in f and passed in still work and match
central finite differences."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError
from fdcheck import assert_grad_close

RNG = np.random.default_rng(0)
COUNTER = [0]
X = np.array([0.3, -0.7, 1.1])


def noisy_global(x):
    return x * np.random.normal()


def noisy_generator(x):
    return x * RNG.normal()


def counting(x):
    COUNTER[0] += 1
    return x * COUNTER[0]


def logging_(x):
    LOG.append(1)
    return x * 2.0


LOG = []


def deep(x):
    return noisy_global(x) + 1.0


def f_global(x):
    return np.sum(noisy_global(x))


def f_generator(x):
    return np.sum(noisy_generator(x)) + np.sum(noisy_generator(x))


def f_counting(x):
    return np.sum(counting(x))


def f_logging(x):
    return np.sum(logging_(x) ** 2)


def f_deep(x):
    return np.sum(np.sin(deep(x)))


@pytest.mark.parametrize("f", [f_global, f_generator, f_counting, f_logging, f_deep])
def test_a_callee_whose_second_run_differs_is_refused(f):
    with pytest.raises(UnsupportedSyntaxError, match="runs .* again"):
        srcad.grad(f)(X)


def scaled(x, z):
    return np.sin(x) * z


def f_passed(x):
    z = np.random.normal()
    return np.sum(scaled(x, z) ** 2)


def pure_callee(x, a):
    return np.sin(x) * a


def f_own(x):
    return np.sum(pure_callee(x, 2.0) * pure_callee(x, 2.0)) + np.sum(pure_callee(pure_callee(x, 1.0), 3.0))


def test_a_draw_passed_in_is_differentiated():
    np.random.seed(1)
    g = srcad.grad(f_passed)(X)
    np.random.seed(1)
    z = np.random.normal()
    assert np.allclose(g, 2.0 * np.sin(X) * np.cos(X) * z ** 2, rtol=1e-12)


def test_a_deterministic_callee_called_twice_is_differentiated():
    assert_grad_close(f_own, (X,), srcad.grad(f_own)(X))
