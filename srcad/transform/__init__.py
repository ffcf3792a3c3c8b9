"""The modes: a normalized, analysed function -> the text and module of its derivative.

The passes, in pipeline order (input -> output); pipeline.py's `derive` runs them on one
function (the one asked for and each user function it calls), and its `build` is the entry
point, with every option in one `Options` value:

  pipeline.py    Options + user function -> module text: the passes in order, each with a name
                 (srcad.emit(f, stage=NAME) prints the code after it)
  unit.py        the bookkeeping of one generated module: callees derived once each, fresh
                 names, the objects the module reaches (imports and supplied names)
  kinds/         normalized FunctionDef + Analysis + the call's abstract signature -> the kind of
                 each value (category, dtype, rank, shape token) at each statement; the modes
                 write leaner code where a kind is sure (lattice, signature, operations, and the
                 analysis: a forward problem on srcad/dataflow.py)
  reverse/       normalized FunctionDef + Analysis -> adjoint FunctionDef `<f>_vjp` (primal sweep
                 with a tape, then the adjoint sweep), one module per idea: driver (the Reverse
                 class and its run), adjoint (statements), control (branches and loops), primal
                 (the primal sweep), tape (saves and pops), ownership (cotangent accumulation,
                 owned arrays), plain (plain NumPy where the kinds are sure)
  forward.py     normalized FunctionDef + Analysis -> tangent FunctionDef `<f>_jvp`
                 (both modes inline the rules' templates with templates.py)
  fuse.py        adjoint FunctionDef -> the same, pairs of runtime helpers fused into one
  checkpoint.py  adjoint FunctionDef -> the same with its outer range loops reversed by binomial
                 checkpointing (only for checkpoint=k)
  cleanup/       generated FunctionDef -> the same, tidied as a person would write it, one module
                 per rewrite: fold (literals), copies (propagation, coalescing), zeros (no zero
                 adjoints), liveness, dead (dead code, empty branches); driver.py runs the rounds
  split.py       the unit's cleaned adjoints -> the same, each callee's primal sweep run once: its
                 split twin `<g>_split` (a generator) keeps its frame from the caller's primal
                 sweep to its adjoint sweep (grad's "+split" code only)
  emit.py        generated FunctionDefs -> module text, a comment per user line
  compile.py     module text -> a Python module (registered with linecache)
"""
