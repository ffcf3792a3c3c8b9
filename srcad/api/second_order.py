"""hvp and hessian: forward mode over f's generated adjoint (forward over reverse), the output
checked to be a scalar inside the one sweep that computes it."""
import functools

import numpy as np
import scipy.sparse as sp

from .. import cache
from .. import runtime as rt
from .. import tree as _tree
from ..composition import derived, derived_of
from ..errors import InputError, NonScalarOutputError, SrcadError
from ..inputs import check_args
from .jacobians import _basis, _forward_columns
from .passing import _as_passed, _bind_front, _composed, _params, _shift, _single_wrt
from .units import _call_jvp, _module, _vjp_function


def _second_order_seed(f, what):
    """The seed hessian/hvp give the adjoint ("value" variant): it checks, inside the one sweep
    that computes f's value anyway, that the value is a scalar (seeded with 1.0, a vector output
    would silently give the Hessian of sum(f)), then stands for 1.0. No separate call of f."""
    def check(y):
        if rt.is_scalar(y):
            return
        shape = getattr(y, "shape", None)
        name = getattr(f, "__name__", "f")
        raise NonScalarOutputError(
            f"srcad.{what} needs {name} to return a scalar (a float or an array of size 1); it returned "
            f"{type(y).__name__}{' of shape ' + str(shape) if shape is not None else ''}. For the second "
            f"derivatives of a non-scalar output use srcad.jacobian(srcad.jacobian({name})), or reduce the "
            f"output to a scalar first.")
    return rt.ScalarSeed(check)


def _check_direction(f, args, k, v):
    """hvp's direction v must be shaped like args[k]."""
    if v is not None and not (sp.issparse(v) or _tree.is_node(v)) and np.shape(v) != np.shape(args[k]):
        raise InputError(f"srcad.hvp's direction v (the last argument) has shape {np.shape(v)}, but the "
                         f"differentiated argument {k} ({_params(f)[k]}) has shape {np.shape(args[k])}. "
                         f"Pass a direction of the argument's shape.")


def _second_order_sweep(f, k, what):
    """sweep(args, v, kwargs) -> (gradient of f at args, its tangent along v: H v), by forward
    mode over f's checked-seed adjoint; f runs once per sweep (inside it), never separately."""
    adjoint = _vjp_function(f, k, "checked")     # the value checked, not returned: no tangent of it
    seed = _second_order_seed(f, what)
    held = [None, None, None]       # (module, main function, {seed parameter: seed})

    def sweep(args, v, kwargs):
        mod = _module(adjoint, "forward", k)
        if held[0] is not mod:
            fn = getattr(mod, mod.srcad_main)
            params = list(cache.signature(adjoint).parameters)
            held[:] = [mod, fn, {params[-1]: seed}]
        _, fn, seed_kw = held
        return _call_jvp(fn, tuple(args), [v], {**(kwargs or {}), **seed_kw})
    return sweep


def hvp(f, wrt=0):
    """A function ``(*args, v) -> H @ v``, H the Hessian of f w.r.t. args[wrt], never forming H.

    Forward mode applied to the generated adjoint (forward-over-reverse): one call costs a few
    evaluations of f.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    wrt : int or str, default 0
        The argument of the Hessian.

    Returns
    -------
    callable
        ``hv(*args, v)``: `v` is the last positional argument, shaped like ``args[wrt]``.

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar.
    InputError
        When v's shape differs from the argument's.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> print(srcad.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 0.0])))
    [4. 2.]
    """
    if derived_of(f):
        return _composed(hvp, f, wrt=wrt)
    passed = _as_passed(f, "hvp")
    if passed:
        return derived(_bind_front(hvp(passed[0], _shift(wrt, len(passed[1]))), f, passed[1], {}), "hvp", f, wrt)
    k = _single_wrt(f, wrt, "hvp")
    sweep = _second_order_sweep(f, k, "hvp")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        *args, v = args
        check_args(f, args, kwargs, wrt=k)
        _check_direction(f, args, k, v)
        if not (sp.issparse(v) or _tree.is_node(v)):      # a pytree direction: as given
            v = np.asarray(v, dtype=float) if np.ndim(v) else float(v)
        return sweep(args, v, kwargs)[1]
    return derived(wrapper, "hvp", f, wrt)


def hessian(f, wrt=0):
    """A function returning the Hessian of f w.r.t. args[wrt], of shape ``x.shape + x.shape``.

    Forward mode over the generated adjoint, with the directions batched through the tangent code
    where it allows.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    wrt : int or str, default 0
        The argument of the Hessian (dense; for a sparse argument use `srcad.hvp`).

    Returns
    -------
    callable
        ``H(*args, **kwargs)``: an array (a float for a float argument, nested blocks for a pytree).

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar.
    SrcadError
        When the argument is a sparse matrix (its Hessian would be dense).
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> print(srcad.hessian(f)(np.array([1.0, 2.0])))
    [[4. 2.]
     [2. 0.]]
    """
    if derived_of(f):
        return _composed(hessian, f, wrt=wrt)
    passed = _as_passed(f, "hessian")
    if passed:
        return derived(_bind_front(hessian(passed[0], _shift(wrt, len(passed[1]))), f, passed[1], {}),
                       "hessian", f, wrt)
    k = _single_wrt(f, wrt, "hessian")
    second = _second_order_sweep(f, k, "hessian")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        check_args(f, args, kwargs, wrt=k)
        x = args[k]
        if _tree.is_node(x):        # a pytree: blocks H[leaf_i][leaf_j], one sweep per entry
            n = _tree.ravel(x).size
            H = np.zeros((n, n))
            for j, e in enumerate(_basis(n)):
                H[:, j] = _tree.ravel(second(args, _tree.unravel(e, x), kwargs)[1], x)
            return _tree.blocks(H, x, x)
        if sp.issparse(x):
            raise SrcadError(f"srcad.hessian w.r.t. a sparse matrix would be dense (x.shape + x.shape); use "
                             f"srcad.hvp({f.__name__}, wrt={wrt!r}) with a direction of x's pattern instead.")
        sweep = lambda v: second(args, v, kwargs)   # noqa: E731
        if isinstance(x, float):
            return float(sweep(1.0)[1])
        H = _forward_columns(sweep, np.asarray(x), np.shape(x))
        return H.reshape(np.shape(x) + np.shape(x))
    return derived(wrapper, "hessian", f, wrt)


for _operator in (hessian, hvp):
    # known by this mark when applied inside differentiated code (srcad/frontend/operators.py)
    _operator.__srcad_operator__ = True
