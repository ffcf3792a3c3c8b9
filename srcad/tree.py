"""Pytrees: nested lists, tuples, namedtuples and dicts whose leaves are arrays, numbers and
sparse matrices (how parameters are usually held: `params = {"W": W, "b": b}`).

srcad's operators take and return pytrees: the gradient with respect to a pytree argument is a
pytree of the same structure. These functions let user code work with them the same way:

    leaves, treedef = srcad.tree_flatten(params)
    params = srcad.tree_unflatten(treedef, [w - 0.1 * g for w, g in zip(leaves, grads)])
    params = srcad.tree_map(lambda w, g: w - 0.1 * g, params, grads)

Leaves are listed depth first, a dict's in its key order (insertion order, not sorted). `None`
is an empty subtree (it has no leaves). Every other object is a leaf.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "TreeDef"]


class TreeDef:
    """The structure of a pytree without its leaves: what tree_unflatten needs to rebuild it."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta=None, children=()):
        self.kind = kind            # "leaf", "none", or the container type
        self.meta = meta            # a dict's keys
        self.children = tuple(children)

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, TreeDef) and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, self.meta, self.children))

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        if self.meta is not None:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children))
            return f"{self.kind.__name__}({{{inner}}})"
        return f"{self.kind.__name__}({', '.join(map(repr, self.children))})"


def is_node(x):
    """Is x a pytree node (a list, tuple, namedtuple or dict) rather than a leaf?"""
    return isinstance(x, (list, tuple, dict))


def tree_flatten(tree):
    """The leaves of a pytree, depth first, and its structure.

    Nodes are dicts (in insertion order), lists, tuples and namedtuples; ``None`` is an empty node;
    everything else (arrays, numbers, sparse matrices) is a leaf. Gradients with respect to a pytree
    argument have its structure.

    Parameters
    ----------
    tree : object
        A pytree.

    Returns
    -------
    leaves : list
        The leaves, depth first.
    treedef : TreeDef
        The structure, for `srcad.tree_unflatten`; treedefs compare equal when the structures are.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> leaves, treedef = srcad.tree_flatten({"W": np.eye(2), "b": (0.5, [1.0])})
    >>> len(leaves), leaves[1:]
    (3, [0.5, 1.0])
    >>> treedef
    dict({'W': *, 'b': tuple(*, list(*))})
    """
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    if x is None:
        return TreeDef("none")
    if isinstance(x, dict):
        keys = tuple(x)
        return TreeDef(type(x), keys, [_flatten(x[k], leaves) for k in keys])
    if isinstance(x, (list, tuple)):
        return TreeDef(type(x), None, [_flatten(v, leaves) for v in x])
    leaves.append(x)
    return TreeDef("leaf")


def tree_unflatten(treedef, leaves):
    """The pytree of structure treedef holding leaves (in `srcad.tree_flatten`'s order).

    Parameters
    ----------
    treedef : TreeDef
        A structure from `srcad.tree_flatten`.
    leaves : iterable
        As many leaves as the structure holds.

    Returns
    -------
    object
        The pytree (dicts, lists, tuples and namedtuples of the same types as the original).

    Raises
    ------
    ValueError
        When the number of leaves differs from the structure's.

    Examples
    --------
    >>> import srcad
    >>> leaves, treedef = srcad.tree_flatten({"a": 1.0, "b": [2.0, 3.0]})
    >>> srcad.tree_unflatten(treedef, [x * 10 for x in leaves])
    {'a': 10.0, 'b': [20.0, 30.0]}
    """
    it = iter(leaves)
    out = _unflatten(treedef, it)
    if next(it, _END) is not _END:
        raise ValueError(f"tree_unflatten: more leaves than the structure {treedef!r} holds "
                         f"({treedef.num_leaves})")
    return out


_END = object()


def _unflatten(d, it):
    if d.kind == "leaf":
        v = next(it, _END)
        if v is _END:
            raise ValueError("tree_unflatten: fewer leaves than the structure holds")
        return v
    if d.kind == "none":
        return None
    kids = [_unflatten(c, it) for c in d.children]
    if d.meta is not None:
        return d.kind(zip(d.meta, kids))
    if hasattr(d.kind, "_fields"):          # a namedtuple
        return d.kind(*kids)
    return d.kind(kids)


def tree_leaves(tree):
    """The leaves of tree, depth first (the first item of `srcad.tree_flatten`).

    Parameters
    ----------
    tree : object
        A pytree.

    Returns
    -------
    list

    Examples
    --------
    >>> import srcad
    >>> srcad.tree_leaves([1.0, {"x": 2.0, "y": (3.0,)}, None])
    [1.0, 2.0, 3.0]
    """
    return tree_flatten(tree)[0]


