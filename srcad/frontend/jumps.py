"""Lower break, continue and early return to flags, so every block runs to its end.

After this pass the only jump left is `if <stop>: break` as the last statement of a loop body,
and the only `return` is the last statement of the function. Statements that a jump may skip
are guarded by `if <go>:`, whose outcome the reverse sweep replays like any other branch.
"""
import ast

from ..syntax import Namer


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _set(id_, value, like):
    node = ast.Assign(targets=[_name(id_, True)], value=value)
    node.user_line = getattr(like, "user_line", getattr(like, "lineno", 0))
    for n in ast.walk(node):
        n.lineno, n.col_offset = getattr(like, "lineno", 0), getattr(like, "col_offset", 0)
        n.end_lineno, n.end_col_offset = n.lineno, n.col_offset
    return node


def _any(flags):
    return _name(flags[0]) if len(flags) == 1 else ast.BoolOp(ast.Or(), [_name(f) for f in flags])


def _nested_return(body):
    for k, st in enumerate(body):
        for node in ast.walk(st):
            if isinstance(node, ast.Return) and not (node is st and k == len(body) - 1):
                return True
    return False


class _Loop:
    """The flags of one loop: its `break` and `continue` flags, made on first use."""

    def __init__(self, namer, line):
        self.namer, self.line = namer, line
        self.brk = self.cont = None

    def flag(self, kind):
        if kind == "break":
            self.brk = self.brk or self.namer.fresh(f"break_L{self.line}")
            return self.brk
        self.cont = self.cont or self.namer.fresh(f"continue_L{self.line}")
        return self.cont


class _Lowerer:
    """The jump-lowering pass (see the module docstring).

    Input: a normalized function body (one operation per statement) that may hold break,
    continue and return anywhere.
    Output: the same body with flags and `if <go>:` guards; the only jump left is
    `if <stop>: break` as the last statement of a loop, the only return the function's last
    statement (a nested return becomes `result`/`returned` flags).
    Invariant: the lowered body computes the same values, in the same order, as the input."""

    def __init__(self, namer, nested_return):
        self.namer = namer
        self.result = namer.fresh("result") if nested_return else None
        self.returned = namer.fresh("returned") if nested_return else None

    def flags(self, kinds, loop):
        out = []
        if "break" in kinds and loop is not None and loop.brk:
            out.append(loop.brk)
        if "continue" in kinds and loop is not None and loop.cont:
            out.append(loop.cont)
        if "return" in kinds:
            out.append(self.returned)
        return out

    def block(self, stmts, loop):
        out, kinds = [], set()
        for k, st in enumerate(stmts):
            if isinstance(st, ast.Break):
                return out + [_set(loop.flag("break"), ast.Constant(True), st)], kinds | {"break"}
            if isinstance(st, ast.Continue):
                return out + [_set(loop.flag("continue"), ast.Constant(True), st)], kinds | {"continue"}
            if isinstance(st, ast.Return):
                if self.result is None:
                    return out + [st], kinds
                return out + [_set(self.result, st.value, st), _set(self.returned, ast.Constant(True), st)], \
                    kinds | {"return"}
            jumps = set()
            if isinstance(st, ast.If):
                body, k1 = self.block(st.body, loop)
                orelse, k2 = self.block(st.orelse, loop)
                st.body, st.orelse, jumps = body, orelse, k1 | k2
                out.append(st)
            elif isinstance(st, (ast.For, ast.While)):
                jumps = {"return"} if self.result and _contains_return(st) else set()
                out += self.loop(st)
            else:
                out.append(st)
            if jumps:
                kinds |= jumps
                rest, k3 = self.block(stmts[k + 1:], loop)
                kinds |= k3
                if rest:
                    go = self.namer.fresh("go_on")
                    out += [_set(go, ast.UnaryOp(ast.Not(), _any(self.flags(jumps, loop))), st),
                            _if(go, rest, st)]
                return out, kinds
        return out, kinds

    def loop(self, st):
        inner = _Loop(self.namer, st.lineno)
        again = getattr(st, "again", 0) if isinstance(st, ast.While) else 0
        main, tail = (st.body[:-again], st.body[-again:]) if again else (st.body, [])
        body, kinds = self.block(main, inner)
        pre = []
        if inner.cont:
            body.insert(0, _set(inner.cont, ast.Constant(False), st))
        stops = ([inner.brk] if inner.brk else []) + ([self.returned] if "return" in kinds else [])
        if inner.brk:
            pre.append(_set(inner.brk, ast.Constant(False), st))
        if stops:
            stop = stops[0] if len(stops) == 1 else self.namer.fresh(f"stop_L{st.lineno}")
            if len(stops) > 1:
                body.append(_set(stop, _any(stops), st))
            if tail:
                go = self.namer.fresh("go_on")
                body += [_set(go, ast.UnaryOp(ast.Not(), _name(stop)), st), _if(go, tail, st)]
            body.append(_if(stop, [ast.Break(lineno=st.lineno, col_offset=0)], st))
        else:
            body += tail
        st.body = body
        return pre + [st]


def _contains_return(st):
    return any(isinstance(n, ast.Return) for n in ast.walk(st))


def _if(test, body, like):
    node = ast.If(_name(test), body, [])
    node.lineno, node.col_offset = getattr(like, "lineno", 0), 0
    node.user_line = getattr(like, "user_line", node.lineno)
    return node


def lower_jumps(body: list[ast.stmt], namer: Namer, fn: ast.FunctionDef) -> list[ast.stmt]:
    """The function body with break/continue/early return replaced by flags and guards."""
    low = _Lowerer(namer, _nested_return(body))
    new, _ = low.block(body, None)
    if low.result is None:
        return new
    prelude = [_set(low.result, ast.Constant(None), fn), _set(low.returned, ast.Constant(False), fn)]
    return prelude + new + [ast.Return(_name(low.result), lineno=fn.lineno, col_offset=0)]
