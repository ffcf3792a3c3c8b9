"""vjp and jvp: a pullback from f's generated adjoint code, and a tangent from its generated
tangent code (forward mode proper, about one evaluation of f per call); and the function that
stands for srcad.jvp called inside differentiated code."""
import numpy as np
import scipy.sparse as sp

from .. import cache
from .. import runtime as rt
from .. import tree as _tree
from ..composition import derived
from ..errors import InputError, SrcadError
from ..inputs import (cache_variant, check_args, check_coo_kept, differentiable_arg, differentiated_tangents,
                      unsorted_coo)
from ..transform.kinds import signature as _signature
from .passing import _as_passed, _params
from .units import _call_jvp, _compiled, _module


def vjp(f, *args, checkpoint=None, compile=False):
    """Evaluate f and return its pullback: ``(f(*args), pullback)``, as JAX's ``jax.vjp``.

    ``pullback(dy)`` returns one cotangent per positional argument, ``dy`` pulled back through the
    Jacobian (``J^T dy``), with ``None`` for arguments that carry no derivative (integers,
    booleans, index arrays). f's output may be an array or a pytree of any shape.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (its output need not be a scalar).
    *args
        The point at which to evaluate f.
    checkpoint : int, optional
        Binomial checkpointing of ``for ... in range(n)`` loops, as for `srcad.grad`.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    y : object
        ``f(*args)``.
    pullback : callable
        ``pullback(dy) -> tuple``: dy has y's shape (or structure).

    Raises
    ------
    InputError
        When an argument cannot be differentiated as given, or when ``dy`` does not have y's shape.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x, k):
    ...     return x[k] * x
    >>> y, pullback = srcad.vjp(f, np.array([1.0, 2.0, 3.0]), 1)
    >>> print(y)
    [2. 4. 6.]
    >>> dx, dk = pullback(np.array([1.0, 0.0, 0.0]))
    >>> print(dx, dk)
    [2. 1. 0.] None
    """
    variant = cache_variant("plain", checkpoint)
    passed = _as_passed(f, "vjp")
    if passed:
        func, pre, _ = passed
        y, pullback = vjp(func, *pre, *args, checkpoint=checkpoint, compile=compile)

        def pullback_passed(dy):
            return pullback(dy)[len(pre):]
        return y, derived(pullback_passed, "pullback", f, None, args=args)
    # an integer, or a container of integers only (an axis tuple), carries no derivative (its
    # cotangent is None); an integer leaf beside float leaves cannot be told apart: refused, as
    # grad refuses it
    idx = tuple(k for k, a in enumerate(args) if differentiable_arg(a))
    check_args(f, args, wrt=idx)
    y = f(*args)
    if not idx:
        return y, lambda dy: tuple(None for _ in args)
    sig = _signature(args)
    mod = _module(f, "reverse", idx, variant=variant, sig=sig)
    fn = getattr(mod, mod.srcad_main)
    seed_name = list(cache.signature(fn).parameters)[-1]
    if compile:     # a number's cotangent is a number (_check_cotangent): typed when y is a float
        seed = {seed_name: "float"} if type(y) is float or type(y) is np.float64 else {}
        cfn = _compiled(fn, f, "reverse", idx, (), variant, sig, seed=seed)
        fn = cfn if cfn is not None and not seed else fn

        def pick(dy, cfn=cfn, fn=fn):
            return cfn if cfn is not None and isinstance(dy, float) else fn
    else:
        def pick(dy, fn=fn):
            return fn

    def pullback(dy):
        _check_cotangent(dy, y)
        coo = unsorted_coo(args)
        grads = pick(dy)(*args, **{seed_name: dy})     # by name: f's own defaults stay where they are
        check_coo_kept(coo)
        out = [None] * len(args)
        for k, g in zip(idx, grads):
            out[k] = g
        return tuple(out)
    return y, derived(pullback, "pullback", f, None, args=args)


def _check_cotangent(dy, y):
    """vjp's cotangent must have the output's shape (a broadcast one would be summed silently)."""
    if dy is None or sp.issparse(y) or sp.issparse(dy) or _tree.is_node(y) or _tree.is_node(dy):
        return
    if np.shape(dy) != np.shape(y):
        raise InputError(f"the cotangent passed to vjp's pullback has shape {np.shape(dy)}, but the function's "
                         f"output has shape {np.shape(y)}. Pass a cotangent of the output's shape.")


