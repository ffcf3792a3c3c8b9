"""jacobian: the full Jacobian from tangent sweeps along the unit directions of x (batched
through the tangent code where it allows) or adjoint sweeps along those of y; blocks for a
pytree; a sparse Jacobian by colouring (srcad/sparsity.py). `_forward_columns` is the batched
sweep hessian uses too."""
import functools

import numpy as np

from .. import tree as _tree
from ..composition import derived, derived_of
from ..errors import SrcadError
from ..inputs import check_args
from .passing import _as_passed, _bind_front, _composed, _params, _shift, _single_wrt
from .units import _call_jvp, _compiled, _module


def jacobian(f, wrt=0, mode="auto", sparsity=None, batch=None, compile=False):
    """A function returning the Jacobian of f w.r.t. args[wrt], of shape ``y.shape + x.shape``.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (any output shape, or a pytree).
    wrt : int or str, default 0
        The argument of the Jacobian.
    mode : {"auto", "forward", "reverse"}, default "auto"
        "forward" pushes one tangent per entry of x through the generated tangent code, "reverse"
        pulls one cotangent per entry of y through the generated adjoint, "auto" picks forward when
        x has no more entries than y (fewer sweeps), reverse otherwise.
    sparsity : {None, "auto"}, default None
        "auto" detects the Jacobian's sparsity pattern by propagating index sets through the
        generated tangent code, colours the columns, and returns a ``scipy.sparse.csr_array`` of
        shape ``(y.size, x.size)`` computed with one forward sweep per colour.
    batch : int, optional
        In forward mode the seed directions travel through the tangent code together, as a leading
        batch axis, in chunks; ``batch=1`` forces one sweep per direction.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    callable
        ``J(*args)``: an array of shape ``y.shape + x.shape`` (nested blocks for pytrees, a
        ``csr_array`` with ``sparsity="auto"``).

    Raises
    ------
    SrcadError
        For an unknown `mode` or `sparsity`.
    UnsupportedSyntaxError, MissingRuleError, InputError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x ** 2 + x[0]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> print(srcad.jacobian(f)(x))
    [[3. 0. 0.]
     [1. 4. 0.]
     [1. 0. 6.]]
    >>> J = srcad.jacobian(f, sparsity="auto")(x)
    >>> print(type(J).__name__, J.nnz)
    csr_array 5
    """
    if mode not in ("auto", "forward", "reverse"):
        raise SrcadError(f"mode must be 'auto', 'forward' or 'reverse', not {mode!r}. Pass one of those.")
    if derived_of(f):
        return _composed(jacobian, f, wrt=wrt, mode=mode, sparsity=sparsity, batch=batch, compile=compile)
    passed = _as_passed(f, "jacobian")
    if passed:
        return derived(_bind_front(jacobian(passed[0], _shift(wrt, len(passed[1])), mode, sparsity, batch, compile),
                                   f, passed[1], {}), "jacobian", f, wrt, sparsity=sparsity)
    if sparsity not in (None, "auto"):
        raise SrcadError(f"sparsity must be None or 'auto', not {sparsity!r}. Pass one of those.")
    k = _single_wrt(f, wrt, "jacobian")
    name = _params(f)[k]

    def tangent_sweep(args):
        mod = _module(f, "forward", k)
        fn = getattr(mod, mod.srcad_main)
        if compile:
            fn = _compiled(fn, f, "forward", k, (), "plain", None, args) or fn
        return lambda v: _call_jvp(fn, tuple(args), [v])

    patterns = {}
    if sparsity == "auto":          # (shared by every sparse Jacobian of f w.r.t. this argument)
        from ..sparsity import kept_patterns
        patterns = kept_patterns(f, k)
    unbatched = batch == 1

    @functools.wraps(f)
    def wrapper(*args):
        check_args(f, args, wrt=k)
        x = args[k]
        y = f(*args) if sparsity is None else None     # once: its shape (or structure) decides the rest
        if sparsity is None and (_tree.is_node(x) or _tree.is_node(y)):
            return _tree_jacobian(f, k, args, y, mode, tangent_sweep)
        if sparsity == "auto":
            from ..sparsity import sparse_jacobian, structure_key
            J, _ = sparse_jacobian(tangent_sweep(args), x, patterns, structure_key(args, k))
            return J
        xshape = np.shape(x)
        n = int(np.prod(xshape, dtype=int))
        use = mode
        if mode == "auto":
            m = int(np.size(y))
            use = "forward" if n <= m else "reverse"
        if use == "forward":
            J = _forward_columns(tangent_sweep(args), x, np.shape(y), batched=not unbatched)
            return J.reshape(np.shape(y) + xshape)
        mod = _module(f, "reverse", k)
        fn = getattr(mod, mod.srcad_main)
        if compile:
            fn = _compiled(fn, f, "reverse", k, (), "plain", None, args) or fn
        # rows of J are columns of J^T: the same batched sweeps, with the adjoint as the sweep
        Jt = _forward_columns(lambda s: (None, fn(*args, s)), y, xshape, batched=not unbatched)
        return Jt.T.reshape(np.shape(y) + xshape)
    return derived(wrapper, "jacobian", f, wrt, sparsity=sparsity)


