"""The rules a user registers: `register_vjp`, `register_jvp` and `nondifferentiable`.

Each fills the user's entry of the rule table (srcad/rules/registry.py `_USER`), which `lookup`
consults before srcad's own rules and before transforming the function's source. Every
registration bumps `registry.generation`, so code generated before it is not reused
(srcad/cache.py). What a registered rule returns is checked where it is called (srcad/custom.py).
"""
import inspect

from .registry import _USER, Rule, _signature, generation


def _user_rule(func):
    rule = _USER.get(func)
    if rule is None:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            sig = _signature("*args, **kwargs")
        rule = Rule(func, list(sig.parameters), sig)
        _USER[func] = rule
    generation[0] += 1      # every registration: code generated before it is not reused
    return rule


def register_vjp(func, rule):
    """Add, or replace, the reverse-mode rule of func.

    For a function srcad cannot read (compiled code, a third-party library) or whose built-in rule
    you want to replace: a registered rule wins over srcad's own rules and over transforming func's
    source.

    Parameters
    ----------
    func : callable
        The function, as the differentiated code calls it (matched by identity).
    rule : callable
        ``rule(*args, **kwargs) -> (y, pullback)``, with ``pullback(dy)`` returning one cotangent
        per positional argument (``None`` for none).

    Returns
    -------
    callable
        func, unchanged.

    Raises
    ------
    RuleError
        When differentiated code uses the rule and it returns something other than its convention
        asks for (the message says what it returned and what was due).

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def cube(x):
    ...     return x ** 3
    >>> def cube_rule(x):
    ...     return cube(x), lambda dy: (3.0 * x ** 2 * dy,)
    >>> _ = srcad.register_vjp(cube, cube_rule)
    >>> def f(x):
    ...     return np.sum(cube(x))
    >>> print(srcad.grad(f)(np.array([1.0, 2.0])))
    [ 3. 12.]
    """
    _user_rule(func).user_vjp = rule
    return func


def register_jvp(func, rule):
    """Add, or replace, the forward-mode rule of func.

    Parameters
    ----------
    func : callable
        The function, as the differentiated code calls it (matched by identity).
    rule : callable
        ``rule(primals, tangents) -> (y, y_dot)``: primals and tangents are tuples with one entry
        per positional argument.

    Returns
    -------
    callable
        func, unchanged.

    Raises
    ------
    RuleError
        When the rule returns something other than ``(y, y_dot)`` with y_dot shaped like y.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def cube(x):
    ...     return x ** 3
    >>> def cube_jvp(primals, tangents):
    ...     return cube(primals[0]), 3.0 * primals[0] ** 2 * tangents[0]
    >>> _ = srcad.register_jvp(cube, cube_jvp)
    >>> y, y_dot = srcad.jvp(lambda x: cube(x), (np.array([1.0, 2.0]),), (np.ones(2),))
    >>> print(y, y_dot)
    [1. 8.] [ 3. 12.]
    """
    _user_rule(func).user_jvp = rule
    return func


def nondifferentiable(func):
    """Declare that func's outputs carry no derivative (random draws, argsort, shape queries, a
    normalisation you hold constant). Usable as a decorator.

    Without a rule or this declaration, an operation on a differentiated value raises
    `srcad.MissingRuleError`: srcad never assumes a zero derivative by itself.

    Parameters
    ----------
    func : callable
        The function (matched by identity).

    Returns
    -------
    callable
        func, unchanged.

    Raises
    ------
    MissingRuleError
        Never from this call; it is what differentiating a call of an undeclared function without
        a rule raises.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> @srcad.nondifferentiable
    ... def scale(x):
    ...     return np.max(np.abs(x))
    >>> def f(x):
    ...     return np.sum(x / scale(x))
    >>> print(srcad.grad(f)(np.array([1.0, -2.0])))
    [0.5 0.5]
    """
    r = _user_rule(func)
    r.nondiff = True
    return func
