"""The rule table: one entry per differentiable operation, looked up by the called object.

A rule holds, for each differentiable parameter, an adjoint template (an expression in the
cotangent `g`, the result `ans` and the parameters) and a tangent template (an expression in
`<param>_dot`, `ans` and the parameters). Templates are parsed once and inlined by the
transformer, so the generated code shows the rule itself. User rules added with
`register_vjp`/`register_jvp` (srcad/rules/user.py) win over built-in ones.
"""
import ast
import contextlib
import inspect
from dataclasses import dataclass, field
from enum import Enum

from .fact_values import TYPED, Alias, InPlace, ResultKind


class Spelling(Enum):
    """Another spelling of a call, which the normalizer rewrites to the one a rule is for
    (frontend/normalize/spellings.py); a reduction's where=/initial= is a `WhereReduction`."""
    AXES = "axes"               # x.transpose(1, 0, 2) is x.transpose((1, 0, 2))
    MIN_MAX = "min-max"         # clip(min=, max=) is np.clip(x, min, max)
    SUBLISTS = "sublists"       # np.einsum's sublist form (literal lists) is its subscripts string


@dataclass(frozen=True)
class WhereReduction:
    """A reduction with `where=m` (or `initial=`) spelled as `np.<reducer>` of np.where(m, x, fill);
    `mean`: that sum divided by the count of m; `joiner` (max/min): `initial` joined in with
    `np.<joiner>` (np.maximum/np.minimum), and `initial` is also the fill."""
    reducer: str
    fill: object = None
    joiner: str = None
    mean: bool = False


@dataclass
class Rule:
    """The derivative rules of one function, method or operator: templates per parameter."""
    key: object                 # the function object, or ".name" for a method, or "op:Add"
    params: list                # parameter names, in call order
    signature: inspect.Signature
    vjp: dict = field(default_factory=dict)   # param -> ast expression template (None: no rule)
    jvp: dict = field(default_factory=dict)
    broadcast: bool = False     # elementwise with NumPy broadcasting: unbroadcast adjoints
    nondiff: bool = False       # outputs carry no derivative
    user_vjp: object = None     # register_vjp rule: rule(*args, **kw) -> (y, pullback)
    user_jvp: object = None     # register_jvp rule: rule(primals, tangents) -> (y, y_dot)
    needs_ans: bool = False     # some adjoint template reads the result
    primal: object = None       # how generated code computes the result, if not as the user wrote it
    primal_when: object = None  # predicate on the arguments' AST (param -> node): use `primal` only then
    primal_sparse: bool = False  # `primal` only matters for a sparse operand: where the kinds pass knows
    #                             every operand dense, the statement runs as written (`abs(y)`)
    primal_array_index: bool = False  # `primal` only matters for an index that may be an array: where
    #                             the kinds pass knows the index is an int, the statement runs as written
    dense_jvp: dict = field(default_factory=dict)   # param -> tangent template for operands the kinds
    #                             pass knows all dense (`x_dot @ y` for rt.matmul(x_dot, y))
    jvp_join: bool = False      # tangent pieces are added with rt.add (containers), not +
    accumulate: object = None   # how to add the adjoint into a live cotangent `__bar__` (fused, in place)
    discrete: tuple = ()        # parameters the result is piecewise constant in (declared by the rule)
    # -- facts the passes ask about the operation (see `declare`) --
    facts_only: bool = False    # an entry holding facts but no derivative: `lookup` does not return it
    subscript: bool = False     # applied by subscripting the object: np.r_[a, b] (its items the arguments)
    alias: Alias = None         # how the result shares memory with the first argument (receiver)
    inplace: InPlace = None     # what it writes into: its first argument (receiver), or a container's
    adds_items: bool = False    # an in-place method that puts its arguments into the receiver (append)
    pure: object = None         # True: no effects, a new value (may be dropped or reused); False: effects
    consumes: bool = False      # runtime helper that may update its first argument in place (rt.add)
    odd: tuple = None           # f(-a, ...) is -f(a, ...), the same value (a sum of its first argument
    #                             in an order that does not depend on signs) when the call passes only
    #                             these parameters (cleanup moves a negation out: transform/cleanup/negs.py)
    kind: ResultKind = None     # the result's kind, for the kinds pass
    fusions: dict = None        # runtime helper as a producer: {(consumer, position): (fused, dropped)}
    reads_items: bool = False   # reads only the items of its list operands (their kinds stay known)
    cast: str = None            # a cast: the parameter naming its dtype (integer/bool: no derivative)
    spelling: Spelling | WhereReduction = None  # another spelling of the call the normalizer
    #                             rewrites to this rule's (frontend/normalize/spellings.py)
    refusal: str = None         # a function with no rule: what to write instead (the MissingRuleError's fix)
    shape_only: tuple = ()      # the positions of the arguments it reads only for their type, dtype and
    #                             shape (0 for an attribute: its object), which transform/reverse/shapes.py
    #                             may read from another value of the same kind
    written_as: tuple = None    # an in-place call f(y, a, b) rewritten y[...] = rt.<helper>(y, a, b, option):
    #                             (helper, option) (frontend/inplace.py)

    def differentiable(self):
        return [p for p in self.params if p in self.vjp or p in self.jvp]

    def carries(self, param):
        """False when every mode's template for `param` is `0` (rt.seed's output value, a shape-only
        operand): activity does not flow through it, so forward over reverse skips the seed's tangent."""
        tables = [t for t in (self.vjp, self.jvp) if t]
        return not (tables and not (self.user_vjp or self.user_jvp) and all(
            isinstance(t.get(param), ast.Constant) and t[param].value == 0 for t in tables))


