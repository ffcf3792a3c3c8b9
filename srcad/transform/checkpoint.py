"""checkpoint: binomial checkpointing of a function's outer `for ... in range(...)` loops.

`grad(f, checkpoint=k)` first generates the adjoint exactly as `checkpoint=None` does (so every
statement, and every bit of the result, is the same), then rewrites each outer range loop:

- the primal loop body becomes a step function `loop_L<n>_step(i, *state) -> state` without tape
  pushes; the primal sweep calls it once per iteration and keeps only the state on entry;
- the body with its pushes, followed by the adjoint of the body, becomes
  `loop_L<n>_step_vjp(i, *state, *cotangents) -> cotangents`: one iteration re-run with a tape
  and reversed at once;
- the reversed loop becomes a call of `rt.revolve`, which re-runs steps from at most k snapshots
  of the state (srcad/runtime/binomial.py) and calls the adjoint step from the last to the first.

The state is every name the body assigns that the iteration reads before assigning it, or that
code outside the loop reads (the loop-carried variables), and every array, list or dict the body
writes into in place (snapshots copy those; rt.loop_entry). Invariants (parameters, values
computed before the loop) are read by the nested functions as closures; the tape keeps them at
their loop-time values for the adjoint sweep, where the steps are re-run (Reverse.ckpt_reads).
After the reversal the state is given back as it was on entry, for the adjoint of the code before
the loop: the entry objects, with the contents of those written in place restored in place
(rt.loop_exit), so that a view or a second name of them sees the pre-loop values, as the tape's
restores make it with checkpoint=None.

The step and the step_vjp hold separate copies of the body's statements: the cleanup pass later
rewrites each function's nodes in place.
"""
import ast
from typing import TYPE_CHECKING

from ..dataflow import Dataflow
from ..errors import UnsupportedSyntaxError
from ..rules.fact_values import InPlace
from ..rules.registry import ANY, FactSet
from ..syntax import N, assign, ast_copy, comment, names_read, rt

# methods that change their receiver (xs.append(v)): declared in the registry (rules/numpy_rules.py)
_CHANGES_RECEIVER = FactSet("inplace", ANY, methods=True)

if TYPE_CHECKING:
    from .reverse import Reverse


def check_loop(rev: "Reverse", st: ast.For | ast.While, ends_early: bool) -> None:
    """Raise when a loop that checkpoint=k must reverse cannot be checkpointed."""
    why = None
    if isinstance(st, ast.While):
        why = "a `while` loop (its trip count is only known once it has run)"
    elif not (isinstance(st.iter, ast.Call) and isinstance(st.iter.func, ast.Name) and st.iter.func.id == "range"):
        why = f"a loop over `{ast.unparse(st.iter)}` (not a `range`)"
    elif ends_early:
        why = "a loop that can end early (`break`, or a `return` inside it)"
    if why:
        raise UnsupportedSyntaxError(
            f"checkpointing {why}", rev.parsed.filename, getattr(st, "user_line", 0), getattr(st, "col_offset", 0),
            hint=f"checkpoint=k reverses `for ... in range(n)` loops only; write this one (line "
                 f"{getattr(st, 'user_line', 0)}) as a range loop, or use checkpoint=None")


def checkpoint_loops(rev: "Reverse", fn: ast.FunctionDef) -> ast.FunctionDef:
    """Rewrite every loop Reverse marked for checkpointing in the generated function fn."""
    primal, adjoint = {}, {}
    _find(fn.body, primal, adjoint)
    inits = []
    for key, (pblock, P) in primal.items():
        if key not in adjoint:      # its adjoint came out empty: nothing to reverse
            continue
        ablock, A = adjoint[key]
        inits += _rewrite(rev, fn, pblock, P, ablock, A, rev.ckpt[key])
    seen = set()
    inits = [s for s in inits if not (s.targets[0].id in seen or seen.add(s.targets[0].id))]
    fn.body[1:1] = inits            # after the docstring
    _drop_unused_inits(fn, rev.tape)
    return fn


