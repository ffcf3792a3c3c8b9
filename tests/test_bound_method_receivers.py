"""Bound methods of module-level objects called by a name (`h = m.g` ... `h(x)`) or through the
object (`m.g(x)`): the transformed method gets the receiver Python would pass it. A classmethod gets
its class, also when reached through an instance whose own attribute shadows the class's (it was
given the instance: a silently wrong derivative); a method bound to a module-level name gets the
instance it is bound to (it raised AttributeError). Each against central finite differences."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError
from fdcheck import numerical_grad


class Model:
    k = 2.0

    def __init__(self, w):
        self.w = w

    @classmethod
    def cm(cls, x):
        return np.sum(np.sin(x) * cls.k)

    def im(self, x):
        return np.sum(np.sin(x) * self.w * x)


m = Model(3.0)
m.k = 5.0                   # shadows Model.k for the instance only: cm still reads Model.k
through_instance = m.cm     # a classmethod bound via an instance: its __self__ is Model
through_class = Model.cm
bound = m.im


def classmethod_via_instance_name(x):
    return through_instance(x)


def classmethod_via_class_name(x):
    return through_class(x)


def method_via_name(x):
    return bound(x)


def classmethod_via_instance_attribute(x):
    return m.cm(x) * np.sum(x)


def classmethod_in_local(x):
    h = Model(1.0).cm
    return h(x)


X = np.array([0.3, -1.2, 0.7])
CASES = [classmethod_via_instance_name, classmethod_via_class_name, method_via_name,
         classmethod_via_instance_attribute]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_tangent_match_finite_differences(f):
    fd = numerical_grad(f, (X,))
    np.testing.assert_allclose(srcad.grad(f)(X), fd, rtol=1e-6, atol=1e-8)
    v = np.array([0.5, -1.0, 2.0])
    _, tangent = srcad.jvp(f, (X,), (v,))
    np.testing.assert_allclose(tangent, fd @ v, rtol=1e-6, atol=1e-8)


def test_the_instance_bound_to_a_name_is_read_at_each_call():
    global bound
    saved = bound
    try:
        bound = Model(7.0).im
        np.testing.assert_allclose(srcad.grad(method_via_name)(X), numerical_grad(method_via_name, (X,)),
                                   rtol=1e-6, atol=1e-8)
    finally:
        bound = saved


def test_a_bound_method_held_in_a_local_is_a_named_error_at_the_call():
    with pytest.raises(UnsupportedSyntaxError, match=r"test_bound_method_receivers\.py:\d+:\d+: .*local value"):
        srcad.grad(classmethod_in_local)(X)
