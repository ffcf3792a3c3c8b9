"""cleanup's negation and doubling rewrites (srcad/transform/cleanup/negs.py): the text they
write, where they must not apply, and end to end: gradients against central finite differences and
the same bytes as the code without the rewrites."""
import numpy as np
import pytest

import srcad
from srcad.cache import clear_memory
from srcad.transform.cleanup import negs

from fdcheck import numerical_grad
from test_cleanup import clean, same


# ---- the text ------------------------------------------------------------------------------------
def test_negation_moves_outside_a_linear_reduction():
    got = clean("""
    def f(g, x):
        # adjoint
        y = rt.unbroadcast(-g, x)
        z = np.sum(-g, axis=0, keepdims=True)
        w = np.mean(-g, 1)
        return (y, z, w)
    """)
    same(got, """
    def f(g, x):
        # adjoint
        y = -rt.unbroadcast(g, x)
        z = -np.sum(g, axis=0, keepdims=True)
        w = -np.mean(g, 1)
        return (y, z, w)
    """)


def test_negation_stays_in_a_reduction_with_other_arguments_and_in_the_primal_part():
    # dtype=, initial=, where= change what is summed; the primal part may hold integers
    # (-(int8 -128) wraps before an int64 sum)
    got = clean("""
    def f(g, x):
        u = np.sum(-x)
        # adjoint
        w = np.sum(-g, dtype=np.float32)
        v = np.sum(-g, initial=1.0)
        return (u, w, v)
    """)
    assert "np.sum(-x)" in got and "np.sum(-g, dtype=np.float32)" in got and "np.sum(-g, initial=1.0)" in got


def test_negations_that_cancel_through_single_read_products_go():
    # sigmoid's adjoint: d/dx 1/(1+exp(-x)), written one rule at a time
    got = clean("""
    def f(s_bar, s, d, e):
        # adjoint
        e_bar = -s_bar * s / d
        n_bar = e_bar * e
        x_bar = -n_bar
        return x_bar
    """)
    assert "-" not in got.split("# adjoint", 1)[1], got
    assert "s_bar * s / d" in got


def test_negation_absorbed_by_a_sum_or_difference():
    got = clean("""
    def f(a, b, c, y):
        # adjoint
        p = -a * b
        q = y - p
        r = -c
        s = r + y
        return (q, s)
    """)
    assert "y + a * b" in got.replace("p", "a * b") or "q = y + p" in got, got
    assert "y - c" in got, got


def test_negation_kept_where_nothing_absorbs_it():
    # read twice, returned, handed to a call: the minus stays where it was written
    src = """
    def f(a, b, e):
        # adjoint
        p = -a * b
        q = p * e
        r = -q
        t = -a
        return (q, r, t, g(t))
    """
    got = clean(src)
    assert "p = -a * b" in got and "r = -q" in got and "t = -a" in got, got


def test_a_term_added_twice_is_doubled():
    got = clean("""
    def f(g, x, e):
        # adjoint
        x_bar = rt.unbroadcast(g * x, x)
        x_bar = rt.add(x_bar, rt.unbroadcast(g * x, x))
        e_bar = g * x
        e_bar = rt.add(e_bar, g * e)
        return (x_bar, e_bar)
    """)
    assert "x_bar = rt.unbroadcast(g * x, x) * 2" in got, got
    assert "e_bar = rt.add(e_bar, g * e)" in got, got


