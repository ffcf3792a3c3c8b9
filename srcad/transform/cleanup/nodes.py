"""The statements and expressions cleanup reads: the names a node reads and binds, the blocks
nested in a statement, which calls are pure and which hand a name to a runtime helper that
updates it in place (asked of the registry). No rewriting here."""
import ast
import builtins

from ...rules.registry import HelperFacts, fact_of_chain
from ...syntax import is_comment


# what calls do (in place, pure): declared in the registry (rules/runtime_rules.py, numpy_rules.py)
# runtime helpers that update their first argument in place when only the caller's variable holds
# it (srcad/runtime: add, add_at, zero_at check sys.getrefcount): the argument is consumed there
_CONSUMING = HelperFacts("consumes")
_UNSUPPORTED = (ast.Try, ast.With, ast.AsyncWith, ast.Global, ast.Nonlocal, ast.NamedExpr, ast.ClassDef,
                ast.AsyncFunctionDef, ast.Delete, ast.Yield, ast.YieldFrom, ast.Await, ast.Match,
                ast.AsyncFor, ast.Import, ast.ImportFrom) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_UNSUPPORTED_SET = frozenset(_UNSUPPORTED)
_NESTED_SCOPES = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES_SET = frozenset(_SCOPES)
_ODD = frozenset({ast.Break, ast.Continue, ast.Return, ast.Raise, *_SCOPES})


def _all_args(args):
    out = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
    out += [a for a in (args.vararg, args.kwarg) if a is not None]
    return out


def _comment_text(st):
    return st.value.value.split("\x00")[-1]


def _blocks(st):
    """The statement lists nested directly in st (a nested function's body is its own scope)."""
    if isinstance(st, ast.FunctionDef):
        return []
    return [getattr(st, f) for f in ("body", "orelse") if isinstance(getattr(st, f, None), list)]


def _empty(block):
    return all(is_comment(s) or isinstance(s, ast.Pass) for s in block)


def _fill(block, required=True):
    """Drop a `pass` next to real statements and give a block of comments only a `pass` (an
    empty `else` stays empty: no `else: pass`)."""
    for st in block:
        if isinstance(st, ast.FunctionDef):
            continue
        _fill(st.body) if isinstance(getattr(st, "body", None), list) else None
        if isinstance(getattr(st, "orelse", None), list):
            _fill(st.orelse, required=False)
    # a comment right below the same comment (the lines between them went) is said once
    block[:] = [s for k, s in enumerate(block) if not (k and is_comment(s) and is_comment(block[k - 1])
                                                     and s.value.value == block[k - 1].value.value)]
    real = [s for s in block if not (is_comment(s) or isinstance(s, ast.Pass))]
    if real:
        block[:] = [s for s in block if not isinstance(s, ast.Pass)]
    elif block and not any(isinstance(s, ast.Pass) for s in block) or required and not block:
        block.append(ast.Pass())


def _scan(node):
    """(names read, names bound, whether node holds a jump or a nested scope) anywhere in node:
    one walk, faster than ast.walk."""
    loads, stores = set(), set()
    odd = False
    stack = [node]
    name, load = ast.Name, ast.Load
    while stack:
        n = stack.pop()
        t = type(n)
        if t is name:
            (loads if type(n.ctx) is load else stores).add(n.id)
            continue
        if t in _ODD:
            odd = True
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return loads, stores, odd


def _loads_in(node):
    """Names read in node (any depth; a nested scope's reads count as reads here)."""
    return frozenset(_scan(node)[0])


def _loads_in_list(nodes):
    out = frozenset()
    for n in nodes:
        out |= _loads_in(n)
    return out


