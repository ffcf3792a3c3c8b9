"""Functions as people pass them: lambdas, bound methods, functools.partial, staticmethod and
classmethod, each brought to a plain Python function that srcad can parse, plus the arguments
bound to it.

- A lambda becomes a copy named `lambda_L<line>` (a valid name for the generated functions);
  parse finds its source on that line.
- A method becomes a copy that remembers the class its first parameter (`self` or `cls`)
  belongs to, so that `self.helper(x)` in its body resolves to the class's `helper`, which is
  transformed too. The receiver is an argument like any other; it is never differentiated.
- `functools.partial(f, a, k=v)` is f with `a` bound in front and `k=v` passed by keyword.

Copies are kept per original function (weakly), so a function passed twice is transformed once.
"""
import functools
import inspect
import keyword
import re
import types
import weakref
from enum import Enum

from ..errors import SrcadError, UnsupportedSyntaxError
from .parsed import MethodOf, ReceiverKind

_COPIES = weakref.WeakKeyDictionary()    # original function -> {variant: copy}


class FirstArg(Enum):
    """What `resolve_method` says goes first in the call of the function it found, besides None
    (the call's own arguments only) and a class (that class goes first)."""
    RECEIVER = "receiver"   # the receiver `<receiver>.<attr>(...)` was called on


def _copy(func, variant, name, rename_code=True, **attrs):
    by_variant = _COPIES.setdefault(func, {})
    out = by_variant.get(variant)
    if out is None:
        code = func.__code__.replace(co_name=name) if rename_code and name != func.__code__.co_name else func.__code__
        out = types.FunctionType(code, func.__globals__, name, func.__defaults__, func.__closure__)
        out.__kwdefaults__ = func.__kwdefaults__
        out.__qualname__ = attrs.pop("__qualname__", func.__qualname__ if name == func.__name__ else name)
        out.__module__ = func.__module__
        out.__doc__ = func.__doc__
        out.__dict__.update(attrs)
        by_variant[variant] = out
    return out


def is_lambda(func):
    return isinstance(func, types.FunctionType) and func.__name__ == "<lambda>"


def transformable(func):
    """What srcad transforms for func: func itself; for a lambda its copy named `lambda_L<line>`;
    for a function a decorator made with functools.wraps, a copy without `__wrapped__` (srcad
    differentiates the wrapper's own code, never the function it wraps: inspect.signature and
    inspect.unwrap would otherwise look through it); for a function a srcad operator returned
    (`srcad.grad(f)`), the plain function that computes it through f's generated derivative
    (srcad/composition.py), which is transformed in turn."""
    derived = getattr(func, "__srcad_derived__", None)
    if derived is not None:
        return derived.plain()
    if is_lambda(func):
        return _copy(func, "lambda", f"lambda_L{func.__code__.co_firstlineno}", __srcad_lambda__=True)
    if isinstance(func, types.FunctionType) and ("__wrapped__" in func.__dict__ or "__signature__" in func.__dict__):
        # named as its code is (functools.wraps gave it the wrapped function's name): the def srcad reads
        return _copy(func, "unwrapped", func.__code__.co_name, __qualname__=func.__code__.co_qualname,
                     __srcad_wrapper_of__=func.__name__)
    if isinstance(func, types.FunctionType) and not (func.__name__.isidentifier()
                                                     and not keyword.iskeyword(func.__name__)):
        return _copy(func, "renamed", identifier(func.__name__), rename_code=False)
    return func


def identifier(name):
    """An ASCII Python identifier made of name's letters, digits and underscores (others become
    `_`), at most 64 characters, never a keyword."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", str(name))[:64] or "f"
    if not (out[0].isalpha() or out[0] == "_") or keyword.iskeyword(out):
        out = "f_" + out
    return out


def method_function(func, kind: ReceiverKind, cls: type, instance=None):
    """A copy of a method's function whose first parameter is known to be an instance of cls
    (ReceiverKind.INSTANCE) or the class cls itself (ReceiverKind.CLASS). Given the instance, the copy is
    that instance's own, so that `self.encoder.forward(x)` can be resolved through the object
    `self.encoder` holds (the generated code is regenerated if that attribute is rebound)."""
    func = transformable(func)
    try:
        ref = weakref.ref(instance) if instance is not None else None
    except TypeError:       # an object without weak references: resolved through its class only
        ref = None
    if ref is None:
        return _copy(func, (kind, cls), func.__name__, __srcad_receiver__=MethodOf(kind, cls))
    variant = (kind, cls, id(instance))
    by_variant = _COPIES.setdefault(func, {})
    old = by_variant.get(variant)
    if old is None:         # forget the copies of instances that are gone
        for v in [v for v, c in by_variant.items() if getattr(c, "__srcad_instance__", lambda: 1)() is None]:
            del by_variant[v]
    elif old.__srcad_instance__() is not instance:     # an id reused by a new object
        del by_variant[variant]
    return _copy(func, variant, func.__name__, __srcad_receiver__=MethodOf(kind, cls), __srcad_instance__=ref)


class ItemWatch:
    """For the cache's freshness check: the item `<name>[<key>]` of a module-level container now
    (a function called as `fs[0](x)` or looped over: `for g in fs`)."""

    def __init__(self, parsed):
        self.parsed = parsed

    def current(self, key):
        name, item = key
        try:
            return self.parsed.current(name)[item]
        except (TypeError, KeyError, IndexError):
            return None


class AttributeWatch:
    """For the cache's freshness check: the class of the object at `self.<a>.<b>` now."""

    def __init__(self, ref):
        self.ref = ref

    def current(self, chain):
        obj = self.ref()
        for a in chain:
            obj = getattr(obj, a, None)
        return type(obj)


