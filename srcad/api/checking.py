"""check_grad: srcad's gradient against central finite differences, entry by entry, with a
second opinion (srcad/gradcheck.py) where they disagree."""
import numpy as np
import scipy.sparse as sp

from .. import tree as _tree
from ..errors import GradientCheckError
from ..gradcheck import second_opinion
from .gradients import grad
from .passing import _as_passed, _shift, _single_wrt


def check_grad(f, *args, wrt=0, eps=None, rtol=None, atol=None):
    """Compare srcad's gradient of f at args with central finite differences (in float64).

    Every entry of the differentiated argument (dense, sparse or pytree) is perturbed by ``+-eps``
    in turn. An entry fails when ``|srcad - finite difference| > atol + rtol * |finite
    difference|``. On a dense argument, an entry that fails is estimated again with
    ``scipy.differentiate.derivative`` (high-order formulas over shrinking steps, with an error
    estimate) and is reported only if it disagrees with that too: rounding in the central
    difference (a function of large value, a float32 argument) raises no false alarm.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    *args
        The point at which to compare.
    wrt : int, str or tuple, default 0
        The argument(s) whose gradient is checked.
    eps : float, optional
        The finite-difference step (default 1e-6).
    rtol, atol : float, optional
        Relative and absolute tolerances (defaults 1e-5 and 1e-6).

    Returns
    -------
    float
        The largest absolute difference found.

    Raises
    ------
    GradientCheckError
        When some entry differs by more than the tolerance; the message lists the worst entries
        and what to try next.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(np.sin(x) * x)
    >>> srcad.check_grad(f, np.array([0.5, 1.0, 2.0])) < 1e-6
    True

    A wrong derivative rule is caught:

    >>> @srcad.custom_vjp
    ... def square(x):
    ...     return x ** 2
    >>> _ = square.defvjp(lambda x: (x ** 2, x), lambda x, dy: (3.0 * x * dy,))   # 2x is right
    >>> def g(x):
    ...     return np.sum(square(x))
    >>> srcad.check_grad(g, np.array([1.0, 2.0]))
    Traceback (most recent call last):
        ...
    srcad.errors.GradientCheckError: the gradient of g w.r.t. argument 0 disagrees with central finite differences ...
    """
    passed = _as_passed(f, "check_grad")
    if passed:
        return check_grad(passed[0], *passed[1], *args, wrt=_shift(wrt, len(passed[1])), eps=eps, rtol=rtol,
                          atol=atol)
    eps = 1e-6 if eps is None else eps
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-6 if atol is None else atol
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    got = grad(f, wrt=wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    worst = 0.0
    for w, g in zip(ws, got):
        k = _single_wrt(f, w, "check_grad")
        x = args[k]
        if _tree.is_node(x):
            worst = max(worst, _check_tree_grad(f, args, k, g, eps, rtol, atol))
            continue
        base = np.array(x.data if sp.issparse(x) else x, dtype=np.float64)
        flat = base.reshape(-1)
        fd = np.zeros(flat.size)
        for j in range(flat.size):
            vals = []
            for sgn in (1.0, -1.0):
                v = flat.copy()
                v[j] += sgn * eps
                if sp.issparse(x):
                    xv = x.copy()
                    xv.data = v.reshape(x.data.shape).astype(x.dtype)
                elif isinstance(x, float):
                    xv = float(v[0])
                else:
                    xv = v.reshape(np.shape(x)).astype(np.result_type(x, np.float32))
                a = list(args)
                a[k] = xv
                vals.append(float(np.sum(f(*a))))
            fd[j] = (vals[0] - vals[1]) / (2 * eps)
        have = np.asarray(g.data if sp.issparse(g) else g, dtype=np.float64).reshape(-1)
        err = np.abs(have - fd)
        bad = err > atol + rtol * np.abs(fd)
        if bad.any() and not sp.issparse(x):     # disagreeing entries: a better estimate (srcad/gradcheck.py)
            fd, err, bad = second_opinion(f, args, k, x, have, fd, bad, atol, rtol)
        worst = max(worst, float(err.max(initial=0.0)))
        if bad.any():
            order = np.argsort(-err)[:5]
            rows = "\n".join(f"  entry {int(i)}: srcad {have[i]!r}, finite differences {fd[i]!r}, "
                              f"error {err[i]:.3g}" for i in order if bad[i])
            raise GradientCheckError(
                f"the gradient of {f.__name__} w.r.t. argument {k} disagrees with central finite differences "
                f"(eps={eps}, rtol={rtol}, atol={atol}; dense entries re-estimated by scipy.differentiate) at "
                f"{int(bad.sum())} of {bad.size} entries; worst:\n{rows}\n"
                f"If f has kinks or branches near this point, try another point or a smaller eps; otherwise "
                f"read the generated code with srcad.emit({f.__name__}) and report the rule at fault.")
    return worst


def _check_tree_grad(f, args, k, g, eps, rtol, atol):
    """check_grad for a pytree argument: every entry of every leaf, in tree_flatten's order."""
    x = args[k]
    flat = _tree.ravel(x)
    fd = np.zeros(flat.size)
    for j in range(flat.size):
        vals = []
        for sgn in (1.0, -1.0):
            v = flat.copy()
            v[j] += sgn * eps
            a = list(args)
            a[k] = _tree.unravel(v, x)
            vals.append(float(np.sum(f(*a))))
        fd[j] = (vals[0] - vals[1]) / (2 * eps)
    have = _tree.ravel(g, x)
    err = np.abs(have - fd)
    bad = err > atol + rtol * np.abs(fd)
    if bad.any():
        i = int(np.argmax(err))
        raise GradientCheckError(
            f"the gradient of {f.__name__} w.r.t. argument {k} (a pytree; entries in srcad.tree_flatten's "
            f"order) disagrees with central finite differences (eps={eps}, rtol={rtol}, atol={atol}) at "
            f"{int(bad.sum())} of {bad.size} entries; worst: entry {i}: srcad {have[i]!r}, finite "
            f"differences {fd[i]!r}. If f has kinks near this point, try another point or a smaller eps; "
            f"otherwise read the generated code with srcad.emit({f.__name__}).")
    return float(err.max(initial=0.0))
