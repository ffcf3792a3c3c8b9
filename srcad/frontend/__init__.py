"""The frontend: a user's Python function -> a normalized, analysed syntax tree.

The passes, in pipeline order (input -> output); srcad/transform/pipeline.py `prepare` runs them:

  parse.py      function object -> `Parsed` (parsed.py: its syntax tree at the file's line numbers,
                and the objects its free names resolve to); freshness.py checks the source read is
                the code that runs, callables.py brings lambdas/methods/partials to plain functions,
                loop_items.py rewrites writes into a loop's item (`for row in Y: row /= s`)
  fence.py      Parsed -> Parsed, unchanged; raises at the first construct srcad does not support
  aliases/      Parsed -> Parsed, tree rewritten in place: inplace.py first writes `out=`,
                `np.copyto`, `.fill` as subscript writes, then every in-place write another name
                may see is resolved (rebinding, run-time guard) or refused (a package: domain,
                expressions, writes, statements, messages, analysis, rewrite)
  normalize/    Parsed -> (new FunctionDef, Normalizer): one operation per statement on atoms,
                sugar removed; jumps.py then lowers break/continue/early return to flags
                (operators.py: `srcad.grad(f)(x)` applied inside the function, at transform time;
                a package, one part of the normal form each: driver, statements, loops,
                expressions, calls, spellings, containers, functions, names, nodes)
  analyze.py    normalized FunctionDef -> `Analysis`: each statement's `Op` (ops.py: kind, rule,
                operands; classify.py finds them, methods.py resolves `self.f(...)` callees) and
                the active and useful names

callees.py holds what several passes ask about a called object (a user function? does it write
into its arguments?), so aliases, analyze and methods need not import each other; effects.py
asks whether a called user function can be run again with the same result (reverse mode re-runs
callees in the adjoint: a random draw or a write into module-level state is refused).

The frontend never imports srcad.transform; both build trees with srcad/syntax.py.
"""
