"""custom_vjp / custom_jvp: a function whose derivative the user supplies (JAX's conventions),
and the checks of what user rules return (register_vjp, register_jvp, custom_vjp, custom_jvp):
a rule that returns a bare array where a tuple of cotangents is due, the wrong number of them, or
a cotangent or tangent of the wrong shape raises RuleError saying what it returned and what was
expected, never a gradient read out of the wrong thing."""
import functools

import numpy as np
import scipy.sparse as sp

from .errors import RuleError
from .rules.user import register_jvp, register_vjp


class _Custom:
    """A callable standing for `fun`, looked up in the rule table by identity."""

    def __init__(self, fun):
        self.fun = fun
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self):
        return id(self)


class custom_vjp(_Custom):
    """Decorator: a function whose reverse-mode derivative you supply (JAX's ``jax.custom_vjp``).

    Give the rule with ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (y, residuals)`` runs in the forward
    sweep, ``bwd(residuals, dy) -> tuple`` returns one cotangent per positional argument (``None``
    for none). srcad then calls them instead of transforming f's body (which may be anything:
    compiled code, a solver, a numerically careful formulation). Second order (`srcad.hessian`,
    `srcad.hvp`) transforms fwd and bwd in turn.

    Parameters
    ----------
    fun : callable
        The function; calling the decorated object calls it unchanged.

    Raises
    ------
    RuleError
        When differentiated code calls f and fwd or bwd returns something other than the
        convention asks for (not a pair, the wrong number of cotangents, a wrong shape).

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> @srcad.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(residuals, dy):
    ...     return (np.clip(dy, -1.0, 1.0),)
    >>> _ = clip_gradient.defvjp(fwd, bwd)
    >>> def loss(x):
    ...     return np.sum(5.0 * clip_gradient(x))
    >>> print(srcad.grad(loss)(np.array([1.0, 2.0])))
    [1. 1.]
    """

    def defvjp(self, fwd, bwd):
        """Set the reverse-mode rule: ``fwd(*args) -> (y, residuals)``, ``bwd(residuals, dy) -> tuple``.

        Parameters
        ----------
        fwd : callable
            Called with f's arguments in the forward sweep; returns f's value and what bwd needs.
        bwd : callable
            Called with the residuals and the output's cotangent; returns a tuple of one cotangent per
            positional argument of f.

        Returns
        -------
        custom_vjp
            The decorated function itself.

        Examples
        --------
        >>> import numpy as np
        >>> import srcad
        >>> @srcad.custom_vjp
        ... def cube(x):
        ...     return x ** 3
        >>> cube.defvjp(lambda x: (x ** 3, x), lambda x, dy: (3.0 * x ** 2 * dy,)) is cube
        True
        >>> print(srcad.grad(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0])))
        [ 3. 12.]
        """
        def rule(*args, **kwargs):
            y, residuals = _pair(fwd(*args, **kwargs), self, "custom_vjp's fwd", "(y, residuals)")
            return y, lambda dy: bwd(residuals, dy)
        # generated adjoints call fwd and bwd by name, so that hessian/hvp transform them in turn
        rule.custom_fwd_bwd = (fwd, bwd)
        register_vjp(self, rule)
        return self


class custom_jvp(_Custom):
    """Decorator: a function whose forward-mode derivative you supply (JAX's ``jax.custom_jvp``).

    Give the rule with ``f.defjvp(rule)``, ``rule(primals, tangents) -> (y, y_dot)``. As in JAX,
    the rule must be linear in the tangents, so srcad transposes it for reverse mode: the function
    works with `srcad.grad`, `srcad.jvp` and to second order.

    Parameters
    ----------
    fun : callable
        The function; calling the decorated object calls it unchanged.

    Raises
    ------
    RuleError
        When the rule returns something other than ``(y, y_dot)`` with y_dot shaped like y.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> @srcad.custom_jvp
    ... def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> def softplus_jvp(primals, tangents):
    ...     (x,), (x_dot,) = primals, tangents
    ...     return softplus(x), x_dot / (1.0 + np.exp(-x))
    >>> _ = softplus.defjvp(softplus_jvp)
    >>> def f(x):
    ...     return np.sum(softplus(x))
    >>> print(srcad.grad(f)(np.array([0.0])))
    [0.5]
    """

    def defjvp(self, rule):
        """Set the forward-mode rule: ``rule(primals, tangents) -> (y, y_dot)``.

        Parameters
        ----------
        rule : callable
            Called with the tuple of f's arguments and the tuple of their tangents; returns f's value
            and its tangent, linear in the tangents.

        Returns
        -------
        custom_jvp
            The decorated function itself.

        Examples
        --------
        >>> import numpy as np
        >>> import srcad
        >>> @srcad.custom_jvp
        ... def double(x):
        ...     return 2.0 * x
        >>> double.defjvp(lambda p, t: (double(p[0]), 2.0 * t[0])) is double
        True
        >>> y, y_dot = srcad.jvp(lambda x: double(x), (np.array([1.0, 2.0]),), (np.ones(2),))
        >>> print(y, y_dot)
        [2. 4.] [2. 2.]
        """
        register_jvp(self, rule)
        return self


