"""Facts about sparsity patterns (a transposed index, a sort, a bounds check, a duplicate map),
cached per pattern and never served for a pattern that changed.

An entry is found by the identity of the pattern's index arrays (their buffers: address, length,
dtype, strides; or the array objects, held weakly) and holds a 64-bit fingerprint of their
content (srcad._kernels.fingerprint: one pass over the bytes). Each use compares the fingerprint
of the arrays as they are now: a CSR whose indices/indptr a data loader refills in place between
calls gets its facts built again, not the old pattern's. (A fingerprint misses a change with
chance about 2**-64; it is no defence against a collision crafted on purpose.)

Within one call of a runtime helper (`scoped`: the sparse helpers the generated code calls, and
srcad.sparse's functions) an array's fingerprint is computed once and reused: nothing but the
helper runs until it returns, so the content cannot change in between. Outside a helper every
lookup fingerprints again.
"""
import collections
import inspect
import os
import threading
import weakref

from .. import _kernels as K

_LOCK = threading.Lock()
_TLS = threading.local()        # .fps: {buffer key: fingerprint} while a helper runs, else None

_CACHE = collections.OrderedDict()      # (kind, n, buffer keys) -> ((arrays, fingerprints), value)
_CACHE_SIZE = 8
_BY_ID = collections.OrderedDict()      # (kind, n, ids) -> ((weak refs, fingerprints), value)
_BY_ID_SIZE = 64


def clear():
    """Forget every cached fact of every pattern."""
    with _LOCK:
        _CACHE.clear()
        _BY_ID.clear()


def _buf(a):
    return (a.__array_interface__["data"][0], a.shape, a.dtype.str, a.strides)


def fingerprints(arrays):
    """The fingerprints of the arrays' contents as they are now (remembered within one helper call)."""
    memo = getattr(_TLS, "fps", None)
    out = []
    for a in arrays:
        key = _buf(a) if memo is not None else None
        hit = memo.get(key) if memo is not None else None
        if hit is None:
            fp = K.fingerprint(a)
            if memo is not None:
                memo[key] = (fp, a)     # a stays alive: its address is not reused within the call
        else:
            fp = hit[0]
        out.append(fp)
    return tuple(out)


def cached(kind, arrays, n, build, cache=True):
    """build() for the pattern held in `arrays` (and n, anything else the fact depends on),
    cached on the arrays' buffers, rebuilt when their content changed. An entry keeps its
    buffers alive, so their addresses are not reused while it lives; a small LRU bounds it."""
    if not cache:
        return build()
    key = (kind, n) + tuple(_buf(a) for a in arrays)
    fps = fingerprints(arrays)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0][1] == fps:
            _CACHE.move_to_end(key)
            return hit[1]
    value = build()
    with _LOCK:
        _CACHE[key] = ((tuple(arrays), fps), value)
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return value


def cached_by_id(kind, arrays, n, build, cache=True):
    """build() for the pattern held in `arrays`, cached on the identity of the array objects
    (held weakly: a dead array's entry is never reused), rebuilt when their content changed."""
    if not cache:
        return build()
    key = (kind, n) + tuple(id(a) for a in arrays)
    fps = fingerprints(arrays)
    hit = _BY_ID.get(key)
    if hit is not None and hit[0][1] == fps and all(r() is a for r, a in zip(hit[0][0], arrays)):
        return hit[1]
    value = build()
    try:
        refs = tuple(weakref.ref(a) for a in arrays)
    except TypeError:
        return value
    with _LOCK:
        _BY_ID[key] = ((refs, fps), value)
        _BY_ID.move_to_end(key)
        while len(_BY_ID) > _BY_ID_SIZE:
            _BY_ID.popitem(last=False)
    return value


def scoped(fn):
    """fn, computing each array's fingerprint at most once per call (the outermost scoped call
    opens the scope, and closes it when it returns)."""
    def helper(*args, **kwargs):
        if getattr(_TLS, "fps", None) is not None:
            return fn(*args, **kwargs)
        _TLS.fps = {}
        try:
            return fn(*args, **kwargs)
        finally:
            _TLS.fps = None
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(helper, attr, getattr(fn, attr, None))
    try:
        helper.__signature__ = inspect.signature(fn)
    except (TypeError, ValueError):
        pass
    helper.srcad_scoped = fn
    return helper


def scope_module(namespace, names):
    """Replace each function `names` of a module's namespace by its scoped version."""
    for name in names:
        fn = namespace.get(name)
        if callable(fn) and not hasattr(fn, "srcad_scoped") and inspect.isfunction(fn):
            namespace[name] = scoped(fn)


def _after_fork_in_child():
    """A fork while another thread held the lock would leave it held forever in the child."""
    global _LOCK, _TLS
    _LOCK = threading.Lock()
    _TLS = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
