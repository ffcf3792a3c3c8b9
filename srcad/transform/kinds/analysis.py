"""The kinds pass over a normalized function: a forward problem on srcad/dataflow.py whose fact
is an environment (name -> Kind), and the queries the transformer asks of its result (`Kinds`).

The problem's transfer is one statement: an assignment to a name gives it the kind of its
right-hand side (operations.py); an item write or `xs.append(v)` joins v into a list's items; a
list that may change other than by those (an alias made, passed to a call) forgets its items.
Branches join (lattice.py); a loop's head joins what each iteration brings back until it stops
moving, and after 10 rounds whatever still moves is unknown (`widen`)."""
import ast
import builtins
from typing import TYPE_CHECKING, Iterator

from ...dataflow import Dataflow
from ...rules.registry import facts
from .lattice import _UNDEF, UNKNOWN, Cat, Kind, _join_env, join
from .operations import Operations
from .results import returned_kind

if TYPE_CHECKING:
    from ...frontend.analyze import Analysis

_WIDEN_AFTER = 10       # rounds of a loop before what still moves becomes unknown


class _Flow(Operations, Dataflow):
    """The kinds problem: forward, facts are environments name -> Kind (or _UNDEF)."""

    forward = True

    def __init__(self, analysis, into: "Kinds"):
        self.an = analysis
        self.into = into
        self.returned = None        # the environments at the function's returns, joined

    # -- the problem ---------------------------------------------------------------------------
    def meet(self, a, b):
        return _join_env(a, b)

    def at(self, st, env):
        self.into._before[id(st)] = env

    def past(self, st, env):
        if isinstance(st, (ast.If, ast.For, ast.While)) and env is not None:
            self.into._exit[id(st)] = env

    def widen(self, st, old, new, rounds):
        if rounds > _WIDEN_AFTER:        # no convergence in sight: whatever still moves is unknown
            return {k: (v if old.get(k, _UNDEF) == v else UNKNOWN) for k, v in new.items()}
        return new

    def target(self, st, env):
        env = dict(env)
        if isinstance(st.target, ast.Name):
            env[st.target.id] = Kind(Cat.PY, "l", 0, ()) if self._is_range(st) else UNKNOWN
        else:       # `for i, x in ...`: what the loop binds is not followed
            for n in ast.walk(st.target):
                if isinstance(n, ast.Name):
                    env[n.id] = UNKNOWN
        return env

    def exit(self, st, env):
        if isinstance(st, ast.Return):
            env = self._escape(st, env)
            self.returned = env if self.returned is None else _join_env(self.returned, env)
        return None

    def transfer(self, st, env):
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t = st.targets[0]
            if isinstance(t, ast.Name):
                k = self._assign(st, env)
                if k.cat is Cat.LIST and not isinstance(st.value, ast.List):
                    k = Kind(Cat.LIST)        # another name for a list, or a list from elsewhere
                self.into._result[id(st)] = k
                env = dict(self._escape(st, env, safe=self._reads_items(st)))
                env[t.id] = k
                return env
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                # an item write keeps an array's kind (shape, dtype); a list's items join the value
                k = env.get(t.value.id, _UNDEF)
                if k is not _UNDEF and k.cat is Cat.LIST:
                    env = dict(env)
                    env[t.value.id] = self._with_item(k, self._atom(st.value, env))
                return self._escape(st, env)
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                isinstance(st.value.func, ast.Attribute) and isinstance(st.value.func.value, ast.Name) \
                and st.value.func.attr == "append" and len(st.value.args) == 1 and not st.value.keywords:
            name = st.value.func.value.id
            k = env.get(name, _UNDEF)
            if k is not _UNDEF and k.cat is Cat.LIST:
                env = dict(env)
                env[name] = self._with_item(k, self._atom(st.value.args[0], env))
                return self._escape(st, env, keep=name)
        if isinstance(st, (ast.Expr, ast.Pass)):
            return self._escape(st, env)
        env = dict(env)     # anything else that binds names: those names are unknown
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                env[n.id] = UNKNOWN
        return env

    # -- lists ---------------------------------------------------------------------------------
    @staticmethod
    def _with_item(k, v):
        v = Kind(Cat.LIST) if v.cat is Cat.LIST else v
        item = join(k.item, v) if k.item is not None else None
        return Kind(Cat.LIST, item=item if item not in (None, UNKNOWN) else None)

    def _reads_items(self, st):
        """Does this assignment only read its list operands' items (their kinds stay valid)?"""
        rhs = st.value
        if isinstance(rhs, ast.Subscript):
            return True
        if isinstance(rhs, ast.Call) and self.an is not None:
            op = self.an.op(st)
            key = op.rule.key if op.rule is not None else None
            entry = facts(key)
            return entry is not None and entry.reads_items
        return False

    @staticmethod
    def _escape(st, env, safe=False, keep=None):
        """A list that a statement may change other than by the kinds seen (an alias made, passed
        to a call): its items are no longer known."""
        if safe:
            return env
        out = None
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id != keep:
                k = env.get(n.id, _UNDEF)
                if k is not _UNDEF and k.cat is Cat.LIST and k.item is not None:
                    out = dict(env) if out is None else out
                    out[n.id] = Kind(Cat.LIST)
        return env if out is None else out

    def _callee_result(self, op, call, env):
        """The kind a user function returns here (results.py); a method's: not followed."""
        if getattr(op, "receiver", None) is not None:
            return UNKNOWN
        return returned_kind(Kinds, op.callee, call, self._atom, env)

    def _is_range(self, st):
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and self.an is not None):
            return False
        try:
            found, obj = self.an._resolve(it.func)
        except (AttributeError, TypeError, ValueError, LookupError, RuntimeError):
            return False        # an attribute of a user object that raises when read: not range
        return found and obj is builtins.range


