"""Checks of the arguments handed to srcad's operators, before any generated code runs.

srcad differentiates real numbers only: a complex argument (dense, sparse or a Python complex)
is rejected, since the derivative of a complex function needs a conjugation convention that the
derivative rules do not implement. Sparse arguments must be CSR, CSC or COO (the `_array` or
`_matrix` classes); the other scipy formats are rejected with the conversion to use. The checks
look at dtypes and formats only (O(1) per argument); containers (lists, tuples, dicts) are
looked into.
"""
import numbers

import numpy as np
import scipy.sparse as sp

from . import tree as _tree
from .errors import InputError, SrcadError

SPARSE_FORMATS = ("csr", "csc", "coo")


def sparse_format_error(A, where):
    """The InputError for a sparse matrix of a format srcad does not differentiate."""
    fmt = str(getattr(A, "format", "?"))
    if getattr(A, "ndim", 2) == 1:      # a row A[i] or A.max(axis=0) of a sparse *array* is a 1-D COO
        return InputError(
            f"{where} is a 1-D scipy sparse array ({type(A).__name__} of shape {A.shape}: a row A[i] or a "
            f"reduction A.max(axis=0) of a sparse array is one); srcad differentiates this operation on 2-D "
            f"sparse matrices. Keep the row 2-D with A[[i]] or A[i:i + 1], or make the 1-D value dense "
            f"with .toarray() first.")
    return InputError(
        f"{where} is a scipy sparse {fmt.upper()} matrix ({type(A).__name__}); srcad differentiates "
        f"the CSR, CSC and COO formats. Convert it before the call with A.tocsr() (or A.tocsc(), "
        f"A.tocoo()); the gradient then has that format.")


def complex_error(x, where):
    """The InputError for a complex argument."""
    dtype = getattr(x, "dtype", "complex")
    return InputError(
        f"{where} is complex ({dtype}); srcad differentiates real inputs only (a complex "
        f"derivative needs a conjugation convention srcad does not implement). Pass the real and "
        f"imaginary parts as two real arguments (x.real, x.imag) and build the complex value "
        f"inside the function if you need it, or pass np.real(x) if x is real.")


def integer_error(x, where):
    """The InputError for a differentiated argument of integer or bool dtype."""
    dtype = getattr(x, "dtype", type(x).__name__)
    return InputError(
        f"{where} is differentiated but has the {'bool' if str(dtype) == 'bool' else 'integer'} dtype "
        f"{dtype}; srcad differentiates float arguments only (as JAX and PyTorch do: an integer has no "
        f"derivative, and its arithmetic rounds). Pass x.astype(float) (or float(x) for a number), or leave "
        f"the argument out of wrt if it is an index or a count (in jvp: pass None as its tangent).")


def array_subclass_error(x, where):
    """The InputError for an np.matrix or masked array: their operators differ from ndarray's."""
    kind = "an np.matrix" if isinstance(x, np.matrix) else "a masked array (np.ma.MaskedArray)"
    why = ("`*` is a matrix product and every result stays 2-D" if isinstance(x, np.matrix) else
           "masked entries are skipped by its operations but not by the derivative rules")
    fix = ("np.asarray(x)" if isinstance(x, np.matrix) else
           "x.filled(0.0) (or np.ma.getdata(x)) and apply the mask inside the function with np.where")
    return InputError(
        f"{where} is {kind} ({type(x).__name__}); srcad differentiates plain NumPy arrays ({why}). "
        f"Pass {fix} instead.")


def foreign_array_error(x, where):
    """The InputError for an array of another library (a torch tensor, a cupy array, ...)."""
    return InputError(
        f"{where} is a {type(x).__module__}.{type(x).__name__}, not a NumPy array; srcad differentiates "
        f"NumPy arrays, SciPy sparse matrices, Python numbers and containers of those. Pass "
        f"np.asarray(x) (for a torch tensor: x.detach().numpy()) instead.")


def _foreign(x):
    """An array-like of another library: it converts to NumPy (`__array__`) but is not one."""
    return (hasattr(type(x), "__array__") or hasattr(x, "__array_interface__")) and not isinstance(
        x, (np.ndarray, np.generic, list, tuple, dict, str, bytes)) and not sp.issparse(x)