def _drop_unused_inits(fn, tape):
    """The `v = None` / `tape = []` lines at the top that only the loops' (now nested) code used."""
    nested = [d for d in ast.walk(fn) if isinstance(d, ast.FunctionDef) and d is not fn]
    used = set()
    for d in nested:        # what the nested functions read from the enclosing one
        local = _stored(d.body) | {a.arg for a in d.args.args}
        used |= names_read(d.body) - local
    saved = [(d, d.body) for d in nested]
    for d in nested:
        d.body = []
    used |= names_read(fn.body)
    for d, body in saved:
        d.body = body
    keep = []
    for k, st in enumerate(fn.body):
        init = (k > 0 and isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and (isinstance(st.value, ast.Constant) and st.value.value is None
                     or st.targets[0].id == tape and isinstance(st.value, ast.List) and not st.value.elts))
        if init and st.targets[0].id not in used:
            continue
        keep.append(st)
    fn.body[:] = keep


def _find(block, primal, adjoint):
    for st in block:
        key = getattr(st, "srcad_ckpt", None)
        if isinstance(st, ast.For) and key is not None:
            target = adjoint if isinstance(st.iter, ast.Call) and getattr(st.iter.func, "id", "") == "reversed" \
                else primal
            target[key] = (block, st)
        elif isinstance(st, ast.If):
            _find(st.body, primal, adjoint)
            _find(st.orelse, primal, adjoint)


def _rewrite(rev, fn, pblock, P, ablock, A, live):
    tape = rev.tape
    i = P.target.id
    ln = rev.ckpt_line.get(P.srcad_ckpt, 0)
    base = f"loop_L{ln}"
    step, step_vjp = rev.namer.fresh(base + "_step"), rev.namer.fresh(base + "_step_vjp")
    start, steps = rev.namer.fresh(base + "_entry"), rev.namer.fresh(base + "_range")
    taped = P.body
    # the step's statements are copies: the cleanup pass rewrites each function's nodes in place,
    # and a node shared with the step_vjp would take the rewrite made for that one
    untaped = _without_pushes(ast_copy(taped), tape)
    # names code outside the loop reads (its bodies set aside for the count)
    saved = P.body, A.body
    P.body, A.body = [], []
    outside = names_read(fn.body)
    P.body, A.body = saved
    stored = _stored(taped)
    # what an iteration reads from the one before (pops make a name read its entry value again);
    # the tape's saves of other names keep values nobody reads: those start as None in the step
    exposed = _exposed(untaped + A.body, tape)
    # arrays and lists the body writes into in place are state too: a snapshot must copy them
    in_place = _written_in_place(untaped)
    state = sorted(((stored & (exposed | outside)) | in_place) - {i, tape})
    bars = sorted(set(live) & _stored(A.body))
    saved_only = sorted((_exposed(taped + A.body, tape) & (stored | _stored(A.body)))
                        - set(state) - set(bars) - {i, tape})
    # a state variable the function may not have bound before the loop starts as None
    params = set(rev.params)
    inits = [assign(v, ast.Constant(None)) for v in state if v not in params and
             (not rev.sites.get(v) or rev.sites[v][0][1] != 0)]

    def args(names):
        return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[])

    def tup(names, store=False):
        return ast.Tuple([N(n, store) for n in names], ast.Store() if store else ast.Load())

    def fdef(name, params_, body):
        return ast.FunctionDef(name=name, args=args(params_), body=body, decorator_list=[], returns=None,
                               type_params=[], lineno=P.lineno if hasattr(P, "lineno") else 0, col_offset=0)

    k = rev.checkpoint
    step_def = fdef(step, [i] + state, [ast.Expr(ast.Constant(
        f"Iteration {i} of the loop of L{ln}, without tape: the state after it."))] + untaped + [ast.Return(tup(state))])
    call = ast.Call(N(step), [N(i)] + [N(v) for v in state], [])
    loop = ast.For(N(i, True), N(steps), [assign(tup(state, True), call) if state else ast.Expr(call)], [])
    new_primal = [comment(f"L{ln} is checkpointed: rt.revolve keeps at most {k} snapshots of its state "
                          f"({', '.join(state) or 'none'})"),
                  step_def, assign(steps, P.iter), assign(start, rt("loop_entry", tup(state))), loop]
    uses_tape = tape in names_read(taped + A.body)
    vjp_body = [ast.Expr(ast.Constant(f"Iteration {i} of the loop of L{ln} re-run with a tape, then its adjoint: "
                                      f"the cotangents before it."))] + \
        [assign(v, ast.Constant(None)) for v in saved_only] + \
        ([assign(tape, ast.List([], ast.Load()))] if uses_tape else []) + taped + A.body + [ast.Return(tup(bars))]
    vjp_def = fdef(step_vjp, [i] + state + bars, vjp_body)
    revolve = rt("revolve", N(step), N(step_vjp), N(steps), N(start), tup(bars), ast.Constant(k))
    new_adjoint = [comment(f"adjoint of L{ln} by binomial checkpointing: iteration {i} re-run with a tape, "
                           f"then reversed"), vjp_def,
                   comment(f"the iterations of L{ln} from the last to the first, re-running steps from the snapshots"),
                   assign(tup(bars, True), revolve) if bars else ast.Expr(revolve)]
    if state:       # the state on entry, for what precedes: the entry objects, their contents given back
        flags = ast.Tuple([ast.Constant(v in in_place) for v in state], ast.Load())
        new_adjoint.append(assign(tup(state, True), rt("loop_exit", N(start), flags)))
    j = pblock.index(P)
    pblock[j:j + 1] = new_primal
    j = ablock.index(A)
    ablock[j:j + 1] = new_adjoint
    return inits


