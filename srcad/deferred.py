"""Deferred batches of tangents: a batched sweep (srcad.batching) whose tangent operations are
recorded while the primal runs once, then replayed over a few directions at a time.

A `Batched` sweep over B directions computes every tangent as one (B,) + S array. When those
arrays are large (BA: 14 colours x 31,843 observations x 3), each operation streams them through
main memory, and the sweep costs several times B ordinary ones. A `Deferred` is a batch that has
not been computed: an operation on it records the operation (its function, its operands -- the
primal values, already computed, are captured as they are) and returns a new `Deferred` whose
shape and dtype come from running the operation on a batch of no directions. Reading the result
(`unwrap`, or anything that needs the numbers: `.data`) replays the recorded operations, in the
order they were recorded, for a chunk of directions at a time, each result dropped after its last
use; a chunk's arrays fit in cache. So the primal runs once, as in a `Batched` sweep, and the
tangent arithmetic runs at the speed of ordinary sweeps.

Recording also skips what the result does not read: a tangent selected by `np.where(c, a, b)`
with a (primal, known) condition that picks no entry of `a` does not depend on `a` (nor is `a`
computed, unless something else reads it), and `a + zeros` (a primal array of zeros) is `a`.
Both are exact. A replay runs the same `Batched` code on each chunk, so the numbers are those of
the `Batched` sweep; callers verify them with an ordinary sweep as for `Batched`.
"""
import math

import numpy as np

from .batching import Batched, _HANDLERS

LARGE = 1 << 18     # entries of the seed (B directions x entries of x) from which a sweep is deferred
CHUNK = 1 << 15     # entries of the largest recorded tangent that one replay chunk aims at
SMALL = 1 << 12     # a result with at most this many entries (all directions) is computed at once


class _Tape:
    """What the Deferred of one sweep share: the number of directions, the largest tangent."""
    __slots__ = ("B", "largest")

    def __init__(self, B):
        self.B, self.largest = B, 1


def seed(data):
    """The batch of tangents with the given data (B,) + x's shape: a Deferred when it is large
    (the tangents derived from it are then at least as large), else a Batched."""
    B = data.shape[0]
    if data.size < LARGE or B < 2:
        return Batched(data)
    tape = _Tape(B)
    tape.largest = max(1, data[0].size)
    return Deferred(tape, Batched(data[:0]), None, (), {}, data)


def _is_batch(v):
    return isinstance(v, Batched)


def _map(v, f):
    """v with every batch in it (through lists and tuples) replaced by f(batch)."""
    if isinstance(v, Batched):
        return f(v)
    if type(v) in (list, tuple):
        return type(v)(_map(u, f) for u in v)
    return v


def _probe(v):
    return v.probe if type(v) is Deferred else Batched(v.data[:0])


def _full(v):
    return Batched(v.data)


def _has_batch(v):
    return isinstance(v, Batched) or type(v) in (list, tuple) and any(_has_batch(u) for u in v)


def _nodes(v, out):
    if type(v) is Deferred:
        out.append(v)
    elif type(v) in (list, tuple):
        for u in v:
            _nodes(u, out)
    return out


def _record(tape, fn, args, kwargs, spread=False):
    """fn(*args, **kwargs) on batches, as a Deferred (or computed at once when it is small).
    spread: fn broadcasts its operands (a ufunc, np.where), so a primal array operand of fewer
    entries than the result is spread to the result's shape here, once: NumPy's inner loops over a
    broadcast column (an (n, 1) operand against (n, 3)) run an order of magnitude slower than over
    operands of one shape, in every replayed chunk."""
    probe = fn(*_map(args, _probe), **{k: _map(v, _probe) for k, v in kwargs.items()})
    if isinstance(probe, list) and probe and all(isinstance(p, Batched) for p in probe):   # np.split
        return [_record(tape, _Item(fn, i), args, kwargs) for i in range(len(probe))]
    if not isinstance(probe, Batched):      # a shape, a size: what the batch's shape decides
        return probe
    size = math.prod(probe.data.shape[1:])
    if size * tape.B <= SMALL:      # computed now, for every direction: a leaf of the replay
        val = fn(*_map(args, _full), **{k: _map(v, _full) for k, v in kwargs.items()})
        return Deferred(tape, probe, None, (), {}, val.data) if isinstance(val, Batched) else val
    for node in _nodes(args, []) + _nodes(list(kwargs.values()), []):
        node.used = True
    if spread:          # a primal operand broadcast along the result's axes, spread out once for all chunks
        shape = probe.shape
        args = tuple(_spread(a, shape) for a in args)
    else:               # (spread arrays are copies already)
        args = _snapshot(args)
    tape.largest = max(tape.largest, size)
    return Deferred(tape, probe, fn, args, {k: _snapshot(v) for k, v in kwargs.items()})