def _find(x, wrt, path="", depth=0, ints=False):
    """(the offending value, its path inside x, its error maker), or None. Formats are checked
    only in a differentiated argument (`wrt`): a constant operator may be any scipy format.
    `ints`: the argument is named as differentiated, so an integer or bool dtype is refused, at
    the top or as a leaf of a container (a Python int leaf too: it would be differentiated as a
    float, which an integer is not; a count or a flag goes in an argument not differentiated)."""
    if sp.issparse(x):
        if wrt and (x.format not in SPARSE_FORMATS or x.ndim != 2):
            return x, path, sparse_format_error
        if ints and x.dtype.kind in "biu":
            return x, path, integer_error
        return (x, path, complex_error) if x.dtype.kind == "c" else None
    if isinstance(x, (np.matrix, np.ma.MaskedArray)):
        return x, path, array_subclass_error
    if isinstance(x, (np.ndarray, np.generic)):
        if ints and x.dtype.kind in "biu":
            return x, path, integer_error
        return (x, path, complex_error) if x.dtype.kind == "c" else None
    if isinstance(x, complex):
        return x, path, complex_error
    if ints and isinstance(x, int):      # a Python int or bool, the argument or one of its leaves
        return x, path, integer_error
    if wrt and _foreign(x):
        return x, path, foreign_array_error
    if isinstance(x, (list, tuple)) and depth < 8:
        items = enumerate(x)
    elif isinstance(x, dict) and depth < 8:
        items = x.items()
    else:
        return None
    for k, v in items:
        hit = _find(v, wrt, f"{path}[{k!r}]", depth + 1, ints)
        if hit is not None:
            return hit
    return None


# the types of plain arguments: nothing in them to refuse, to look into, or to watch
# (integers are not among them: one given as a differentiated argument is refused by check_args)
_PLAIN_SCALARS = frozenset({float, type(None), str, np.float64, np.float32, np.float16})


def plain(args, kwargs=None):
    """Whether every argument is a real NumPy array or a real number (or None, a string): no
    sparse matrix, container or complex value. Then check_args has nothing to refuse and
    unsorted_coo nothing to record, and operators skip both (one type test per argument)."""
    for a in args:
        t = type(a)
        if t is np.ndarray:
            if a.dtype.kind != "f":     # complex; integer or bool (refused if differentiated)
                return False
        elif t not in _PLAIN_SCALARS:
            return False
    if kwargs:
        return plain(kwargs.values())
    return True


_PLAIN_NP_SCALARS = frozenset({np.float64, np.float32, np.float16})


def dim_classes(values):
    """The dimensions of the arrays among a call's values, as classes of equal sizes: per value, a
    tuple with one class per axis (None for a value that is not an array of at least one axis).
    Class 1 is a dimension of size one; every other size gets its own number, the first seen 2,
    the next 3, and so on. Part of the abstract signature (transform/kinds/signature.py): the
    derivative is written for one such pattern, so the dimensions it proves equal are equal in
    every call that runs it. None when no value is an array of at least one axis."""
    sizes: dict = {}
    out = []
    seen = False
    for a in values:
        if type(a) is np.ndarray and a.ndim:
            out.append(tuple([1 if n == 1 else sizes.setdefault(n, len(sizes) + 2) for n in a.shape]))
            seen = True
        else:
            out.append(None)
    return tuple(out) if seen else None


def plain_signature(args):
    """transform/kinds.py's signature(args) of a call without keywords whose arguments are all
    plain (`plain` above), else None: both worked out in one pass (the keys written as
    kinds.signature writes them; tests/test_call_fastpaths.py compares the two)."""
    keys = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            if a.dtype.kind != "f":
                return None
            keys.append((a.dtype.char, a.ndim))
        elif t is float:
            keys.append("float")
        elif t in _PLAIN_NP_SCALARS:
            keys.append(("scalar", a.dtype.char))
        elif t is str or a is None:
            keys.append("other")
        else:
            return None
    dims = dim_classes(args)
    return (tuple(keys), ()) if dims is None else (tuple(keys), (), dims)


def _names(f):
    try:
        import inspect
        return list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return []


