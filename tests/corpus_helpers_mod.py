"""A second module for the srcad test corpus (tests/test_corpus_*.py).

Part 1 is ordinary user code that the corpus calls, so srcad must transform calls across
modules: plain and keyword calls, default arguments, this module's own globals, calls between
functions of this module, helpers returning tuples and building lists.

Part 2 is the test-side harness the corpus files share (case tables, argument factories and the
checks against finite differences). It is never differentiated.
"""
import functools
from dataclasses import dataclass, field

import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close

# ---------------------------------------------------------------------------------------------
# Part 1: user code called from the corpus
# ---------------------------------------------------------------------------------------------

EPS = 1e-3
CENTERS = np.array([-0.5, 0.0, 0.7])


def smooth_l1(x):
    """Pseudo-Huber penalty, summed."""
    return np.sum(np.sqrt(1.0 + x * x) - 1.0)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def layer_norm(x, gain=1.0):
    mu = np.mean(x)
    var = np.mean((x - mu) ** 2)
    return gain * (x - mu) / np.sqrt(var + EPS)


def mean_and_std(x):
    mu = x.mean()
    sd = np.sqrt(np.mean((x - mu) ** 2) + EPS)
    return mu, sd


def huber(r, delta=1.0):
    small = np.abs(r) <= delta
    return np.sum(np.where(small, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta)))


def rbf_features(x):
    d = x[:, None] - CENTERS[None, :]
    return np.exp(-d ** 2)


def poly_features(x, degree=3):
    feats = [np.ones_like(x)]
    for _ in range(degree):
        feats.append(feats[-1] * x)
    return np.stack(feats, axis=1)


def dense_layer(W, b, x, activation="tanh"):
    z = W @ x + b
    if activation == "tanh":
        return np.tanh(z)
    return np.log1p(np.exp(z))


def normalized_energy(x):
    z = layer_norm(x)
    return smooth_l1(z) / len(x)


# ---------------------------------------------------------------------------------------------
# Part 2: test-side harness (never differentiated)
# ---------------------------------------------------------------------------------------------

def vec(seed, n, lo=-1.0, hi=1.0):
    """n float64 values uniform in [lo, hi), reproducible from seed."""
    return np.random.default_rng(seed).uniform(lo, hi, size=n)


def mat(seed, m, n, lo=-1.0, hi=1.0):
    """An (m, n) float64 matrix uniform in [lo, hi), reproducible from seed."""
    return np.random.default_rng(seed).uniform(lo, hi, size=(m, n))


@dataclass(frozen=True)
class GradCase:
    """f, a factory of fresh positional arguments, the wrt spec, keyword data and tolerances."""
    f: object
    make_args: object
    wrt: object = 0
    kwargs: dict = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-6

    def reference(self):
        """f with the keyword data bound, as finite differences call it."""
        return functools.partial(self.f, **self.kwargs) if self.kwargs else self.f

    def wrts(self):
        return self.wrt if isinstance(self.wrt, tuple) else (self.wrt,)


def case(f, make_args, wrt=0, *, kwargs=None, rtol=1e-5, atol=1e-6, tag=""):
    """One row of a parametrize table, with an id like `horner-wrt0,1` or `branch_on_sum-neg`."""
    c = GradCase(f, make_args, wrt, dict(kwargs or {}), rtol, atol)
    name = f.__name__ + (f"-{tag}" if tag else "")
    if wrt != 0:
        name += "-wrt" + ",".join(str(w) for w in c.wrts())
    return pytest.param(c, id=name)


def _assert_same_values(a, b, what):
    """a and b hold the same values (arrays, numbers, lists/tuples of them)."""
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{what}: structure differs"
        for k, (x, y) in enumerate(zip(a, b)):
            _assert_same_values(x, y, f"{what}[{k}]")
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=what)


