"""Reductions: max/min of groups of stored entries (CSR rows, or columns through the transposed
index) and sum/max/min of segments of rows, with their vjps (ties share the gradient); and a
fingerprint of an array's bytes."""
import numpy as np

from .. import _kernels as K  # the package: its builds (K._scatter, K._spmm, K._reduce) and tunables are
#                                read at each call, so SRCAD_KERNELS' choice or a test's swap reaches every wrapper
from . import _run
from .args import _floats, _ints, _op_is_max, _rows
from .rows import gather_rows


def _group_reduce(ptr, pos, data, n, op, locate=False):
    """Max/min of each of n groups of the 1-D data (positions pos[ptr[b]:ptr[b+1]], or
    ptr[b]:ptr[b+1] themselves when pos is None); -inf/+inf for an empty group. With `locate`
    (contiguous groups only), also the position of each group's extreme where exactly one entry
    attains it, else -1, for the groups of two or more entries: (vals, at)."""
    use_pos = pos is not None
    if locate and use_pos:
        raise ValueError("locate needs contiguous groups (pos None)")
    ptr, pos = _ints(ptr, pos if use_pos else np.empty(0, np.int32))
    (data,) = _floats(data)
    if len(ptr) != n + 1 or data.ndim != 1:
        raise ValueError(f"need {n + 1} group pointers and 1-D data")
    vals = np.empty(n, dtype=data.dtype)
    at = np.empty(n if locate else 0, dtype=np.int64)
    _run(K._reduce.group_extreme, ptr, pos, use_pos, data, _op_is_max(op), vals, at)
    return (vals, at) if locate else vals


def _group_reduce_vjp(ptr, pos, data, vals, g, at=None):
    """g[b] / (entries of group b tying vals[b]) at those entries, 0 elsewhere; `at`, the
    positions from _group_reduce(..., locate=True), spares the search (contiguous groups)."""
    use_pos = pos is not None
    ptr, pos = _ints(ptr, pos if use_pos else np.empty(0, np.int32))
    data, vals, g = _floats(data, vals, g)
    if not len(ptr) - 1 == len(vals) == len(g):
        raise ValueError("vals and g need one entry per group")
    # when the groups cover every entry (CSR rows, columns through the transposed index, the whole
    # array), the kernel writes each one and gdata needs no zeroing first
    covers = len(ptr) > 0 and ptr[0] == 0 and ptr[-1] == (len(pos) if use_pos else len(data))
    gdata = np.empty(len(data), dtype=data.dtype) if covers else np.zeros(len(data), dtype=data.dtype)
    if at is not None and covers and not use_pos:
        at = np.ascontiguousarray(at, dtype=np.int64)
        _run(K._reduce.group_extreme_vjp_at, ptr, data, vals, at, g, gdata)
    else:
        _run(K._reduce.group_extreme_vjp, ptr, pos, use_pos, data, vals, g, gdata)
    return gdata


def csr_row_reduce(indptr, data, n_rows, op, locate=False):
    """Max/min of each row's stored entries; an empty row gives -inf/+inf. With `locate`,
    (vals, at): for each row i of two or more entries, at[i] is the position of its extreme when
    one entry attains it, else -1 (a row of one entry needs none: at[i] is left unset)."""
    return _group_reduce(indptr, None, data, n_rows, op, locate)


def csr_row_reduce_vjp(indptr, data, vals, g, at=None):
    """gdata[p] = g[i] / ties[i] where data[p] == vals[i] for p in row i (ties: how many entries
    of row i equal vals[i]), else 0. `at` from csr_row_reduce(..., locate=True) spares the
    search for each row's extreme."""
    return _group_reduce_vjp(indptr, None, data, vals, g, at)


def csr_col_reduce(t_indptr, t_pos, data, n_cols, op):
    """csr_row_reduce over columns, through the transposed index of csr_transpose_index."""
    return _group_reduce(t_indptr, t_pos, data, n_cols, op)


def csr_col_reduce_vjp(t_indptr, t_pos, data, vals, g):
    """csr_row_reduce_vjp over columns, through the transposed index."""
    return _group_reduce_vjp(t_indptr, t_pos, data, vals, g)


def segment_reduce(data, segment_ids, num_segments, op):
    """(out, counts): sum/max/min of the rows of data by segment id, in row order; empty
    segments give 0/-inf/+inf. counts: rows per segment for "sum", else tied rows per element."""
    (data,), (ids,) = _floats(data), _ints(segment_ids)
    if ids.ndim != 1:
        raise ValueError("segment_ids must be 1-D")
    flat, d = _rows(data, len(ids), "data")
    out_shape = (num_segments,) + data.shape[1:]
    if op == "sum":
        out = np.zeros(out_shape, dtype=data.dtype)
        counts = np.zeros(num_segments, dtype=np.int64)
        _run(K._scatter.scatter_add, flat, ids, out.reshape(-1), counts, num_segments, d,
             index=(ids, num_segments, f"srcad.sparse.segment_{op}: segment_ids", "segments (num_segments)"))
        return out, counts
    out = np.empty(out_shape, dtype=data.dtype)
    counts = np.empty(out_shape, dtype=np.int64)
    _run(K._reduce.segment_extreme, flat, ids, _op_is_max(op), out.reshape(-1),
         counts.reshape(-1), num_segments, d, index=(ids, num_segments, f"srcad.sparse.segment_{op}: segment_ids", "segments (num_segments)"))
    return out, counts


def segment_reduce_vjp(data, segment_ids, out, counts, g, op):
    """Gradient of segment_reduce w.r.t. data: g[ids] for "sum"; for max/min
    g[s] / counts[s] where data equals out[s], else 0."""
    if op == "sum":
        (g,) = _floats(g)
        return gather_rows(g, segment_ids)
    _op_is_max(op)  # validates op
    data, out, g = _floats(data, out, g)
    (ids,) = _ints(segment_ids)
    flat, d = _rows(data, len(ids), "data")
    if out.shape != g.shape or out.shape[1:] != data.shape[1:] or np.shape(counts) != out.shape:
        raise ValueError("out, counts and g need the shape of segment_reduce's output")
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    gdata = np.empty(data.shape, dtype=data.dtype)
    _run(K._reduce.segment_extreme_vjp, flat, ids, out.reshape(-1), counts.reshape(-1),
         g.reshape(-1), gdata.reshape(-1), len(out), d)
    return gdata



def fingerprint(a):
    """A 64-bit fingerprint of a C-contiguous array's bytes (with its dtype and shape mixed in by
    the caller's key): equal content gives equal fingerprints, any change a different one but
    with chance 2**-64. One pass over the bytes."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    raw = a.reshape(-1).view(np.uint8)
    if raw.shape[0] % 4:
        raw = np.concatenate([raw, np.zeros(4 - raw.shape[0] % 4, np.uint8)])
    # one thread: a core reads at memory speed here (about 16 GB/s), and waking a second thread
    # costs more than the pass on a busy machine
    return K._reduce.fingerprint(raw.view(np.uint32), 1)


def running_sums(x, reverse=False):
    """np.cumsum(x, axis=-1) of a float32 or float64 array, with numpy's bits (reverse: summed from
    each row's end, np.flip(np.cumsum(np.flip(x, -1), -1), -1), the cotangent of a running sum).
    Rows in parallel. A 0-d x is taken as one value."""
    (x,) = _floats(x)
    x = x.reshape(1) if x.ndim == 0 else x
    out = np.empty_like(x)
    if x.size:
        _run(K._reduce.running_sums, x.reshape(-1), out.reshape(-1), x.shape[-1], bool(reverse), work=x.size)
    return out
