"""aliases: which names may share memory, and what an in-place write does to the other names.

The passes after this one treat every name as a value: `y[i] = v` gives y a new value,
`z += x` rebinds z. Python agrees as long as no other name that is read later sees the object
written. This pass takes the fenced function (the user's syntax tree) and makes that hold, or
rejects the function before any code runs:

  * `np.f(..., out=y)`, `np.copyto(y, v)` and `y.fill(v)` become subscript writes `y[...] = ...`;
  * a write into an array that another name holds entirely (`z = y; z[0] = v`) is followed by
    rebinding that name (`y = z`); after `z += x` the rebinding is guarded by a run-time test,
    since `+=` updates an array in place but rebinds a name that holds a number;
  * any other name that may see the write (a view `v = y[:2]`, a list holding `y`, a name that
    is `y` on one branch only) is stale from then on, and reading it again is rejected with
    UnsupportedSyntaxError naming the write, the alias and the fix;
  * calling a user function that writes into one of its parameters (the caller's array) is
    rejected at the call: srcad passes values into calls, not memory;
  * writes into module-level objects and closure cells are recorded in `parsed.global_writes`;
    analyze rejects those that store a value carrying a derivative.

The analysis is a flow-sensitive may-alias analysis over abstract objects: allocation sites,
parameters and globals. A name refers to an object entirely (`whole`), shares some of its
memory (`view`), or is a container holding it (`item`). The most recent object of a site is
kept apart from the older ones, so that a fresh `y = np.zeros(3)` in each iteration of a loop
that appends `y` to a list is not a conflict. Types are not known here: an index that is a
name may be an integer, so `t = x[i]` may be a view of x (if x has two dimensions).

The package: domain.py (abstract objects, the state and its join), expressions.py (values and
calls), writes.py (what an in-place write reaches), statements.py (bindings; the state carried
through branches and loops as a forward problem on srcad/dataflow.py), messages.py (errors and
their fixes), analysis.py (the pass `_Aliases` and callee summaries), rewrite.py (rebinding and
guards; `check_aliases`, the entry point).
"""
from ..callees import INPLACE_METHODS as _INPLACE_METHODS, is_inplace_func, is_inplace_method_of_global
from .analysis import _Aliases, summary_of
from .domain import _ADDS_ITEMS, _PLAIN_ATTRS, _VIEW_FUNCS, _VIEW_METHODS, ITEM, VIEW, WHOLE, Summary
from .rewrite import check_aliases

__all__ = ["check_aliases", "summary_of", "Summary", "WHOLE", "VIEW", "ITEM", "is_inplace_func",
           "is_inplace_method_of_global", "_Aliases", "_INPLACE_METHODS", "_ADDS_ITEMS", "_PLAIN_ATTRS", "_VIEW_FUNCS",
           "_VIEW_METHODS"]
