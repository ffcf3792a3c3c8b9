"""@srcad.checkpoint: recompute a user function in the adjoint sweep instead of taping it.

grad's code keeps a called user function's intermediates from its primal sweep to its adjoint
sweep (the callee's frame, srcad/transform/split.py), so the callee's primal runs once. A function
marked with the decorator is reversed by recomputation instead (call-tree reversal): the caller
keeps none of its intermediates, and its generated `<g>_vjp` re-runs its primal sweep when the
adjoint sweep reaches the call (JAX's `jax.checkpoint`). The function itself is unchanged.
"""


def checkpoint(func):
    """Mark func so that, called from differentiated code, its intermediates are recomputed in the
    adjoint sweep rather than kept on the caller's tape (JAX's ``jax.checkpoint``).

    Without it, grad keeps a callee's intermediates from its primal to its adjoint sweep (its
    primal runs once); with it, they are recomputed. func itself is unchanged. For long ``range`` loops see
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
