"""driver: the Reverse class: a normalized function -> its adjoint `<f>_vjp`.

The class holds the pass's state and is composed of one mixin per idea: the tape (tape.py),
cotangent ownership (ownership.py), plain NumPy where the kinds are sure (plain.py), the adjoint
sweep's statements (adjoint.py) and its branches and loops (control.py), and the primal sweep
(primal.py). `run` chooses the loops' trip counts (and checkpointed loops), writes the adjoint
sweep, resolves the tape, writes the primal sweep and assembles the function.
"""
import ast
from collections import defaultdict
from typing import TYPE_CHECKING

from ...frontend.effects import writes_in_place
from ...syntax import N, assign, ast_copy, comment, names_read, rt
from ..kinds import Cat, real
from .adjoint import AdjointStatements
from .control import AdjointControl
from .ownership import Own, Ownership
from .plain import Plain
from .primal import PrimalSweep
from .shapes import ShapeReads
from .tape import Tape, _dedupe

if TYPE_CHECKING:
    from ...frontend.analyze import Analysis
    from ...frontend.parsed import Parsed
    from ...syntax import Namer
    from ..kinds import Kinds
    from ..unit import Unit


class Reverse(AdjointStatements, AdjointControl, PrimalSweep, Tape, Ownership, Plain, ShapeReads):
    """The reverse-mode pass: a normalized function -> its adjoint (see the package docstring, reverse/__init__.py).

    Input: a normalized function, its Analysis, the Namer of its normalization, the names
    differentiated, the cotangent seed's name, and the Kinds of its values (None: none known).
    Output (`run`): a FunctionDef `<f>_vjp(params..., seed)` that runs the primal sweep, taping
    what later statements overwrite, then the adjoint sweep, and returns the cotangents of wrt.
    Invariants: only active and useful names get cotangents (`<name>_bar`); each adjoint reads
    the primal values of its own moment (every overwritten value is popped back before the
    adjoints of earlier statements run); the primal sweep computes exactly what the user's
    code does."""

    def __init__(self, fn: ast.FunctionDef, analysis: "Analysis", parsed: "Parsed", namer: "Namer",
                 wrt: list[str], unit: "Unit", seed: str, top_level: bool = True, row_sparse=(),
                 check_numerics: bool = False, checkpoint: int | None = None, kinds: "Kinds | None" = None,
                 tuple_wrt: bool = False) -> None:
        self.check_numerics, self.current = check_numerics, None
        self.tuple_wrt = tuple_wrt      # wrt was a tuple: the cotangents are returned as one
        self.kinds = kinds      # what each value is (transform/kinds.py); None: nothing known
        self.bar_of = {}        # cotangent name -> its primal's name
        self.own = {}           # cotangent name -> (Own, shape token)
        self.filled = {}        # cotangent name -> (number expression, shape token): it holds that
        #                         number everywhere in an array of that shape (reverse/shapes.py)
        self.fill_names = set()     # the names those numbers are bound to
        self.arrays = set()     # cotangent names sure to hold an ndarray (ownership.py's _known_array)
        self._steady_memo = None    # see reverse/shapes.py's _steady
        self.shape_taped = set()    # names taped as a stand-in of their shape (reverse/shapes.py)
        self.recomputed = {}        # int/bool names a reversed loop recomputes, not tapes (tape.py)
        # owned cotangent arrays (updated in place) only where every differentiated value is a
        # known float64 number or array: no complex, float32, sparse or container cotangents
        self.buffers = kinds is not None and checkpoint is None and not row_sparse and all(
            real(k) for name, k in kinds.assigned() if name in analysis.active)
        self.checkpoint = checkpoint       # k snapshots: top-level range loops reversed by revolve
        self.ckpt, self.ckpt_reads = {}, set()     # id(loop) -> cotangents live at its adjoint
        self.ckpt_line = {}
        self.fn, self.an, self.parsed, self.namer = fn, analysis, parsed, namer
        self.wrt, self.unit, self.seed, self.top_level = list(wrt), unit, seed, top_level
        self.row_sparse = set(row_sparse)
        self.dict_names = getattr(fn, "dict_names", set())
        self.bars = {}
        self.markers = {}       # (kind, id(stmt)) -> _Marker
        self.sites = defaultdict(list)     # name -> [(assigning statement, loop depth)]
        self.depth = {}                    # id(statement) -> loop depth (0.5: in a branch only)
        self.params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        for p in self.params:
            self.sites[p].append((None, 0))
        self._collect_sites(fn.body, 0)
        self.tape = namer.fresh("tape")
        self.trips = {}         # id(loop) -> trip-count name
        self.pullbacks = {}     # id(stmt) -> pullback name (register_vjp rules)
        self._if_memo = {}      # see _adj_if_memo

    def _prepare_loops(self, stmts):
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)):
                ends_early = bool(st.body) and isinstance(st.body[-1], ast.If) and \
                    isinstance(st.body[-1].body[0], ast.Break)
                if isinstance(st, ast.While) or ends_early:
                    self.trips[id(st)] = self.namer.fresh(f"trips_L{st.user_line}")
                if self.checkpoint is not None and not self._in_loop(st):
                    from ..checkpoint import check_loop
                    check_loop(self, st, ends_early)
                    self.ckpt[id(st)] = None
                    self.ckpt_line[id(st)] = st.user_line
                    self.ckpt_reads |= names_read(st.body)  # re-run steps read them in the adjoint sweep
                self._prepare_loops(st.body)
            elif isinstance(st, ast.If):
                self._prepare_loops(st.body)
                self._prepare_loops(st.orelse)

    def run(self, name: str, return_value: bool = False) -> ast.FunctionDef:
        fn = self.fn
        self._prepare_loops(fn.body)
        self._find_recomputed(fn.body, set())
        ret = fn.body[-1].value if fn.body and isinstance(fn.body[-1], ast.Return) else ast.Constant(None)
        live = set()
        seed_code = []
        if isinstance(ret, ast.Name) and ret.id in self.an.active:
            b = self.bar(ret.id)
            seed = N(self.seed)
            if self.kinds is not None and self.kinds.exit_of_body(ret.id).cat is Cat.ARRAY:
                # a size-1 array's seed may be a number: give it the array's shape, which the
                # adjoints that know shapes rely on
                seed = rt("broadcast_like", seed, N(ret.id))
            seed_code.append(assign(b, seed))
            live.add(b)
        adjoint = self._resolve_tape(self._resolve_shapes(self.adjoint_block(fn.body, live)))
        primal = self.primal_block(fn.body, 0)
        uses_tape = self.tape in names_read(primal)
        inits = self._tape_inits()
        grads = []
        for w in self.wrt:
            b = self.bar(w)
            val = N(b) if b in live else ast.Constant(0.0)
            if self.top_level and b in live and self.own.get(b, ("",))[0] == Own.OWNED and not self.row_sparse:
                grads.append(val)       # already what finalize makes: a new float64 array of w's shape
            elif self.top_level:
                args = [val, N(w)] + ([ast.Constant(True)] if w in self.row_sparse else [])
                grads.append(rt("finalize", *args))
            else:
                grads.append(val)
        out = grads[0] if len(grads) == 1 and not self.tuple_wrt else ast.Tuple(grads, ast.Load())
        if return_value:
            out = ast.Tuple([ast.Constant(None), out], ast.Load())
        doc = ast.Expr(ast.Constant(self._docstring()))
        body = [doc] + ([assign(self.tape, ast.List([], ast.Load()))] if uses_tape else []) + _dedupe(inits) + primal
        if return_value:    # grad/value_and_grad: keep the output, check it, then seed its cotangent
            value = self.namer.fresh(fn.name + "_value")
            known_number = self.kinds is not None and isinstance(ret, ast.Name) and \
                self.kinds.exit_of_body(ret.id).rank0
            # a callee's value, kept (split.py) while its adjoint runs: copied unless that adjoint
            # restores nothing in place (the function writes into no object)
            kept = known_number or not self.top_level and not writes_in_place(self.parsed.func)
            body.append(assign(value, ast_copy(ret) if kept else rt("snapshot", ast_copy(ret))))
            body.append(assign(self.seed, rt("seed", N(value), N(self.seed))))
            out = ast.Tuple([N(value), out.elts[1]], ast.Load())
        if adjoint or seed_code and seed_code[0].targets[0].id in live:
            # (a returned argument has no adjoint statement: its cotangent is the seed itself)
            body += [comment("adjoint sweep")] + seed_code + adjoint
        body.append(ast.Return(out))
        args = ast_copy(fn.args)
        args.kwonlyargs.append(ast.arg(self.seed))
        args.kw_defaults.append(ast.Constant(1.0))
        if not fn.args.kwonlyargs:     # keep the seed positional, after f's own parameters
            args.kwonlyargs, args.kw_defaults = [], []
            args.args.append(ast.arg(self.seed))
            args.defaults.append(ast.Constant(1.0))
        return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                               type_params=[], lineno=fn.lineno, col_offset=0)

    def _docstring(self):
        wrt = ", ".join(self.wrt)
        what = "tuple of gradients" if len(self.wrt) > 1 else "gradient"
        return (f"The {what} of {self.fn.name} with respect to {wrt}, for the output cotangent "
                f"{self.seed} (reverse mode).")
