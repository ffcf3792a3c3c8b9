"""The activity analysis on its own (srcad/frontend/analyze.py): which values depend on the
differentiated inputs (active), which the result depends on (useful), which statements need a
derivative; expectations written out by hand for small functions."""
import numpy as np
import pytest

import srcad
from srcad.frontend.analyze import Analysis
from srcad.transform.pipeline import prepare


def mixed(x, y, n):
    k = n * 2
    a = x * y
    b = np.exp(a) + k
    c = y * 3.0
    unused = np.sin(x)
    return np.sum(b) + np.sum(c)


def cut(x):
    i = np.argmax(x)
    s = np.floor(x)
    return x[i] * 2.0 + np.sum(s)


def unknown_inactive(x, y):
    label = np.unpackbits(np.uint8(y))       # no derivative rule, but not on an active path
    return np.sum(x * x) + label.sum()


def unknown_active(x):
    return np.sum(np.unpackbits(x))


def analysis(func, wrt):
    parsed, fn, normalizer = prepare(func)
    return Analysis(fn, parsed, normalizer.locals, wrt), fn


def _user_names(names, func):
    """The names of the user's own variables among `names` (normalize adds temporaries)."""
    return set(names) & set(func.__code__.co_varnames)


def test_active_and_useful_values_of_a_straight_line_function():
    an, _ = analysis(mixed, ["x"])
    assert _user_names(an.active, mixed) == {"x", "a", "b", "unused"}
    assert "y" not in an.active and "k" not in an.active and "c" not in an.active
    assert {"b", "c", "a", "x", "y", "k"} <= an.useful and "unused" not in an.useful
    an, _ = analysis(mixed, ["y"])
    assert _user_names(an.active, mixed) == {"y", "a", "b", "c"}
    an, _ = analysis(mixed, ["x", "y"])
    assert _user_names(an.active, mixed) == {"x", "y", "a", "b", "c", "unused"}


def test_statements_needing_a_derivative():
    an, fn = analysis(mixed, ["x"])
    needs = {op.target for op in an.ops.values() if an.is_active(op)}
    # a = x * y and b's operations need one; k, c (no active input) and unused (not useful) do not
    assert "a" in needs and "b" in needs
    assert not needs & {"k", "c", "unused"}


def test_nondifferentiable_calls_cut_activity():
    an, _ = analysis(cut, ["x"])
    assert "i" not in an.active and "s" not in an.active        # argmax, floor: zero derivative
    assert "x" in an.active


def test_a_call_with_no_rule_raises_only_on_an_active_path():
    an, _ = analysis(unknown_inactive, ["x"])                    # analysed without error
    assert "label" not in an.active
    x = np.linspace(0.5, 1.5, 4)
    np.testing.assert_allclose(srcad.grad(unknown_inactive)(x, 3), 2 * x)   # analytic: d sum(x^2)
    with pytest.raises(srcad.MissingRuleError, match="unpackbits"):
        srcad.grad(unknown_active)(np.arange(3, dtype=np.uint8).astype(float))