_TABLE = {}          # built-in rules
_FACTS_ONLY = {}     # entries of facts about operations that have no derivative rule (see `declare`)
_FILLED = [0]        # bumped by every defrule/declare: FactSet's cached sets are then made again
_USER = {}           # registered by the user; these win
generation = [0]     # bumped by every registration, so generated code made before it is not reused


def _parse(template):
    return None if template is None else ast.parse(template, mode="eval").body


def _signature(params):
    ns = {}
    exec(f"def _sig({params}): pass", ns)
    return inspect.signature(ns["_sig"])


def _mentions(tree, name):
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))


def defrule(keys, params, vjp=(), jvp=(), broadcast=False, primal=None, jvp_join=False, accumulate=None,
            primal_when=None, discrete="", primal_sparse=False, primal_array_index=False, dense_jvp=(),
            **facts):
    """Add a built-in rule. `vjp`/`jvp` are tuples aligned with the leading differentiable params;
    `primal`, a template for how the generated code computes the result (e.g. through a kernel),
    used where `primal_when(arguments' AST by param)` holds, if given.

    `discrete` names (space-separated) the parameters the result is piecewise constant in
    (integers, flags, shapes, axes, indices, dtypes): they get a zero template in each mode that
    has templates, so an active value there (a loop index that carries a tangent elsewhere:
    activity is flow-insensitive) contributes nothing. Any other parameter without a template
    raises MissingRuleError when a derivative flows into it; never a silent zero, and never
    decided by a parameter's name. `primal_sparse`, `primal_array_index`, `dense_jvp`: plain code
    where the kinds pass is sure (see Rule's fields; transform/templates.py)."""
    sig = _signature(params)
    names = list(sig.parameters)
    if "ans" in names:      # `ans` in a template is the result; a parameter must not shadow it
        raise ValueError(f"a rule parameter may not be named `ans`: {params}")
    discrete = tuple(discrete.split()) if isinstance(discrete, str) else tuple(discrete)
    unknown = [d for d in discrete if d not in names]
    if unknown:
        raise ValueError(f"discrete={' '.join(unknown)!r} names no parameter of ({params})")
    vjp = (vjp,) if isinstance(vjp, str) else tuple(vjp or ())
    jvp = (jvp,) if isinstance(jvp, str) else tuple(jvp or ())
    rule = Rule(None, names, sig, broadcast=broadcast)
    for name, t in zip(names, vjp):
        if t is not None:
            rule.vjp[name] = _parse(t)
    for name, t in zip(names, jvp):
        if t is not None:
            rule.jvp[name] = _parse(t)
    for table in (rule.vjp, rule.jvp):
        for name in discrete:
            if name in table:
                raise ValueError(f"`{name}` of ({params}) is declared discrete and has a template")
            if table:       # a mode with no templates at all stays without
                table[name] = _parse("0")
    dense_jvp = (dense_jvp,) if isinstance(dense_jvp, str) else tuple(dense_jvp or ())
    dense = {name: _parse(t) for name, t in zip(names, dense_jvp) if t is not None}
    if set(dense) - set(rule.jvp):
        raise ValueError(f"dense_jvp names a parameter with no jvp template: {sorted(set(dense) - set(rule.jvp))}")
    rule.needs_ans = any(_mentions(t, "ans") for t in rule.vjp.values())
    for key in keys if isinstance(keys, (list, tuple)) else [keys]:
        _put(key, Rule(key, names, sig, dict(rule.vjp), dict(rule.jvp), broadcast,
                       needs_ans=rule.needs_ans, primal=_parse(primal), jvp_join=jvp_join,
                       accumulate=_parse(accumulate), primal_when=primal_when, discrete=discrete,
                       primal_sparse=primal_sparse, primal_array_index=primal_array_index,
                       dense_jvp=dict(dense)))
    declare(keys, **facts)


