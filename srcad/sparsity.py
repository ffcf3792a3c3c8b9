"""Jacobian sparsity: the pattern found by tracing the generated tangent code, column colouring
(srcad/colouring.py), and the compressed Jacobian with one forward sweep per colour (or all colours in one batched sweep).

Detection first runs the tangent code once with a `srcad.sparse_trace.Trace` as the tangent (each
array's dependency sets as one boolean sparse matrix, a rule per operation). Code with an
operation the tracer has no rule for is swept again with a tangent whose entries are `Deps`
objects (the set of input entries a value depends on) in NumPy object arrays: the tangent code
only adds tangents and scales them by primal values, so `+` becomes a union and scaling keeps
the set. Either pattern is structural and, where the code branches, that of the branch taken at
the given point (a superset of the numerically nonzero entries); every Jacobian is checked
against one more sweep along a random direction, and a pattern that fails it is detected again.

Patterns are kept per function and argument (`kept_patterns`), keyed by x's shape and dtype and
by what else decides the pattern (`structure_key`: integer arrays by a fingerprint of their
content, Python ints and strings by value), so a call with other index arrays detects its own
pattern at once, and a call with the same structure skips detection and colouring.
"""
import weakref

import numpy as np
import scipy.sparse as sp

from ._kernels import fingerprint
from .colouring import color_columns
from .errors import SrcadError
from .sparse_trace import TraceUnsupported, trace_pattern

# what makes detection fall back from the tracer to the exact index-set sweep: the tracer's refusal
# (TraceUnsupported) and whatever NumPy or a runtime helper raises on a value it does not know
_NOT_TRACED = (TraceUnsupported, TypeError, ValueError, LookupError, AttributeError, ArithmeticError,
               NotImplementedError, SrcadError)
_PATTERNS_KEPT = 8       # patterns kept per derived function (most recently used)


class Deps:
    """The input entries a tangent entry depends on; + is union, scaling keeps the set."""
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __add__(self, other):
        if isinstance(other, Deps):
            s, o = self.s, other.s
            if o is s or len(o) <= len(s) and o <= s:     # (sums of terms over the same entries)
                return self
            if len(s) < len(o) and s <= o:
                return other
            return Deps(s | o)
        if isinstance(other, np.ndarray):       # entry by entry (NumPy calls back per entry)
            return NotImplemented
        return self

    __radd__ = __add__
    __sub__ = __add__
    __rsub__ = __add__

    def __mul__(self, other):
        return self.__add__(other)

    __rmul__ = __mul__
    __truediv__ = __mul__
    __rtruediv__ = __mul__
    __pow__ = __mul__

    def __neg__(self):
        return self

    __pos__ = __neg__

    def __float__(self):
        raise TypeError("a sparsity tracer was converted to a float; this function's Jacobian "
                        "sparsity cannot be detected by index-set propagation")


def detect(jvp_call, x):
    """(y, rows, cols, m, n): the Jacobian's structural nonzeros from one sweep of the tangent code
    (`find_pattern`: traced, or exact where the tracer has no rule)."""
    return find_pattern(jvp_call, x)[:5]


def find_pattern(jvp_call, x, exact=False):
    """(y, rows, cols, m, n, method): the Jacobian's structural nonzeros from one sweep of the
    tangent code, traced (method "traced") or, where the tracer has no rule or exact=True, with
    Deps index sets (method "exact")."""
    if not exact:
        try:
            return trace_pattern(jvp_call, x) + ("traced",)
        except _NOT_TRACED:
            pass
    return detect_exact(jvp_call, x) + ("exact",)