def _wrt_set(wrt, n, names):
    if wrt is None:
        return None
    out = set()
    for w in wrt if isinstance(wrt, (tuple, list)) else (wrt,):
        if isinstance(w, str):
            w = names().index(w) if w in names() else -1
        if isinstance(w, int) and n:
            out.add(w % n)
    return out


def _all_integer(a, depth=0):
    """An integer or bool, an array of them, or a container (tuple, list, dict) holding only those."""
    if isinstance(a, (bool, int, np.bool_, np.integer)) or isinstance(a, np.ndarray) and a.dtype.kind in "biu":
        return True
    if sp.issparse(a):      # (a DOK matrix is a dict)
        return False
    if isinstance(a, (list, tuple, dict)) and a and depth < 8:
        return all(_all_integer(v, depth + 1) for v in (a.values() if isinstance(a, dict) else a))
    return False


def _all_zero(t, depth=0):
    if isinstance(t, (list, tuple, dict)) and depth < 8:
        return all(_all_zero(v, depth + 1) for v in (t.values() if isinstance(t, dict) else t))
    return t is None or not np.any(np.asarray(t, dtype=object) != 0)


def differentiable_arg(a):
    """Does argument a carry a derivative: a float, a floating (or complex, refused later by
    check_args) array or sparse matrix, or a pytree with such a leaf; not an int, bool or index array."""
    t = type(a)
    if t is float:
        return True
    if t is np.ndarray and a.dtype.kind in "fc":
        return True
    if sp.issparse(a):      # (before pytrees: a DOK matrix is a dict)
        return np.issubdtype(a.dtype, np.floating)
    if _tree.is_node(a):
        return any(differentiable_arg(v) for v in _tree.tree_leaves(a))
    if isinstance(a, bool):
        return False
    if isinstance(a, numbers.Real) and not isinstance(a, numbers.Integral):
        return True
    if isinstance(a, (np.ndarray, np.generic)):
        return np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating)
    return False


def cache_variant(base, checkpoint):
    """The cache variant: checkpoint=k (binomial checkpointing of range loops) makes its own code."""
    if checkpoint is None:
        return base
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, numbers.Integral) or checkpoint < 1:
        raise SrcadError(f"checkpoint must be None or the number of snapshots to keep (an int >= 1), "
                         f"not {checkpoint!r}")
    return f"{base}+ckpt{int(checkpoint)}"


def differentiated_tangents(primals, tangents):
    """The positions jvp differentiates: those given a tangent, less an integer or bool argument
    whose tangent is zero (it carries nothing; a nonzero one is refused by check_args)."""
    out = []
    for k, (a, t) in enumerate(zip(primals, tangents)):
        if t is None:
            continue
        if _all_integer(a) and not sp.issparse(t) and _all_zero(t):
            continue
        out.append(k)
    return tuple(out)


def check_args(f, args, kwargs=None, wrt=None):
    """Raise srcad.InputError for an argument of f srcad cannot differentiate (see the module
    docstring): complex anywhere, a sparse format other than CSR/CSC/COO in a differentiated
    argument (`wrt`: the positions or names differentiated; None: every argument), `*` of a
    scipy `_matrix` argument (check_matrix_products). Costs one type/dtype test per argument."""
    if plain(args, kwargs):
        return
    fname = getattr(f, "__name__", "the function")
    diff = _wrt_set(wrt, len(args), lambda: _names(f))
    for k, a in enumerate(args):
        hit = _find(a, diff is None or k in diff, ints=diff is not None and k in diff)
        if hit is not None:
            names = _names(f)
            name = f" (`{names[k]}`)" if k < len(names) else ""
            bad, path, error = hit
            raise error(bad, f"srcad: argument {k}{name}{' item ' + path if path else ''} of {fname}")
    for key, a in (kwargs or {}).items():
        hit = _find(a, diff is None)
        if hit is not None:
            bad, path, error = hit
            raise error(bad, f"srcad: argument `{key}`{' item ' + path if path else ''} of {fname}")
    check_matrix_products(f, args)


# ---- `*` and `**` of scipy's _matrix classes: matrix products, not NumPy's entrywise ones ------------------
_SITES = {}


