"""User functions that srcad must reject (or flag), used by test_errors.py."""
import numpy as np
import scipy.special


def uses_try(x):
    try:
        y = np.sin(x)
    except ValueError:
        y = x
    return np.sum(y)


def uses_with(x):
    with open("/dev/null") as fh:
        y = x * 2
    return np.sum(y)


def uses_comprehension(x):
    squares = {v ** 2 for v in x}
    return sum(squares)


def uses_lambda(x):
    # (a lambda assigned to a name is a nested def; one used in place is refused)
    return np.sum((lambda v: v ** 2)(x))


def uses_global(x):
    global COUNTER
    COUNTER = 1
    return np.sum(x)


def uses_del(x):
    y = x * 2
    del y
    return np.sum(x)


def uses_yield(x):
    yield np.sum(x)


def uses_nested_def(x):
    def inner(*vs):
        return vs[0] * 2
    return np.sum(inner(x))


def opaque(v):
    return v


OPAQUE = np.frompyfunc(lambda v: v * 2.0, 1, 1)


def calls_unknown(x):
    return np.sum(scipy.special.dawsn(x) * x)


def non_scalar(x):
    return np.sin(x)


def nan_grad(x):
    return np.sum(np.sqrt(x))