def detect_exact(jvp_call, x):
    """(y, rows, cols, m, n) of the Jacobian's structural nonzeros, from one sweep of the tangent
    code with a Deps object per entry."""
    n = int(np.size(x))
    seed = np.empty(np.shape(x), dtype=object)
    flat = seed.reshape(-1)
    for k in range(n):
        flat[k] = Deps(frozenset((k,)))
    y, y_dot = jvp_call(seed)
    out = np.asarray(y_dot, dtype=object).reshape(-1) if np.ndim(y_dot) else np.array([y_dot], dtype=object)
    m = int(np.size(y))
    if out.size != m:
        out = np.broadcast_to(out, (m,)) if out.size == 1 else out
    rows, cols = [], []
    for i, d in enumerate(out):
        if isinstance(d, Deps):
            for k in sorted(d.s):
                rows.append(i)
                cols.append(k)
    return y, np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), m, n


class Pattern:
    """A detected Jacobian pattern and its colouring, reused while a check sweep agrees with it."""

    def __init__(self, jvp_call, x, exact=False):
        self.y, self.rows, self.cols, self.m, self.n, self.method = find_pattern(jvp_call, x, exact)
        self.color = color_columns(self.rows, self.cols, self.m, self.n) if self.n else np.zeros(0, np.int64)
        self.ncolors = int(self.color.max()) + 1 if self.n else 0
        self.batched = None      # unknown until the first evaluation: True, or False (one sweep per colour)
        self._csr = None         # (rows, cols, CSR indices, indptr, rows, colours and compressed
        #  positions colour * m + row in CSR order): `_layout`

    def _layout(self):
        """The CSR structure of the pattern (rows, cols: each (row, col) pair once), computed once
        per pattern: each evaluation then gathers its values straight into CSR order (no COO to
        CSR conversion, no summing of duplicates, per call)."""
        c = self._csr
        if c is None or c[0] is not self.rows or c[1] is not self.cols:
            rows, cols = self.rows, self.cols
            order = np.lexsort((cols, rows))
            r, k = rows[order], cols[order]
            keep = np.ones(len(r), dtype=bool)
            keep[1:] = (r[1:] != r[:-1]) | (k[1:] != k[:-1])
            r, k = r[keep], k[keep]
            indptr = np.zeros(self.m + 1, dtype=np.int64)
            np.cumsum(np.bincount(r, minlength=self.m), out=indptr[1:])
            cc = self.color[k]
            c = self._csr = (rows, cols, k.astype(np.int64), indptr, r, cc, cc * self.m + r)
        return c

    def _assemble(self, values):
        """The csr_array of the values in `_layout` order (canonical: sorted, no duplicates)."""
        _, _, indices, indptr, _, _, _ = self._layout()
        J = sp.csr_array((values, indices, indptr), shape=(self.m, self.n))
        J.has_canonical_format = True
        return J

    def evaluate(self, jvp_call, x, r=None):
        """(the compressed Jacobian, the tangent along r or None): all colours in one batched sweep
        (srcad.batching) when the tangent code allows it (self.batched is then True), else one
        ordinary sweep per colour. A direction r (the check's, `agrees`) rides along as one more
        direction of the batch, so the check costs no sweep of its own; the tangent is None where
        it did not (r None, one sweep per colour: `agrees` then runs an ordinary sweep)."""
        if self.batched is not False and self.ncolors > 1:
            from .batching import UNBATCHABLE
            try:
                J, t = self._evaluate_batched(jvp_call, x, r)
                self.batched = True
                return J, t
            except UNBATCHABLE:
                self.batched = False
        _, _, _, _, rows, col_color, _ = self._layout()
        values = np.zeros(len(rows), dtype=np.float64)
        for c in range(self.ncolors):
            v = (self.color == c).astype(np.float64).reshape(np.shape(x))
            y, y_dot = jvp_call(v)
            compressed = np.broadcast_to(np.asarray(y_dot, dtype=np.float64), np.shape(y)).reshape(-1)
            hit = col_color == c
            values[hit] = compressed[rows[hit]]
        return self._assemble(values), None

    def _evaluate_batched(self, jvp_call, x, r=None):
        """Every colour's seed (and r, when given, as the last direction) as one batch of tangents
        (in chunks of at most ~4e6 entries): the primal runs once per chunk instead of once per
        colour. A large batch is deferred (srcad/deferred.py: the tangent operations recorded, then
        replayed a few colours at a time, in cache); one a deferred batch cannot carry is computed
        at once. Returns (J, (y's shape, the tangent along r, flat) or None)."""
        from . import deferred
        from .batching import UNBATCHABLE, Batched, unwrap
        _, _, _, _, rows, col_color, flat = self._layout()
        values = np.zeros(len(rows), dtype=np.float64)
        ndir = self.ncolors + (r is not None)
        chunk = max(1, min(ndir, 4_000_000 // max(1, self.m + self.n)))
        defer = chunk * int(np.size(x)) >= deferred.LARGE
        t = None
        for c0 in range(0, ndir, chunk):
            B = min(chunk, ndir - c0)
            seed = (self.color[None, :] == (c0 + np.arange(B))[:, None]).astype(np.float64)
            if r is not None and c0 + B == ndir:        # the last direction: r
                seed[-1] = np.reshape(r, -1)
            seed = seed.reshape((B,) + np.shape(x))
            try:        # the tangents recorded and replayed a few colours at a time (srcad/deferred.py)
                y, y_dot = jvp_call(deferred.seed(seed) if defer else Batched(seed))
                block = unwrap(y_dot, B, np.shape(y)).reshape(B, -1)
            except UNBATCHABLE:
                if not defer:
                    raise
                defer = False       # an operation a deferred batch does not take: computed at once
                y, y_dot = jvp_call(Batched(seed))
                block = unwrap(y_dot, B, np.shape(y)).reshape(B, -1)
            if B >= self.ncolors and block.shape[1] == self.m:     # every colour in this block
                values = block.reshape(-1)[flat].astype(np.float64, copy=False)
            else:
                hit = (col_color >= c0) & (col_color < c0 + B)
                values[hit] = block[col_color[hit] - c0, rows[hit]]
            if r is not None and c0 + B == ndir:
                t = (np.shape(y), block[-1])
        return self._assemble(values), t

    def agrees(self, J, jvp_call, x, r, t=None):
        """J @ r must equal the tangent along r (else the pattern found earlier no longer holds at
        x, e.g. because a branch went the other way). t: that tangent as (y's shape, flat values)
        when it was computed with the colours (`evaluate`), else an ordinary sweep computes it. The
        tangent along a dense r never reads the pattern or the colouring, so either way a pattern
        missing an entry that r meets is caught."""
        if t is None:
            y, y_dot = jvp_call(r)
            t = (np.shape(y), np.broadcast_to(np.asarray(y_dot, dtype=np.float64), np.shape(y)).reshape(-1))
        shape, want = t
        got = J @ r.reshape(-1)
        scale = np.abs(want).max(initial=0.0) + np.abs(got).max(initial=0.0) + 1e-300
        return shape == np.shape(self.y) and np.abs(got - want).max(initial=0.0) <= 1e-10 * scale


def check_direction(x, seed=12345):
    """The random direction of the check sweep (standard normal entries, x's shape)."""
    return np.random.default_rng(seed).standard_normal(np.shape(x))


def sparse_jacobian(jvp_call, x, cache=None, key=()):
    """The Jacobian as a csr_array (y.size, x.size), and the number of colours.

    With a cache (a dict), the pattern detected for inputs of x's shape and dtype and this
    structure key (`structure_key`) is reused as long as a check sweep along a random direction
    agrees with the compressed Jacobian; when it does not, the pattern is detected again at x.
    A newly detected pattern is checked the same way; a traced one that fails is detected again
    with exact index sets, and an exact one that fails raises SrcadError (never a wrong Jacobian).
    A new pattern's check is an ordinary sweep (it verifies the batched code too: a batch that
    disagrees is not used for that pattern); a kept pattern's check direction is one more
    direction of the batched sweep (it verifies the pattern, the colouring and the decompression:
    its tangent reads none of them).
    """
    key = (np.shape(x), np.asarray(x).dtype.str) + tuple(key)
    pat = cache.pop(key, None) if cache is not None else None
    if pat is not None:     # a kept pattern: r rides along in the batched sweep (its own sweep else)
        r = check_direction(x)
        J, t = pat.evaluate(jvp_call, x, r)
        if pat.agrees(J, jvp_call, x, r, t):
            cache[key] = pat                    # (most recently used last)
            return J, pat.ncolors
    pat = Pattern(jvp_call, x)
    J, ok = _checked(pat, jvp_call, x)
    if not ok and pat.method == "traced":
        pat = Pattern(jvp_call, x, exact=True)
        J, ok = _checked(pat, jvp_call, x)
    if not ok:
        raise SrcadError("srcad.jacobian(..., sparsity='auto'): the Jacobian computed on the detected sparsity "
                         "pattern does not match the tangent along a random direction (a derivative outside the "
                         "pattern: a bug of srcad's detection). Pass sparsity=None for a dense Jacobian.")
    if cache is not None:
        cache[key] = pat
        while len(cache) > _PATTERNS_KEPT:
            del cache[next(iter(cache))]
    return J, pat.ncolors


def _checked(pat, jvp_call, x):
    """(J, whether the check sweep agrees): batched first where the pattern allows, then (when the
    batch disagrees with the ordinary sweep) one sweep per colour. A new pattern is checked with
    an ordinary sweep, independent of the batched code, so a batch that gets a tangent wrong is
    caught there and not used (self.batched False)."""
    r = check_direction(x)
    J, _ = pat.evaluate(jvp_call, x)
    ok = pat.agrees(J, jvp_call, x, r)
    if not ok and pat.batched:
        pat.batched = False
        J, _ = pat.evaluate(jvp_call, x)
        ok = pat.agrees(J, jvp_call, x, r)
    return J, ok


_KEPT = weakref.WeakKeyDictionary()     # f -> {argument: {key: Pattern}}


def kept_patterns(f, k):
    """The patterns kept for the Jacobians of f w.r.t. argument k, shared by every
    srcad.jacobian(f, sparsity="auto") (a fresh dict for an f that cannot be weakly referenced)."""
    try:
        per_f = _KEPT.get(f)
        if per_f is None:
            per_f = _KEPT[f] = {}
    except TypeError:
        return {}
    return per_f.setdefault(k, {})


def structure_key(args, k):
    """What besides x's shape decides the pattern, for every argument but x (args[k]): integer and
    bool arrays (index arrays, masks) by dtype, shape and a fingerprint of their content; scipy
    sparse matrices by their index arrays; Python ints, bools, strings and None by value; lists,
    tuples and dicts item by item; float arrays by dtype and shape and other values by type (their
    values can only move a branch, which the check sweep sees)."""
    return tuple(_part(a) for i, a in enumerate(args) if i != k)


def _part(a):
    if isinstance(a, np.ndarray):
        if a.dtype.kind in "biu":
            return ("ints", a.dtype.str, a.shape, fingerprint(a))
        return ("array", a.dtype.str, a.shape)
    if a is None or isinstance(a, (bool, int, str, np.integer, np.bool_)):
        return (type(a).__name__, a)
    if sp.issparse(a):
        fmt = a.format
        idx = (a.indices, a.indptr) if fmt in ("csr", "csc", "bsr") else (a.row, a.col) if fmt == "coo" else ()
        return ("sparse", fmt, a.shape, a.dtype.str) + tuple(_part(np.asarray(v)) for v in idx)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__,) + tuple(_part(v) for v in a)
    if isinstance(a, dict):
        return ("dict",) + tuple((repr(kk), _part(v)) for kk, v in a.items())
    return ("value", type(a).__qualname__)
