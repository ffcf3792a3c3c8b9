"""methods: what a call in a method srcad transforms refers to, when the callee is reached
through the method's first parameter (`self`, `cls`) rather than a module name:

- `self.helper(x)`: the class's `helper` (through type(self), so a subclass's override is used);
- `self.encoder.forward(x)`: the method of the object that attribute holds (the generated code
  is watched, and made again if the attribute is rebound to an object of another class);
- `super().loss(x)` / `super(B, self).loss(x)`: the next class's method in type(self)'s MRO;
- `model.forward(x)` with `model` a module global: that object's method.

Each sets the analysis' Op to call the callee as a user function (transformed too), with the
receiver as its first argument (`Op.receiver`).
"""
import ast
import inspect
import types

from ..errors import UnsupportedSyntaxError
from ..rules.registry import lookup
from .callables import AttributeWatch, FirstArg, method_function, resolve_method
from .callees import atom_names as _names, is_user_function as _is_user
from .parsed import Receiver, ReceiverKind


def is_user_method(obj):
    """A bound method of a function srcad transforms."""
    return isinstance(obj, types.MethodType) and _is_user(obj.__func__)


def method_of_object(method):
    """The function to transform for a bound method of a global object (its receiver goes first)."""
    recv = method.__self__
    if isinstance(recv, type):
        return method_function(method.__func__, ReceiverKind.CLASS, recv)
    return method_function(method.__func__, ReceiverKind.INSTANCE, type(recv))


def _is_super_call(node):
    """`super()`, or `super(B, self)` with names."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
            and not node.keywords and (not node.args or len(node.args) == 2
                                       and all(isinstance(a, ast.Name) for a in node.args)))


def method_call(an, op, call):
    """`self.helper(x)` in a method: the class's helper, transformed too; `self.enc.forward(x)`:
    the method of the object self.enc holds (the code is regenerated if that is rebound)."""
    f, recv = call.func, an.parsed.receiver
    if recv is None or not isinstance(f.value, ast.Name):
        return False
    if f.value.id != recv.param:
        return _of_attribute(an, op, call, recv)
    found = resolve_method(recv.kind, recv.cls, f.attr, _instance(recv))
    if found is None:
        if lookup("." + f.attr) is None:
            raise UnsupportedSyntaxError(
                f"the call `{an.parsed.text(f)}(...)`: {recv.cls.__name__} has no method `{f.attr}` (a function "
                f"stored on the instance cannot be resolved when the code is generated)",
                *an.parsed.where(call), hint=f"define `{f.attr}` as a method of the class, or call the "
                f"function by its module-level name")
        return False
    op.callee, first = found
    if first is FirstArg.RECEIVER:
        op.receiver = f.value
    elif first is not None:
        op.receiver = ast.Constant(first)
    op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
    return True


def _instance(recv: Receiver):
    """The instance a method's receiver holds, if known and still alive."""
    return recv.instance() if recv.instance is not None else None


def _of_attribute(an, op, call, recv: Receiver):
    """`t.m(x)` where the local t is `self.a.b` (or `super()`): the method of what that holds."""
    f = call.func
    site = _single_site(an.fn, f.value.id)
    if site is not None and _is_super_call(site.value):
        return _of_super(an, op, call, recv, site)
    chain = _receiver_chain(an.fn, f.value.id, recv.param)
    instance = _instance(recv)
    if not chain or instance is None:
        return False
    obj = instance
    for a in chain:
        obj = getattr(obj, a, None)
    found = resolve_method(ReceiverKind.INSTANCE, type(obj), f.attr, obj)
    if found is None or not _is_user(found[0]):
        return False
    an.parsed.extra_watch.append((AttributeWatch(recv.instance), tuple(chain), type(obj)))
    op.callee, op.receiver = found[0], f.value
    if found[1] not in (None, FirstArg.RECEIVER):      # a classmethod: its class goes first
        op.receiver = ast.Constant(found[1])
    elif found[1] is None:
        op.receiver = None
    op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
    return True


def _of_super(an, op, call, recv: Receiver, site):
    """`super().m(x)` in a method: the m that follows the defining class in type(self)'s MRO,
    transformed too; the generated code names the class (`super(B, self)`), as it runs outside it."""
    if recv.kind is not ReceiverKind.INSTANCE:
        return False
    mro = recv.cls.__mro__
    code = an.parsed.func.__code__
    if site.value.args:         # super(B, self): B names the class
        if site.value.args[1].id != recv.param:
            return False
        found, named = an._resolve(site.value.args[0])
        at = mro.index(named) if found and named in mro else None
    else:                       # super(): the class that defines this method
        at = next((i for i, c in enumerate(mro) for v in vars(c).values()
                   if getattr(inspect.unwrap(v) if callable(v) else v, "__code__", None) is code), None)
    member = next((vars(c)[call.func.attr] for c in mro[at + 1:] if call.func.attr in vars(c)), None) \
        if at is not None else None
    if not isinstance(member, types.FunctionType) or not _is_user(member):
        return False
    op.callee = method_function(member, ReceiverKind.INSTANCE, recv.cls, _instance(recv))
    op.receiver = ast.Name(recv.param, ast.Load())
    if site.value.args:
        op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
        return True
    cls_name = f"{mro[at].__name__}_class"
    an.parsed.env[cls_name] = mro[at]
    site.value = ast.copy_location(ast.Call(ast.Name("super", ast.Load()), [ast.Name(cls_name, ast.Load()),
                                                                           ast.Name(recv.param, ast.Load())], []),
                                   site.value)
    op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
    return True


def _single_site(fn, name):
    """The one statement that assigns the local `name`, if there is exactly one (an Assign)."""
    sites = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
             and any(isinstance(t, ast.Name) and t.id == name
                     for t in ast.walk(n.target if not isinstance(n, ast.Assign) else n.targets[0]))]
    return sites[0] if len(sites) == 1 and isinstance(sites[0], ast.Assign) else None


def _receiver_chain(fn, name, recv_param):
    """[a, b] when the local `name` is assigned once, from `<receiver>.a.b`; else None."""
    site = _single_site(fn, name)
    if site is None:
        return None
    node, chain = site.value, []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not chain or not isinstance(node, ast.Name) or node.id != recv_param:
        return None
    return chain[::-1]
