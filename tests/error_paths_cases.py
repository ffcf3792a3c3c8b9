"""User functions that reach each of srcad's error paths once (tests/test_error_messages.py).
Each function's offending line carries a `# here` marker: the error must name this file and that
line."""
import collections
import math

import numpy as np
import scipy.special

import srcad
from srcad import runtime as rt


class Box:
    pass


Params = collections.namedtuple("Params", "w b")


def assign_attribute(x):
    box = Box()
    box.value = x  # here
    return np.sum(x)


def nested_subscript_write(x):
    y = np.zeros((2, 2))
    y[0][1] = x[0]  # here
    return np.sum(y)


def star_params(*xs):  # here
    return np.sum(xs[0])


def uses_try(x):
    try:  # here
        y = np.sin(x)
    except ValueError:
        y = x
    return np.sum(y)


def decorated_inner(x):
    def inner(*vs):  # here
        return vs[0] * 2
    return np.sum(inner(x))


def deep_inner(x):
    def outer(v):  # here
        def inner(w):
            return w * 2
        return inner(v)
    return np.sum(outer(x))


def for_else(x):
    s = 0.0
    for v in x:  # here
        s = s + v
    else:
        s = s * 2
    return s


def starred_unpacking(x):
    first, *rest = x  # here
    return first


def loop_into_attribute(x):
    box = Box()
    for box.value in x:  # here
        pass
    return np.sum(x)


def call_local_function(x):
    f = np.sin
    return np.sum(f(x))  # here


def double_star_call(x):
    opts = {"axis": 0}
    return np.sum(np.sum(x, **opts))  # here


def dict_call_of_pairs(x):
    d = dict([("a", x)], **{"b": x})  # here
    return np.sum(d["a"])


def dict_double_star(x):
    base = {"a": x}
    d = {**base}  # here
    return np.sum(d["a"])


def dict_repeated_key(x):
    d = {"a": x, "a": 2 * x}  # noqa: F601  # here
    return np.sum(d["a"])


def dict_get_three(x):
    d = {"a": x}
    return np.sum(d.get("a", x, 1))  # here


def dict_items_argument(x):
    d = {"a": x}
    return np.sum(list(d.items(1))[0][1])  # here


def pop_as_value(x):
    d = {"a": x, "b": 2 * x}
    v = d.pop("a")  # here
    return np.sum(v * d["b"])


def dict_and_array_name(x):
    d = {"a": x}
    d = x * 2
    s = 0.0
    for k in d:  # here
        s = s + k
    return s


def enumerate_start(x):
    s = 0.0
    for i, v in enumerate(x, 1):  # here
        s = s + i * v
    return s


def _inner_square(x):
    return x * x


def vjp_inside(x):
    return np.sum(srcad.vjp(_inner_square, x)[0])  # here


def jvp_inside_unshown(x):
    primals = (x,)
    return np.sum(srcad.jvp(_inner_square, primals, (x,))[1])  # here


def _inner_sum(a, s):
    return np.sum(np.sin(a) * s)


def guard_reader_unbound(x):
    v = np.zeros(3)
    for i in range(3):
        v *= np.cos(x)  # here
        j = 0
        while j < 2:
            j += 1
            w = srcad.grad(_inner_sum)(v, x[0])
    u = srcad.grad(_inner_sum)(w, x[1])
    return np.sum(u)


def map_keywords(x):
    return sum(map(np.sin, x, strict=True))  # here


def zip_strict(x):
    s = 0.0
    for a, b in zip(x, x, strict=True):  # here
        s = s + a * b
    return s


def reversed_two(x):
    s = 0.0
    for v in reversed(x, 1):  # here
        s = s + v
    return s


def max_with_key(x):
    return max(x, key=abs)  # here


def undefined_name(x):
    return np.sum(not_defined_anywhere(x))  # noqa: F821  # here


def update_with_active(x):
    d = {}
    d.update({"a": x})  # here
    return np.sum(d["a"])


def sort_in_place(x):
    y = x * 2
    y.sort()  # here
    return np.sum(y)


def no_rule(x):
    return np.sum(scipy.special.struve(0.0, x))  # here


