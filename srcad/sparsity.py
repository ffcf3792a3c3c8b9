"""Jacobian sparsity: index sets propagated through the generated tangent code, column colouring,
and the compressed Jacobian with one forward sweep per colour.

Detection runs the same generated forward-mode code with a tangent whose entries are `Deps`
objects (the set of input entries a value depends on) in NumPy object arrays: the tangent code
only adds tangents and scales them by primal values, so `+` becomes a union and scaling keeps
the set. The pattern is structural and, where the code branches, that of the branch taken at
the given point (a superset of the numerically nonzero entries).
"""
import numpy as np
import scipy.sparse as sp


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
    """(rows, cols) of the Jacobian's structural nonzeros, from one sweep of the tangent code."""
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


def color_columns(rows, cols, m, n):
    """Greedy colouring in column order: columns that share a row get different colours (each
    column the smallest colour none of its neighbours has). The neighbours come from the
    pattern's column-intersection graph P^T P (one sparse product). Returns colours (n,)."""
    pattern = sp.csr_array((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(m, n))
    pattern.sum_duplicates()
    graph = (pattern.T @ pattern).tocsr()
    ptr, idx = graph.indptr, graph.indices
    color = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        taken = color[idx[ptr[k]:ptr[k + 1]]]
        taken = taken[taken >= 0]
        if taken.size:
            used = np.zeros(int(taken.max()) + 2, dtype=bool)
            used[taken] = True
            color[k] = int(np.argmin(used))
        else:
            color[k] = 0
    return color


class Pattern:
    """A detected Jacobian pattern and its colouring, reused while a check sweep agrees with it."""

    def __init__(self, jvp_call, x):
        self.y, self.rows, self.cols, self.m, self.n = detect(jvp_call, x)
        self.color = color_columns(self.rows, self.cols, self.m, self.n) if self.n else np.zeros(0, np.int64)
        self.ncolors = int(self.color.max()) + 1 if self.n else 0
        self.batched = None      # unknown until the first evaluation: True, or False (one sweep per colour)

    def evaluate(self, jvp_call, x):
        """The compressed Jacobian: all colours in one batched sweep (srcad.batching) when the
        tangent code allows it (self.batched is then True, and the caller verifies the result
        with an ordinary sweep, `agrees`), else one ordinary sweep per colour."""
        if self.batched is not False and self.ncolors > 1:
            from .batching import UNBATCHABLE
            try:
                J = self._evaluate_batched(jvp_call, x)
                self.batched = True
                return J
            except UNBATCHABLE:
                self.batched = False
        values = np.zeros(len(self.rows), dtype=np.float64)
        col_color = self.color[self.cols]
        y = None
        for c in range(self.ncolors):
            v = (self.color == c).astype(np.float64).reshape(np.shape(x))
            y, y_dot = jvp_call(v)
            compressed = np.broadcast_to(np.asarray(y_dot, dtype=np.float64), np.shape(y)).reshape(-1)
            hit = col_color == c
            values[hit] = compressed[self.rows[hit]]
        J = sp.csr_array((values, (self.rows, self.cols)), shape=(self.m, self.n))
        J.sum_duplicates()
        return J

    def _evaluate_batched(self, jvp_call, x):
        """Every colour's seed as one batch of tangents (in chunks of at most ~4e6 entries): the
        primal runs once per chunk instead of once per colour. A large batch is deferred
        (srcad/deferred.py: the tangent operations recorded, then replayed a few colours at a time,
        in cache); one a deferred batch cannot carry is computed at once."""
        from . import deferred
        from .batching import UNBATCHABLE, Batched, unwrap
        values = np.zeros(len(self.rows), dtype=np.float64)
        col_color = self.color[self.cols]
        chunk = max(1, min(self.ncolors, 4_000_000 // max(1, self.m + self.n)))
        defer = chunk * int(np.size(x)) >= deferred.LARGE
        for c0 in range(0, self.ncolors, chunk):
            B = min(chunk, self.ncolors - c0)
            seed = (self.color[None, :] == (c0 + np.arange(B))[:, None]).astype(np.float64)
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
            hit = (col_color >= c0) & (col_color < c0 + B)
            values[hit] = block[col_color[hit] - c0, self.rows[hit]]
        J = sp.csr_array((values, (self.rows, self.cols)), shape=(self.m, self.n))
        J.sum_duplicates()
        return J

    def agrees(self, J, jvp_call, x, seed=12345):
        """One more sweep along a random direction r: J @ r must equal the tangent (else the
        pattern found earlier no longer holds at x, e.g. because a branch went the other way)."""
        r = np.random.default_rng(seed).standard_normal(np.shape(x))
        y, y_dot = jvp_call(r)
        want = np.broadcast_to(np.asarray(y_dot, dtype=np.float64), np.shape(y)).reshape(-1)
        got = J @ r.reshape(-1)
        scale = np.abs(want).max(initial=0.0) + np.abs(got).max(initial=0.0) + 1e-300
        return np.shape(y) == np.shape(self.y) and np.abs(got - want).max(initial=0.0) <= 1e-10 * scale


def sparse_jacobian(jvp_call, x, cache=None):
    """The Jacobian as a csr_array (y.size, x.size), and the number of colours.

    With a cache (a dict), the pattern detected for inputs of this shape is reused as long as a
    check sweep along a random direction agrees with the compressed Jacobian; when it does not,
    the pattern is detected again at x.
    """
    key = (np.shape(x), np.asarray(x).dtype.str)
    pat = cache.get(key) if cache is not None else None
    if pat is not None:
        J = pat.evaluate(jvp_call, x)
        if pat.agrees(J, jvp_call, x):
            return J, pat.ncolors
    pat = Pattern(jvp_call, x)
    if cache is not None:
        cache[key] = pat
    J = pat.evaluate(jvp_call, x)
    if pat.batched and not pat.agrees(J, jvp_call, x):   # the batch must match an ordinary sweep
        pat.batched = False
        J = pat.evaluate(jvp_call, x)
    return J, pat.ncolors
