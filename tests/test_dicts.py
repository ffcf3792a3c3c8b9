"""Dicts built inside a differentiated function: displays, item assignment (new keys and
overwrites, in loops), `.get`, loops over `.items()`/`.values()`/`.keys()` and over the dict
itself, dict comprehensions, `dict(...)`, nested dicts, dicts passed to other user functions.
Every gradient is checked against central finite differences in reverse mode (grad) and forward
mode (jvp along a random direction), some to second order. What is not supported raises
srcad.UnsupportedSyntaxError naming this file's line."""
import inspect

import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close, numerical_grad


def vec(seed, n, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=n)


# --- the user functions -----------------------------------------------------------------------

def display(x, y):
    d = {"a": x * 2, "b": y}
    return np.sum(d["a"] * d["b"])


def item_assignment(x):
    d = {}
    d["a"] = x * 2
    d["b"] = np.sin(x)
    return np.sum(d["a"] * d["b"])


def overwrite_key(x):
    d = {"a": x, "b": x ** 2}
    first = np.sum(d["a"] * d["b"])
    d["a"] = np.cos(d["a"]) * first
    return np.sum(d["a"]) + first


def accumulate_in_loop(x):
    d = {"total": 0.0}
    for i in range(3):
        d["total"] = d["total"] + np.sum(x ** (i + 1))
        d[i] = d["total"] * x[i]
    return d["total"] + d[0] * d[2]


def new_key_each_iteration(x):
    acts = {}
    h = x
    for k in range(3):
        h = np.tanh(1.5 * h + 0.1 * k)
        acts["layer" + str(k)] = h
    return np.sum(acts["layer0"] * acts["layer2"]) + np.sum(acts["layer1"])


def get_with_default(x):
    d = {"a": x ** 2}
    b = d.get("b", 3.0 * x)
    return np.sum(d.get("a") * b) + np.sum(d.get("a", x))


def items_loop(x):
    d = {"p": x[:2], "q": x[2:] ** 2}
    total = 0.0
    for k, v in d.items():
        total = total + np.sum(np.sin(v)) * len(k)
    return total


def values_and_keys(x):
    d = {"one": x * 1.5, "two": np.exp(x)}
    vals = list(d.values())
    s = sum(np.sum(v) for v in d.values())
    for k in d.keys():
        s = s + np.sum(d[k] ** 2)
    return s * np.sum(vals[1])


def loop_over_dict(x):
    d = {2: x[0], 0: x[1], 1: x[2]}
    out = 0.0
    for k in d:
        out = out + (k + 1.0) * d[k] ** 2
    return out


def comprehension(x):
    scales = {"a": 1.0, "b": 2.0, "c": 0.5}
    d = {k: s * x for k, s in scales.items()}
    e = {k: np.sum(v ** 2) for k, v in d.items() if k != "b"}
    return e["a"] + e["c"] + np.sum(d["b"])


def dict_call(x, y):
    d = dict(w=x, b=y)
    c = dict(d)
    c["w"] = c["w"] * 3.0
    return np.sum(c["w"] * d["w"]) + np.sum(d["b"]) * np.sum(c["b"])


def nested(x):
    params = {"layer": {"W": x.reshape(2, 2), "b": x[:2]}, "scale": x[3]}
    h = params["layer"]["W"] @ params["layer"]["b"]
    return params["scale"] * np.sum(h ** 2)


def computed_keys(x):
    names = ["u", "v"]
    d = {names[0]: x[0], names[1]: x[1] * x[2]}
    e = {names[0]: x[0], names[0]: x[3]}   # noqa: F601  (a repeated computed key: the last one counts)
    return d["u"] * d["v"] + e["u"] ** 2


def helper_reads(d, scale):
    return np.sum(d["a"] * scale) + d["c"]


def passed_to_function(x):
    d = {"a": x ** 2, "c": np.sum(x)}
    y = helper_reads(d, 2.0)
    d["a"] = np.sin(x)
    return y * np.sum(d["a"])


def dict_in_branch(x):
    d = {}
    if np.sum(x) > 0:
        d["v"] = x * 2.0
    else:
        d["v"] = x ** 3
    d["w"] = d.get("w", 1.0) * x
    return np.sum(d["v"] * d["w"])


