"""The modes: a normalized, analysed function -> the text and module of its derivative.

The passes, in pipeline order (input -> output); unit.py's `Unit` drives them for a function
and every user function it calls, and emit.py's `build` is the entry point:

  unit.py        user function, mode, wrt -> generated FunctionDefs of the whole call tree
                 (runs the frontend's passes, then one mode per function)
  kinds.py       normalized FunctionDef + Analysis + the call's abstract signature -> the kind of
                 each value (category, dtype, rank, shape token) at each statement; the modes
                 write leaner code where a kind is sure
  reverse.py     normalized FunctionDef + Analysis -> adjoint FunctionDef `<f>_vjp` (primal sweep
                 with a tape, then the adjoint sweep)
  forward.py     normalized FunctionDef + Analysis -> tangent FunctionDef `<f>_jvp`
                 (both modes inline the rules' templates with templates.py)
  fuse.py        adjoint FunctionDef -> the same, pairs of runtime helpers fused into one
  checkpoint.py  adjoint FunctionDef -> the same with its outer range loops reversed by binomial
                 checkpointing (only for checkpoint=k)
  cleanup.py     generated FunctionDef -> the same, tidied as a person would write it: literals
                 folded, copies propagated, dead code, dead flags and empty branches removed
  emit.py        generated FunctionDefs -> module text, a comment per user line
  compile.py     module text -> a Python module (registered with linecache)
"""