def _spread(a, shape):
    if type(a) is np.ndarray and a.ndim and a.shape != shape and a.size < math.prod(shape):
        try:
            return np.ascontiguousarray(np.broadcast_to(a, shape))
        except ValueError:
            pass
    return _snapshot(a)


def _snapshot(v):
    """v with every writable array in it (through lists and tuples) copied: the replay must see
    the values the operation saw, also where the code writes into an array after reading it."""
    if type(v) is np.ndarray:
        return v.copy() if v.flags.writeable else v
    if type(v) in (list, tuple):
        return type(v)(_snapshot(u) for u in v)
    return v


def _sum(tape, handler, x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    """np.sum over one short axis (at most 4 entries: a point's coordinates) as the additions of
    its slices, in NumPy's order (the same bits): a reduction's inner loop over so few entries runs
    once per output entry, an addition's over all of them."""
    if type(x) is Deferred and dtype is None and out is None and not kw and isinstance(axis, int) and \
            -x.ndim <= axis < x.ndim and 1 < x.shape[axis] <= 4:
        lead = (slice(None),) * (axis % x.ndim)
        parts = [x[lead + ((slice(i, i + 1),) if keepdims else (i,))] for i in range(x.shape[axis])]
        total = parts[0] + parts[1]
        for p in parts[2:]:
            total = total + p
        return total
    return _record(tape, handler, (x,), dict(axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw))


class _Item:
    """The i-th of the batches fn returns (np.split)."""
    __slots__ = ("fn", "i")

    def __init__(self, fn, i):
        self.fn, self.i = fn, i

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)[self.i]


def _getitem(x, idx):
    """x[idx]; a strided view copied to contiguous memory (a few columns of a wider tangent are
    read by several operations, each an order of magnitude slower on a strided operand)."""
    out = x[idx]
    d = out.data
    if not d.flags.c_contiguous:
        dims = [n for n in d.shape if n != 1]
        if len(dims) >= 2 and dims[-1] <= 8:       # (a strided vector stays a view: one long inner loop)
            out = Batched(_columns(d, range(d.shape[-1])) if d.shape[-1] == dims[-1] else np.ascontiguousarray(d))
    return out


def _columns(d, cols):
    """A contiguous array of d's last-axis entries cols, written one column at a time: one long
    strided loop per column (a copy of the whole runs its inner loop over a few entries per row)."""
    out = np.empty(d.shape[:-1] + (len(cols),), d.dtype)
    for i, j in enumerate(cols):
        out[..., i] = d[..., j]
    return out


def _permute(x, cols):
    """x[..., cols] for a short permutation cols of x's last axis (np.cross's rotations)."""
    return Batched(_columns(x.data, cols))


_ROLL1, _ROLL2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(tape, a, b, *rest, **kw):
    """np.cross(a, b) with one side primal and vectors along the last axis (the defaults): as
    a[..., (1,2,0)] * b[..., (2,0,1)] - a[..., (2,0,1)] * b[..., (1,2,0)], the primal side's two
    permutations taken once, so each chunk runs two gathers and three contiguous operations
    (np.cross itself works on strided components through temporaries)."""
    axes = dict(zip(("axisa", "axisb", "axisc", "axis"), rest), **kw)
    if all(axes.get(k, -1) == -1 for k in ("axisa", "axisb", "axisc")) and axes.get("axis") is None and \
            np.shape(a) == np.shape(b) and np.shape(a)[-1:] == (3,) and (type(a) is np.ndarray) != (type(b) is np.ndarray):
        idx1, idx2 = (Ellipsis, _ROLL1), (Ellipsis, _ROLL2)
        if type(a) is np.ndarray:
            return _roll(tape, b, _ROLL2) * a[idx1] - _roll(tape, b, _ROLL1) * a[idx2]
        return _roll(tape, a, _ROLL1) * b[idx2] - _roll(tape, a, _ROLL2) * b[idx1]
    return _record(tape, _HANDLERS[np.cross], (a, b) + rest, kw)