def _is_push(st, tape):
    return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "append"
            and isinstance(st.value.func.value, ast.Name) and st.value.func.value.id == tape)


def _without_pushes(block, tape):
    out = []
    for st in block:
        if _is_push(st, tape):
            continue
        if isinstance(st, (ast.For, ast.While, ast.If)):
            new = st.__class__(**{f: getattr(st, f) for f in st._fields})
            new.body = _without_pushes(st.body, tape) or [ast.Pass()]
            new.orelse = _without_pushes(st.orelse, tape)
            st = new
        out.append(st)
    return out


_MODULES = frozenset({"np", "numpy", "rt", "sp", "scipy", "math", "special", "linalg"})     # np.sort(...)
# functions that write into their first argument (np.copyto, np.put, ...): declared in the registry
_WRITES_FIRST = FactSet("inplace", InPlace.FIRST)


def _writes_first():
    return {getattr(f, "__name__", None) for f in _WRITES_FIRST}


def _written_in_place(block):
    """Names whose value the block changes in place: `y[i] = ...`, `xs.append(...)`, `d.update(...)`,
    `z.fill(...)`, `np.copyto(z, ...)`, `f(..., out=z)` (srcad's normalizer writes most of these
    as `z[...] = ...`; the others are named here so that a new spelling cannot slip past)."""
    out = set()
    for st in block:
        for n in ast.walk(st):
            if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    out.add(base.id)
            elif isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.attr in _CHANGES_RECEIVER \
                        and f.value.id not in _MODULES:
                    out.add(f.value.id)
                if isinstance(f, ast.Attribute) and f.attr in _writes_first() and n.args \
                        and isinstance(n.args[0], ast.Name):
                    out.add(n.args[0].id)
                for kw in n.keywords:
                    if kw.arg == "out":
                        for t in (kw.value.elts if isinstance(kw.value, ast.Tuple) else [kw.value]):
                            if isinstance(t, ast.Name):
                                out.add(t.id)
    return out


def _stored(block):
    return {n.id for st in block for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _reads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_pop(value, tape):
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "pop"
            and isinstance(value.func.value, ast.Name) and value.func.value.id == tape)


class _Exposed(Dataflow):
    """Names read before every path has bound them, a forward must-problem on srcad/dataflow.py:
    the fact is the set of names bound on every path so far (meet: intersection), the reads of
    other names are collected in `exposed`. `v = tape.pop()` unbinds v: it gives v back the value
    it had on entry."""

    forward = True

    def __init__(self, tape):
        self.tape = tape
        self.exposed: set = set()

    def meet(self, a, b):
        return a & b

    def test(self, e, bound):
        self.exposed |= _reads(e) - bound
        return bound

    def target(self, st, bound):
        return bound | {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}

    def exit(self, st, bound):
        self.exposed |= _reads(st) - bound
        return None

    def transfer(self, st, bound):
        if isinstance(st, ast.Assign):
            self.exposed |= _reads(st) - bound
            names = {n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Store)}
            return bound - names if _is_pop(st.value, self.tape) else bound | names
        if isinstance(st, ast.AugAssign):        # `v += e` reads v, then binds it
            own = {st.target.id} if isinstance(st.target, ast.Name) else set()
            self.exposed |= (_reads(st.value) | _reads(st.target) | own) - bound
            return bound | own
        self.exposed |= _reads(st) - bound
        return bound


def _exposed(block, tape):
    """The names block reads before every path through it has bound them."""
    problem = _Exposed(tape)
    problem.solve(block, frozenset())
    return problem.exposed
