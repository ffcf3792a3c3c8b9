"""How a function reaches an operator. A lambda, bound method, ``functools.partial`` or callable
object is unpacked to its plain function and the arguments bound in front (`_as_passed`,
`_bind_front`, `_shift`); a function a srcad operator returned is composed through the plain
function that computes it (`_composed`, srcad/composition.py); wrt is read against the
function's parameters (`_params`, `_single_wrt`)."""
import functools
import inspect
import types

from ..composition import derived, derived_of
from ..errors import SrcadError
from ..frontend.callables import unpack_callable


def _as_passed(f, what=None):
    """(function, arguments bound in front, keywords bound) for a lambda, bound method, partial,
    staticmethod or callable object; None for a plain def. `what`: an operator that takes no
    bound keywords. A function a srcad operator returned is the plain function that computes it
    (srcad/composition.py), never the function it wraps."""
    func, pre, kw = unpack_callable(f)
    if func is f:
        return None
    if kw and what:
        raise SrcadError(f"srcad.{what} of a functools.partial with keyword arguments ({', '.join(kw)}): "
                         f"bind them by position (grad and value_and_grad pass them on)")
    return func, pre, kw


def _composed(op, f, *a, **kw):
    """op(f, ...) for f a function a srcad operator returned: op of the plain function that
    computes f (srcad/composition.py), looked up again at each call (it is rebuilt when the
    derivative it calls is)."""
    d = derived_of(f)
    held = [None, None]

    def wrapper(*args, **kwargs):
        plain_fn = d.plain()
        if held[0] is not plain_fn:
            held[:] = [plain_fn, op(plain_fn, *a, **kw)]
        return held[1](*args, **kwargs)
    functools.update_wrapper(wrapper, f)
    wrapper.__dict__.pop("__srcad_derived__", None)
    return derived(wrapper, op.__name__, f, kw.get("wrt", a[0] if a else 0),
                   **{k: v for k, v in kw.items() if k != "wrt"})


def _shift(wrt, n):
    """wrt of the function with n more arguments in front (a name stays the name)."""
    if isinstance(wrt, (tuple, list)):
        return tuple(_shift(w, n) for w in wrt)
    return wrt + n if isinstance(wrt, int) and wrt >= 0 else wrt


def _bind_front(op, f, pre, kw):
    """op with the bound arguments put back in front of the caller's."""
    def wrapper(*args, **kwargs):
        return op(*pre, *args, **{**kw, **kwargs})
    return functools.update_wrapper(wrapper, f) if hasattr(f, "__name__") else wrapper


_PARAMS = {}        # code object -> parameter names (a plain function's names follow its code object)


def _params(func):
    """func's parameter names, worked out once per code object for a plain function."""
    if type(func) is types.FunctionType and "__wrapped__" not in func.__dict__ \
            and "__signature__" not in func.__dict__:
        names = _PARAMS.get(func.__code__)
        if names is None:
            if len(_PARAMS) > 4096:
                _PARAMS.clear()
            names = _PARAMS[func.__code__] = tuple(inspect.signature(func).parameters)
        return list(names)
    return list(inspect.signature(func).parameters)


def _single_wrt(f, wrt, what):
    if isinstance(wrt, tuple):
        raise SrcadError(f"{what} takes a single wrt (an int or a parameter name), not {wrt!r}. "
                         f"Differentiate one argument at a time.")
    params = _params(f)
    return params.index(wrt) if isinstance(wrt, str) else wrt % len(params)
