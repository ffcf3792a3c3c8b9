"""What the analyses know about NumPy, SciPy and Python operations besides their derivatives.

Facts only (`declare`, srcad/rules/registry.py): which results share memory with an argument and
which calls write in place (the alias analysis, frontend/aliases/), which calls have effects (the
cleanup pass), the kind of a call's result and which calls read only the items of their list
operands (the kinds pass). A fact declared for an operation without a derivative rule gives it
none: an active value through it is still a MissingRuleError. The derivative rules, and the other
spellings the normalizer rewrites, are in numpy_rules.py.
"""
import builtins

import numpy as np

from .fact_values import Alias, InPlace, ResultKind
from .registry import declare


# ---- memory: which results share memory with an argument, which calls write in place ------------
# (read by the alias analysis, frontend/aliases.py; a function or method not declared here makes
# a new value: an unknown method of a local value is a fresh object, an unknown attribute a view)
declare([np.reshape, np.ravel, np.transpose, np.squeeze, np.asarray, np.asanyarray,
         np.ascontiguousarray, np.asfortranarray, np.atleast_1d, np.atleast_2d, np.atleast_3d,
         np.expand_dims, np.swapaxes, np.moveaxis, np.rollaxis, np.broadcast_to,
         np.broadcast_arrays, np.diagonal, np.real, np.imag, np.flip, np.fliplr, np.flipud,
         np.rot90, np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit,
         np.lib.stride_tricks.as_strided, np.lib.stride_tricks.sliding_window_view,
         builtins.list, builtins.tuple, builtins.reversed, builtins.iter, builtins.next,
         builtins.zip, builtins.enumerate, builtins.sorted, builtins.max, builtins.min,
         builtins.dict], alias=Alias.VIEW)
declare([".reshape", ".ravel", ".view", ".transpose", ".swapaxes", ".squeeze", ".diagonal", ".conj"], alias=Alias.VIEW)
# methods whose result is an item of the receiver (a container), or a view of it (an array)
declare([".get", ".pop", ".popitem", ".setdefault", ".values", ".items", ".__getitem__"], alias=Alias.ITEM)
# attributes that share the receiver's memory, and those that share none
declare([".T", ".mT", ".real", ".imag", ".flat", ".data", ".indices", ".indptr", ".row", ".col", ".base"],
        alias=Alias.VIEW_ATTRIBUTE)
declare([".shape", ".ndim", ".size", ".dtype", ".nnz", ".itemsize", ".nbytes", ".format"], alias=Alias.PLAIN_ATTRIBUTE)
# methods that change their receiver (those that put their arguments into it: adds_items)
declare([".fill", ".put", ".resize", ".setfield", ".itemset", ".partition", ".byteswap", ".eliminate_zeros",
         ".sum_duplicates", ".sort_indices", ".setdiag", ".prune"], inplace=InPlace.FIRST)
# (those of lists, dicts and sets: CONTAINER; as values, `v = d.pop(k)`, they are not differentiated)
declare([".pop", ".remove", ".clear", ".reverse", ".popitem", ".sort"], inplace=InPlace.CONTAINER)
declare([".extend", ".insert", ".update", ".setdefault"], inplace=InPlace.CONTAINER, adds_items=True)
declare([".append", ".add"], inplace=InPlace.FIRST, adds_items=True)
declare([".keys", ".values", ".items"], kind=ResultKind.DICT_VIEW)     # a dict's keys, values, items
# numpy functions that write into their first argument
declare([np.put, np.place, np.putmask, np.fill_diagonal, np.copyto, np.put_along_axis], inplace=InPlace.FIRST)

# ---- effects: read by the cleanup pass (which drops or reuses only calls without effects) -----------
# NumPy and SciPy functions are pure except these (and a call given `out=`); a chain through one
# of them (np.random.normal, np.add.at) has effects too
declare([np.random, np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis, np.seterr,
         np.errstate, np.save, np.savez, np.savez_compressed, np.savetxt, np.load, np.loadtxt, np.fromfile,
         np.memmap, np.set_printoptions], pure=False)
declare([".at", ".tofile"], pure=False)
declare([len, range, reversed, float, int, abs, min, max, tuple, list, zip, enumerate, bool, isinstance, round,
         builtins.sum], pure=True)

# ---- the kind of a call's result: read by the kinds pass (transform/kinds.py) ----------------
# (x, axis, keepdims): a number or an array of one less dimension; a full sum's (mean's) adjoint
# is its cotangent spread (and divided by the count): REDUCTION_SUM, REDUCTION_MEAN
declare([np.max, np.amax, ".max", np.min, np.amin, ".min", np.prod, ".prod"], kind=ResultKind.REDUCTION)
declare([np.sum, ".sum"], kind=ResultKind.REDUCTION_SUM)
declare([np.mean, ".mean"], kind=ResultKind.REDUCTION_MEAN)
declare([np.copy, ".copy", np.zeros_like, np.ones_like, np.empty_like, np.full_like], kind=ResultKind.SAME)
declare([len, int], kind=ResultKind.INT)           # a Python int (with one argument)
declare([".size", ".ndim"], kind=ResultKind.INT)   # of an array: a Python int
declare(".shape", kind=ResultKind.SHAPE)           # of an array: a tuple of ints, one per axis
declare([np.stack, np.array, np.asarray], kind=ResultKind.STACKED)      # of a list of arrays: one more dimension
declare(np.concatenate, kind=ResultKind.JOINED)       # of a list of arrays: along an axis
declare([np.matmul, np.dot, ".dot"], kind=ResultKind.MATMUL)
declare([".T", ".mT"], kind=ResultKind.TRANSPOSE)      # attributes that are certainly an array's view (not a number's)
# calls that read only the items of their list operands (the kinds of those items stay known)
declare([np.stack, np.concatenate, np.array, np.asarray, np.vstack, np.hstack, len, builtins.sum], reads_items=True)