def _roll(tape, t, cols):
    return _record(tape, _permute, (t, tuple(cols)), {}) if type(t) is Deferred else t[(Ellipsis, cols)]


def _assign(x, idx, value):
    out = Batched(x.data.copy())
    out[idx] = value
    return out


def _astype(x, dtype):
    return x.astype(dtype)


def _transpose(x):
    return x.T


_PLAIN = (np.ndarray, float, np.float64)


def _plain_zero(v):
    """Is v a direction-independent zero (a Python or NumPy zero, or a float array of zeros)?"""
    if type(v) in (float, int, np.float64):
        return v == 0
    return type(v) is np.ndarray and v.dtype.kind == "f" and not v.any()


class Deferred(Batched):
    """A batch of tangents not computed yet (see the module docstring)."""

    __slots__ = ("tape", "probe", "fn", "args", "kwargs", "full", "used")
    __array_priority__ = 60.0

    def __init__(self, tape, probe, fn, args, kwargs, full=None):
        self.tape, self.probe, self.fn, self.args, self.kwargs = tape, probe, fn, args, kwargs
        self.full, self.used = full, False

    @property
    def data(self):
        """The numbers, (B,) + shape: every direction replayed (kept for later reads)."""
        if self.full is None:
            self.full = evaluate([self])[0]
        return self.full

    @property
    def shape(self):
        return self.probe.data.shape[1:]

    @property
    def ndim(self):
        return self.probe.data.ndim - 1

    @property
    def dtype(self):
        return self.probe.data.dtype

    @property
    def T(self):
        return _record(self.tape, _transpose, (self,), {})

    def __getitem__(self, idx):
        if self.fn is _getitem and type(idx) is tuple and idx[:1] == (slice(None),) and \
                all(type(i) in (slice, int) for i in idx[1:]):
            src, rows = self.args
            if type(rows) is np.ndarray and rows.ndim == 1 and rows.dtype.kind in "iu":
                # x[rows][:, cols] as x[:, cols][rows]: the columns taken from the small source,
                # the rows gathered once into a contiguous array (x[rows] is not computed unless
                # something else reads it)
                return src[idx][rows]
        return _record(self.tape, _getitem, (self, idx), {})

    def __setitem__(self, idx, value):
        if self.used:       # something recorded earlier read the value before this write
            raise TypeError("a deferred batch of tangents was written after it was read")
        old = Deferred(self.tape, self.probe, self.fn, self.args, self.kwargs, self.full)
        new = _record(self.tape, _assign, (old, idx, value), {})
        if type(new) is not Deferred:
            new = Deferred(self.tape, Batched(new.data[:0]), None, (), {}, new.data)
        self.probe, self.fn, self.args, self.kwargs, self.full = new.probe, new.fn, new.args, new.kwargs, new.full

    def astype(self, dtype, **kw):
        return _record(self.tape, _astype, (self, dtype), {})

    def copy(self):
        return _record(self.tape, _astype, (self, self.dtype), {})

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        if len(inputs) == 2 and ufunc in (np.add, np.subtract):
            a, b = inputs
            if _plain_zero(b) and _is_batch(a) and np.broadcast_shapes(a.shape, np.shape(b)) == a.shape:
                return a
            if _plain_zero(a) and _is_batch(b) and np.broadcast_shapes(b.shape, np.shape(a)) == b.shape:
                return b if ufunc is np.add else np.negative(b)
        if len(inputs) == 2 and not kwargs and ufunc in (np.multiply, np.true_divide):
            a, b = inputs       # (-t) * p as t * (-p), -p once for every chunk: the same bits
            if type(a) is Deferred and a.fn is np.negative and not a.kwargs and type(b) in _PLAIN:
                return ufunc(a.args[0], -b)
            if ufunc is np.multiply and type(b) is Deferred and b.fn is np.negative and not b.kwargs \
                    and type(a) in _PLAIN:
                return ufunc(-a, b.args[0])
        return _record(self.tape, ufunc, inputs, kwargs, spread=True)

    def __array_function__(self, func, types, args, kwargs):
        handler = _HANDLERS.get(func)
        if handler is None:
            raise TypeError(f"{func.__name__} is not implemented for a batch of tangents")
        if func in (np.shape, np.ndim, np.size):
            return handler(*args, **kwargs)
        if func is np.where:
            return _where(self.tape, *args, **kwargs)
        if func is np.cross:
            return _cross(self.tape, *args, **kwargs)
        if func is np.broadcast_to and tuple(args[1] if len(args) > 1 else kwargs["shape"]) == self.shape:
            return self
        if func is np.sum:
            return _sum(self.tape, handler, *args, **kwargs)
        return _record(self.tape, handler, args, kwargs)


