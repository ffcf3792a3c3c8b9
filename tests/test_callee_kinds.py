"""A callee is derived with the kinds its call site knows for its arguments (srcad/transform/unit.py
`callee_vjp`, kinds.call_kinds): two calls with different kinds get different derivations, an
unknown kind assumes nothing. Every gradient is compared with central finite differences."""
import ast

import numpy as np

import srcad
from srcad.transform.kinds import UNKNOWN, Kind, call_kinds, literal_kind
from fdcheck import assert_grad_close


def scaled(v, w):
    return v * w + v


def twice(x):
    a = scaled(x[0], 3.0)          # a number ...
    b = np.sum(scaled(x * 2.0, x))     # ... then an array
    return a + b


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def cell(weight, bias, hidden, state, inp):
    forget = sigmoid(inp * weight[0] + bias[0])
    ingate = sigmoid(hidden * weight[1] + bias[1])
    change = np.tanh(hidden * weight[2] + bias[2])
    state = state * forget + ingate * change
    return hidden * np.tanh(state), state


def stacked(main, bias, state, x):
    total = 0.0
    for k in range(main.shape[0] // 2):
        h, c = cell(main[2 * k], bias[2 * k + 1], state[2 * k], state[2 * k + 1], x)
        x = h
        total = total + np.sum(h * c)
    return total


def test_call_kinds_key_keeps_shared_shapes_and_drops_unknowns():
    a = Kind("array", "d", 1, ("bc", "x", "y"))
    key = call_kinds(("p", "q", "r"), (a, UNKNOWN, a))
    assert key == (("p", Kind("array", "d", 1, ("param", "p"))), ("r", Kind("array", "d", 1, ("param", "p"))))
    assert call_kinds(("p",), (UNKNOWN,)) is None
    assert literal_kind(ast.parse("-2.0", mode="eval").body) == Kind("py", "d", 0, ())


def test_callee_called_with_a_number_then_an_array_gets_two_derivations():
    x = np.array([0.3, -1.2, 0.7])
    assert_grad_close(twice, (x,), srcad.grad(twice)(x))
    text = srcad.emit(twice, args=(x,))
    assert "def scaled_vjp(" in text and "def scaled_vjp_2(" in text


def test_lstm_like_cell_in_a_layer_loop():
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 5)), rng.normal(size=5))
    for wrt in (0, 1, 2, 3):
        assert_grad_close(stacked, args, srcad.grad(stacked, wrt=wrt)(*args), wrt=wrt)


def test_a_callees_returned_tuple_carries_its_elements_kinds():
    from srcad.frontend.analyze import Analysis
    from srcad.transform.kinds import Kinds, param_kinds, signature
    from srcad.transform.pipeline import prepare
    args = (np.ones((4, 3, 5)), np.ones((4, 3, 5)), np.ones((4, 5)), np.ones(5))
    parsed, fn, nz = prepare(stacked)
    kinds = Kinds(fn, Analysis(fn, parsed, nz.locals, []), param_kinds(stacked, signature(args)))
    got = dict(kinds.assigned())
    assert got["h"].cat == "array" and got["h"].ndim == 1 and got["h"].dtype == "d"
    assert got["c"].cat == "array" and got["c"].ndim == 1


def bump(v):
    w = v * 1.0
    w[0] = w[0] * 3.0          # an item write: its adjoint restores w in place
    return w


def uses_bump(x):
    y = bump(x)
    h, c = cell(np.outer(x[:3], x[1:]), np.outer(x[1:], x[:3]), x[:3], x[1:], x[:3])
    return np.sum(y * y) + np.sum(h * c)


def test_a_callees_kept_value_is_copied_only_when_its_adjoint_writes_in_place():
    from srcad.frontend.effects import writes_in_place
    assert writes_in_place(bump) and not writes_in_place(cell) and not writes_in_place(sigmoid)
    x = np.array([0.3, -1.2, 0.7, 2.0])
    assert_grad_close(uses_bump, (x,), srcad.grad(uses_bump)(x))