def _tree_jacobian(f, k, args, y, mode, tangent_sweep):
    """The Jacobian of a function of (or returning) a pytree: blocks J[y leaf][x leaf] of shape
    y_leaf.shape + x_leaf.shape, one sweep per entry of x (forward) or of y (reverse)."""
    x = args[k]
    n, m = _tree.ravel(x).size, _tree.ravel(y).size
    J = np.zeros((m, n))
    if mode == "forward" or mode == "auto" and n <= m:
        sweep = tangent_sweep(args)
        for j, e in enumerate(_basis(n)):
            J[:, j] = _tree.ravel(sweep(_tree.unravel(e, x))[1], y)
    else:
        mod = _module(f, "reverse", k)
        fn = getattr(mod, mod.srcad_main)
        for i, e in enumerate(_basis(m)):
            J[i, :] = _tree.ravel(fn(*args, _tree.unravel(e, y)), x)
    return _tree.blocks(J, y, x)


def _basis(n):
    """The unit vectors of R^n, one at a time (never the n x n identity)."""
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        yield e


def _forward_columns(sweep, x, yshape, batched=True, chunk=None, strict=False):
    """The Jacobian as an array (y.size, x.size), from sweeps v -> (y, J v) along the unit
    directions of x: batched (many directions per sweep) when the generated code allows it, else one
    per sweep. With an adjoint as the sweep (v -> J^T v) it gives J^T."""
    xshape = np.shape(x)
    n, m = int(np.prod(xshape, dtype=int)), int(np.prod(yshape, dtype=int))
    J = np.zeros((m, n))
    if batched and n > 1:
        from .. import deferred
        from ..batching import UNBATCHABLE, Batched, unwrap
        chunk = chunk or max(1, min(n, 4_000_000 // max(1, m + n)))
        # a large batch recorded and replayed a few directions at a time (srcad/deferred.py); where
        # it cannot be, computed at once (Batched); where that cannot be, one sweep per direction
        makers = (deferred.seed, Batched) if min(chunk, n) * n >= deferred.LARGE else (Batched,)
        for batch_of in makers:
            try:
                for k0 in range(0, n, chunk):
                    B = min(chunk, n - k0)
                    seed = np.zeros((B, n))
                    seed[np.arange(B), k0 + np.arange(B)] = 1.0
                    _, y_dot = sweep(batch_of(seed.reshape((B,) + xshape)))
                    block = unwrap(y_dot, B, yshape).reshape(B, m)
                    if k0 == 0:     # one ordinary sweep along a random mix of these directions
                        r = np.random.default_rng(0).standard_normal(B)
                        _, check = sweep((r @ seed).reshape(xshape) if xshape else float(r @ seed))
                        want = np.ravel(np.broadcast_to(np.asarray(check, dtype=float), yshape))
                        got = r @ block
                        if not np.allclose(got, want, rtol=1e-9, atol=1e-12 * (1 + np.abs(want).max(initial=0))):
                            raise ValueError("batched tangents disagree with an ordinary sweep")
                    J[:, k0:k0 + B] = block.T
                return J
            except UNBATCHABLE:       # an operation the batch does not implement
                if strict and batch_of is makers[-1]:
                    raise
                J[:] = 0.0
    for k, e in enumerate(_basis(n)):
        _, y_dot = sweep(e.reshape(xshape) if xshape else float(e[0]))
        J[:, k] = np.ravel(np.broadcast_to(np.asarray(y_dot, dtype=float), yshape))
    return J


jacobian.__srcad_operator__ = True     # known by this mark inside differentiated code (frontend/operators.py)
