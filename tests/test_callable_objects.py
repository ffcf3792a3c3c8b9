"""A module-level object whose class defines `__call__` in Python, called inside the differentiated
function (`emb(E, ids)`, as a model or layer object is used): srcad transforms `__call__` with the
object first, reads the object where the call reads it (an attribute changed later is seen), and
transforms again when the name is bound to an object of another class. Each against central finite
differences."""
import numpy as np

import srcad
from fdcheck import numerical_grad

IDS = np.array([1, 3, 3, 0])


class Embedding:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, E, ids):
        return self.scale * E[ids].sum(axis=0)


class SineEmbedding:
    def __call__(self, E, ids):
        return np.sin(E[ids]).sum(axis=0)


emb = Embedding(2.0)


def loss(E):
    v = emb(E, IDS)
    return np.sum(v ** 2)


def _E():
    return np.random.default_rng(0).normal(size=(5, 3))


def test_call_of_a_callable_object_reverse_and_forward():
    global emb
    E = _E()
    emb = Embedding(2.0)
    g = srcad.grad(loss)
    np.testing.assert_allclose(g(E), numerical_grad(loss, (E,)).reshape(E.shape), rtol=1e-6, atol=1e-8)
    d = np.random.default_rng(1).normal(size=E.shape)
    _, t = srcad.jvp(loss, (E,), (d,))
    np.testing.assert_allclose(t, np.sum(numerical_grad(loss, (E,)).reshape(E.shape) * d), rtol=1e-6)


def test_attribute_changed_and_name_rebound():
    global emb
    E = _E()
    emb = Embedding(2.0)
    g = srcad.grad(loss)
    g(E)
    emb.scale = 3.0                 # read at run time from the object the call reads
    np.testing.assert_allclose(g(E), numerical_grad(loss, (E,)).reshape(E.shape), rtol=1e-6, atol=1e-8)
    emb = SineEmbedding()           # another class: its __call__ is transformed instead
    np.testing.assert_allclose(g(E), numerical_grad(loss, (E,)).reshape(E.shape), rtol=1e-6, atol=1e-8)