CASES = [
    (display, lambda: (vec(1, 3), vec(2, 3))),
    (item_assignment, lambda: (vec(3, 4),)),
    (overwrite_key, lambda: (vec(4, 3),)),
    (accumulate_in_loop, lambda: (vec(5, 3),)),
    (new_key_each_iteration, lambda: (vec(6, 4),)),
    (get_with_default, lambda: (vec(7, 3),)),
    (items_loop, lambda: (vec(8, 5),)),
    (values_and_keys, lambda: (vec(9, 3),)),
    (loop_over_dict, lambda: (vec(10, 3),)),
    (comprehension, lambda: (vec(11, 3),)),
    (dict_call, lambda: (vec(12, 3), vec(13, 3))),
    (nested, lambda: (vec(14, 4),)),
    (computed_keys, lambda: (vec(15, 4),)),
    (passed_to_function, lambda: (vec(16, 3),)),
    (dict_in_branch, lambda: (vec(17, 3, 0.1, 1.0),)),
    (dict_in_branch, lambda: (vec(18, 3, -1.0, -0.1),)),
]
IDS = [f.__name__ + f"-{k}" for k, (f, _) in enumerate(CASES)]


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_reverse_matches_finite_differences(f, make):
    args = make()
    for k in range(len(args)):
        assert_grad_close(f, args, srcad.grad(f, wrt=k)(*args), wrt=k)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_forward_matches_finite_differences(f, make):
    args = make()
    rng = np.random.default_rng(7)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    want = sum(numerical_grad(f, args, k) @ np.ravel(tangents[k]) for k in range(len(args)))
    y, y_dot = srcad.jvp(f, args, tangents)
    assert np.allclose(y, f(*args))
    np.testing.assert_allclose(float(y_dot), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [item_assignment, overwrite_key, accumulate_in_loop, get_with_default,
                               new_key_each_iteration])
