"""The NumPy functions a traced tangent (srcad/sparse_trace/tracer.py) goes through, each with its
structural rule. A function not listed here raises TraceUnsupported (deny by default).

Three kinds of rule:
- moves (reshape, transpose, broadcast_to, take, concatenate, where, ...): NumPy's own function
  applied to the operands' 1-based positions (0 for a plain operand: no dependency) says which
  entry each result entry is; only functions that copy, select or fill with zeros are listed;
- reductions and contractions (sum, mean, cumsum, diff, trace, cross, matmul, dot, outer, solve,
  einsum):
  a result entry depends on the union of the entries it combines, the primal factors taken as
  nonzero;
- questions about the value (shape, ndim, size, result_type), answered from the shape.
"""
import numpy as np
import scipy.sparse as sp

from . import rows as R
from .tracer import _HANDLERS, _FLOAT, Trace, TraceUnsupported, broadcast, elementwise


def _on(*funcs):
    def deco(h):
        for f in funcs:
            _HANDLERS[f] = h
        return h
    return deco


def _no_trace_in(values, what):
    for v in values:
        if isinstance(v, Trace) or isinstance(v, (list, tuple)) and any(isinstance(u, Trace) for u in v):
            raise TraceUnsupported(f"a traced tangent as the {what} has no sparsity-tracing rule")


def _plain_ok(x):
    if isinstance(x, Trace):
        return
    if isinstance(x, np.ndarray) and x.dtype.hasobject or not isinstance(x, (np.ndarray, np.generic, int, float)):
        raise TraceUnsupported(f"a {type(x).__name__} beside a traced tangent has no sparsity-tracing rule")


def _wrap(t, out):
    if isinstance(out, (list, tuple)):
        return [t.moved(o) for o in out]
    return t.moved(out)


# -- questions about the value ------------------------------------------------------------------
@_on(np.shape)
def _shape(x):
    return x.shape


@_on(np.ndim)
def _ndim(x):
    return x.ndim


@_on(np.size)
def _size(x, axis=None):
    return x.size if axis is None else x.shape[axis]


@_on(np.result_type)
def _result_type(*args):
    return np.result_type(*[_FLOAT if isinstance(a, Trace) else a for a in args])


@_on(np.iscomplexobj)
def _iscomplexobj(x):
    return False


# -- moves of one operand: the function applied to its positions ----------------------------------
def _move_one(func):
    def rule(x, *args, **kwargs):
        if not isinstance(x, Trace):
            raise TraceUnsupported(f"np.{func.__name__} with a traced tangent past its first argument")
        _no_trace_in(list(args) + list(kwargs.values()), f"argument of np.{func.__name__}")
        if kwargs.get("out") is not None:
            raise TraceUnsupported(f"np.{func.__name__}(out=...) with a traced tangent")
        return _wrap(x, func(R.positions(x.shape), *args, **kwargs))
    return rule


for _f in (np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.squeeze,
           np.expand_dims, np.flip, np.fliplr, np.flipud, np.roll, np.repeat, np.tile, np.take,
           np.take_along_axis, np.diagonal, np.diag, np.tril, np.triu, np.copy, np.atleast_1d, np.atleast_2d,
           np.atleast_3d, np.rot90, np.split, np.array_split, np.hsplit, np.vsplit, np.real):
    _HANDLERS[_f] = _move_one(_f)


# -- moves of several operands: positions offset into the operands' stacked rows ------------------
def _stacked(datas):
    """(the operands' positions, each traced one offset past the ones before it, plain ones 0;
    the traced operands' rows stacked in that order). An operand may be a (nested) list holding
    traced tangents, as np.array reads it."""
    maps, mats, offset = [], [], 0
    for d in datas:
        if isinstance(d, (list, tuple)):
            d = trace_array(d) if _holds_trace(d) else np.asarray(d)
        _plain_ok(d)
        if isinstance(d, Trace):
            maps.append(R.positions(d.shape) + offset)
            mats.append(d.rows)
            offset += d.size
        else:
            maps.append(np.zeros(np.shape(d), np.int64))
    if not mats:
        raise TraceUnsupported("no traced operand")
    rows = mats[0] if len(mats) == 1 else R.canonical(sp.vstack(mats, format="csr"))
    return maps, rows


def _holds_trace(parts):
    return any(isinstance(p, Trace) or isinstance(p, (list, tuple)) and _holds_trace(p) for p in parts)


