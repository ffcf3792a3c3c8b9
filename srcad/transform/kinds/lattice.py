"""The kinds' lattice: what is sure about one value (`Kind`, its category `Cat`), the join of two
kinds where paths meet, and of two environments (name -> Kind). A field that is None is not
sure; a join only ever weakens (see the package docstring)."""
from dataclasses import dataclass
from enum import StrEnum
from typing import Optional


class Cat(StrEnum):
    """A value's category (compared by member: `k.cat is Cat.ARRAY`)."""
    PY = "py"               # a Python number
    NP = "np"               # a NumPy scalar (or a 0-d array)
    ARRAY = "array"
    SPARSE = "sparse"
    LIST = "list"
    TUPLE = "tuple"
    DICT = "dict"
    NOTHING = "nothing"     # the items of an empty list


@dataclass(frozen=True)
class Kind:
    """What is sure about one value; a field that is None is not sure (see the module docstring)."""
    cat: Optional[Cat] = None
    dtype: Optional[str] = None     # NumPy dtype character ('d' float64, 'f' float32, 'l' int, '?' bool)
    ndim: Optional[int] = None
    shape: object = None            # shape token: equal tokens, equal shapes; () for rank 0
    item: object = None             # a list's items: the join of their kinds (None: not known)
    elts: object = None             # a tuple's elements' kinds, in order (None: not known)
    dims: object = None             # some of an array's dimension classes, where not all are sure
    #                                 (a tuple with one class or None per axis; see dims_token)

    @property
    def dimensions(self):
        """The class of each axis (None where not sure), or None when none is known."""
        s = self.shape
        if type(s) is tuple and s and s[0] == "dims":
            return s[1:]
        return self.dims

    def __post_init__(self):
        if self.cat is not None and type(self.cat) is not Cat:
            object.__setattr__(self, "cat", Cat(self.cat))     # a category that is none of Cat's: an error here

    @property
    def dense(self):
        return self.cat in (Cat.PY, Cat.NP, Cat.ARRAY)

    @property
    def rank0(self):
        return self.dense and self.ndim == 0


def dims_token(dims):
    """The shape token of an array whose every axis has a known dimension class (the classes of
    the call's signature, inputs.dim_classes: 1 is a dimension of size one, equal numbers equal
    sizes): two arrays with equal classes on every axis have the same shape. None when an axis'
    class is not sure."""
    if dims is None or any(d is None for d in dims):
        return None
    return ("dims",) + tuple(dims)


def is_dims(token):
    return type(token) is tuple and len(token) > 0 and token[0] == "dims"


def array_kind(cat, dtype, dims, shape=None):
    """An array's kind from what is sure of its axes' classes (dims: one class or None per axis);
    `shape`: a token to keep where not every class is sure."""
    full = dims_token(dims)
    if full is not None:
        return Kind(cat, dtype, len(dims), full)
    return Kind(cat, dtype, len(dims), shape, dims=tuple(dims) if any(d is not None for d in dims) else None)


def _join_dims(a, b):
    da, db = a.dimensions, b.dimensions
    if da is None or db is None or len(da) != len(db):
        return None
    out = tuple(x if x == y else None for x, y in zip(da, db))
    return out if any(d is not None for d in out) else None


UNKNOWN = Kind()
NOTHING = Kind(Cat.NOTHING)       # the items of an empty list
_UNDEF = object()        # not bound yet on this path
_PY = {"float": Kind(Cat.PY, "d", 0, ()), "int": Kind(Cat.PY, "l", 0, ()), "bool": Kind(Cat.PY, "?", 0, ())}


def _scalar(cat, dtype):
    return Kind(cat, dtype, 0, ())


def join(a, b):
    """The least kind that both a and b are (an over-approximation)."""
    if a == b:
        return a
    if a is _UNDEF or b is _UNDEF:      # bound on one path only: nothing is sure
        return UNKNOWN
    if a is NOTHING or b is NOTHING:
        return b if a is NOTHING else a
    if a.cat == b.cat and a.cat in (Cat.LIST, Cat.TUPLE, Cat.DICT):
        item = join(a.item, b.item) if a.item is not None and b.item is not None else None
        elts = tuple(join(x, y) for x, y in zip(a.elts, b.elts)) \
            if a.elts is not None and b.elts is not None and len(a.elts) == len(b.elts) else None
        return Kind(a.cat, item=item if item != UNKNOWN else None, elts=elts)
    if not (a.dense and b.dense) or a.ndim is None or a.ndim != b.ndim:
        return UNKNOWN
    cat = a.cat if a.cat == b.cat else (Cat.NP if a.ndim == 0 else None)
    if cat is None:
        return UNKNOWN
    if a.shape == b.shape and a.shape is not None:
        return Kind(cat, a.dtype if a.dtype == b.dtype else None, a.ndim, a.shape,
                    dims=None if is_dims(a.shape) else _join_dims(a, b))
    dims = _join_dims(a, b)
    return Kind(cat, a.dtype if a.dtype == b.dtype else None, a.ndim, None, dims=dims)


def real(k):
    """Is every value of kind k a float64 number or array (or a list or tuple of such)?"""
    if k.cat is Cat.LIST:
        return k.item is NOTHING or k.item is not None and real(k.item)
    if k.cat is Cat.TUPLE:
        return k.elts is not None and all(real(e) for e in k.elts)
    return k.dense and k.dtype == "d"


def _join_env(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = join(out.get(k, _UNDEF), v)
    for k in a:
        if k not in b:
            out[k] = join(a[k], _UNDEF)
    return out

