"""The alias analysis of statements: bindings, and the forward problem on srcad/dataflow.py that
carries the state (_State) through branches (joined) and loops (to a fixed point)."""
import ast
import builtins

from ...errors import SrcadError
from ..callees import member as _member
from ..inplace import _text
from .domain import ITEM, VIEW, WHOLE, _OPS, _Origin, _TRANSPOSES, _VIEW_FUNCS, _VIEW_METHODS

_ROUNDS = 50       # a loop whose state still moves after this many iterations is refused


class Statements:
    """Statements, branches and loops (mixed into _Aliases, a forward Dataflow problem whose fact
    is the _State, changed in place by a statement: hence copy())."""

    def meet(self, a, b):
        return a.join(b)

    def copy(self, S):
        return S.copy()

    def settled(self, new, old):
        return new.settled(old)

    def widen(self, st, old, new, rounds):
        if rounds >= _ROUNDS and not new.settled(old):
            raise SrcadError(f"{self.parsed.filename}:{st.lineno}: srcad's alias analysis did not settle on this loop")
        return new

    def at(self, st, S):
        self.current = st
        self.current_value_name = None

    def transfer(self, st, S):
        meth = getattr(self, "s_" + type(st).__name__, None)
        if meth is None:
            self.check_reads(st, S)
            return S
        return meth(st, S)

    def test(self, e, S):
        """An `if`'s test (a `while`'s: head)."""
        self.check_reads(e, S)
        self.ev(e, S)
        return S

    def iterate(self, st, S):
        return S        # (the iterable is read at the head of every iteration)

    def head(self, st, S):
        """The top of an iteration: a `for` reads its iterable and binds its target, a `while`
        reads its test."""
        self.current = st
        if isinstance(st, ast.For):
            self.check_reads(st.iter, S)
            self.bind_target(st, S)
            return S
        return self.test(st.test, S)

    def leave(self, st, S, inner):
        return S.join(inner)        # a loop may run no iteration, or end after any

    def exit(self, st, S):
        self.check_reads(st, S)
        if isinstance(st, ast.Return):
            self.returns |= self.ev(st.value, S)
            return None
        return S

    def origin_of(self, value, st):
        base, sure = value, False
        while isinstance(base, (ast.Subscript, ast.Attribute)) or isinstance(base, ast.Call) and (
                isinstance(base.func, ast.Attribute) and base.func.attr in _VIEW_METHODS
                or base.args and _member(self.resolve(base.func)[1], _VIEW_FUNCS)):
            if isinstance(base, ast.Call):
                sure = True
                base = base.func.value if isinstance(base.func, ast.Attribute) and \
                    base.func.attr in _VIEW_METHODS else base.args[0]
            else:
                sure = sure or isinstance(base, ast.Attribute) and base.attr in _TRANSPOSES or \
                    isinstance(base, ast.Subscript) and any(
                        isinstance(p, ast.Slice) or isinstance(p, ast.Constant) and p.value is Ellipsis
                        for p in (base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]))
                base = base.value
        if isinstance(value, (ast.List, ast.Tuple)):    # `ys = [y, w]` holds y and w
            held = tuple(e.id for e in value.elts if isinstance(e, ast.Name) and self.is_local(e.id))
            return _Origin(ITEM, held, "", self.where(st)) if held else None
        if isinstance(base, ast.Name) and self.is_local(base.id):
            if base is value:
                return _Origin(WHOLE, base.id, "", self.where(st))
            return _Origin(VIEW, base.id, _text(value), self.where(st), sure)
        return None

    def assign_to(self, t, refs, S, value=None, st=None):
        if isinstance(t, ast.Name):
            S.bind(t.id, refs, self.origin_of(value, st) if value is not None else None)
        elif isinstance(t, ast.Subscript):
            self.check_reads(t, S)
            self.ev(t.slice, S)
            self.write(S, t.value, self.ev(t.value, S), None)
        elif isinstance(t, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(t.elts):
                parts = [self.ev(v, S) for v in value.elts]
                for sub, r, v in zip(t.elts, parts, value.elts):
                    self.assign_to(sub, r, S, v, st)
                return
            fresh = len(refs) == 1 and next(iter(refs))[0][0] == "site" and next(iter(refs))[1] == WHOLE \
                and next(iter(refs))[0][1][0] == id(value)
            for k, sub in enumerate(t.elts):
                if fresh:       # `q, r = np.linalg.qr(a)`: the pieces of a fresh result are fresh
                    self.assign_to(sub, S.alloc((id(value), k)), S)
                else:
                    self.assign_to(sub, frozenset((b, VIEW) for b, _ in refs), S)

    def s_Assign(self, st, S):
        self.check_reads(st.value, S)
        refs = self.ev(st.value, S)
        for t in st.targets:
            self.assign_to(t, refs, S, st.value, st)
        return S

    def s_AnnAssign(self, st, S):
        if st.value is None:
            return S
        return self.s_Assign(ast.Assign([st.target], st.value), S)

    def s_AugAssign(self, st, S):
        self.check_reads(st, S)
        t = st.target
        if isinstance(t, ast.Name):
            self.check_reads(ast.Name(t.id, ast.Load(), lineno=st.lineno, col_offset=st.col_offset), S)
        self.ev(st.value, S)
        op = _OPS.get(type(st.op), "?")
        if isinstance(t, ast.Name):
            refs = S.pts.get(t.id, frozenset()) if self.is_local(t.id) else self.ev(t, S)
            self.write(S, t, refs, None, op=op, value=_text(st.value))
            # a number is rebound, an array updated in place: either may hold afterwards; the
            # names rebound after the write (if it was in place) are the same object as t
            o = S.origin.get(t.id)
            if o is None or o.kind != VIEW or not o.sure:      # a slice of an array stays itself
                S.pts[t.id] = S.pts.get(t.id, frozenset()) | S.alloc((id(st), None))
            for m, how in self.after.get(id(st), {}).items():
                if not isinstance(how, tuple):      # rebound to t (a slice taken again keeps its own)
                    S.pts[m] = S.pts[t.id]
        else:
            self.assign_to(t, frozenset(), S)
        return S

    def s_Expr(self, st, S):
        self.check_reads(st.value, S)
        if isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) and st.value.args:
            a = st.value.args[0]
            self.current_value_name = a.id if isinstance(a, ast.Name) else None
        self.ev(st.value, S)
        return S

    def s_Assert(self, st, S):
        self.check_reads(st, S)
        return S

    def s_Pass(self, st, S):
        return S

    def bind_target(self, st, S):
        """The loop variable(s) of `for` for one iteration."""
        it, t = st.iter, st.target
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) else (False, None)
        if found and obj is builtins.range:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    S.bind(n.id, frozenset())
            return
        if found and obj in (builtins.enumerate, builtins.zip) and isinstance(t, ast.Tuple):
            seqs = it.args if obj is builtins.zip else [None] + list(it.args[:1])
            for sub, seq in zip(t.elts, seqs):
                if seq is None:
                    self.assign_to(sub, frozenset(), S)
                else:
                    self.loop_item(sub, seq, S)
            return
        self.loop_item(t, it, S)

    def loop_item(self, t, seq, S):
        refs = self.parts(self.ev(seq, S))
        if isinstance(t, ast.Name):
            base = seq.id if isinstance(seq, ast.Name) and self.is_local(seq.id) else None
            S.bind(t.id, refs, _Origin(VIEW, base, "", self.where(t)) if base else None)
        else:
            self.assign_to(t, refs, S)

    def s_FunctionDef(self, st, S):
        if st is self.fn:
            return S
        inner_locals = {a.arg for a in st.args.args + st.args.kwonlyargs} | {
            x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        captured = sorted({x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name)
                           and isinstance(x.ctx, ast.Load) and x.id in self.locals and x.id not in inner_locals})
        params = [a.arg for a in st.args.args + st.args.kwonlyargs] + captured
        self.nested_defs[st.name] = st
        self.nested[st.name] = (captured, self.summarize(st, params))
        S.bind(st.name, frozenset())
        return S
