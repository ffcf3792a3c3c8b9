"""The emitted code reads as a person would write it (issue 25, deliverable 6): temporaries named
from the user's names, `a - b` not `a + -b`, a plain `break` where no adjoint replays the flag,
plain NumPy where the kinds pass is sure, in both modes. Each test also checks the derivative of
the code it reads against central finite differences (tests/fdcheck.py)."""
import types

import numpy as np

import srcad
from fdcheck import assert_grad_close, numerical_grad


def _run(text, name, *args):
    mod = types.ModuleType("emitted_reads")
    exec(compile(text, "emitted_reads", "exec"), mod.__dict__)
    return getattr(mod, name)(*args)


def loss(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def newton(x, tol):
    y = x
    k = 0
    while k < 50:
        step = (y * y - x) / (2.0 * y)
        y = y - step
        k = k + 1
        if np.abs(step) < tol:
            break
    return y


def kept_flag(x):
    s = 0.0
    for i in range(6):
        s = s + np.sin(x * i)
        if s > 1.0:
            break
        s = s * x       # a statement the break skips, active: the adjoint replays its guard
    return s


def _args():
    rng = np.random.default_rng(3)
    return rng.normal(size=3) * 0.3, rng.normal(size=(12, 3)), (rng.random(12) > 0.5).astype(float)


def test_names_come_from_the_users_names():
    text = srcad.emit(loss, args=_args())
    for line in ("Xw = X @ w", "exp_neg_Xw = np.exp(neg_Xw)", "one_minus_p = 1.0 - p", "log_p_bar = "):
        assert line in text
    assert "sum_2" not in text and "prod_y" not in text


def test_forward_mode_is_specialised_by_the_kinds():
    args = _args()
    text = srcad.emit(loss, args=args, mode="forward")
    assert "quotient_jvp_y" not in text and "rt.matmul" not in text and "rt.count" not in text
    assert "Xw_dot = X @ w_dot" in text and "np.mean(" in text
    w = args[0]
    ref = numerical_grad(loss, args)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        y, y_dot = _run(text, "loss_jvp", *args, e)
        assert np.isclose(y, loss(*args)) and np.isclose(y_dot, ref[k], rtol=1e-6, atol=1e-8)
    assert_grad_close(loss, args, _run(srcad.emit(loss, args=args), "loss_vjp", *args))
    assert w is args[0]


def test_a_break_stays_a_break():
    for mode in ("reverse", "forward"):
        text = srcad.emit(newton, args=(2.0, 1e-12), mode=mode)
        assert "break_L" not in text and "go_on" not in text and "while k < 50:" in text
        assert "+ -" not in text
    g = _run(srcad.emit(newton, args=(2.0, 1e-12)), "newton_vjp", 2.0, 1e-12)
    assert np.isclose(g, 0.5 / np.sqrt(2.0), rtol=1e-10)
    _, t = _run(srcad.emit(newton, args=(2.0, 1e-12), mode="forward"), "newton_jvp", 2.0, 1e-12, 1.0)
    assert np.isclose(t, 0.5 / np.sqrt(2.0), rtol=1e-10)


def test_a_flag_the_adjoint_reads_stays():
    for x in (0.4, 0.9):
        text = srcad.emit(kept_flag, args=(x,))
        assert_grad_close(kept_flag, (x,), _run(text, "kept_flag_vjp", x))
        _, t = _run(srcad.emit(kept_flag, args=(x,), mode="forward"), "kept_flag_jvp", x, 1.0)
        assert np.isclose(t, numerical_grad(kept_flag, (x,)), rtol=1e-5, atol=1e-7)


def scalar_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sin(x * s + i)
    return s


def test_a_loop_tapes_only_what_exists():
    for f, args in ((scalar_loop, (0.3, 30)), (newton, (2.0, 1e-12)), (kept_flag, (0.4,))):
        text = srcad.emit(f, args=args)
        assert "= None" not in text
        assert_grad_close(f, args, _run(text, f.__name__ + "_vjp", *args))
    text = srcad.emit(newton, args=(2.0, 1e-12))
    assert "tape.append(step)\n        if cond_2:" in text      # one push, before the exit