def _product_sites(f):
    """(lineno, col, left name, right name, op) of each `a * b`, `a ** b`, `a *= b` in f whose
    operands are plain names (cached per code object); [] when the source cannot be read."""
    code = getattr(f, "__code__", None)
    if code in _SITES:
        return _SITES[code]
    import ast
    import inspect
    import textwrap
    sites = []
    try:
        lines, start = inspect.getsourcelines(f)
        filename = inspect.getsourcefile(f) or code.co_filename
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        tree, filename, start = None, None, 1
    name = lambda n: n.id if isinstance(n, ast.Name) else None   # noqa: E731
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow)):
            left, right = node.left, node.right
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Mult, ast.Pow)):
            left, right = node.target, node.value
        else:
            continue
        op = "*" if isinstance(node.op, ast.Mult) else "**"
        sites.append((filename, node.lineno + start - 1, node.col_offset, name(left), name(right), op,
                      ast.unparse(left), ast.unparse(right)))
    if code is not None:
        _SITES[code] = sites
    return sites


def check_matrix_products(f, args):
    """Raise UnsupportedSyntaxError where f multiplies a scipy `_matrix` argument by another
    matrix or vector argument with `*` (a matrix product for those classes) or raises it to a
    power with `**` (a matrix power): srcad differentiates `*` and `**` as NumPy's entrywise
    operations. Only arguments used directly by name are seen; costs nothing without a _matrix
    argument."""
    if not any(isinstance(a, sp.spmatrix) for a in args):
        return
    names = _names(f)
    values = dict(zip(names, args))
    from .errors import UnsupportedSyntaxError

    def nonscalar(v):
        return sp.issparse(v) or (isinstance(v, np.ndarray) and v.ndim >= 1 and v.size > 1)
    for filename, line, col, left, right, op, ltext, rtext in _product_sites(f):
        lv, rv = values.get(left), values.get(right)
        if op == "**" and isinstance(lv, sp.spmatrix) or op == "*" and (
                isinstance(lv, sp.spmatrix) and nonscalar(rv) or isinstance(rv, sp.spmatrix) and nonscalar(lv)):
            what = "a matrix power" if op == "**" else "a matrix product"
            fix = (f"write {ltext}.power({rtext}) for the entrywise power, or {ltext} @ {ltext} for the "
                   f"matrix one" if op == "**" else
                   f"write {ltext} @ {rtext} for the matrix product, or {ltext}.multiply({rtext}) for the "
                   f"entrywise one")
            raise UnsupportedSyntaxError(
                f"`{ltext} {op} {rtext}` with a scipy `_matrix` operand ({what} for those classes, "
                f"while srcad differentiates `{op}` entrywise)", filename, line, col, fix)


def unsorted_coo(args, kwargs=None):
    """[(A, its coordinate arrays)] for every COO matrix among the arguments that is not in
    canonical format. scipy sorts such a matrix in place in some of its methods (A.sum(),
    A.max(), A.power(p) call sum_duplicates), so its stored order can change while the function
    runs; `check_coo_kept` then refuses the result instead of pairing derivatives with the
    wrong entries."""
    if plain(args, kwargs):
        return []
    found = []

    def visit(x):
        if sp.issparse(x):          # before the containers: a DOK matrix is a dict
            if x.format == "coo" and not x.has_canonical_format:
                found.append((x, (x.row.copy(), x.col.copy())))
        elif isinstance(x, dict):
            for v in x.values():
                visit(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                visit(v)
    visit(list(args) + list((kwargs or {}).values()))
    return found


def check_coo_kept(snapshot):
    for A, (row, col) in snapshot:
        now = (A.row, A.col) if A.format == "coo" else (A.indptr, A.indices)
        if not (np.array_equal(now[0], row) and np.array_equal(now[1], col)):
            raise InputError(
                f"a {A.format.upper()} argument was not in canonical format (unsorted or with duplicate entries), "
                "and scipy sorted it in place while the function ran (A.sum(), A.argmax(), A.count_nonzero() "
                "and A.floor() do this), so its "
                "entries changed order mid-computation and srcad cannot pair each derivative with its entry. "
                "Canonicalise it before the call (A.sum_duplicates())" + (", or pass A.tocsr()." if A.format == "coo" else "."))