def _where(tape, cond, x, y):
    """np.where(cond, x, y) of tangents; with a primal cond that picks no entry of one side, that
    side is not read (a zero in its place, or the other side itself when it has the result's shape)."""
    if not _is_batch(cond):
        c = np.asarray(cond)
        shape = np.broadcast_shapes(c.shape, np.shape(x), np.shape(y))
        if not c.any():
            if _is_batch(y) and y.shape == shape:
                return y
            x = np.zeros(np.shape(x))
        elif c.all():
            if _is_batch(x) and x.shape == shape:
                return x
            y = np.zeros(np.shape(y))
        if not (_is_batch(x) or _is_batch(y)):     # no tangent left: the same for every direction
            return np.where(c, x, y)
    return _record(tape, _HANDLERS[np.where], (cond, x, y), {}, spread=True)


def evaluate(outs):
    """The data (B,) + shape of each Deferred in outs: the recorded operations they depend on,
    replayed in order over chunks of directions, each intermediate dropped after its last use."""
    tape = outs[0].tape
    order, seen = [], set()
    stack = [(o, False) for o in outs]
    while stack:                        # depth first: a node after everything it reads
        node, done = stack.pop()
        if done:    # (node, the nodes it reads, where its arguments hold batches, kwargs hold any)
            slots = [(i, type(a) in (list, tuple)) for i, a in enumerate(node.args) if _has_batch(a)]
            kw = any(_has_batch(v) for v in node.kwargs.values())
            order.append((node, _nodes(node.args, []) + _nodes(list(node.kwargs.values()), []), slots, kw))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.full is not None:
            continue
        stack.append((node, True))
        for a in _nodes(node.args, []) + _nodes(list(node.kwargs.values()), []):
            if id(a) not in seen:
                stack.append((a, False))
    keep, last = {id(o) for o in outs}, {}
    for k, (node, reads, slots, kw) in enumerate(order):
        for a in reads:
            last[id(a)] = k
    drops = [[] for _ in order]         # after each node: the values it read last (not an output)
    for i, k in last.items():
        if i not in keep:
            drops[k].append(i)
    results = [np.empty((tape.B,) + o.shape, o.dtype) for o in outs]
    step = max(1, CHUNK // tape.largest)
    for c0 in range(0, tape.B, step):
        c1 = min(tape.B, c0 + step)
        vals = {}

        def get(v):
            if type(v) is Deferred and v.full is None:
                return vals[id(v)]
            return Batched(v.data[c0:c1])
        for (node, reads, slots, kw), drop in zip(order, drops):
            args = list(node.args)
            for i, nested in slots:
                args[i] = _map(args[i], get) if nested else get(args[i])
            kwargs = {k: _map(v, get) for k, v in node.kwargs.items()} if kw else node.kwargs
            vals[id(node)] = node.fn(*args, **kwargs)
            for i in drop:
                vals.pop(i, None)
        for o, r in zip(outs, results):
            v = get(o)
            r[c0:c1] = v.data if isinstance(v, Batched) else v
    return results