def defnondiff(keys, params="*args, **kwargs", **facts):
    """Declare operations whose outputs carry no derivative (shapes, indices, comparisons, draws)."""
    sig = _signature(params)
    for key in keys if isinstance(keys, (list, tuple)) else [keys]:
        _put(key, Rule(key, list(sig.parameters), sig, nondiff=True))
    declare(keys, **facts)


def _put(key, rule):
    """Enter a rule, keeping the facts declared for its key before (a rule replaced, or facts first)."""
    old = _TABLE.get(key) or _FACTS_ONLY.pop(key, None)
    if old is not None:
        for name in _FACTS:
            setattr(rule, name, getattr(old, name))
    _TABLE[key] = rule
    _FILLED[0] += 1


_FACTS = ("subscript", "alias", "inplace", "adds_items", "pure", "consumes", "odd", "kind", "fusions", "reads_items", "cast",
          "spelling", "refusal", "written_as", "shape_only")


def declare(keys, **facts):
    """Record facts about operations (see the Rule fields after `discrete`) in their entries: the
    rule's own if it has one (declared next to it), else an entry of facts only, which gives no
    derivative (`lookup` skips it: an active value through it is still a MissingRuleError)."""
    unknown = set(facts) - set(_FACTS)
    if unknown:
        raise ValueError(f"unknown operation facts: {sorted(unknown)}")
    if not isinstance(facts.get("spelling", Spelling.AXES), (Spelling, WhereReduction)):
        raise TypeError(f"spelling={facts['spelling']!r}: declare a Spelling or a WhereReduction")
    for name, cls in TYPED.items():
        if facts.get(name) is not None and type(facts[name]) is not cls:
            raise TypeError(f"{name}={facts[name]!r}: declare a {cls.__name__} (one of {', '.join(cls.__members__)})")
    _FILLED[0] += 1
    for key in keys if isinstance(keys, (list, tuple)) else [keys]:
        entry = _TABLE.get(key) or _FACTS_ONLY.get(key)
        if entry is None:
            sig = _signature("*args, **kwargs")
            entry = _FACTS_ONLY[key] = Rule(key, list(sig.parameters), sig, facts_only=True)
        for name, value in facts.items():
            setattr(entry, name, value)


def facts(key):
    """The entry holding what the passes know about an operation (a function, ".method",
    ".attribute", "op:Name", "rt.helper"), derivative rule or not; None if it has none."""
    try:
        return _TABLE.get(key) or _FACTS_ONLY.get(key)
    except TypeError:  # unhashable
        return None


