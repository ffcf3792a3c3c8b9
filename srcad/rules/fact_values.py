"""The values of the registry's operation facts that are one of a few choices (`declare` in
registry.py accepts only these): how a result shares memory (`Alias`), what a call writes into
(`InPlace`) and the kind of its result (`ResultKind`). They are StrEnums, so a fact prints as the
word it stands for; the passes compare with the members."""
from enum import StrEnum


class Alias(StrEnum):
    """How the result of a call or attribute shares memory with its first argument (receiver)
    (the alias analysis, frontend/aliases/); an operation without this fact makes a new value."""
    VIEW = "view"                           # the result may share memory with it
    ITEM = "item"                           # an item of the receiver (a container), or a view of it
    VIEW_ATTRIBUTE = "view-attribute"       # an attribute that shares the receiver's memory (`.T`)
    PLAIN_ATTRIBUTE = "plain-attribute"     # an attribute that shares none (`.shape`)


class InPlace(StrEnum):
    """What a call writes into (frontend/callees.py, the normalizer, checkpointing)."""
    FIRST = "first"             # its first argument (a method: its receiver)
    CONTAINER = "container"     # a list/dict/set method that changes its receiver


class ResultKind(StrEnum):
    """The kind of a call's result, for the kinds pass (transform/kinds/) and reverse mode's
    specialisation (transform/reverse/plain.py)."""
    REDUCTION = "reduction"             # (x, axis, keepdims): a number or an array of one less dimension
    REDUCTION_SUM = "reduction:sum"     # ... whose full reduction's adjoint is its cotangent spread
    REDUCTION_MEAN = "reduction:mean"   # ... spread and divided by the count
    SAME = "same"                       # the first operand's kind
    INT = "int"                         # a Python int (with one argument; an attribute: always)
    SHAPE = "shape"                     # an attribute: a tuple of Python ints, one per axis (`.shape`)
    STACKED = "stacked"                 # of a list of arrays: one more dimension
    JOINED = "joined"                   # of a list of arrays: joined along an axis
    MATMUL = "matmul"                   # a matrix product
    TRANSPOSE = "transpose"             # an attribute that is certainly an array's view (`.T`)
    DICT_VIEW = "dict-view"             # a dict's keys, values or items

    @property
    def reduces(self):
        return self in (ResultKind.REDUCTION, ResultKind.REDUCTION_SUM, ResultKind.REDUCTION_MEAN)


# the facts `declare` accepts only as one of these types
TYPED = {"alias": Alias, "inplace": InPlace, "kind": ResultKind}