def trace_array(parts, shape=None):
    """The trace of np.array(parts) for a nested list whose items include traced tangents (None if
    none does): each item's entries in its place; a plain item (a constant) depends on nothing, a
    symbolic zero (0.0) stands for zeros of its place's shape when `shape` (the array's) is given."""
    if not _holds_trace(parts):
        return None
    traces = []

    def collect(p):
        if isinstance(p, Trace):
            traces.append(p)
        elif isinstance(p, (list, tuple)):
            for q in p:
                collect(q)
    collect(parts)
    offsets = np.cumsum([0] + [t.size for t in traces])
    it = iter(range(len(traces)))

    def build(p, depth):
        if isinstance(p, Trace):
            return R.positions(p.shape) + offsets[next(it)]
        if isinstance(p, (list, tuple)):
            return [build(q, depth + 1) for q in p]
        _plain_ok(p)
        if shape is not None and np.ndim(p) == 0 and len(shape) > depth:
            return np.zeros(shape[depth:], np.int64)
        return np.zeros(np.shape(p), np.int64)
    try:
        out = np.array(build(parts, 0), dtype=np.int64)
    except ValueError as e:             # items of shapes np.array would not stack
        raise TraceUnsupported(f"a list of traced tangents np.array does not stack: {e}") from None
    if shape is not None and out.shape != tuple(shape):
        raise TraceUnsupported("a list of traced tangents whose shape is not its array's")
    rows = traces[0].rows if len(traces) == 1 else sp.vstack([t.rows for t in traces], format="csr")
    return Trace(out.shape, R.take(rows, out))


def _from_stacked(rows, out):
    return Trace(np.shape(out), R.take(rows, out))


def _move_many(func):
    def rule(arrays, *args, **kwargs):
        _no_trace_in(list(args) + list(kwargs.values()), f"argument of np.{func.__name__}")
        if kwargs.get("out") is not None:
            raise TraceUnsupported(f"np.{func.__name__}(out=...) with a traced tangent")
        kwargs.pop("dtype", None)
        kwargs.pop("casting", None)
        maps, rows = _stacked(list(arrays))
        return _from_stacked(rows, func(maps, *args, **kwargs))
    return rule


for _f in (np.concatenate, np.stack, np.vstack, np.hstack, np.column_stack, np.dstack):
    _HANDLERS[_f] = _move_many(_f)


@_on(np.where)
def _where(cond, x, y):
    """The entries of x where cond holds, of y elsewhere (the branch taken at this point)."""
    _no_trace_in([cond], "condition of np.where")
    (mx, my), rows = _stacked([x, y])
    return _from_stacked(rows, np.where(cond, mx, my))


@_on(np.append)
def _append(arr, values, axis=None):
    (ma, mv), rows = _stacked([arr, values])
    return _from_stacked(rows, np.append(ma, mv, axis=axis))


# -- reductions -------------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()


def reduce(t, axis=None, keepdims=False):
    """Each result entry depends on the union of the entries it sums (NumPy's axis and keepdims)."""
    axes = _axes(axis, t.ndim)
    if not axes:
        return t
    kept = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    ngroups = int(np.prod(kept, dtype=np.int64))
    groups = np.broadcast_to(np.arange(ngroups, dtype=np.int64).reshape(kept), t.shape)
    rows = R.grouped(t.rows, groups, ngroups)
    shape = kept if keepdims else tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return Trace(shape, rows)


@_on(np.sum, np.mean, np.nansum, np.nanmean)
def _sum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    if out is not None or "where" in kw or set(kw) - {"where", "initial"}:
        raise TraceUnsupported("np.sum/np.mean with out= or where= of a traced tangent")
    if not isinstance(x, Trace):
        raise TraceUnsupported("a traced tangent past np.sum's first argument")
    return reduce(x, axis, keepdims)


@_on(np.cumsum)
def _cumsum(x, axis=None, dtype=None, out=None):
    if out is not None:
        raise TraceUnsupported("np.cumsum(out=...) of a traced tangent")
    if axis is None:
        x, axis = np.ravel(x), 0
    moved = np.moveaxis(x, axis, -1)
    length = moved.shape[-1] if moved.ndim else 1
    lines = moved.size // max(length, 1)
    return np.moveaxis(Trace(moved.shape, R.prefix(moved.rows, lines, length)), -1, axis)


@_on(np.diff)
def _diff(x, n=1, axis=-1, **kw):
    if kw:
        raise TraceUnsupported("np.diff with prepend/append of a traced tangent")
    axis = int(axis) % x.ndim
    for _ in range(n):
        hi = tuple(slice(1, None) if i == axis else slice(None) for i in range(x.ndim))
        lo = tuple(slice(None, -1) if i == axis else slice(None) for i in range(x.ndim))
        x = elementwise([x[hi], x[lo]])
    return x