# ---- end to end ----------------------------------------------------------------------------------
def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def sigmoid_sum(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def centred_squares(x, mu):
    xc = x[None, :, :] - mu[:, None, :]
    return np.sum(xc * xc) + np.sum(mu * mu * 3.0)


def half_difference(a, b):
    return np.sum(np.sin(a[:, None] - 0.5 * (b[None, :] * b[None, :])))


def logistic(w, X, y):       # the README's first look
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


CASES = [
    (logistic, lambda r: (r.normal(size=3), r.normal(size=(8, 3)), (r.random(8) > 0.5) * 1.0), (0,)),
    (lse, lambda r: (r.random(40),), (0,)),
    (sigmoid_sum, lambda r: (r.normal(size=30),), (0,)),
    (centred_squares, lambda r: (r.normal(size=(9, 4)), r.normal(size=(3, 4))), (0, 1)),
    (half_difference, lambda r: (r.normal(size=7), r.normal(size=5)), (0, 1)),
]


def _grads(f, args, wrt, off, monkeypatch):
    clear_memory()
    with monkeypatch.context() as m:
        if off:
            m.setattr(negs.Negs, "_negs", lambda self: False)
        text = str(srcad.emit(f, wrt=wrt))
        g = srcad.grad(f, wrt=wrt)(*args)
    clear_memory()
    return (g if isinstance(g, tuple) else (g,)), text


@pytest.mark.parametrize("f,make,wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_match_finite_differences_and_the_unrewritten_bits(f, make, wrt, monkeypatch):
    args = make(np.random.default_rng(7))
    on, text_on = _grads(f, args, wrt, False, monkeypatch)
    off, text_off = _grads(f, args, wrt, True, monkeypatch)
    assert text_on != text_off          # the rewrites applied
    for k, i in enumerate(wrt):
        np.testing.assert_allclose(on[k].ravel(), numerical_grad(f, args, wrt=i).ravel(), rtol=1e-6, atol=1e-6)
        assert on[k].dtype == off[k].dtype and on[k].tobytes() == off[k].tobytes()


def test_lse_and_gmm_like_adjoints_negate_the_reduced_value(monkeypatch):
    _, text = _grads(lse, (np.ones(3),), (0,), False, monkeypatch)
    assert "-rt.unbroadcast(x_minus_m_bar, m)" in text, text
    _, text = _grads(centred_squares, (np.ones((2, 2)), np.ones((2, 2))), (0, 1), False, monkeypatch)
    assert "-rt.unbroadcast(xc_bar" in text and "* 2" in text, text
    _, text = _grads(sigmoid_sum, (np.ones(3),), (0,), False, monkeypatch)
    body = text.split("# adjoint of", 1)[1]
    assert "= -" not in body, text


def test_odd_facts_read_back_from_the_registry():
    from srcad import runtime as rt
    from srcad.rules.registry import facts
    assert facts(np.sum).odd == ("x", "axis", "keepdims") and facts(np.mean).odd == ("x", "axis", "keepdims")
    assert facts(rt.unbroadcast).odd == ("g", "x")
    assert facts(rt.sum_vjp).odd is None and facts(np.max).odd is None   # a broadcast grows; max is not odd


def test_a_negation_then_an_accumulation_is_one_difference():
    got = clean("""
    def f(e, t, p):
        # adjoint
        x_bar = -e
        x_bar = rt.add(x_bar, t / p)
        y_bar = -e
        y_bar = rt.add(y_bar, h(t))
        return (x_bar, y_bar)
    """)
    assert "x_bar = t / p - e" in got and "y_bar = rt.add(y_bar, h(t))" in got, got


def test_a_negation_moves_down_to_its_accumulation_past_unrelated_lines_only():
    got = clean("""
    def f(e, t, p):
        # adjoint
        x_bar = -e
        q = t * p
        x_bar = rt.add(x_bar, q / p)
        y_bar = -e
        e = t * t
        y_bar = rt.add(y_bar, e / p)
        return (x_bar, y_bar)
    """)
    assert "x_bar = q / p - e" in got and "y_bar = -e" in got, got


def test_hoisted_negation_equals_the_sum_of_negations_even_where_terms_cancel():
    # the one difference in bits (module docstring of negs.py): terms that cancel exactly sum to
    # +0.0 either way, so the negated sum is -0.0 where the sum of negations is +0.0 -- equal numbers
    from srcad import runtime as rt
    r = np.random.default_rng(3)
    g = r.normal(size=(50, 4))
    for x in (np.zeros(4), np.zeros((1, 4)), 0.0):
        assert np.asarray(rt.unbroadcast(-g, x)).tobytes() == np.asarray(-rt.unbroadcast(g, x)).tobytes()
    c = np.array([1.5, -1.5])
    assert np.sum(-c) == -np.sum(c) and np.signbit(-np.sum(c)) and not np.signbit(np.sum(-c))
