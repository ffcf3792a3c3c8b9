"""The rules added for issue 23's breadth, beyond the sweep (tests/sweep_cases_breadth.py, checked in
every mode by tests/test_systematic.py): the derivatives a rule does not have are named errors
(never a zero), and np.add.at in a graph network's message passing against a hand-written gradient.
"""
import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st

import srcad
from fdcheck import assert_grad_close


# ---- derivatives a rule does not have: MissingRuleError naming the call, in both modes ---------------------------
def t_cdf_in_df(df):
    return np.sum(st.t.cdf(np.array([0.3, -0.2]), df))


def chi2_cdf_in_df(df):
    return np.sum(st.chi2.cdf(np.array([0.3, 1.2]), df))


def gamma_cdf_in_a(a):
    return np.sum(st.gamma.cdf(np.array([0.3, 1.2]), a))


def beta_cdf_in_a(a):
    return np.sum(st.beta.cdf(np.array([0.3, 0.6]), a, 2.0))


def gammainc_in_a(a):
    return np.sum(sc.gammainc(a, np.array([0.3, 1.2])))


def betainc_in_b(b):
    return np.sum(sc.betainc(2.0, b, np.array([0.3, 0.6])))


def gradient_in_spacing(h):
    return np.sum(np.gradient(np.array([1.0, 4.0, 9.0]), h[0]))


def yn_in_order(n):
    return np.sum(sc.yn(n, np.array([1.5, 2.5])))


MISSING = [(t_cdf_in_df, "st.t.cdf"), (chi2_cdf_in_df, "st.chi2.cdf"), (gamma_cdf_in_a, "st.gamma.cdf"),
           (beta_cdf_in_a, "st.beta.cdf"), (gammainc_in_a, "sc.gammainc"), (betainc_in_b, "sc.betainc"),
           (gradient_in_spacing, "np.gradient")]


@pytest.mark.parametrize("f, construct", MISSING, ids=[f.__name__ for f, _ in MISSING])
def test_parameter_without_rule_is_a_named_error(f, construct):
    x = np.array([2.5, 3.0])
    with pytest.raises(srcad.MissingRuleError) as info:
        srcad.grad(f)(x)
    assert construct in str(info.value) and "test_rules_breadth.py" in str(info.value)
    with pytest.raises(srcad.MissingRuleError):
        srcad.jvp(f, [x], [np.ones(2)])


def test_integer_order_is_discrete():
    """yn truncates its order to an integer: piecewise constant in it, so its derivative there is 0
    (as one-sided differences inside a step show)."""
    n = np.array([2.25, 3.5])
    assert np.all(srcad.grad(yn_in_order)(n) == 0.0)
    assert yn_in_order(n + 1e-3) == yn_in_order(n) == yn_in_order(n - 1e-3)


# ---- np.add.at: message passing in a graph network -------------------------------------------------------------
SRC = np.array([0, 1, 2, 2, 3, 0])
DST = np.array([1, 2, 0, 1, 1, 1])         # node 1 receives four messages: repeated indices


def message_passing(h, W):
    msg = np.tanh(h[SRC] @ W)
    agg = np.zeros_like(h)
    np.add.at(agg, DST, msg)
    return np.sum(agg ** 2)


def message_passing_grad_by_hand(h, W):
    pre = h[SRC] @ W
    msg = np.tanh(pre)
    agg = np.zeros_like(h)
    for e, d in enumerate(DST):
        agg[d] += msg[e]
    agg_bar = 2.0 * agg
    msg_bar = agg_bar[DST]                  # each edge reads its target's cotangent
    pre_bar = msg_bar * (1.0 - msg ** 2)
    W_bar = h[SRC].T @ pre_bar
    h_bar = np.zeros_like(h)
    for e, s in enumerate(SRC):
        h_bar[s] += pre_bar[e] @ W.T
    return h_bar, W_bar


def test_add_at_accumulates_repeated_indices():
    rng = np.random.default_rng(3)
    h, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 3)) * 0.5
    gh, gW = srcad.grad(message_passing, wrt=(0, 1))(h, W)
    wh, wW = message_passing_grad_by_hand(h, W)
    np.testing.assert_allclose(gh, wh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gW, wW, rtol=1e-10, atol=1e-12)
    assert_grad_close(message_passing, [h, W], gh, wrt=0)
    # the user's array is not changed by the differentiated call (np.add.at wrote into a local copy)
    assert message_passing(h, W) == pytest.approx(srcad.value_and_grad(message_passing)(h, W)[0])