@_on(np.trace)
def _trace(x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TraceUnsupported("np.trace(out=...) of a traced tangent")
    return reduce(np.diagonal(x, offset, axis1, axis2), -1)


# -- contractions -----------------------------------------------------------------------------
def _stand_in(x, shape=None):
    """x itself if traced, else a free array of x's shape (only its shape is read)."""
    return x if isinstance(x, Trace) else np.broadcast_to(np.float64(0.0), np.shape(x) if shape is None else shape)


@_on(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Component i of a x b reads the other two components of each operand (2-vectors: both)."""
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1):
        raise TraceUnsupported("np.cross with explicit axes of a traced tangent")
    _plain_ok(a)
    _plain_ok(b)
    sa, sb = np.shape(a), np.shape(b)
    if not sa or not sb or sa[-1] != sb[-1] or sa[-1] not in (2, 3):
        raise TraceUnsupported("np.cross of a traced tangent needs two 3-vectors or two 2-vectors")
    lead = np.broadcast_shapes(sa[:-1], sb[:-1])
    parts = []
    for t in (a, b):
        if isinstance(t, Trace):
            t = broadcast(t, lead + (sa[-1],))
            pos = R.positions(t.shape)
            if sa[-1] == 3:
                parts += [R.take(t.rows, pos[..., [1, 2, 0]]), R.take(t.rows, pos[..., [2, 0, 1]])]
            else:
                parts += [R.take(t.rows, pos[..., 0]), R.take(t.rows, pos[..., 1])]
    return Trace(lead + ((3,) if sa[-1] == 3 else ()), R.union(parts))


@_on(np.matmul)
def _matmul(a, b, **kw):
    if kw:
        raise TraceUnsupported("np.matmul with keywords of a traced tangent")
    return _contract(a, b)


@_on(np.dot)
def _dot(a, b, out=None):
    if out is not None or np.ndim(a) > 2 or np.ndim(b) > 2:
        raise TraceUnsupported("np.dot(out=...) or of arrays over 2-D with a traced tangent")
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return elementwise([a, b])
    return _contract(a, b)


def _contract(a, b):
    """a @ b: entry (..., i, j) reads row i of a and column j of b (every term, the primal factor
    taken as nonzero). With one side plain only the traced side's row/column unions matter."""
    _plain_ok(a)
    _plain_ok(b)
    sa, sb = np.shape(a), np.shape(b)
    if not sa or not sb:
        raise TraceUnsupported("matmul of a 0-d traced tangent")
    a2 = (a[None, :] if isinstance(a, Trace) else _stand_in(a, (1,) + sa)) if len(sa) == 1 else a
    b2 = (b[:, None] if isinstance(b, Trace) else _stand_in(b, sb + (1,))) if len(sb) == 1 else b
    sa2, sb2 = np.shape(a2), np.shape(b2)
    if sa2[-1] != sb2[-2]:
        raise TraceUnsupported("matmul of a traced tangent with mismatched inner dimensions")
    out = np.broadcast_shapes(sa2[:-2], sb2[:-2]) + (sa2[-2], sb2[-1])
    parts = []
    if isinstance(a2, Trace):
        parts.append(broadcast(reduce(a2, -1, keepdims=True), out))
    if isinstance(b2, Trace):
        parts.append(broadcast(reduce(b2, -2, keepdims=True), out))
    t = Trace(out, R.union([p.rows for p in parts]))
    if len(sb) == 1:
        t = t[..., 0]
    if len(sa) == 1:
        t = t[..., 0, :] if len(sb) > 1 else t[..., 0]
    return t


@_on(np.outer)
def _outer(a, b, out=None):
    if out is not None:
        raise TraceUnsupported("np.outer(out=...) with a traced tangent")
    _plain_ok(a)
    _plain_ok(b)
    a1 = np.ravel(a) if isinstance(a, Trace) else _stand_in(a, (int(np.size(a)),))
    b1 = np.ravel(b) if isinstance(b, Trace) else _stand_in(b, (int(np.size(b)),))
    return elementwise([a1[:, None], b1[None, :]])


@_on(np.linalg.solve)
def _solve(a, b):
    """solve(A, b) for a plain A: each column of the result reads every entry of b's column."""
    if isinstance(a, Trace):
        raise TraceUnsupported("np.linalg.solve with a traced matrix")
    sa = np.shape(a)
    if b.ndim == 1:
        return broadcast(reduce(b, 0, keepdims=True), sa[:-1])
    out = np.broadcast_shapes(sa[:-2], b.shape[:-2]) + b.shape[-2:]
    return broadcast(reduce(b, -2, keepdims=True), out)


@_on(np.einsum)
def _einsum(subscripts, *operands, out=None, **kw):
    """An explicit `in,in->out` einsum without repeated labels or '...': each traced operand's
    entries, united over its labels the output lacks, broadcast over the labels it lacks."""
    if out is not None or not isinstance(subscripts, str) or "->" not in subscripts or "." in subscripts:
        raise TraceUnsupported("np.einsum with out=, '...', or no '->' of a traced tangent")
    ins, lo = subscripts.replace(" ", "").split("->")
    ins = ins.split(",")
    if len(ins) != len(operands) or any(len(set(s)) != len(s) for s in ins + [lo]):
        raise TraceUnsupported("np.einsum with a repeated label of a traced tangent")
    size = {}
    for s, op in zip(ins, operands):
        _plain_ok(op)
        if len(s) != np.ndim(op):
            raise TraceUnsupported("np.einsum subscripts that do not match an operand's dimensions")
        for label, d in zip(s, np.shape(op)):
            size[label] = d if size.get(label, 1) == 1 else size[label]
    shape = tuple(size[label] for label in lo)
    parts = []
    for s, op in zip(ins, operands):
        if isinstance(op, Trace):
            kept = [label for label in s if label in lo]
            t = reduce(op, tuple(i for i, label in enumerate(s) if label not in lo))
            t = np.transpose(t, [kept.index(label) for label in lo if label in kept]) if kept else t
            t = t.reshape(tuple(size[label] if label in kept else 1 for label in lo)) if lo else t
            parts.append(broadcast(t, shape).rows)
    return Trace(shape, R.union(parts))