def tree_map(f, tree, *rest):
    """The pytree of tree's structure whose leaves are ``f(leaf, *the matching leaves of rest)``.

    Parameters
    ----------
    f : callable
        Called once per leaf.
    tree : object
        A pytree.
    *rest
        Pytrees of tree's structure.

    Returns
    -------
    object
        A pytree of tree's structure.

    Raises
    ------
    ValueError
        When a tree in rest has another structure.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> params = {"W": np.ones(2), "b": 1.0}
    >>> grads = {"W": np.array([0.5, -0.5]), "b": 2.0}
    >>> srcad.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    {'W': array([0.95, 1.05]), 'b': 0.8}
    """
    leaves, treedef = tree_flatten(tree)
    others = []
    for r in rest:
        lv, d = tree_flatten(r)
        if d != treedef:
            raise ValueError(f"tree_map: the trees have different structures: {treedef!r} and {d!r}")
        others.append(lv)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


# ---- flat vectors of a pytree's entries (what jacobian, hessian and check_grad work on) ------
def _numeric(x):
    return (sp.issparse(x) or isinstance(x, (np.ndarray, np.generic, int, float))) and not isinstance(x, bool)


def leaf_shape(x):
    """The shape of a leaf's entries: a sparse matrix's entries are its stored values; a leaf that
    is not a number (a string, a bool, an object) has none."""
    if not _numeric(x):
        return (0,)
    return np.shape(x.data) if sp.issparse(x) else np.shape(x)


def ravel(tree, like=None):
    """The entries of tree's leaves as one float64 vector, leaf after leaf. With `like`, tree is a
    derivative of `like` in which a zero (0.0 or None) may stand for a whole subtree."""
    like = tree if like is None else like
    parts = []
    _ravel(tree, like, parts)
    return np.concatenate(parts) if parts else np.zeros(0)


def _ravel(v, like, parts):
    zero = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0 and is_node(like))
    if isinstance(like, dict):
        for k, c in like.items():
            _ravel(None if zero else v.get(k), c, parts)
    elif isinstance(like, (list, tuple)):
        for k, c in enumerate(like):
            _ravel(None if zero else v[k], c, parts)
    elif like is None:
        return
    elif not _numeric(like):
        return
    else:
        shape = leaf_shape(like)
        if v is None:
            parts.append(np.zeros(int(np.prod(shape, dtype=int))))
        else:
            data = v.data if sp.issparse(v) else (v.todense() if hasattr(v, "todense") else v)
            parts.append(np.ravel(np.broadcast_to(np.asarray(data, dtype=float), shape)))


def unravel(vec, like):
    """The pytree of like's structure (leaf types, shapes, sparse patterns) holding vec's entries."""
    leaves, treedef = tree_flatten(like)
    out, at = [], 0
    for x in leaves:
        n = int(np.prod(leaf_shape(x), dtype=int))
        part = vec[at:at + n]
        at += n
        if not _numeric(x):
            out.append(None)
        elif sp.issparse(x):
            y = x.copy()
            y.data = part.reshape(x.data.shape).astype(x.dtype)
            out.append(y)
        elif isinstance(x, (int, float)) and not isinstance(x, (bool, np.generic)):
            out.append(float(part[0]))
        elif isinstance(x, np.generic):
            out.append(np.result_type(x, np.float32).type(part[0]))
        else:
            out.append(part.reshape(np.shape(x)).astype(np.result_type(x, np.float32)))
    return tree_unflatten(treedef, out)


def blocks(M, rows_like, cols_like):
    """Split a matrix (entries of rows_like x entries of cols_like) into a nested pytree: rows'
    structure outside, columns' inside, each block of shape row_leaf.shape + col_leaf.shape."""
    rl, rd = tree_flatten(rows_like)
    cl, cd = tree_flatten(cols_like)
    rs = [leaf_shape(x) for x in rl]
    cs = [leaf_shape(x) for x in cl]
    r_off = np.cumsum([0] + [int(np.prod(s, dtype=int)) for s in rs])
    c_off = np.cumsum([0] + [int(np.prod(s, dtype=int)) for s in cs])
    out = []
    for i, si in enumerate(rs):
        row = [M[r_off[i]:r_off[i + 1], c_off[j]:c_off[j + 1]].reshape(si + sj) for j, sj in enumerate(cs)]
        out.append(row[0] if cd.kind == "leaf" else tree_unflatten(cd, row))
    return out[0] if rd.kind == "leaf" else tree_unflatten(rd, out)
