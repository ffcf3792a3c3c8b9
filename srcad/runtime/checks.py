"""Run-time checks that generated code makes: in-place updates another name would see, a scalar
output (and the seed that stands for 1.0), finite derivatives; user rules looked up by function."""
import numbers

import numpy as np
import scipy.sparse as sp

from ..errors import NonScalarOutputError, NumericsError, SrcadError, UnsupportedSyntaxError
from ..rules.registry import lookup
from .rowsparse import RowSparse
from .values import _is_map, _is_seq, _is_zero, _rebuild
from .accumulate import zeros_like


def updates_in_place(v):
    """Does `name op= value` update the object v in place (a NumPy array, a list), rather than
    rebind the name to a new value (a number, a tuple)? Generated code asks this after an
    augmented assignment to a name that another name holds the same object as."""
    return isinstance(v, (np.ndarray, list, dict))



def slices_are_views(v):
    """Does slicing v give a view of its memory (a NumPy array), rather than a copy (a list, a
    tuple, a sparse matrix)? Generated code asks this before writing a changed slice back."""
    return isinstance(v, np.ndarray)



def _shares(a, v):
    """Does a see v's memory: v itself, an array overlapping it, a container holding either?"""
    if a is v:
        return True
    if isinstance(a, np.ndarray) and isinstance(v, np.ndarray):
        return np.may_share_memory(a, v)
    if isinstance(a, (list, tuple)):
        return any(_shares(b, v) for b in a)
    if isinstance(a, dict):
        return any(_shares(b, v) for b in a.values())
    return False



def refuse_shared_update(v, construct, filename, line, col, hint, *readers):
    """Raise UnsupportedSyntaxError before `v op= ...` runs if it would update v in place (v holds
    an array or a list) while one of `readers`, names read later, sees v's memory. srcad's alias
    analysis found that they may; only the values, known now, tell."""
    if updates_in_place(v) and (not readers or any(_shares(r, v) for r in readers)):
        raise UnsupportedSyntaxError(construct, filename, line, col, hint=hint)



def is_scalar(y):
    """Is y a scalar output: a Python number, a NumPy scalar, or an array of size 1."""
    if isinstance(y, numbers.Number):
        return True
    return isinstance(y, (np.ndarray, np.generic)) and np.size(y) == 1



class ScalarSeed:
    """The seed grad passes: checks that the output is a scalar, then stands for 1.0."""

    def __init__(self, check, has_aux=False):
        self.check, self.has_aux = check, has_aux



def check_scalar(y, func, has_aux):
    """The check grad's seed (ScalarSeed) makes of f's output y: a scalar, or with has_aux a pair
    (scalar, aux)."""
    if not has_aux and (type(y) is float or type(y) is np.float64):
        return
    if has_aux:
        if not isinstance(y, (tuple, list)) or len(y) != 2:
            raise SrcadError(f"{func.__name__} was differentiated with has_aux=True, so it must return a pair "
                             f"(scalar, aux); it returned {type(y).__name__}. Return (loss, aux), or drop has_aux=True.")
        y = y[0]
    if not is_scalar(y):
        shape = getattr(y, "shape", None)
        raise NonScalarOutputError(
            f"srcad.grad needs {func.__name__} to return a scalar (a float or an array of size 1); it returned "
            f"{type(y).__name__}{' of shape ' + str(shape) if shape is not None else ''}. For a non-scalar "
            f"output use srcad.jacobian({func.__name__}) for the full Jacobian, or srcad.vjp({func.__name__}, ...) "
            f"to pull back a cotangent of the output's shape.")



def seed(y, s):
    """The output's cotangent: s itself, or 1.0 (with has_aux, (1.0, 0.0)) for grad's checked seed."""
    if isinstance(s, ScalarSeed):
        s.check(y)
        return (1.0, 0.0) if s.has_aux else 1.0
    return s



def snapshot(y):
    """A copy of an output that later in-place restores on the tape cannot change."""
    if type(y) is float or type(y) is np.float64:
        return y
    if isinstance(y, np.ndarray):
        return y.copy()
    if _is_seq(y):
        return _rebuild(y, [snapshot(v) for v in y])
    if _is_map(y):
        return {k: snapshot(v) for k, v in y.items()}
    return y



def check_finite(v, name, where):
    """Raise srcad.NumericsError if a derivative holds NaN or Inf (grad(check_numerics=True))."""
    if _is_zero(v) or _is_seq(v) or _is_map(v):
        return
    data = v.data if sp.issparse(v) else (v.values if isinstance(v, RowSparse) else v)
    if not np.all(np.isfinite(data)):
        kind = "NaN" if np.any(np.isnan(data)) else "Inf"
        raise NumericsError(f"{where}: the derivative with respect to {name} became {kind} in the adjoint of this line "
                            f"(the first one that did, going backwards from the output). Look for a "
                            f"division by zero, a log or sqrt at 0, or an overflow on this line.")



def user_vjp_rule(func):
    """The rule registered with srcad.register_vjp (or custom_vjp) for func, its results checked."""
    from ..custom import checked_vjp
    return checked_vjp(func, lookup(func).user_vjp)



def user_jvp_rule(func):
    """The rule registered with srcad.register_jvp (or custom_jvp) for func, its results checked."""
    from ..custom import checked_jvp
    return checked_jvp(func, lookup(func).user_jvp)



def custom_cotangents(cots, func, args):
    """What a custom_vjp function's bwd returned for a call func(*args), checked: a tuple with one
    cotangent per argument, each of its argument's shape (RuleError else), None read as zero."""
    from ..custom import check_cotangents
    return check_cotangents(cots, func, args)


def custom_fwd_pair(out, func):
    """What a custom_vjp function's fwd returned, checked: a pair (y, residuals) (RuleError else;
    an array of two rows would be read as the pair, a silently wrong value)."""
    from ..custom import _pair
    _pair(out, func, "custom_vjp's fwd", "(y, residuals)")
    return out


def custom_jvp_seed(g, func, primals):
    """The output cotangent (0, g) that the adjoint of a forward-only rule (custom_jvp, register_jvp)
    is called with, once the rule has been checked: run along a direction of ones (a zero tangent
    of any shape would pass for zero), it must return a pair (y, y_dot) with y_dot of y's shape
    (RuleError else, as in forward mode), not fail inside its transposed code with a raw broadcast
    error."""
    user_jvp_rule(func)(tuple(primals), tuple(_ones_like(zeros_like(p)) for p in primals))
    return (0.0, g)


def _ones_like(z):
    """A tangent of ones where z is a float zero or a float array of zeros; z itself otherwise."""
    if isinstance(z, np.ndarray):
        z[...] = 1.0
        return z
    return 1.0 if type(z) is float else z
