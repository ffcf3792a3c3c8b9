"""@srcad.checkpoint: recompute a user function in the adjoint sweep instead of taping it.

srcad reverses the calls of user functions by recomputation already (call-tree reversal): the
caller's tape holds none of the callee's intermediates, and the callee's generated `<g>_vjp`
re-runs its primal sweep when the adjoint sweep reaches the call. The decorator states that
guarantee for a function (JAX's `jax.checkpoint`) and leaves the function itself unchanged.
"""


def checkpoint(func):
    """Mark func so that, called from differentiated code, its intermediates are recomputed in the
    adjoint sweep rather than kept on the caller's tape (JAX's ``jax.checkpoint``).

    srcad already reverses calls of user functions by recomputation; the decorator states that
    guarantee for func and leaves func itself unchanged. For long ``range`` loops see
    ``srcad.grad(f, checkpoint=k)``.

    Parameters
    ----------
    func : callable
        A user function.

    Returns
    -------
    callable
        func itself, marked.

    Raises
    ------
    AttributeError
        When func takes no attributes (a builtin): wrap it in a Python function first.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> @srcad.checkpoint
    ... def layer(h, W):
    ...     return np.tanh(W @ h)
    >>> def loss(W, h):
    ...     for _ in range(3):
    ...         h = layer(h, W)
    ...     return np.sum(h)
    >>> W, h = np.array([[0.5, -0.2], [0.1, 0.4]]), np.array([1.0, -1.0])
    >>> srcad.check_grad(loss, W, h) < 1e-6
    True
    """
    func.__srcad_checkpoint__ = True
    return func