def test_second_order_matches_finite_differences_of_the_gradient(f):
    x = vec(30, 4 if f is new_key_each_iteration else 3, 0.2, 1.0)
    H = srcad.hessian(f)(x)
    g = srcad.grad(f)
    eps = 1e-5
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = eps
        np.testing.assert_allclose(H[:, j], (g(x + e) - g(x - e)) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_item_write_then_read_keeps_the_dict_as_the_user_sees_it():
    # the tape puts back what a write replaced, and removes a key the write added
    def probe(x):
        d = {}
        d["a"] = x * 2
        return np.sum(d["a"])
    text = srcad.emit(item_assignment)
    assert "rt.saved_item(d, 'a')" in text and "rt.restore_item(d, 'a', tape.pop())" in text
    np.testing.assert_allclose(srcad.grad(probe)(np.ones(3)), 2.0 * np.ones(3))


# --- outside the contract: a named error at the user's line -------------------------------------

def update_with_active(x):
    d = {}
    d.update({"a": x})
    return np.sum(d["a"])


def pop_as_value(x):
    d = {"a": x, "b": 2 * x}
    v = d.pop("a")
    return np.sum(v * d["b"])


def double_star(x):
    base = {"a": x}
    d = {**base, "b": x}
    return np.sum(d["a"] * d["b"])


def repeated_key(x):
    d = {"a": x, "a": 2 * x}  # noqa: F601
    return np.sum(d["a"])


def _line(func, text):
    lines, start = inspect.getsourcelines(func)
    return start + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("f, marker, construct", [
    (update_with_active, "d.update", "in-place method call `d.update(...)`"),
    (pop_as_value, "d.pop", "in-place method `d.pop(...)`"),
    (double_star, "**base", "`**` unpacking in a dict display"),
    (repeated_key, '"a": 2 * x', "the same key twice"),
])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_unsupported_dict_forms_are_named_errors(f, marker, construct, mode):
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.emit(f, mode=mode)
    err = info.value
    assert construct in str(err)
    assert err.filename == __file__ and err.lineno == _line(f, marker)


# --- dicts passed in: a pytree of parameters, as JAX users hold them -----------------------------
# srcad cannot tell from the code that an argument holds a dict: a loop over it runs over what
# rt.loop_sequence gives at run time (a dict's keys, any other sequence itself).
from collections import namedtuple  # noqa: E402

from test_pytrees import _entries, assert_tree_close, fd_tree  # noqa: E402  (pytree FD, by hand)

State = namedtuple("State", "params scale")


def arg_loop_keys(params, x):
    tot = 0.0
    for k in params:
        tot = tot + np.sum(params[k] ** 2) * np.sum(x)
    return tot


def arg_views_get_len_in(params, x):
    tot = 0.0
    for k, v in params.items():
        tot = tot + np.sum(np.sin(v)) * (2.0 if k == "W" else 1.0)
    for v in params.values():
        tot = tot + np.sum(v) ** 2
    vals = list(params.values())
    b = params.get("b", 0.0)
    return (tot + np.sum(vals[0]) * len(params) + ("W" in params) * np.sum(b * x[:2])
            + params.get("missing", 1.5))


def arg_string_keys(params, x):
    tot = 0.0
    for k in params:
        label = k + "_scale"
        if k.startswith("b"):
            tot = tot + np.sum(params[k] * x[:2])
        else:
            tot = tot + np.sum(params[k]) * len(label)
    return tot


def arg_nested(params, x):
    h = x[:2]
    for name in params["layers"]:
        layer = params["layers"][name]
        h = np.tanh(layer["W"] @ h + layer["b"])
    return np.sum(h ** 2) + sum(np.sum(v ** 2) for v in params["layers"]["l1"].values())


def arg_update_comprehension(params, x):
    new = {k: params[k] - 0.1 * params[k] ** 2 * np.sum(x) for k in params}
    return sum(np.sum(v * v) for v in new.values())


def arg_key_orders(params, x):
    tot = 0.0
    for k in sorted(params, reverse=True):
        tot = tot * 0.5 + np.sum(params[k])
    for i, k in enumerate(params):
        tot = tot + i * np.sum(params[k])
    for k, xv in zip(params, x):
        tot = tot + xv * np.sum(params[k])
    ks = list(params)
    first, second = params
    return tot + np.sum(params[ks[0]]) * len(ks) + np.sum(params[first] * 2.0) + len(second)


def arg_int_keys(d, x):
    # keys 1 and 0: a loop by position would read d[0], d[1] (values), not the keys
    tot = 0.0
    for k in d:
        tot = tot + (k + 1.0) * np.sum(d[k] ** 2) * x[0]
    return tot


def arg_sorted_numbers(params, x):
    s = sorted(x)
    t = sorted(list(params["b"]) + [x[0]], reverse=True)
    tot = 0.0
    for j, v in enumerate(sorted(x * 2.0, key=abs)):
        tot = tot + (j + 1.0) * v
    return tot + s[0] * 2.0 + s[-1] * 3.0 + t[0] * t[1]


def arg_namedtuple_of_dicts(state, x):
    tot = 0.0
    for k in state.params:
        tot = tot + np.sum(state.params[k] * x[:2]) * state.scale
    for k, v in state.params.items():
        tot = tot + np.sum(v ** 2)
    return tot


def arg_list_of_pairs(pairs, x):
    tot = 0.0
    for W, b in pairs:
        tot = tot + np.sum(np.tanh(W @ x[:2] + b))
    return tot


def _params(seed):
    rng = np.random.default_rng(seed)
    return {"W": rng.uniform(-1, 1, (2, 2)), "b": rng.uniform(-1, 1, 2)}


def _nested(seed):
    rng = np.random.default_rng(seed)
    layer = lambda: {"W": rng.uniform(-1, 1, (2, 2)), "b": rng.uniform(-1, 1, 2)}  # noqa: E731
    return {"layers": {"l1": layer(), "l2": layer()}}


ARG_CASES = [
    (arg_loop_keys, lambda: _params(40)),
    (arg_views_get_len_in, lambda: _params(41)),
    (arg_string_keys, lambda: _params(42)),
    (arg_nested, lambda: _nested(43)),
    (arg_update_comprehension, lambda: _params(44)),
    (arg_key_orders, lambda: _params(45)),
    (arg_int_keys, lambda: {1: vec(46, 2), 0: vec(47, 3)}),
    (arg_sorted_numbers, lambda: _params(48)),
    (arg_namedtuple_of_dicts, lambda: State(_params(49), 0.7)),
    (arg_list_of_pairs, lambda: [(_params(50)["W"], _params(51)["b"]), (_params(52)["W"], _params(53)["b"])]),
]
ARG_IDS = [f.__name__ for f, _ in ARG_CASES]


def _flat(tree):
    return np.concatenate([np.ravel(leaf) for _, leaf in _entries(tree)])


@pytest.mark.parametrize("f, make", ARG_CASES, ids=ARG_IDS)
def test_dict_argument_reverse_matches_finite_differences(f, make):
    args = (make(), vec(60, 4))
    g_tree, g_x = srcad.grad(f, wrt=(0, 1))(*args)
    want = fd_tree(f, args, 0)
    assert_tree_close(g_tree, want, args[0])
    assert_grad_close(f, args, g_x, wrt=1)


@pytest.mark.parametrize("f, make", ARG_CASES, ids=ARG_IDS)
def test_dict_argument_forward_matches_finite_differences(f, make):
    args = (make(), vec(61, 4))
    rng = np.random.default_rng(3)
    t_tree = srcad.tree_map(lambda leaf: rng.standard_normal(np.shape(leaf)), args[0])
    t_x = rng.standard_normal(4)
    want_tree = fd_tree(f, args, 0)
    want = sum(want_tree[p] @ np.ravel(_entries_at(t_tree, p)) for p, _ in _entries(args[0]))
    want += numerical_grad(f, args, 1) @ t_x
    y, y_dot = srcad.jvp(f, args, (t_tree, t_x))
    np.testing.assert_allclose(y, f(*args))
    np.testing.assert_allclose(float(y_dot), want, rtol=1e-5, atol=1e-6)


def _entries_at(tree, path):
    for p in path:
        tree = tree[p]
    return tree


@pytest.mark.parametrize("f, make", ARG_CASES[:7], ids=ARG_IDS[:7])
def test_dict_argument_second_order(f, make):
    """hessian in x and hvp in the dict, against central differences of the gradient."""
    params, x = make(), vec(62, 4, 0.2, 1.0)
    eps = 1e-5
    H = srcad.hessian(f, wrt=1)(params, x)
    gx = srcad.grad(f, wrt=1)
    for j in range(4):
        e = np.zeros(4)
        e[j] = eps
        np.testing.assert_allclose(H[:, j], (gx(params, x + e) - gx(params, x - e)) / (2 * eps),
                                   rtol=1e-4, atol=1e-6)
    v = srcad.tree_map(lambda leaf: np.full(np.shape(leaf), 0.3), params)
    hv = srcad.hvp(f, wrt=0)(params, x, v)
    gp = srcad.grad(f, wrt=0)
    shift = lambda s: srcad.tree_map(lambda p, d: p + s * d, params, v)  # noqa: E731
    want = srcad.tree_map(lambda a, b: (a - b) / (2 * eps), gp(shift(eps), x), gp(shift(-eps), x))
    np.testing.assert_allclose(_flat(hv), _flat(want), rtol=1e-4, atol=1e-6)


class TinyMLP:
    """A model holding its parameters in a dict of dicts, trained with srcad.grad of a method."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.params = {"layer0": {"W": rng.normal(size=(3, 4)) * 0.5, "b": np.zeros(4)},
                       "layer1": {"W": rng.normal(size=(4, 1)) * 0.5, "b": np.zeros(1)}}

    def predict(self, params, X):
        h = X
        for name in params:
            layer = params[name]
            h = np.tanh(h @ layer["W"] + layer["b"])
        return h[:, 0]

    def loss(self, params, X, y):
        return np.mean((self.predict(params, X) - y) ** 2)

    def step(self, X, y, lr=0.5):
        g = srcad.grad(self.loss)(self.params, X, y)
        self.params = {name: {k: self.params[name][k] - lr * g[name][k] for k in self.params[name]}
                       for name in self.params}
        return g


def test_class_model_with_dict_params_trains():
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    model = TinyMLP(0)
    losses = []
    for step in range(4):
        before = {n: dict(layer) for n, layer in model.params.items()}
        losses.append(model.loss(model.params, X, y))
        g = model.step(X, y)
        if step in (0, 3):
            assert_tree_close(g, fd_tree(lambda p: model.loss(p, X, y), (before,), 0), before)
    assert losses[-1] < 0.8 * losses[0]


def optax_like_step(p, g, lr):
    new = {k: p[k] - lr * g[k] for k in p}
    return sum(np.sum(v ** 2) for v in new.values())


def test_update_loop_on_the_gradient_and_tree_map():
    p = _params(70)
    g = srcad.grad(arg_loop_keys)(p, vec(71, 4))
    got = srcad.grad(optax_like_step, wrt=(0, 1))(p, g, 0.1)
    for k in (0, 1):
        assert_tree_close(got[k], fd_tree(optax_like_step, (p, g, 0.1), k), (p, g)[k])
    doubled = srcad.tree_map(lambda a: 2.0 * a, got[0])
    assert set(doubled) == set(p)
    np.testing.assert_allclose(doubled["W"], 2.0 * got[0]["W"])


def test_loop_over_an_argument_reads_keys_in_generated_code():
    text = srcad.emit(arg_loop_keys)
    assert "params_items = rt.loop_sequence(params)" in text


# --- lists joined with `+` and repeated with `*` (the adjoint splits the cotangent between them) ----

def joined_in_loop(x):
    xs = []
    for i in range(3):
        xs = xs + [np.sin(x[i]) * (i + 1.0)]
    return xs[0] * 1.0 + xs[1] * 10.0 + xs[2] ** 2 * 100.0


def joined_lists_and_tuples(x):
    a = list(x[:2] ** 2)
    c = a + [x[2]]
    t = (x[0],) + (x[1] * 2, np.cos(x[2]))
    return c[0] * 1.0 + c[1] * c[2] + t[2] * 7.0 + t[1] * t[0]


def repeated(x):
    xs = [x[0] ** 2, x[1]] * 2
    ys = 3 * [x[2] * x[0]]
    zs = [0.0] * 2
    return xs[0] + 2.0 * xs[1] * xs[2] + 3.0 * xs[3] + ys[0] * ys[2] + zs[1]


def list_display_with_arrays(x):
    # a list joined to or multiplied by an array is NumPy's sum or product, entry by entry
    y = [x[0] * 2.0, 1.0, x[1] ** 2, 0.5] + x
    z = [1.0, 2.0, 3.0, 4.0] + np.sin(x)
    a = [x[0], x[1] ** 2, 1.0, x[3]]
    return np.sum(y * z) + np.sum((a * np.cos(x)) ** 2)


SEQ_CASES = [joined_in_loop, joined_lists_and_tuples, repeated, arg_sorted_numbers, list_display_with_arrays]


@pytest.mark.parametrize("f", SEQ_CASES)
def test_joined_and_repeated_lists_match_finite_differences(f):
    x = vec(80, 4, 0.2, 1.0)
    args = (_params(81), x) if f is arg_sorted_numbers else (x,)
    k = len(args) - 1
    g = srcad.grad(f, wrt=k)(*args)
    assert_grad_close(f, args, g, wrt=k)
    t = np.random.default_rng(4).standard_normal(4)
    tangents = tuple(srcad.tree_map(np.zeros_like, a) for a in args[:-1]) + (t,)
    _, y_dot = srcad.jvp(f, args, tangents)
    np.testing.assert_allclose(float(y_dot), numerical_grad(f, args, k) @ t, rtol=1e-5, atol=1e-6)
    H = srcad.hessian(f, wrt=k)(*args)
    eps = 1e-5
    for j in range(4):
        e = np.zeros(4)
        e[j] = eps
        hi, lo = list(args), list(args)
        hi[k], lo[k] = x + e, x - e
        np.testing.assert_allclose(H[:, j], (srcad.grad(f, wrt=k)(*hi) - srcad.grad(f, wrt=k)(*lo)) / (2 * eps),
                                   rtol=1e-4, atol=1e-6)


def joined_unshown(a, b):
    c = a + b
    return c[0] * 1.0 + c[1] * 2.0 + c[2] * 3.0


def test_joining_lists_the_code_does_not_show_is_a_named_error():
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.grad(joined_unshown, wrt=(0, 1))([1.0, 2.0], [3.0])
    err = info.value
    assert "joining lists or tuples with `+`" in str(err) and "list(a) + list(b)" in str(err)
    assert err.filename == __file__ and err.lineno == _line(joined_unshown, "c = a + b")


# --- dicts as NumPy/JAX users write them (user trials) ----------------------------------------------

def u_batch_dict(params, batch):
    pred = batch["x"] @ params["W"] + params["b"]
    return np.mean((pred - batch["y"]) ** 2)


def u_list_of_layer_dicts(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h ** 2)


def u_losses_dict(params, x):
    losses = {k: np.sum(v ** 2) * np.sum(x) for k, v in params.items()}
    return sum(losses.values()) + np.sum([np.sum(v ** 3) for v in params.values()])


def u_union(params, x):
    p = params | {"c": x[:2]}
    p |= {"W": p["W"] * p["c"]}
    return np.sum(p["c"] * p["b"]) + np.sum(np.sin(p["W"]))


def u_flatten(params, x):
    flat = np.concatenate([v.ravel() for v in params.values()])
    n = sum(v.size for v in params.values())
    return np.sum(flat ** 2) * x[0] + n


def _l2(tree):
    if isinstance(tree, dict):
        return sum(_l2(v) for v in tree.values())
    return np.sum(tree ** 2)


def u_recursive_norm(params, x):
    return _l2(params) * x[0] + np.sum(params["W"] @ x[:2])


def u_any_key(params, x):
    s = np.sum(params["W"] @ x[:2])
    if any(k.startswith("b") for k in params):
        s = s + np.sum(params["b"] ** 2)
    return s


def u_enumerate_items(params, x):
    tot = 0.0
    for i, (k, v) in enumerate(params.items()):
        tot = tot + (i + 1.0) * np.sum(np.tanh(v)) * x[i]
    return tot


USER_CASES = [
    (u_batch_dict, lambda: _params(90), lambda: {"x": vec(91, 10).reshape(5, 2), "y": vec(92, 10).reshape(5, 2)}),
    (u_list_of_layer_dicts, lambda: [_params(93), _params(94)], lambda: vec(95, 2)),
    (u_losses_dict, lambda: _params(96), lambda: vec(97, 4)),
    (u_union, lambda: _params(98), lambda: vec(99, 4)),
    (u_flatten, lambda: _params(100), lambda: vec(101, 4)),
    (u_recursive_norm, lambda: _params(102), lambda: vec(103, 4)),
    (u_any_key, lambda: _params(104), lambda: vec(105, 4)),
    (u_enumerate_items, lambda: _params(106), lambda: vec(107, 4)),
]
USER_IDS = [f.__name__ for f, _, _ in USER_CASES]


@pytest.mark.parametrize("f, make_p, make_x", USER_CASES, ids=USER_IDS)
def test_user_style_dict_programs(f, make_p, make_x):
    """grad of both arguments against finite differences, the tangent along a direction, and hvp
    in the parameters against central differences of the gradient."""
    args = (make_p(), make_x())
    g = srcad.grad(f, wrt=(0, 1))(*args)
    for k in (0, 1):
        assert_tree_close(g[k], fd_tree(f, args, k), args[k])
    rng = np.random.default_rng(8)
    t = tuple(srcad.tree_map(lambda leaf: rng.standard_normal(np.shape(leaf)), a) for a in args)
    want = sum(fd_tree(f, args, k)[p] @ np.ravel(_entries_at(t[k], p)) for k in (0, 1) for p, _ in _entries(args[k]))
    _, y_dot = srcad.jvp(f, args, t)
    np.testing.assert_allclose(float(y_dot), want, rtol=1e-5, atol=1e-6)
    eps = 1e-5
    hv = srcad.hvp(f, wrt=0)(*args, t[0])
    gp = srcad.grad(f, wrt=0)
    shift = lambda s: srcad.tree_map(lambda a, d: a + s * d, args[0], t[0])  # noqa: E731
    want = srcad.tree_map(lambda a, b: (a - b) / (2 * eps), gp(shift(eps), args[1]), gp(shift(-eps), args[1]))
    np.testing.assert_allclose(_flat(hv), _flat(want), rtol=1e-4, atol=1e-6)
