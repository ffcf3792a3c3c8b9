"""cleanup: the generated function tidied the way a person would write it, after each mode.

Reverse mode, forward mode and the checkpointed adjoint write their code one user statement at a
time, without looking around: a seed copied into a fresh name, a flag of a `continue` that is set
but never read, a zero that the first accumulation overwrites, an `else:` left empty. This pass
runs on the finished function (just before it is emitted as text) and rewrites, until nothing
changes:

fold        literal arithmetic (`2 * 0.5` -> `1.0`, `not True` -> `False`), `if <literal>:`
negs        `rt.unbroadcast(-g, x)` -> `-rt.unbroadcast(g, x)` (np.sum, np.mean too), negations that
            cancel through single-read products, `x = T; x = rt.add(x, T)` -> `x = T * 2`
copies      `a = b` followed by reads of `a` -> reads of `b`, while neither is rebound
coalesce    `t = e; ...; x = t` (t read nowhere else) -> `x = e` (forward mode's `x_new`)
zeros       `x_bar = 0.0` then `x_bar = rt.add(x_bar, e)` in the same block -> `x_bar = e`
dead code   assignments to names not live afterwards whose value has no effect (liveness over
            branches and loops: a name read in a later iteration is live at the loop's end)
branches    no empty `else`, no `if` whose branches are both empty, no loop with an empty body

The package, one module per rewrite: driver.py (the rounds), fold.py, negs.py, copies.py (with
coalescing), zeros.py, liveness.py (which the copies and dead rewrites read), dead.py (with
the empty branches), and nodes.py (what a statement reads, binds and may change).
"""
from .driver import Cleanup, cleanup
from .fold import _fold
from .nodes import _CONSUMING, _pure_call

__all__ = ["Cleanup", "cleanup", "_fold", "_CONSUMING", "_pure_call"]