class Kinds:
    """Kind inference over a normalized function (see the package docstring): the kinds problem
    solved once, and what the transformer asks of it."""

    def __init__(self, fn: ast.FunctionDef, analysis: "Analysis", params: dict[str, Kind]) -> None:
        self.an = analysis
        self._before: dict = {}     # id(stmt) -> env (name -> Kind) just before it
        self._result: dict = {}     # id(stmt) -> Kind of the name it assigns
        self._exit: dict = {}       # id(stmt) -> env just after a compound statement
        self.known = bool(params)
        env = {a.arg: params.get(a.arg, UNKNOWN) for a in fn.args.args + fn.args.kwonlyargs}
        for extra in (fn.args.vararg, fn.args.kwarg):
            if extra is not None:
                env[extra.arg] = UNKNOWN
        self._params = dict(env)
        self._targets = [st for st in ast.walk(fn) if isinstance(st, ast.Assign) and len(st.targets) == 1
                         and isinstance(st.targets[0], ast.Name)]
        flow = _Flow(analysis, self)
        end = flow.solve(fn.body, env)
        ends = [e for e in (flow.returned, end) if e is not None]
        self._end = _join_env(*ends) if len(ends) == 2 else (ends[0] if ends else {})

    def before(self, st: ast.stmt, name: str) -> Kind:
        k = self._before.get(id(st), {}).get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def bound_before(self, st: ast.stmt, name: str) -> bool:
        """Is name bound (on every path) just before st?"""
        return self._before.get(id(st), {}).get(name, _UNDEF) is not _UNDEF

    def result(self, st: ast.stmt) -> Kind:
        return self._result.get(id(st), UNKNOWN)

    def exit(self, st: ast.stmt, name: str) -> Kind:
        k = self._exit.get(id(st), {}).get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def exit_of_body(self, name: str) -> Kind:
        """The kind of name at the end of the function (where it returns)."""
        k = self._end.get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def assigned(self) -> Iterator[tuple[str, Kind]]:
        """(name, kind) of every parameter and of every assignment to a name."""
        yield from self._params.items()
        for st in self._targets:
            yield st.targets[0].id, self.result(st)

    def names(self) -> Iterator[tuple[int, str, Kind]]:
        """Every (statement id, name, kind) recorded: for tests and for whole-function checks."""
        for sid, env in self._before.items():
            for name, k in env.items():
                if k is not _UNDEF:
                    yield sid, name, k
