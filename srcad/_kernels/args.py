"""The kernels' arguments: arrays made C-contiguous in one float dtype (float32 or float64) and one
index dtype (int32 or int64), their shapes checked, and an index out of range named as an error in
the caller's input."""
import numpy as np

from ..errors import InputError


class IndexInputError(InputError, IndexError):
    """An index out of range in an argument: a srcad.InputError naming it, and an IndexError (what
    the kernels raised before it was named)."""


def index_error(idx, n, what, unit="rows"):
    """srcad.InputError: `what` (e.g. "srcad.sparse.segment_sum: segment_ids") holds an index
    outside -n..n-1 (a negative one counts from the end, as in numpy). The error carries
    `srcad_index` = (first bad index, n) for a caller that names the argument better."""
    idx = np.asarray(idx).reshape(-1)
    bad = idx[(idx < -n) | (idx >= n)]
    shown = int(bad[0]) if len(bad) else "an index"
    err = IndexInputError(f"{what} holds {shown}, outside -{n}..{n - 1} for {n} {unit} (a negative index counts "
                          f"from the end, as in numpy); {len(bad)} of its {len(idx)} entries are out of range")
    err.srcad_index = (shown, n, len(bad), len(idx))
    return err


def _floats(*arrays):
    """The arrays, C-contiguous, in their common float dtype (float32 or float64)."""
    arrays = [np.asarray(a) for a in arrays]
    dtype = np.result_type(*arrays, np.float32)
    if dtype not in (np.float32, np.float64):
        if dtype.kind != "f":
            raise InputError(f"srcad's compiled kernels take arrays of real numbers, not {dtype}; "
                             f"convert the operand with np.asarray(x, dtype=float) (a complex "
                             f"value: pass its real and imaginary parts separately)")
        dtype = np.dtype(np.float64)
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def _ints(*arrays):
    """The arrays, C-contiguous, in one index dtype: int32 if every one fits it, else int64."""
    arrays = [np.asarray(a) for a in arrays]
    for a in arrays:
        if a.dtype.kind not in "iu":
            raise InputError(f"srcad's compiled kernels take integer indices, not {a.dtype}; "
                             f"convert them with np.asarray(idx, dtype=np.int64)")
    dtype = np.int32 if np.result_type(*arrays, np.int32) == np.int32 else np.int64
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def _rows(a, n, what):
    """a as a flat buffer of n rows of equal width, and that width (1 for a vector)."""
    if a.ndim not in (1, 2) or a.shape[0] != n:
        raise ValueError(f"{what} must have shape ({n},) or ({n}, k), got {a.shape}")
    return a.reshape(-1), (a.shape[1] if a.ndim == 2 else 1)


def _op_is_max(op, allowed=("max", "min")):
    if op not in allowed:
        raise ValueError(f"op must be one of {allowed}, got {op!r}")
    return op == "max"


def _pattern(indptr, indices, n_rows=None):
    """indptr and indices in one index dtype, checked for shape."""
    indptr, indices = _ints(indptr, indices)
    if indptr.ndim != 1 or indices.ndim != 1 or len(indptr) < 1:
        raise ValueError("indptr and indices must be 1-D, indptr non-empty")
    if n_rows is not None and len(indptr) != n_rows + 1:
        raise ValueError(f"indptr must have n_rows + 1 = {n_rows + 1} entries, has {len(indptr)}")
    return indptr, indices