def resolve_method(kind: ReceiverKind, cls: type, attr: str, instance=None):
    """What `<receiver>.<attr>(...)` calls, for a receiver of the given kind and class:
    (function to transform, first argument), the first argument being None (the call's own
    arguments only), FirstArg.RECEIVER (the receiver goes first) or a class (that class goes first);
    None when the class has no such function (an attribute of the instance, say)."""
    try:
        member = inspect.getattr_static(cls, attr)
    except AttributeError:
        return None
    if isinstance(member, staticmethod):
        return transformable(member.__func__), None
    if isinstance(member, classmethod):
        return method_function(member.__func__, ReceiverKind.CLASS, cls), \
            FirstArg.RECEIVER if kind is ReceiverKind.CLASS else cls
    if isinstance(member, types.FunctionType):
        if kind is ReceiverKind.INSTANCE:
            return method_function(member, ReceiverKind.INSTANCE, cls, instance), FirstArg.RECEIVER
        return transformable(member), None      # Class.f(obj, ...): an ordinary call
    return None


def _refuse_wrapper(f):
    """A wrapper that is not a Python function (functools.lru_cache, cache, a wrapper written in C):
    srcad cannot read what it computes, and never differentiates the function it wraps in its
    place (the two need not compute the same values)."""
    if hasattr(f, "__wrapped__") and not isinstance(f, types.FunctionType):
        inner = f.__wrapped__
        name = getattr(inner, "__qualname__", getattr(inner, "__name__", repr(inner)))
        code = getattr(inner, "__code__", None)
        raise UnsupportedSyntaxError(
            f"a function wrapped by {type(f).__module__}.{type(f).__qualname__} (not Python code srcad can read; "
            f"srcad does not differentiate the function it wraps in its place)",
            code.co_filename if code else "<unknown>", code.co_firstlineno if code else 0, 0,
            hint=f"differentiate the function it wraps (its `__wrapped__`, here `{name}`; lru_cache and cache "
                 f"compute the same values), or write the wrapper as a Python function")
    return None


def unpack_callable(f):
    """(function, arguments bound in front, keywords bound) for what a user passed to srcad."""
    pre, kw = (), {}
    for _ in range(100):
        if isinstance(f, functools.partial):
            pre, kw = tuple(f.args) + pre, {**f.keywords, **kw}
            f = f.func
        elif isinstance(f, types.MethodType):
            recv = f.__self__
            kind, cls = (ReceiverKind.CLASS, recv) if isinstance(recv, type) else (ReceiverKind.INSTANCE, type(recv))
            pre = (recv,) + pre
            inner = f.__func__      # a decorated method: the wrapper's code, as it runs
            if not isinstance(inner, types.FunctionType) or hasattr(inner, "__srcad_derived__"):
                return _refuse_wrapper(f.__func__) or (f, pre, kw)
            f = method_function(inner, kind, cls, recv if kind is ReceiverKind.INSTANCE else None)
        elif isinstance(f, staticmethod):
            f = f.__func__
        elif isinstance(f, classmethod):
            raise SrcadError(f"srcad got the classmethod object {f.__func__.__qualname__} itself; pass it "
                             f"through its class, as `{f.__func__.__qualname__}` (a bound method)")
        elif isinstance(f, types.FunctionType):
            return transformable(f), pre, kw
        elif hasattr(f, "__wrapped__"):     # functools.lru_cache, a C or Cython wrapper
            _refuse_wrapper(f)
        elif not isinstance(f, type) and isinstance(getattr(f, "__call__", None), types.MethodType):
            f = f.__call__          # an object with a __call__ method written in Python
        else:
            return f, pre, kw
    return f, pre, kw
