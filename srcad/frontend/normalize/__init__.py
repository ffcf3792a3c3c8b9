"""normalize: one operation per statement, sugar removed, jumps turned into flags.

After this pass a function body holds only:
  name = <op on atoms>          (BinOp, UnaryOp, Call, Attribute, Subscript, Tuple/List display,
                                 a copy, or an *inactive* expression kept whole: comparisons,
                                 boolean logic, calls with no derivative)
  name[index] = atom            (subscript write)
  xs.append(atom)               (list mutation)
  if name: ... else: ...
  for name in range(...): ...   (every loop iterates over a range)
  while name: ...
  if name: break                (only as the last statement of a loop body)
  return atom                   (only as the last statement of the function)
Atoms are names and constants. Every statement keeps the line number of the user line it
came from, so generated code can say where each block comes from.

The package, one part of the normal form each (the parts are mixins of `Normalizer`):
  driver.py       `Normalizer` (the state its parts share) and `normalize`, the entry point
  statements.py   statements: bindings, unpacking, augmented assignments, branches, guarded writes
  loops.py        for loops: every loop over a range (sequences, dicts, enumerate, zip, reversed)
  expressions.py  expressions: one operation on atoms, indices, branch and loop tests
  calls.py        calls: which callee a call names, its arguments as atoms
  spellings.py    calls written another way than the one srcad has a rule for, rewritten to it
  containers.py   comprehensions, dict displays and dict(...), d.get/.values()/.items(), map
  functions.py    nested defs lifted, items of function lists, factories, loops over functions
  names.py        what the code shows about a value's type (a dict, a list or tuple)
  nodes.py        syntax-tree helpers: atoms, the user line a new node keeps
"""
from .driver import Normalizer, normalize

__all__ = ["Normalizer", "normalize"]
