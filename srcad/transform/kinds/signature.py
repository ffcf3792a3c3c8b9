"""The abstract signature of a call (runs on every call of a derivative: the generated module is
cached per signature), and the parameters' kinds it gives the kinds pass."""
import ast
import inspect

import numpy as np
import scipy.sparse as sp

from ...inputs import dim_classes
from .lattice import _PY, UNKNOWN, Cat, Kind, dims_token, is_dims


_SIMPLE = {float: "float", int: "int", bool: "bool"}
_CONTAINERS = {tuple: "tuple", list: "list", dict: "dict"}


def _arg_key(a):
    t = type(a)
    if t is np.ndarray:
        return (a.dtype.char, a.ndim)
    k = _SIMPLE.get(t)
    if k is not None:
        return k
    k = _CONTAINERS.get(t)
    if k is not None:
        return k
    if isinstance(a, np.generic):
        return ("scalar", a.dtype.char)
    if sp.issparse(a):
        return t
    if isinstance(a, tuple):        # a namedtuple: its class
        return t
    return "other"


def signature(args, kwargs: dict | None = None) -> tuple:
    """The abstract signature of a call: one key per argument (keywords sorted by name), and when
    an argument is an array, the classes of equal dimensions of the arrays (inputs.dim_classes:
    positional arguments, then keywords by name), which prove shapes equal in the derivative."""
    kw = tuple(sorted([(k, _arg_key(v)) for k, v in kwargs.items()])) if kwargs else ()
    dims = dim_classes(list(args) + [kwargs[k] for k, _ in kw]) if kwargs else dim_classes(args)
    return (tuple([_arg_key(a) for a in args]), kw) if dims is None else (tuple([_arg_key(a) for a in args]), kw, dims)


def param_kinds(func, sig: tuple | None) -> dict[str, Kind]:
    """Parameter name -> Kind for a call of func with abstract signature sig (None: all unknown)."""
    if sig is None:
        return {}
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return {}
    out = {}
    pos, kws = sig[0], dict(sig[1])
    dims = sig[2] if len(sig) > 2 else ()
    dims_of = dict(zip([n for n, _ in sig[1]], dims[len(pos):]))
    k = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return {}
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and k < len(pos):
            out[p.name] = _with_dims(_of_key(pos[k], p.name), dims[k] if k < len(dims) else None)
            k += 1
        elif p.name in kws:
            out[p.name] = _with_dims(_of_key(kws[p.name], p.name), dims_of.get(p.name))
        elif p.default is not p.empty:
            out[p.name] = _of_key(_arg_key(p.default), p.name)
    return out


def _with_dims(k, dims):
    """k (an array parameter's kind) with the shape its dimension classes give: a token that other
    arrays of the same classes share (lattice.dims_token)."""
    if dims is None or k.cat is not Cat.ARRAY or k.ndim != len(dims):
        return k
    return Kind(k.cat, k.dtype, k.ndim, dims_token(dims))


def _of_key(key, name):
    if isinstance(key, str):
        return _PY.get(key, Kind(key if key in ("list", "tuple", "dict") else None))
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int):
        char, ndim = key
        if ndim == 0:
            return Kind(Cat.NP, char, 0, ())
        return Kind(Cat.ARRAY, char, ndim, ("param", name))
    if isinstance(key, tuple) and key[0] == "scalar":
        return Kind(Cat.NP, key[1], 0, ())
    if isinstance(key, type) and issubclass(key, (sp.sparray, sp.spmatrix)):
        return Kind(Cat.SPARSE, None, 2, None)
    return UNKNOWN



def call_kinds(params, kinds):
    """The kinds a call site knows for a callee's parameters, as the callee's own (a hashable key:
    a callee's derivation is keyed by it, so calls with different kinds get different code).

    params: the callee's parameter names; kinds: the caller's Kind of the argument each receives.
    A shape token is the caller's: two parameters whose arguments share one keep sharing one,
    renamed to the first such parameter's ("param", name); an array of unknown shape gets its own
    parameter's token (a top-level parameter's, param_kinds); a list's items keep no token and a
    tuple's elements are not passed on. None when
    nothing is known (the callee is derived for any arguments, as before)."""
    rename: dict = {}
    out = []
    for p, k in zip(params, kinds):
        if k.cat is None:
            continue
        shape = k.shape
        if is_dims(shape):
            pass        # the call's dimension classes: the same in the callee (not renamed)
        elif shape is not None and shape != ():
            shape = rename.setdefault(shape, ("param", p))
        elif shape is None and k.cat == "array" and k.ndim is not None:
            shape = ("param", p)        # its own shape at entry, as a top-level parameter's
        out.append((p, Kind(k.cat, k.dtype, k.ndim, shape, _tokenless(k.item), dims=k.dims if not is_dims(shape) else None)))
    return tuple(out) or None


def literal_kind(node):
    """The kind of an argument written as a literal (`2.0`, `-1`, `True`); UNKNOWN otherwise."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in _SIMPLE:
        return _PY[_SIMPLE[type(node.value)]]
    return UNKNOWN


def _tokenless(k):
    """k (a list's items) without the caller's shape tokens, its own items' and elements' too."""
    if k is None or k.cat is None:
        return k
    return Kind(k.cat, k.dtype, k.ndim, k.shape if k.shape == () or is_dims(k.shape) else None, _tokenless(k.item),
                dims=k.dims)