# ---- what user rules return ----------------------------------------------------------------------------
def _name(func):
    return getattr(func, "__name__", None) or type(func).__name__


def _what(v):
    shape = getattr(v, "shape", None)
    if shape is None and isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} item{'s' * (len(v) != 1)}"
    return f"{type(v).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")


def _is_zero(v):
    return v is None or isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0


def _leafy(v):
    """Can v be checked as one value (an array, a number, a sparse matrix), not a container?"""
    return sp.issparse(v) or isinstance(v, (np.ndarray, np.generic, int, float, complex))


def _pair(out, func, who, shape):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise RuleError(f"{who} for `{_name(func)}` returned {_what(out)}; it must return a pair {shape}. "
                        f"Return the pair, e.g. `return y, ...`.")
    return out


def _check_like(d, x, func, what, fix):
    """A derivative d standing for x (the cotangent of an argument, the tangent of the output)."""
    if _is_zero(d) or not _leafy(x):
        return
    if not _leafy(d):
        raise RuleError(f"the rule for `{_name(func)}` returned {_what(d)} as {what}, which is {_what(x)}. {fix}")
    kind = getattr(getattr(d, "dtype", None), "kind", "f")
    if kind not in "biufc":
        raise RuleError(f"the rule for `{_name(func)}` returned {what} of dtype {d.dtype}, not a number. {fix}")
    if np.shape(d) != np.shape(x):
        raise RuleError(f"the rule for `{_name(func)}` returned {what} of shape {np.shape(d)}, but it stands for "
                        f"{_what(x)}: a derivative has the shape of what it is the derivative of. {fix}")


def check_cotangents(cots, func, args):
    """The pullback's result: a tuple (or list) with one cotangent (or None) per positional argument,
    each of that argument's shape. Returns it as a tuple, a None replaced by a zero of its argument's
    kind (the adjoint code adds and scales what it is given: None would be a TypeError there)."""
    n = len(args)
    fix = ("A pullback returns a tuple with one cotangent per positional argument (None for one that "
           "carries none): `return (g * ...,)` for one argument, `return (gx, gy)` for two")
    if not isinstance(cots, (tuple, list)):
        raise RuleError(f"the pullback of the reverse-mode rule for `{_name(func)}` returned {_what(cots)}; "
                        f"expected a tuple of {n} cotangent{'s' * (n != 1)}. {fix}.")
    if len(cots) != n:
        raise RuleError(f"the pullback of the reverse-mode rule for `{_name(func)}` returned {len(cots)} "
                        f"cotangent{'s' * (len(cots) != 1)} for a call with {n} positional argument"
                        f"{'s' * (n != 1)}. {fix}.")
    for k, (c, a) in enumerate(zip(cots, args)):
        _check_like(c, a, func, f"the cotangent of argument {k}", fix + ".")
    from .runtime.accumulate import zeros_like
    return tuple(zeros_like(a) if c is None else c for c, a in zip(cots, args))


def checked_vjp(func, rule):
    """register_vjp's rule(*args) -> (y, pullback), with both checked when they are called."""
    if rule is None:
        return None

    def run(*args, **kwargs):
        y, pullback = _pair(rule(*args, **kwargs), func, "the reverse-mode rule", "(y, pullback)")
        if not callable(pullback):
            raise RuleError(f"the reverse-mode rule for `{_name(func)}` returned {_what(pullback)} as its pullback; "
                            f"it must return (y, pullback) with pullback(dy) a function returning one cotangent "
                            f"per positional argument.")
        return y, lambda dy: check_cotangents(pullback(dy), func, args)
    return run


def checked_jvp(func, rule):
    """register_jvp's rule(primals, tangents) -> (y, y_dot), with y_dot checked against y."""
    if rule is None:
        return None

    def run(primals, tangents):
        y, y_dot = _pair(rule(primals, tangents), func, "the forward-mode rule", "(y, y_dot)")
        _check_like(y_dot, y, func, "the output's tangent",
                    "A forward-mode rule returns (y, y_dot) with y_dot of y's shape.")
        return y, y_dot
    return run