def assert_tree_close(got, want, rtol=1e-10, atol=1e-12, what="value"):
    """Numerically equal nested tuples/lists/dicts of arrays and numbers."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{what}: keys differ"
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol, f"{what}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), \
            f"{what}: structure differs"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, rtol, atol, f"{what}[{k}]")
    else:
        assert np.shape(got) == np.shape(want), \
            f"{what}: shape {np.shape(got)} != {np.shape(want)}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def is_float_input(a):
    return isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")


def assert_like_argument(g, arg, k):
    """A gradient has its argument's type (float for a Python float) and shape."""
    if isinstance(arg, float):
        assert isinstance(g, float), f"gradient for float argument {k} is a {type(g).__name__}"
    else:
        assert np.shape(g) == np.shape(arg), \
            f"gradient {k} has shape {np.shape(g)}, not {np.shape(arg)}"


def assert_grads_match(c, got):
    """srcad's result for c (one gradient, or a tuple for a tuple wrt) agrees with FD."""
    if isinstance(c.wrt, tuple):
        assert isinstance(got, tuple) and len(got) == len(c.wrt), \
            f"wrt={c.wrt} must give a tuple of {len(c.wrt)} gradients, got {type(got).__name__}"
        grads = got
    else:
        grads = (got,)
    args = c.make_args()
    for w, g in zip(c.wrts(), grads):
        assert_like_argument(g, args[w], w)
        assert_grad_close(c.reference(), c.make_args(), g, wrt=w, rtol=c.rtol, atol=c.atol)


def assert_inputs_untouched(c, args):
    """The arguments srcad was called with still hold the values make_args gives."""
    _assert_same_values(args, c.make_args(), "srcad changed an input argument")


def check_grad(c):
    args = c.make_args()
    got = srcad.grad(c.f, wrt=c.wrt)(*args, **c.kwargs)
    assert_inputs_untouched(c, args)
    assert_grads_match(c, got)


def check_value_and_grad(c):
    args = c.make_args()
    value, got = srcad.value_and_grad(c.f, wrt=c.wrt)(*args, **c.kwargs)
    assert_inputs_untouched(c, args)
    assert_tree_close(value, c.reference()(*c.make_args()), what="value")
    assert_grads_match(c, got)


def check_vjp(c):
    """vjp's output equals f's; pullback(1.0) gives one cotangent per positional argument."""
    assert not c.kwargs, "srcad.vjp takes positional arguments only"
    args = c.make_args()
    y, pullback = srcad.vjp(c.f, *args)
    assert_tree_close(y, c.f(*c.make_args()), what="vjp output")
    cotangents = pullback(1.0)
    assert_inputs_untouched(c, args)
    assert isinstance(cotangents, tuple) and len(cotangents) == len(args)
    for k, (arg, ct) in enumerate(zip(args, cotangents)):
        if is_float_input(arg):
            assert_like_argument(ct, arg, k)
            assert_grad_close(c.f, c.make_args(), ct, wrt=k, rtol=c.rtol, atol=c.atol)


def check_has_aux(c):
    """grad(has_aux=True) of f returning (scalar, aux) gives (gradient, aux)."""
    args = c.make_args()
    out = srcad.grad(c.f, wrt=c.wrt, has_aux=True)(*args, **c.kwargs)
    assert_inputs_untouched(c, args)
    assert isinstance(out, tuple) and len(out) == 2, "has_aux=True must return (gradient, aux)"
    got, aux = out
    assert_tree_close(aux, c.reference()(*c.make_args())[1], what="aux")
    primary = GradCase(lambda *a, **kw: c.f(*a, **kw)[0], c.make_args, c.wrt, c.kwargs,
                       c.rtol, c.atol)
    assert_grads_match(primary, got)


def check_grad_or_rejected(c, mentions):
    """Either a correct gradient, or a srcad.SrcadError whose message contains `mentions`
    (case-insensitive). A wrong gradient, or any other exception, fails."""
    args = c.make_args()
    try:
        got = srcad.grad(c.f, wrt=c.wrt)(*args, **c.kwargs)
    except srcad.SrcadError as e:
        assert mentions.lower() in str(e).lower(), \
            f"{type(e).__name__} should mention {mentions!r}: {e}"
        return
    assert_inputs_untouched(c, args)
    assert_grads_match(c, got)