def jvp(f, primals, tangents, compile=False):
    """Forward mode: ``(f(*primals), tangent of the output)`` from generated tangent code.

    The tangent code is generated from f's source (forward mode proper, not reverse mode run per
    output), so one call costs about one evaluation of f whatever the output's size.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (any output shape).
    primals : tuple
        The point: one entry per positional argument of f.
    tangents : tuple
        One tangent per primal, of its shape (``None`` or 0 for an argument held constant).
    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    y : object
        ``f(*primals)``.
    y_dot : object
        The directional derivative of f at `primals` along `tangents`, shaped like y.

    Raises
    ------
    InputError
        When primals and tangents differ in number or a tangent's shape differs from its primal's.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x ** 2
    >>> y, y_dot = srcad.jvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
    >>> print(y, y_dot)
    [1. 4.] [2. 2.]
    """
    primals, tangents = tuple(primals), tuple(tangents)
    passed = _as_passed(f, "jvp")
    if passed:
        func, pre, _ = passed
        return jvp(func, tuple(pre) + primals, (None,) * len(pre) + tangents, compile=compile)
    if len(primals) != len(tangents):
        raise SrcadError(f"jvp needs one tangent per primal: got {len(primals)} primals and {len(tangents)} tangents. "
                         f"Pass one tangent per primal (None holds that argument constant).")
    check_args(f, primals, wrt=differentiated_tangents(primals, tangents))
    # a None tangent: that argument is held constant
    idx = tuple(k for k, a in enumerate(primals) if differentiable_arg(a) and tangents[k] is not None)
    if not idx:
        y = f(*primals)
        return y, rt.zeros_like(y)
    mod = _module(f, "forward", idx)
    fn = getattr(mod, mod.srcad_main)
    dots = []
    names = _params(f)
    for k in idx:
        t = tangents[k]
        if _tree.is_node(primals[k]):
            _check_tangent_tree(t, primals[k], k, names[k])
        elif np.shape(t) != np.shape(primals[k]) and not sp.issparse(primals[k]):
            raise SrcadError(f"the tangent of argument {k} ({names[k]}) has shape {np.shape(t)}, "
                             f"but the argument has shape {np.shape(primals[k])}. Pass a tangent of the argument's shape.")
        dots.append(t)
    if compile:
        fn = _compiled(fn, f, "forward", idx, (), "plain", None, primals, dots) or fn
    y, y_dot = _call_jvp(fn, primals, dots)
    if _tree.is_node(y):        # the output's structure (a namedtuple stays one; zeros materialised)
        y_dot = _tree.unravel(_tree.ravel(y_dot, y), y)
    return y, y_dot


def _check_tangent_tree(t, x, k, name):
    tl, td = _tree.tree_flatten(t)
    xl, xd = _tree.tree_flatten(x)
    if td != xd or any(_tree.leaf_shape(a) != _tree.leaf_shape(b) for a, b in zip(tl, xl)):
        raise SrcadError(f"the tangent of argument {k} ({name}) must be a pytree of the argument's structure "
                         f"and leaf shapes: the argument is {xd!r} with leaf shapes "
                         f"{[_tree.leaf_shape(b) for b in xl]}, the tangent {td!r} with "
                         f"{[_tree.leaf_shape(a) for a in tl]}. Pass a tangent of that structure "
                         f"(srcad.tree_map(np.zeros_like, x) gives one to start from).")


# ---- srcad.jvp(f, primals, tangents) called inside differentiated code --------------------------
_INLINE = {}        # (f's id, number of primals, positions with a tangent) -> (f, the function standing for it)


def inline_jvp(f, n, idx):
    """The function that stands for `srcad.jvp(f, (x1..xn), (v...))` inside differentiated code (the
    tangents given at positions idx; a None tangent holds its primal constant): f's tangent code as a
    plain function of the primals then the tangents, returning (value, tangent), which srcad composes
    like any operator's result (srcad/composition.py). The syntax side is srcad/frontend/operators.py
    `inline_call`."""
    held = _INLINE.get((id(f), n, idx))
    if held is None or held[0] is not f:
        if len(_INLINE) > 1024:
            _INLINE.clear()

        def jvp_call(*a):
            return jvp(f, a[:n], tuple(a[n + idx.index(k)] if k in idx else None for k in range(n)))
        jvp_call.__name__ = jvp_call.__qualname__ = f"jvp_of_{getattr(f, '__name__', 'f')}"
        held = _INLINE[(id(f), n, idx)] = (f, derived(jvp_call, "jvp", f, idx, n=n))
    return held[1]


jvp.__srcad_inline__ = inline_jvp        # srcad.jvp inside differentiated code (frontend/operators.py)
vjp.__srcad_inline__ = None              # ... and srcad.vjp there: a named error
