"""Forward mode (generated tangent code) against central finite differences along a random
direction: every rule of the sweep and every function of the control-flow corpus."""
import numpy as np
import pytest

import srcad
import test_corpus_calls
import test_corpus_control
import test_corpus_lists
import test_corpus_subscripts
import test_rules_sweep as sweep


def directional_fd(f, args, k, v, eps=1e-6):
    """d/dt f(args with args[k] + t v) at t = 0, by central differences in float64."""
    hi, lo = list(args), list(args)
    hi[k] = args[k] + eps * v
    lo[k] = args[k] - eps * v
    return (np.asarray(f(*hi), dtype=float) - np.asarray(f(*lo), dtype=float)) / (2 * eps)


def _direction(x, seed):
    rng = np.random.default_rng(seed)
    if isinstance(x, float):
        return float(rng.normal())
    return rng.normal(size=np.shape(x))


def _check_jvp(f, args, k, seed=0, rtol=1e-5, atol=1e-6):
    args = list(args)
    v = _direction(args[k], seed)
    tangents = [v if j == k else (0.0 if isinstance(a, float) else np.zeros_like(a, dtype=float))
                if isinstance(a, (float, np.ndarray)) and np.issubdtype(np.asarray(a).dtype, np.floating)
                else None for j, a in enumerate(args)]
    y, y_dot = srcad.jvp(f, tuple(args), tuple(tangents))
    np.testing.assert_allclose(np.asarray(y, dtype=float), np.asarray(f(*args), dtype=float), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(y_dot, dtype=float), directional_fd(f, args, k, v), rtol=rtol, atol=atol)


SWEEP = [(c, k) for c in sweep.CASES for k in c.wrt]


@pytest.mark.parametrize("case, k", SWEEP, ids=[f"{c.name}-wrt{k}" for c, k in SWEEP])
def test_rule_tangents(case, k):
    args = sweep._special_args(case)
    if not isinstance(args[k], (float, np.ndarray)) or np.asarray(args[k]).dtype != np.float64:
        pytest.skip("the sweep's float32 variants are covered in reverse mode")
    _check_jvp(case.f, args, k)


def _corpus():
    out = []
    for mod in (test_corpus_control, test_corpus_calls, test_corpus_subscripts, test_corpus_lists):
        for p in mod.CASES:
            c = p.values[0]
            if c.kwargs:
                continue
            out.append(pytest.param(c, id=p.id))
    return out


@pytest.mark.parametrize("case", _corpus())
def test_corpus_tangents(case):
    args = case.make_args()
    for k in case.wrts():
        _check_jvp(case.f, args, k, seed=k, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6))


def test_emit_forward_is_standalone():
    from examples_for_tests import logistic
    text = srcad.emit(logistic, mode="forward")
    assert "def logistic_jvp(w, X, y, w_dot):" in text
    ns = {}
    exec(compile(text, "<emitted>", "exec"), ns)
    rng = np.random.default_rng(3)
    w, X, y = rng.normal(size=3), rng.normal(size=(6, 3)), (rng.random(6) > 0.5) * 1.0
    v = rng.normal(size=3)
    val, dot = ns["logistic_jvp"](w, X, y, v)
    assert np.isclose(val, logistic(w, X, y))
    assert np.isclose(dot, directional_fd(logistic, (w, X, y), 0, v), rtol=1e-6)
