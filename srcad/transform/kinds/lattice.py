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

    def __post_init__(self):
        if self.cat is not None and type(self.cat) is not Cat:
            object.__setattr__(self, "cat", Cat(self.cat))     # a category that is none of Cat's: an error here

    @property
    def dense(self):
        return self.cat in (Cat.PY, Cat.NP, Cat.ARRAY)

    @property
    def rank0(self):
        return self.dense and self.ndim == 0


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
    return Kind(cat, a.dtype if a.dtype == b.dtype else None, a.ndim, a.shape if a.shape == b.shape else None)


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