def norm_ord_one(x):
    return np.linalg.norm(x, 1)  # here


def einsum_ellipsis(A):
    return np.sum(np.einsum("...i->...", A))  # here


def not_a_field(p):
    return np.sum(p.c)  # here


def sqrt_at_zero(x):
    return np.sum(np.sqrt(x))  # here


def returns_array(x):
    return np.sin(x)  # here


def returns_scalar_only(x):
    return np.sum(x)  # here


def helper_two(a, b):
    return a * b


def wrong_call(x):
    return np.sum(helper_two(x, c=2.0))  # here


def helper_star(*vs):
    return vs[0]


def call_star_helper(x):
    return np.sum(helper_star(x))  # here


def transpose_vjp_direct(x):
    return np.sum(rt.cumsum_vjp(x, x))  # here


def uses_math(x):
    return math.sin(x) * 2.0  # here


def plain(x, y):  # here
    return np.sum(x * y)


def loss_of_dict(p):
    return np.sum(p["w"] ** 2)  # here


def sparse_quad(A, x):  # here
    return x @ (A.T @ (A @ x))


def where_on_value(x):
    return np.sum(np.where(x, x, 0.0))  # here


class WithStoredFunction:
    def __init__(self):
        self.fn = np.sin

    def loss(self, x):
        return np.sum(self.fn(x))  # here


def logspace_base(x):
    return np.sum(np.logspace(0.0, 1.0, 4, base=x[0] + 2.0))  # here


def out_into_nested(x):
    bufs = [np.zeros(4)]
    np.sin(x, out=bufs[0][:])  # here
    return np.sum(bufs[0])


def out_with_where(x):
    y = np.zeros(4)
    np.sin(x, out=y, where=x > 0.4)  # here
    return np.sum(y)


def copyto_where(x):
    y = np.zeros(4)
    np.copyto(y, x, where=x > 0.4)  # here
    return np.sum(y)


def maybe_shared(x, s, flag):
    if flag:
        y = s
    else:
        y = x * 2.0
    y += x  # here
    return np.sum(y * s)


def coo_sum(A, x):
    return A.sum() * np.sum(x) + np.sum(A @ x)


def joined_unshown(a, b):
    c = a + b  # here
    return c[0] * 1.0 + c[1] * 2.0 + c[2] * 3.0


def cov_weighted(x):
    return np.sum(np.cov(np.stack([x, x * x]), fweights=np.array([1, 2, 1, 1])))  # here


def percentile_nearest(x):
    return np.percentile(x, 40.0, method="nearest")  # here


def norm_order_zero(x):
    return np.linalg.norm(x, 0.0 * x[0])  # here


# composition (srcad/composition.py, frontend/callables.py)
def sin_for_cache(x):  # here
    return np.sin(x) * x


cached_sin = __import__("functools").lru_cache(maxsize=None)(sin_for_cache)


def star_for_composition(*args):  # here
    return args[0] ** 2


def operator_of_a_local(x):
    h = sin_for_cache
    return srcad.grad(h)(x)  # here


def loop_for_second_order(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x * i)  # here
    return np.sum(s)


def loop_writes_iterable(x):
    a = x * 1.0
    s = 0.0
    for t in a:
        s = s + t * t
        a -= 0.1 * a  # here
    return s


def overlapping_write(x):
    v = np.concatenate([x, x])
    v[::2] = v[0:4]  # here
    return np.sum(v * v)


def list_rows_written_by_index(x):
    ys = [x * 1.0, x * 2.0]
    for r in ys:  # here
        r[0] = 1.0
    return np.sum(ys[0] * ys[1])


def einsum_sublist_of_names(x):
    i = 0
    return np.sum(np.einsum(x, [i, 1], x, [1, 2], [i, 2]))  # here


def _picks(k):
    return np.sin if k else np.cos


def call_of_a_returned_function(x):
    return np.sum(_picks(1)(x))  # here


_draws = np.random.default_rng(0)


def _noisy(v):
    return v * _draws.normal()


def rerun_callee_draws(x):
    return np.sum(_noisy(x))  # here