def keys_with(fact, value=True):
    """Every key whose entry has `fact` equal to `value` (for a pass that needs the whole set)."""
    return [k for table in (_TABLE, _FACTS_ONLY) for k, e in table.items()
            if (getattr(e, fact) == value if value is not ANY else getattr(e, fact))]


ANY = object()      # keys_with(fact, ANY): every key whose fact is set (truthy)


_HELPERS = {}        # name -> runtime helper, as generated code calls it (`rt.<name>`): see file_helpers


def file_helpers(namespace):
    """File the runtime helpers by the names generated code calls them by (`rt.<name>`): each
    callable of `namespace` (srcad.runtime, passed by rules/runtime_rules.py where it declares their
    rules and facts; the registry imports no runtime). HelperFacts reads their entries by name."""
    _HELPERS.update((name, obj) for name, obj in vars(namespace).items()
                    if callable(obj) and not name.startswith("__"))


class HelperFacts:
    """The names of the runtime helpers (`rt.<name>`) with one fact, as generated code names them:
    `name in HelperFacts("consumes")` reads the entry of the helper filed under that name
    (file_helpers), when asked."""

    def __init__(self, fact, value=ANY):
        self.fact, self.value = fact, value

    def __contains__(self, name):
        entry = facts(_HELPERS.get(name)) if isinstance(name, str) else None
        if entry is None:
            return False
        v = getattr(entry, self.fact)
        return bool(v) if self.value is ANY else v == self.value


def fact_of_chain(root, chain, fact):
    """The fact of the object `root.a.b` names (chain = ["a", "b"]) and of each object on the way
    (np.random.normal passes through np.random); also of the method key ".b" (np.add.at: ".at").
    Returns the values found, outermost first; attributes that do not exist end the walk."""
    out, obj = [], root
    for name in chain:
        entry = facts("." + name)
        if entry is not None and getattr(entry, fact) is not None:
            out.append(getattr(entry, fact))
        obj = getattr(obj, name, None) if obj is not None else None
        entry = facts(obj) if obj is not None else None
        if entry is not None and getattr(entry, fact) is not None:
            out.append(getattr(entry, fact))
    return out


class FactSet:
    """The keys with one fact, as a set the passes test membership in (`obj in VIEW_FUNCS`), read
    from the registry when asked (the rule modules fill it after the passes are imported).
    `methods=True`: the method names (".name" keys, without the dot); else callables (not strings)."""

    def __init__(self, fact, value=True, methods=False, prefix="."):     # value=ANY: any truthy value
        self.fact, self.value, self.methods, self.prefix = fact, value, methods, prefix
        self._cache, self._size = None, -1

    def _keys(self):
        if self._cache is None or self._size != _FILLED[0]:
            keys = keys_with(self.fact, self.value)
            if self.methods:
                found = {k[len(self.prefix):] for k in keys if isinstance(k, str) and k.startswith(self.prefix)}
            else:
                found = {k for k in keys if not isinstance(k, str)}
            self._cache, self._size = frozenset(found), _FILLED[0]
        return self._cache

    def __contains__(self, item):
        try:
            return item in self._keys()
        except TypeError:
            return False

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())


_RECORDERS = []      # sets collecting the key of every built-in rule looked up (see `recording`)


@contextlib.contextmanager
def recording():
    """Collect the keys of the built-in rules looked up inside the block: which rules a program
    exercises (the systematic test's coverage of the table)."""
    seen = set()
    _RECORDERS.append(seen)
    try:
        yield seen
    finally:
        _RECORDERS.remove(seen)


def lookup(key):
    """The rule for a called object (or method key), user rules first; None when there is none."""
    try:
        rule = _USER.get(key) or _TABLE.get(key)
    except TypeError:  # unhashable callee
        return None
    if _RECORDERS and rule is not None and _TABLE.get(rule.key) is rule:
        for seen in _RECORDERS:
            seen.add(rule.key)
    if rule is None and hasattr(key, "__func__"):   # bound method of a user object
        return lookup(key.__func__)
    return rule
