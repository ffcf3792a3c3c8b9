"""kinds: what each value is, known before the code is written (abstract values).

Two pieces:

`signature(args, kwargs)` maps a call's actual arguments to a small hashable key: Python float /
int / bool, ndarray (dtype, ndim), NumPy scalar (dtype), each scipy.sparse class, a container's
type, or "other"; and, when an argument is an array, the classes of equal dimensions of the
arrays (srcad/inputs.py's dim_classes: `(4, 3)` and `(3,)` give `(2, 3)` and `(3,)`, class 1 being
a dimension of size one). It runs on every call of a derivative (the generated module is cached
per signature), so it only looks at types and three attributes of arrays.

`Kinds(fn, analysis, params)` is a pass over a normalized function: for every statement, the kind
of each local name just before it, and the kind of what the statement assigns. A kind says what
is sure about a value: its category (a Python number, a NumPy scalar, an ndarray, sparse, a
container), its dtype character, its number of dimensions, and a *shape token*: two values with
the same (non-None) token have the same shape whenever both exist. A parameter's array gets the
token of its dimension classes, ("dims", 2, 3), which every array of those classes shares (so
`W[i]`, `b[j]` and `x` of one length are proven one shape, and an elementwise operation of them
needs no `rt.unbroadcast`); where only some axes' classes are sure (`np.stack` of a list: its
length is not) they are kept in `Kind.dims` and the token is None until an index drops the
unsure axis. Without a signature, a parameter's token is its name. An operation derives its
result's token from its operands' (`x * 2.0` has x's shape; `A @ x` the classes (m,) of A's rows,
or the token ("@", A's, x's)); a loop joins what each iteration brings until nothing changes.
What is not sure is None: unknown stays general, never wrong.

Input: a normalized function (one operation per statement, see srcad/frontend/normalize), its
Analysis (the op of each statement), and the kinds of its parameters (from the signature; None
when there is no signature). Output: `before(st, name)`, `result(st)`, `exit(st, name)`,
`exit_of_body(name)`. Invariant: a kind is only ever an over-approximation (joins weaken, never
strengthen).

The package, by what changes together:
  lattice.py      Kind, Cat and the join (a new category or field changes these)
  signature.py    the per-call key and the parameters' kinds from it
  operations.py   the transfer of one operation (a new operation's kind goes here)
  results.py      what a user function returns, for its call's argument kinds (a tuple's elements too)
  analysis.py     the dataflow problem (srcad/dataflow.py: statements, lists, loops' widening)
                  and `Kinds`, the queries
"""
from .analysis import Kinds
from .lattice import _UNDEF, NOTHING, UNKNOWN, Cat, Kind, join, real
from .operations import _kind_fact, broadcast
from .signature import call_kinds, literal_kind, param_kinds, signature

__all__ = ["Kinds", "Kind", "Cat", "UNKNOWN", "NOTHING", "join", "real", "broadcast", "param_kinds", "signature", "call_kinds", "literal_kind",
           "_UNDEF", "_kind_fact"]