def _stores_in(stmts):
    """Names bound by the statements (any depth, not inside nested scopes or comprehensions)."""
    out = set()

    def visit(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        if isinstance(node, ast.FunctionDef):
            out.add(node.name)
            return
        if isinstance(node, _SCOPES):
            return
        for child in ast.iter_child_nodes(node):
            visit(child)
    for st in stmts:
        visit(st)
    return frozenset(out)


def _nested_reads(fn):
    """Names a nested scope may read from fn's (its free names; a comprehension's or lambda's
    reads all count), which stay as they are."""
    out = set()
    for node in ast.walk(fn):
        if node is fn:
            continue
        if isinstance(node, ast.FunctionDef):
            own = {a.arg for a in _all_args(node.args)} | _stores_in(node.body)
            out |= _loads_in(node) - own
        elif isinstance(node, _SCOPES):
            out |= _loads_in(node)
    return out


def _target_names(t):
    if isinstance(t, ast.Name):
        return frozenset({t.id})
    if isinstance(t, (ast.Tuple, ast.List)):
        return frozenset().union(*(_target_names(e) for e in t.elts)) if t.elts else frozenset()
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return frozenset()


def _assigned(st):
    return frozenset().union(*(_target_names(t) for t in st.targets))


def _plain_target(t):
    """A target that only binds names (no index or attribute write)."""
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(_plain_target(e) for e in t.elts)
    if isinstance(t, ast.Starred):
        return _plain_target(t.value)
    return False


def _simple_target(st):
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    return None


def _copy_pair(st):
    """(a, b) for a statement `a = b` between two names."""
    a = _simple_target(st)
    if a is not None and isinstance(st.value, ast.Name):
        return a, st.value.id
    return None


def _rt_helper(call):
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "rt":
        return f.attr
    return None


class _Facts:
    """A statement's reads, the names it binds, whether it holds a nested scope, and the names it
    may write in place or hand to an in-place helper. After `a = b`, Python sees one object; a
    transformation of this code (forward mode over an adjoint) sees two values, so a copy is
    never propagated across a statement that touches either."""
    __slots__ = ("loads", "binds", "scope", "touched")

    def __init__(self, st, local_names):
        loads, binds, touched = set(), set(), set()
        scope = False
        for n in ast.walk(st):
            t = type(n)
            if t is ast.Name:
                (loads if type(n.ctx) is ast.Load else binds).add(n.id)
            elif t in _SCOPES_SET:
                scope = True
            elif (t is ast.Subscript or t is ast.Attribute) and type(n.ctx) is not ast.Load:
                root = n.value
                while isinstance(root, (ast.Subscript, ast.Attribute)):
                    root = root.value
                if isinstance(root, ast.Name):
                    touched.add(root.id)
            elif t is ast.Call:
                helper = _rt_helper(n)
                if helper in _CONSUMING:
                    if n.args and isinstance(n.args[0], ast.Name):
                        touched.add(n.args[0].id)
                    continue
                chain = _attr_chain(n.func)
                if chain and len(chain) > 1:
                    touched.add(chain[0])           # a.method(...)
                if not _pure_call(n, local_names) and not (chain and len(chain) == 2 and chain[1] == "append"):
                    for arg in n.args + [k.value for k in n.keywords]:
                        touched |= {m.id for m in ast.walk(arg) if isinstance(m, ast.Name)}
        self.loads, self.binds, self.scope, self.touched = frozenset(loads), frozenset(binds), scope, frozenset(touched)


def _cannot_raise(e):
    """Evaluating e cannot raise (names here are always bound: generated code binds before it reads)."""
    if isinstance(e, (ast.Constant, ast.Name)):
        return True
    if isinstance(e, (ast.Tuple, ast.List)):
        return all(_cannot_raise(x) for x in e.elts)
    return False


def _pure(e, local_names):
    """Evaluating e has no effect beyond its value (it may raise, on values that do not fit)."""
    for n in ast.walk(e):
        if isinstance(n, (ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
        if isinstance(n, ast.Call) and not _pure_call(n, local_names):
            return False
    return True


def _attr_chain(f):
    chain = []
    while isinstance(f, ast.Attribute):
        chain.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        chain.append(f.id)
        return chain[::-1]
    return None


def _pure_call(call, local_names):
    chain = _attr_chain(call.func)
    if chain is None or chain[0] in local_names:
        return False
    if any(k.arg == "out" or k.arg is None for k in call.keywords):
        return False
    root = chain[0]
    if len(chain) == 1:
        return fact_of_chain(builtins, chain, "pure")[-1:] == [True]
    if root == "rt":       # a helper declared pure (the module on the way has no fact)
        return fact_of_chain(_runtime(), chain[1:], "pure")[-1:] == [True]
    if root in ("np", "scipy"):      # pure unless declared otherwise, here or on the way
        return False not in fact_of_chain(_module(root), chain[1:], "pure")
    return False


def _runtime():
    from ... import runtime
    return runtime


def _module(root):
    import numpy
    import scipy
    return numpy if root == "np" else scipy
