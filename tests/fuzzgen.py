"""The random-program generator of the property tests and the fuzzer (tests/test_property.py,
tests/test_property_modes.py, tests/test_property_hunt.py, benchmarks/fuzz.py).

Moved here from tests/test_property.py (whose docstring describes the programs) so that the fuzzer
can import it. `programs()` is the hypothesis strategy; `random_program(rng, ...)` draws the same
kind of program from a `random.Random` (no hypothesis: the fuzzer runs thousands). The extended
constructs of the fuzzer (`HUNT_FEATURES`: casts, decorated and nested-AD helpers, returns in every
branch shape and inside loops, data-dependent `while`, recursion, cumprod, diag, masked writes,
take, repeated-index writes, custom rules, sparse methods SciPy reorders in place) are drawn only
with `hunt=True`; `check_program` (fuzzcheck) runs one program against finite differences and
autograd.
"""
import contextlib
import importlib.util
import itertools
import random
import re
import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse
from hypothesis import strategies as st

import srcad

FEATURES = frozenset({
    "if",            # if/else on a data-dependent condition
    "for",           # for i in range(k)
    "for_array",     # for t in v / enumerate(v) / zip(v, w)
    "while",         # counter-controlled while loop
    "break",         # if <cond>: break / continue, inside loops
    "early_return",  # if <cond>: return np.sum(...)
    "subscript",     # v[i % 4] = ..., v[1:3] += ..., reads v[j], v[[2, 0, 3, 1]], v[::-1]
    "augassign",     # v += ..., v *= ...
    "kinks",         # np.maximum, np.minimum, np.abs, np.clip, np.where, np.max, np.min
    "reused_index",  # a later `for i in range(..)` reuses an earlier loop's index name
    "clamp",         # np.minimum(-5.0, s), np.maximum(v, 10.0), np.clip(s, 3.0, 4.0): a zeroed cotangent,
    #                  also through a broadcast (np.outer(a, b) * c[:, None])[1, 1]
    "alias",         # z = v then z += ... / z[i] = ... (one object, two names); out=, np.copyto, .fill;
    #                  views w = v[1:3] / v.reshape(2, 2) / v[::2] / v.T read before any write
    "alias_reject",  # w = v[1:3]; w *= ...; then v is read: exact or refused, never a wrong number
    "sparse",        # a COO with duplicate entries, or a CSR with unsorted, repeated column indices, built
    #                  from the inputs: A @ v, A.T @ v, A.sum(axis), A.multiply(D).data, reduce_max
    "dict",          # d = {"a": ..., "b": ...}; d["c"] = ...; reads d["a"], d.get("b", ...); loops over d and
    #                  d.items(); dict_helper(d, s), whose loops run over a dict argument
})
DICT_KEYS = ("a", "b", "c")
# the helper every program may call with one of its dicts (a dict argument: srcad cannot tell from
# the helper's code that `p` is a dict)
DICT_HELPER = """

def dict_helper(p, s):
    tot = 0.0
    for k in p:
        tot = tot + np.sum(np.sin(p[k]) * s)
    for k, v in p.items():
        tot = tot + np.sum(v * v) * len(k)
    return tot + np.sum(p.get("a", 0.5)) * s
"""

N = 4                 # every array in a program has shape (N,)
MARGIN = 1e-3         # minimum distance of every kink site from its kink
INPUT_TRIES = 8       # input draws per program before the program is rejected
MAX_MAGNITUDE = 1e5   # reject programs whose value or gradient exceeds this

ARR, SCAL = "arr", "scal"


# =============================================================================================
# Program generator
# =============================================================================================

@dataclass(frozen=True)
class E:
    """An expression: its plain and instrumented source text, and its kind (ARR or SCAL)."""
    plain: str
    instr: str
    kind: str


def _call(fname, *args, kind=None):
    kind = kind or (ARR if any(a.kind == ARR for a in args) else SCAL)
    return E(f"{fname}({', '.join(a.plain for a in args)})",
             f"{fname}({', '.join(a.instr for a in args)})", kind)


def _kink(np_name, kname, *args, extra="", kind=None, instrument=True):
    """`np.<np_name>(args)` in the program, `_k.<kname>(args)` in the instrumented copy."""
    kind = kind or (ARR if any(a.kind == ARR for a in args) else SCAL)
    inner_p = ", ".join(a.plain for a in args) + extra
    inner_i = ", ".join(a.instr for a in args) + extra
    return E(f"np.{np_name}({inner_p})",
             f"_k.{kname}({inner_i})" if instrument else f"np.{np_name}({inner_i})", kind)


def _fmt(template, *args, kind=None):
    """Fill `{0}`, `{1}`, ... of a template with the operands' text."""
    kind = kind or (ARR if any(a.kind == ARR for a in args) else SCAL)
    return E(template.format(*(a.plain for a in args)),
             template.format(*(a.instr for a in args)), kind)


def _const(text):
    return E(text, text, SCAL)


class _Frame:
    """A loop being generated: its integer index (if any) and whether it may jump."""

    def __init__(self, index):
        self.index = index
        self.jumps = False


class _Builder:
    def __init__(self, draw):
        self.draw = draw
        self.env = {"x": ARR, "y": ARR}    # live variables and their kinds
        self.params = {"x", "y"}          # never written in place (they are the caller's)
        self.iterated = set()             # arrays a for-loop is iterating over right now
        self.order = ["x", "y"]           # definition order, for the return expression
        self.active = {"x", "y"}          # may depend on the inputs (an over-estimate)
        self.counter = itertools.count(1)
        self.loops = []                   # stack of _Frame
        self.plain, self.instr = [], []
        self.features = set()
        self.loop_names = []              # loop indices made so far (a later loop may reuse one)
        self.pinned = set()               # two names of one array: neither is rebound (else one of
        #                                   them would be that array on some paths only: srcad refuses)
        self.rejecting = False            # allowed to write a program that srcad must reject
        self.sparse = False               # allowed to build sparse matrices
        self.extended = False             # reused loop indices, clamps, aliases and in-place writes
        self.expect_reject = None         # the line srcad must refuse, once one was written
        self.dicts = {}                   # live dicts: name -> {key: kind}

    # --- helpers -------------------------------------------------------------------------

    def choose(self, options):
        if isinstance(self.draw, random.Random):
            return self.draw.choice(list(options))
        return self.draw(st.sampled_from(options))

    def integer(self, lo, hi):
        if isinstance(self.draw, random.Random):
            return self.draw.randint(lo, hi)
        return self.draw(st.integers(lo, hi))

    def coin(self, p_true=0.5):
        return self.integer(0, 99) < int(100 * p_true)

    def new_name(self, prefix="v"):
        return f"{prefix}{next(self.counter)}"

    def line(self, depth, plain, instr=None):
        pad = "    " * (depth + 1)
        self.plain.append(pad + plain)
        self.instr.append(pad + (plain if instr is None else instr))

    def vars_of(self, kind):
        return [v for v, k in self.env.items() if k == kind]

    def writable_arrays(self):
        return [v for v in self.vars_of(ARR) if v not in self.params and v not in self.iterated]

    def mark(self, name, *texts):
        """`name` becomes active if any of `texts` mentions an active variable."""
        for text in texts:
            if self.active & set(re.findall(r"[A-Za-z_]\w*", text)):
                self.active.add(name)

    def is_active(self, *exprs):
        return any(self.active & set(re.findall(r"[A-Za-z_]\w*", e.plain)) for e in exprs)

    def kink(self, np_name, kname, *args, extra="", kind=None):
        """A kink site; instrumented only if it may depend on the inputs (else it is a constant
        of the program, wherever it sits)."""
        return _kink(np_name, kname, *args, extra=extra, kind=kind,
                     instrument=self.is_active(*args))

    def define(self, name, kind):
        self.env[name] = kind
        if name in self.order:
            self.order.remove(name)
        self.order.append(name)

    # --- expressions ---------------------------------------------------------------------

    def index_expr(self):
        """An index into a length-N array: a constant, or derived from a loop index."""
        ints = [f.index for f in self.loops if f.index is not None]
        if ints and self.coin(0.7):
            i = self.choose(ints)
            return self.choose([f"{i} % {N}", f"({i} + 1) % {N}", f"({N - 1} - {i} % {N})"])
        return str(self.integer(0, N - 1))

    def arr_leaf(self):
        if self.dict_reads(ARR) and self.coin(0.15):
            return self.dict_read(ARR)
        return E(*(2 * [self.choose(self.vars_of(ARR))]), ARR)

    def dict_reads(self, kind):
        return [(d, k) for d, keys in sorted(self.dicts.items()) for k, kk in sorted(keys.items()) if kk == kind]

    def dict_read(self, kind):
        """`d["a"]`, `d.get("a")`, or `d.get("z", <leaf>)` (a key it lacks: the default)."""
        self.features.add("dict")
        d, k = self.choose(self.dict_reads(kind))
        form = self.choose(["sub", "sub", "get", "default"])
        if form == "sub":
            return E(f'{d}["{k}"]', f'{d}["{k}"]', kind)
        if form == "get":
            return E(f'{d}.get("{k}")', f'{d}.get("{k}")', kind)
        other = E(*(2 * [self.choose(self.vars_of(kind))]), kind) if self.vars_of(kind) else _const("0.25")
        return E(f'{d}.get("z", {other.plain})', f'{d}.get("z", {other.instr})', kind)

    def scal_leaf(self):
        options = ["reduce"]
        if self.vars_of(SCAL):
            options += ["var", "var"]
        if "subscript" in FEATURES:
            options.append("item")
        pick = self.choose(options)
        if self.dict_reads(SCAL) and self.coin(0.15):
            return self.dict_read(SCAL)
        if pick == "var":
            return E(*(2 * [self.choose(self.vars_of(SCAL))]), SCAL)
        if pick == "item":
            return _fmt("{0}[" + self.index_expr() + "]", self.arr_leaf(), kind=SCAL)
        return self.reduction(0)

    def reduction(self, depth):
        a = self.arr_expr(depth)
        forms = ["sum", "mean", "dot", "matmul", "prod_cos", "method_sum", "lse"]
        if "kinks" in FEATURES:
            forms += ["max", "min", "method_max"]
        form = self.choose(forms)
        if form == "sum":
            return _call("np.sum", a, kind=SCAL)
        if form == "mean":
            return _call("np.mean", a, kind=SCAL)
        if form == "dot":
            return _call("np.dot", a, self.arr_leaf(), kind=SCAL)
        if form == "matmul":
            return _fmt("({0} @ {1})", a, self.arr_leaf(), kind=SCAL)
        if form == "prod_cos":
            return _fmt("np.prod(np.cos({0}))", a, kind=SCAL)
        if form == "method_sum":
            return _fmt("{0}.sum()", self.arr_leaf(), kind=SCAL)
        if form == "lse":
            return _call("scipy.special.logsumexp", a, kind=SCAL)
        if form == "max":
            return self.kink("max", "amax", a, kind=SCAL)
        if form == "min":
            return self.kink("min", "amin", a, kind=SCAL)
        leaf = self.arr_leaf()
        if not self.is_active(leaf):
            return _fmt("{0}.max()", leaf, kind=SCAL)
        return E(f"{leaf.plain}.max()", f"_k.amax({leaf.instr})", SCAL)

    def condition(self):
        """`<scalar> > c` (plain) and `_k.gt(<scalar>, c)` (instrumented)."""
        lhs = self.scal_expr(1)
        c = self.choose(["-0.45", "-0.1", "0.05", "0.2", "0.35"])
        if not self.is_active(lhs):
            return f"{lhs.plain} > {c}", f"{lhs.instr} > {c}"
        return f"{lhs.plain} > {c}", f"_k.gt({lhs.instr}, {c})"

    def arr_expr(self, depth):
        if depth <= 0 or self.coin(0.3):
            return self.arr_leaf()
        d = depth - 1
        forms = ["unary"] * 3 + ["binary"] * 3 + ["scalar_mix"] * 2 + ["smooth", "structural"]
        if "kinks" in FEATURES:
            forms.append("kink")
        if any(f.index is not None for f in self.loops):
            forms.append("loop_index")
        form = self.choose(forms)
        if form == "unary":
            fn = self.choose(["np.sin", "np.cos", "np.tanh", "np.arctan", "-"])
            a = self.arr_expr(d)
            return _fmt("(-{0})", a) if fn == "-" else _call(fn, a)
        if form == "binary":
            a, b = self.arr_expr(d), self.arr_expr(d)
            template = self.choose([
                "({0} + {1})", "({0} - {1})", "({0} * {1})", "(np.sin({0}) * {1})",
                "({0} / (2.0 + np.sin({1})))", "((1.5 + np.cos({0})) ** np.sin({1}))",
                "(0.5 * {0} + {1})",
            ])
            return _fmt(template, a, b)
        if form == "scalar_mix":
            a, s = self.arr_expr(d), self.scal_expr(d)
            template = self.choose(["({0} * {1})", "({1} - {0})", "({0} + np.tanh({1}))",
                                    "({0} / (1.0 + {1} * {1}))"])
            return _fmt(template, a, s, kind=ARR)
        if form == "smooth":
            a = self.arr_expr(d)
            template = self.choose(["np.exp(0.3 * np.tanh({0}))", "np.exp(0.3 * {0})",
                                    "np.log1p({0} * {0})", "np.sqrt(1.0 + {0} * {0})",
                                    "({0} ** 2)", "np.log(1.5 + np.sin({0}))",
                                    "np.expm1(0.2 * {0})"])
            return _fmt(template, a)
        if form == "structural":
            a, b = self.arr_expr(d), self.arr_expr(d)
            options = [
                "np.sum(np.stack([{0}, {1}]), axis=0)",
                "np.mean(np.stack([{0}, {1}], axis=1), axis=1)",
                "({0}.reshape(2, 2) @ {1}.reshape(2, 2)).reshape(-1)",
                "np.dot({0}.reshape(2, 2).T, {1}.reshape(2, 2)).reshape(4)",
                "np.concatenate([{0}[:2] * {1}[2:], {0}[2:]])",
                "(np.transpose({0}.reshape(2, 2)).reshape(-1) * {1})",
            ]
            if "subscript" in FEATURES:
                options += ["({0}[::-1] * {1})", "({0}[[2, 0, 3, 1]] + {1})",
                            "np.concatenate([{0}[1:], {1}[:1]])"]
            return _fmt(self.choose(options), a, b)
        if form == "loop_index":
            i = self.choose([f.index for f in self.loops if f.index is not None])
            a = self.arr_expr(d)
            return _fmt(self.choose(["({0} * (1.0 + 0.1 * " + i + "))",
                                     "({0} + 0.1 * " + i + ")"]), a)
        # kinks
        a, b = self.arr_expr(d), self.arr_expr(d)
        pick = self.choose(["maximum", "minimum", "abs", "clip", "where"])
        if pick in ("maximum", "minimum"):
            if a.plain == b.plain:
                # np.maximum(v, v) is exactly v; the tie rule (0.5 + 0.5) gives its derivative.
                return _call("np." + pick, a, b)
            return self.kink(pick, pick, a, b)
        if pick == "abs":
            return self.kink("abs", "abs", a)
        if pick == "clip":
            return self.kink("clip", "clip", a, extra=", -0.45, 0.45")
        c = self.choose(["0.05", "0.3", "-0.2"])
        gt = "_k.gt({0}, " + c + ")" if self.is_active(a) else "({0} > " + c + ")"
        return E(f"np.where({a.plain} > {c}, {b.plain}, 0.5 * {a.plain})",
                 f"np.where({gt.format(a.instr)}, {b.instr}, 0.5 * {a.instr})", ARR)

    def scal_expr(self, depth):
        if depth <= 0 or self.coin(0.4):
            return self.scal_leaf()
        d = depth - 1
        forms = ["reduce", "reduce", "unary", "binary"]
        if "clamp" in FEATURES and self.extended:
            forms.append("clamp")
        form = self.choose(forms)
        if form == "clamp":
            return self.clamp(d)
        if form == "reduce":
            return self.reduction(d)
        if form == "unary":
            return _fmt(self.choose(["np.sin({0})", "np.tanh({0})", "({0} * {0})",
                                     "np.cos(0.5 * {0})", "np.exp(0.2 * np.tanh({0}))"]),
                        self.scal_expr(d))
        a, b = self.scal_expr(d), self.scal_expr(d)
        return _fmt(self.choose(["({0} + {1})", "({0} * {1})", "({0} - 0.5 * {1})"]), a, b)

    def expr(self, kind, depth=2):
        return self.arr_expr(depth) if kind == ARR else self.scal_expr(depth)

    # --- statements ----------------------------------------------------------------------

    def clamp(self, depth):
        """A clamp whose constant side wins (almost) always, so the cotangent it passes on is an
        exact zero: alone, or ahead of an operand broadcast against it."""
        self.features.add("clamp")
        s = self.scal_expr(depth)
        pick = self.choose(["min", "max", "clip", "outer"])
        if pick == "min":
            return self.kink("minimum", "minimum", _const("-5.0"), s, kind=SCAL)
        if pick == "max":
            return self.kink("maximum", "maximum", s, _const("5.0"), kind=SCAL)
        if pick == "clip":
            return self.kink("clip", "clip", s, extra=", 3.0, 4.0", kind=SCAL)
        a, b, c = self.arr_leaf(), self.arr_leaf(), self.arr_leaf()
        inner = _fmt("(np.outer({0}, {1}) * {2}[:, None])[1, 2]", a, b, c, kind=SCAL)
        return self.kink("minimum", "minimum", _const("-5.0"), inner, kind=SCAL)

    def statement(self, depth):
        kinds = ["assign"] * 5 + ["overwrite"] * 4 + ["init"]
        writable = self.writable_arrays()
        if "augassign" in FEATURES:
            kinds += ["augassign"]
        if "sparse" in FEATURES and self.sparse:
            kinds += ["sparse"]
        if "alias" in FEATURES and writable and self.extended:
            kinds += ["out", "view_read"] + (["alias_whole"] if depth == 0 and not self.loops else [])
        if "alias_reject" in FEATURES and writable and self.rejecting and self.expect_reject is None:
            kinds += ["view_write"] * 4
        if "subscript" in FEATURES:
            kinds += ["copy"]
            if writable:
                kinds += ["subwrite"] * (3 if self.loops else 1)
        if depth < 2:
            if "if" in FEATURES:
                kinds += ["if"] * 2
            if "for" in FEATURES:
                kinds += ["for"] * 2
            if "for_array" in FEATURES:
                kinds += ["for_array"]
            if "while" in FEATURES:
                kinds += ["while"]
        if "dict" in FEATURES and self.extended:
            kinds += ["dict"]
            if self.dicts:
                kinds += ["dict_write", "dict_loop", "dict_helper"]
        if self.loops and "break" in FEATURES:
            kinds += ["jump"]
        if depth == 0 and "early_return" in FEATURES:
            kinds += ["early_return"]
        getattr(self, "st_" + self.choose(kinds))(depth)

    def body(self, depth, lo=1, hi=3):
        for _ in range(self.integer(lo, hi)):
            self.statement(depth)

    def st_assign(self, depth, name=None, kind=None):
        kind = kind or (ARR if self.coin(0.7) else SCAL)
        name = name or self.new_name()
        e = self.fresh(self.expr(kind))
        self.line(depth, f"{name} = {e.plain}", f"{name} = {e.instr}")
        self.define(name, kind)
        self.mark(name, e.plain)

    @staticmethod
    def fresh(e):
        """Never `v = w`, `v = w[0]` or `v = d["a"]`: an alias, then written in place, would change
        `w` (or an input, or the dict's value); and `w[0]` of an array srcad cannot tell is 1-d may be
        a view, which a later write into w makes srcad refuse."""
        if e.plain.isidentifier() or re.fullmatch(r'\w+(\[[^\[\]]*\]|\.get\(.*\))', e.plain):
            return _call("np.sin", e)
        return e

    def st_dict(self, depth):
        """`d = {"a": <array>, "b": <scalar>}` (two or three constant keys)."""
        name = self.new_name("d")
        keys = DICT_KEYS[:self.integer(1, 3)]
        kinds = {k: self.choose([ARR, SCAL]) for k in keys}
        vals = [self.fresh(self.expr(kinds[k], 1)) for k in keys]
        plain = ", ".join(f'"{k}": {v.plain}' for k, v in zip(keys, vals))
        instr = ", ".join(f'"{k}": {v.instr}' for k, v in zip(keys, vals))
        self.line(depth, f"{name} = {{{plain}}}", f"{name} = {{{instr}}}")
        self.dicts[name] = kinds
        self.mark(name, plain)
        self.features.add("dict")

    def st_dict_write(self, depth):
        """`d["c"] = ...`: a new key (only where every path runs it), or an existing key again."""
        name = self.choose(sorted(self.dicts))
        keys = self.dicts[name]
        new = [k for k in DICT_KEYS if k not in keys]
        if new and depth == 0 and not self.loops and self.coin():
            key, kind = new[0], self.choose([ARR, SCAL])
        else:
            key = self.choose(sorted(keys))
            kind = keys[key]
        me = E(f'{name}["{key}"]', f'{name}["{key}"]', kind)
        if key in keys and self.coin():
            e = _fmt(self.choose(["0.9 * {0} + {1}", "np.cos({0}) * {1}"]), me, self.expr(kind, 1))
        else:
            e = self.fresh(self.expr(kind, 1))
        self.line(depth, f'{name}["{key}"] = {e.plain}', f'{name}["{key}"] = {e.instr}')
        self.dicts[name] = dict(keys, **{key: kind})
        self.mark(name, e.plain)
        self.features.add("dict")

    def st_dict_loop(self, depth):
        """An accumulation over a dict: `for k in d` or `for k, t in d.items()`."""
        name = self.choose(sorted(self.dicts))
        acc, k, t = self.new_name("s"), self.new_name("k"), self.new_name("t")
        s = self.scal_leaf()
        self.line(depth, f"{acc} = 0.0")
        if self.coin():
            self.line(depth, f"for {k} in {name}:")
            self.line(depth + 1, f"{acc} = {acc} + np.sum(np.sin({name}[{k}]) * {s.plain})",
                      f"{acc} = {acc} + np.sum(np.sin({name}[{k}]) * {s.instr})")
        else:
            self.line(depth, f"for {k}, {t} in {name}.items():")
            self.line(depth + 1, f"{acc} = {acc} + np.sum({t} * {t}) * {s.plain}",
                      f"{acc} = {acc} + np.sum({t} * {t}) * {s.instr}")
        self.define(acc, SCAL)
        self.mark(acc, name + " " + s.plain)
        self.features.add("dict")

    def st_dict_helper(self, depth):
        """`v = dict_helper(d, s)`: a dict passed to a function that loops over its argument."""
        name = self.choose(sorted(self.dicts))
        s = self.scal_expr(1)
        v = self.new_name()
        self.line(depth, f"{v} = dict_helper({name}, {s.plain})", f"{v} = dict_helper({name}, {s.instr})")
        self.define(v, SCAL)
        self.mark(v, name + " " + s.plain)
        self.features.add("dict")

    def st_init(self, depth):
        name = self.new_name()
        if self.coin():
            self.line(depth, f"{name} = 0.0")
            self.define(name, SCAL)
        else:
            self.line(depth, f"{name} = np.zeros({N})")
            self.define(name, ARR)

    def st_copy(self, depth):
        name = self.new_name()
        src = self.choose(self.vars_of(ARR))
        text = self.choose([f"{src}.copy()", f"np.zeros({N})", f"np.ones({N}) * 0.5"])
        self.line(depth, f"{name} = {text}")
        self.define(name, ARR)
        self.mark(name, text)

    def st_overwrite(self, depth):
        # Any variable, parameters and loop variables included: rebinding never writes into
        # the old value (not even into an array a loop is iterating over).
        name = self.choose(sorted(set(self.env) - self.pinned) or sorted(self.env))
        if name in self.pinned:
            return self.st_assign(depth)
        kind = self.env[name]
        me = E(name, name, kind)
        self_part = _fmt(self.choose(["np.cos({0})", "np.sin({0})", "0.9 * {0}",
                                      "np.tanh({0})"]), me)
        e = self.expr(kind, 1)
        rhs = _fmt(self.choose(["{0} + {1}", "{0} * {1}", "{0} - 0.5 * {1}"]), self_part, e)
        self.line(depth, f"{name} = {rhs.plain}", f"{name} = {rhs.instr}")
        self.define(name, kind)
        self.mark(name, rhs.plain)

    def st_augassign(self, depth):
        candidates = [v for v in self.env if v not in self.params and v not in self.iterated]
        if not candidates:
            return self.st_assign(depth)
        name = self.choose(candidates)
        kind = self.env[name]
        op = self.choose(["+=", "-=", "*="])
        e = self.expr(kind if kind == SCAL else self.choose([ARR, SCAL]), 1)
        if op == "*=":
            e = _fmt("np.cos({0})", e)
        self.line(depth, f"{name} {op} {e.plain}", f"{name} {op} {e.instr}")
        self.mark(name, e.plain)
        self.features.add("augassign")

    def st_subwrite(self, depth):
        name = self.choose(self.writable_arrays())
        other = self.arr_leaf()
        form = self.choose(["item", "item", "slice", "slice_aug"])
        if form == "item":
            idx = self.index_expr()
            if self.coin():
                s = self.scal_expr(1)
                self.line(depth, f"{name}[{idx}] = {s.plain}", f"{name}[{idx}] = {s.instr}")
            else:
                j = self.index_expr()
                self.line(depth, f"{name}[{idx}] = {name}[{idx}] * 0.9 + {other.plain}[{j}]")
        elif form == "slice":
            s = self.scal_expr(0)
            self.line(depth, f"{name}[1:3] = {name}[1:3] * 0.5 + {other.plain}[0:2] * {s.plain}",
                      f"{name}[1:3] = {name}[1:3] * 0.5 + {other.instr}[0:2] * {s.instr}")
        else:
            self.line(depth, f"{name}[2:] += np.sin({other.plain}[:2])")
        self.mark(name, self.plain[-1].split("=", 1)[1])
        self.features.add("subscript")

    def _branch(self, depth, forced=None):
        """Generate a branch body; return the variables it newly defined, with kinds."""
        saved_env, saved_order, saved_dicts = dict(self.env), list(self.order), dict(self.dicts)
        self.body(depth + 1, 1, 2)
        for name, kind in (forced or {}).items():
            if self.env.get(name) != kind:
                self.st_assign(depth + 1, name=name, kind=kind)
        new = {v: k for v, k in self.env.items() if v not in saved_env}
        self.env, self.order, self.dicts = saved_env, saved_order, saved_dicts
        return new

    def st_if(self, depth):
        cond_p, cond_i = self.condition()
        self.line(depth, f"if {cond_p}:", f"if {cond_i}:")
        new = self._branch(depth)
        if self.coin(0.75):
            self.line(depth, "else:")
            self._branch(depth, forced=new)
            for name, kind in new.items():       # defined on both paths: live after the if
                self.define(name, kind)
        self.features.add("if")

    @contextlib.contextmanager
    def _loop(self, depth, header, index, bound=()):
        """Emit a loop header; the body is generated inside the `with` block.

        `bound` lists the loop's own variables (kept out of the environment after the loop).
        Variables first defined in the body stay live after the loop (every loop runs at least
        once) unless the body can `break` or `continue` before reaching them.
        """
        self.line(depth, header)
        frame = _Frame(index)
        self.loops.append(frame)
        saved_env, saved_order, saved_dicts = dict(self.env), list(self.order), dict(self.dicts)
        for name, kind in bound:
            self.env[name] = kind
            self.mark(name, header.split(" in ", 1)[1])
        try:
            yield
        finally:
            self.loops.pop()
        new = {v: k for v, k in self.env.items() if v not in saved_env}
        self.env, self.order, self.dicts = saved_env, saved_order, saved_dicts
        if not frame.jumps:                      # the body ran to its end at least once
            for name, kind in new.items():
                if name not in dict(bound):
                    self.define(name, kind)

    def loop_index(self):
        """A fresh loop index, or (sometimes) the name of an earlier loop's index that no enclosing
        loop is using and that is not a live variable."""
        busy = {f.index for f in self.loops}
        free = [i for i in self.loop_names if i not in busy and i not in self.env]
        if "reused_index" in FEATURES and self.extended and free and self.coin(0.8):
            self.features.add("reused_index")
            return self.choose(free)
        i = self.new_name("i")
        self.loop_names.append(i)
        return i

    def st_for(self, depth):
        i = self.loop_index()
        k = self.integer(1, 4)
        with self._loop(depth, f"for {i} in range({k}):", i):
            self.body(depth + 1, 1, 3)
        self.features.add("for")

    def st_for_array(self, depth):
        arr = self.choose(self.vars_of(ARR))
        t = self.new_name("t")
        form = self.choose(["plain", "enumerate", "zip"])
        if form == "plain":
            header, index, bound = f"for {t} in {arr}:", None, [(t, SCAL)]
        elif form == "enumerate":
            i = self.loop_index()
            header, index, bound = f"for {i}, {t} in enumerate({arr}):", i, [(t, SCAL)]
        else:
            other = self.choose(self.vars_of(ARR))
            u = self.new_name("u")
            header, index, bound = f"for {t}, {u} in zip({arr}, {other}):", None, \
                [(t, SCAL), (u, SCAL)]
        # No in-place writes to an array while a loop iterates over it (rebinding is fine).
        saved = set(self.iterated)
        self.iterated |= {arr} | ({other} if form == "zip" else set())
        with self._loop(depth, header, index, bound):
            self.body(depth + 1, 1, 3)
        self.iterated = saved
        self.features.add("for_array")

    def st_while(self, depth):
        j = self.new_name("j")
        k = self.integer(1, 4)
        self.line(depth, f"{j} = 0")
        with self._loop(depth, f"while {j} < {k}:", j):
            self.line(depth + 1, f"{j} += 1")
            self.body(depth + 1, 1, 3)
        self.features.add("while")

    def st_alias_whole(self, depth):
        """`z = v` (a second name for the same array), then a write through one of the names;
        both names then hold the written array."""
        base = self.choose(self.writable_arrays())
        z = self.new_name("z")
        self.pinned |= {z, base}
        self.line(depth, f"{z} = {base}")
        self.define(z, ARR)
        self.mark(z, base)
        target = self.choose([z, base])
        form = self.choose(["aug", "aug", "item", "slice"])
        if form == "aug":
            e = self.expr(self.choose([ARR, SCAL]), 1)
            op = self.choose(["+=", "-=", "*="])
            if op == "*=":
                e = _fmt("np.cos({0})", e)
            self.line(depth, f"{target} {op} {e.plain}", f"{target} {op} {e.instr}")
        elif form == "item":
            s = self.scal_expr(1)
            idx = self.index_expr()
            self.line(depth, f"{target}[{idx}] = {s.plain}", f"{target}[{idx}] = {s.instr}")
        else:
            e = self.expr(ARR, 1)
            self.line(depth, f"{target}[1:3] += np.sin({e.plain}[:2])", f"{target}[1:3] += np.sin({e.instr}[:2])")
        self.mark(z, self.plain[-1])
        self.mark(base, self.plain[-1])
        self.features.add("alias")

    def st_out(self, depth):
        """In-place results: `np.f(a, b, out=v)`, `np.copyto(v, e)`, `v.fill(s)`."""
        v = self.choose(self.writable_arrays())
        form = self.choose(["out", "out_result", "copyto", "fill"])
        if form in ("out", "out_result"):
            a, b = self.arr_expr(1), self.expr(self.choose([ARR, SCAL]), 1)
            fn = self.choose(["np.multiply", "np.add", "np.subtract"])
            call_p, call_i = f"{fn}({a.plain}, {b.plain}, out={v})", f"{fn}({a.instr}, {b.instr}, out={v})"
            if form == "out_result":
                r = self.new_name("r")
                if depth or self.loops:     # r is v: only where it is the same on every path
                    r = None
                    self.line(depth, call_p, call_i)
            if form == "out_result" and r is not None:
                self.pinned |= {r, v}
                self.line(depth, f"{r} = {call_p}", f"{r} = {call_i}")
                self.define(r, ARR)
                self.mark(r, call_p)
            elif form == "out":
                self.line(depth, call_p, call_i)
        elif form == "copyto":
            e = self.expr(self.choose([ARR, SCAL]), 1)
            self.line(depth, f"np.copyto({v}, {e.plain})", f"np.copyto({v}, {e.instr})")
        else:
            s = self.scal_expr(1)
            self.line(depth, f"{v}.fill({s.plain})", f"{v}.fill({s.instr})")
        self.mark(v, self.plain[-1].replace(f"out={v}", ""))
        if form == "out_result" and r is not None:
            self.mark(r, v)
        self.features.add("alias")

    def st_view_read(self, depth):
        """A view of an array, read at once and never again (a later write into the array is fine)."""
        base = self.choose(self.vars_of(ARR))
        w = self.new_name("w")
        view = self.choose([f"{base}[1:3]", f"{base}.reshape(2, 2)", f"{base}[::2]", f"{base}[::-1]",
                            f"np.reshape({base}, (2, 2)).T"])
        self.line(depth, f"{w} = {view}")
        name = self.new_name()
        self.line(depth, f"{name} = np.sum(np.sin({w}) * {w})")
        self.define(name, SCAL)
        self.mark(name, base)
        self.features.add("alias")

    def st_view_write(self, depth):
        """A write through a view, then the viewed array is read: srcad must make it exact (a slice
    of one array: written back) or refuse the program."""
        base = self.choose(self.writable_arrays())
        w = self.new_name("w")
        self.line(depth, f"{w} = {base}[1:3]")
        if self.coin():
            s = self.scal_expr(0)
            self.line(depth, f"{w} *= np.cos({s.plain})", f"{w} *= np.cos({s.instr})")
        else:
            s = self.scal_expr(0)
            self.line(depth, f"{w}[0] = {s.plain}", f"{w}[0] = {s.instr}")
        self.expect_reject = len(self.plain)        # the line number in the function's file (see build)
        name = self.new_name()
        self.line(depth, f"{name} = {base} * 1.0")
        self.define(name, ARR)
        self.mark(name, base)
        self.features.add("alias_reject")

    def st_sparse(self, depth):
        """A sparse matrix built from the inputs, in a form scipy does not keep canonical (a COO
        with duplicate entries; a CSR with unsorted and repeated column indices), used once."""
        vals = self.arr_expr(1)
        a = self.new_name("A")
        if self.coin():
            text = ("scipy.sparse.coo_array(({0}[[0, 1, 2, 3, 0, 2]] * 1.5, (np.array([0, 1, 1, 3, 0, 2]), "
                    "np.array([1, 2, 2, 0, 1, 3]))), shape=(4, 4))")
        else:
            text = ("scipy.sparse.csr_array((np.cos({0}[[0, 1, 2, 3, 0, 2, 1]]), np.array([2, 1, 1, 0, 3, 3, 0]), "
                    "np.array([0, 3, 4, 6, 7])), shape=(4, 4))")
        self.line(depth, f"{a} = {text.format(vals.plain)}", f"{a} = {text.format(vals.instr)}")
        v, w = self.arr_leaf(), self.arr_leaf()
        use = self.choose(["{0} @ {1}", "{0}.T @ np.sin({1})", "{0}.sum(axis=0) * {1}", "{0}.sum(axis=1) + {1}",
                           "np.sum({0}.multiply(np.outer({1}, {2})).data) * {1}", "rowmax"])
        name = self.new_name()
        if use == "rowmax":
            live = self.is_active(vals)
            self.line(depth, f"{name} = srcad.sparse.reduce_max({a}, axis=1) * {v.plain}",
                      f"{name} = {'_k.rowmax' if live else 'srcad.sparse.reduce_max'}({a}, axis=1) * {v.plain}")
        else:
            self.line(depth, f"{name} = {use.format(a, v.plain, w.plain)}")
        self.define(name, ARR)
        self.mark(name, vals.plain + " " + v.plain + " " + w.plain)
        self.features.add("sparse")

    def st_jump(self, depth):
        cond_p, cond_i = self.condition()
        word = self.choose(["break", "continue"])
        self.line(depth, f"if {cond_p}:", f"if {cond_i}:")
        self.line(depth + 1, word)
        self.loops[-1].jumps = True
        self.features.add(word)

    def st_early_return(self, depth):
        cond_p, cond_i = self.condition()
        e = self.return_expr()
        self.line(depth, f"if {cond_p}:", f"if {cond_i}:")
        self.line(depth + 1, f"return np.sum({e.plain})", f"return np.sum({e.instr})")
        self.features.add("early_return")

    def return_expr(self):
        """A combination of the most recently defined variables (and maybe older ones)."""
        recent = [v for v in reversed(self.order) if v in self.env]
        first = [v for v in recent if v in self.active][:1] or recent[:1]
        names = first + [self.choose(recent) for _ in range(self.integer(0, 2))]
        terms = []
        for name in names:
            leaf = E(name, name, self.env[name])
            template = self.choose(["{0}", "{0}", "np.sin({0})", "({0} * {0})"])
            terms.append(_fmt(template, leaf))
        out = terms[0]
        for t in terms[1:]:
            out = _fmt(self.choose(["{0} + {1}", "{0} * {1}"]), out, t)
        return out

    def build(self):
        self.body(0, 3, 7)
        e = self.return_expr()
        self.line(0, f"return np.sum({e.plain})", f"return np.sum({e.instr})")
        header = ("import numpy as np\nimport scipy.sparse\nimport scipy.special\nimport srcad\n"
                  + DICT_HELPER + "\n\ndef prog(x, y):\n")
        reject = None if self.expect_reject is None else header.count("\n") + self.expect_reject
        return Program(header + "\n".join(self.plain) + "\n",
                       header + "\n".join(self.instr) + "\n", frozenset(self.features), reject)


class Program:
    """A generated program (not a dataclass, so that hypothesis prints it briefly)."""

    def __init__(self, source, instrumented, features, reject_line=None):
        self.source = source              # what srcad differentiates
        self.instrumented = instrumented  # the same program calling `_k` at every kink site
        self.features = features
        self.reject_line = reject_line    # set: srcad must refuse the program, naming this line

    def __repr__(self):  # shown in "Falsifying example"; the source itself is in the message
        return f"Program(<{len(self.source.splitlines())} lines, printed above>)"


@st.composite
def programs(draw, rejecting=False, sparse=False, extended=True):
    """Random programs `prog(x, y)` (x, y: float64 arrays of shape (4,)) returning a scalar, as
    `Program` objects: `.source` (what srcad differentiates), `.instrumented` (the same program
    reporting how far each kink site is from its kink, see `find_inputs`), `.features`.

    With `rejecting=False` (the default) every program is one srcad must differentiate exactly.
    With `rejecting=True` a program may also write through a view and then read the viewed array;
    then `.reject_line` is set and srcad must raise UnsupportedSyntaxError naming that line.
    With `sparse=True` a program may build sparse matrices from the inputs in non-canonical forms
    (COO duplicates, unsorted CSR indices); tests/test_sparse_duplicates_second_order.py takes
    them to second order.
    With `extended=True` (the default) a program may also reuse loop indices, clamp a value with a
    constant (a zero cotangent), and alias arrays and write them in place (out=, copyto, fill, `z = v`)."""
    b = _Builder(draw)
    b.sparse, b.extended = sparse, extended
    b.rejecting = rejecting and draw(st.integers(0, 99)) < 12
    return b.build()


# =============================================================================================
# The fuzzer's constructs: where the bugs were (issue 28)
# =============================================================================================

HUNT_FEATURES = frozenset({
    "cast",                  # casts to int or bool: (b > c).astype(float), np.asarray(b * 3, dtype=int), astype(bool)
    "cast_float",            # casts that keep the values: astype(float), np.asarray(a, dtype=np.float64)
    "decorated",             # helpers wrapped by a decorator, with and without functools.wraps
    "nested_ad",             # srcad.grad(helper)(...) and srcad.grad(srcad.grad(helper)) inside the program
    "return_branches",       # the program ends in if/elif/else (or if/else) whose branches all return
    "return_in_loop",        # `if <cond>: return ...` inside a loop
    "while_data",            # while <data> < c and j < 4: (a data-dependent trip count)
    "recursion",             # a recursive helper rec(a, n)
    "cumprod",               # np.cumprod, np.cumsum
    "cumprod_zero",          # np.cumprod of an input with exact zeros
    "diag",                  # np.diag of a vector and of a matrix
    "masked_write",          # m = a > c; v[m] = ..., v[m] *= ..., v[~m] += ...
    "take",                  # np.take / .take with permuted and repeated indices
    "repeated_index_write",  # v[[0, 2, 0, 1]] = ..., v[[1, 1, 3]] += ...
    "custom_rule",           # a srcad.custom_vjp and a srcad.custom_jvp helper
    "sparse_methods",        # .power, .multiply, .sum on non-canonical sparse matrices built inside
})

HUNT_HEADER = """
import functools


def _twice(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return 2.0 * fn(*args)
    return wrapper


def _plus_one(fn):
    def wrapper(*args):
        return fn(*args) + 1.0
    return wrapper


@_twice
def deco_wraps(a, s):
    return np.sin(a) * s + a * a


@_plus_one
def deco_plain(a, s):
    return np.cos(a) * s


def rec(a, n):
    if n == 0:
        return a
    return rec(np.sin(a) * 0.9 + 0.1 * a, n - 1)


def rec_data(a, s):
    if s > 1.0:
        return a
    return rec_data(np.sin(a) + 0.1 * a, s + 0.45)


def inner_loss(a, s):
    return np.sum(np.sin(a) * s + 0.5 * a ** 2 * np.cos(s))


def inner_scalar(t):
    return np.sin(t) * t + t ** 3


@srcad.custom_vjp
def softclip(a):
    return np.tanh(a)


def _softclip_fwd(a):
    t = np.tanh(a)
    return t, t


def _softclip_bwd(t, dy):
    return (dy * (1.0 - t * t),)


softclip.defvjp(_softclip_fwd, _softclip_bwd)


@srcad.custom_jvp
def softplus(a):
    return np.log1p(np.exp(a))


def _softplus_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    return np.log1p(np.exp(a)), da / (1.0 + np.exp(-a))


softplus.defjvp(_softplus_jvp)
"""


class _Hunter(_Builder):
    """The generator with the fuzzer's constructs (`self.hunt`: the HUNT_FEATURES allowed)."""

    hunt = HUNT_FEATURES
    p_hunt = 0.35          # share of statements and expressions drawn from the constructs below

    def on(self, feature):
        return feature in self.hunt

    # --- expressions ---------------------------------------------------------------------

    def arr_expr(self, depth):
        forms = [f for f in ("cumprod", "diag", "take", "cast", "decorated", "recursion", "custom_rule")
                 if self.on(f)] + (["cast"] if self.on("cast_float") and not self.on("cast") else []) + \
            (["cumprod"] if self.on("cumprod_zero") and not self.on("cumprod") else [])
        if depth > 0 and forms and self.coin(self.p_hunt):
            return getattr(self, "ex_" + self.choose(forms))(depth - 1)
        return super().arr_expr(depth)

    def ex_cumprod(self, d):
        self.features.add("cumprod")
        a = super().arr_expr(d)
        b = self.arr_leaf()
        forms = ["np.cumprod(1.0 + 0.3 * np.sin({0}))", "(np.cumsum({0}) * 0.5)",
                 "np.cumprod(np.cos({0}) * 0.5 + 1.0)[::-1]",
                 "np.cumprod(np.outer(np.cos({0}), {1}) * 0.5 + 1.0, axis=1)[:, -1]",
                 "np.cumsum(np.outer({0}, {1}), axis=0)[-1]"]
        if self.on("cumprod_zero") and self.coin(0.4):
            # an input that may hold exact zeros (an np.zeros array, or a zero put in)
            self.features.add("cumprod_zero")
            forms = ["np.cumprod({0} * 0.9)", "np.cumprod({0} * np.array([1.0, 0.0, 1.0, 1.0]))"]
        return _fmt(self.choose(forms), a, b)

    def ex_diag(self, d):
        self.features.add("diag")
        a, b = super().arr_expr(d), self.arr_leaf()
        return _fmt(self.choose(["np.diag(np.outer({0}, {1}))", "(np.diag({0}) @ {1})",
                                 "np.diag(np.diag({0}) + np.outer({0}, {1}))", "np.diag({0}.reshape(2, 2) * 1.0, k=0).repeat(2)",
                                 "np.concatenate([np.diag(np.outer({0}, {1}), k=1), {0}[:1]])",
                                 "(np.diag({0}, k=1)[:4, 1:] @ {1})", "np.diagonal(np.outer({0}, {1}) + 1.0)",
                                 "np.diag(np.diag({0}, k=-1), k=1)"]),
                    a, b)

    def ex_take(self, d):
        self.features.add("take")
        a = super().arr_expr(d)
        b = self.arr_leaf()
        return _fmt(self.choose(["np.take({0}, [2, 0, 3, 1])", "np.take({0}, [1, 1, 3, 0])",
                                 "{0}.take([3, 3, 0, 2])", "np.take({0}, np.array([0, 0, 0, 2]))",
                                 "np.take(np.outer({0}, {1}), [2, 0, 2, 1], axis=1).sum(axis=0)",
                                 "np.take(np.outer({0}, {1}), [3, 3], axis=0).T.reshape(-1)[:4]",
                                 "np.take({0}, [[0, 1], [1, 3]]).reshape(-1)", "np.take({0}, [5, -1, 2, 0], mode='wrap')"]), a, b)

    def ex_cast(self, d):
        a, b = super().arr_expr(d), self.arr_leaf()
        forms = (["gt_float", "to_int", "to_int_method", "to_bool"] if self.on("cast") else []) + \
            (["identity", "identity_asarray"] if self.on("cast_float") else [])
        form = self.choose(forms)
        self.features.add("cast_float" if form.startswith("identity") else "cast")
        live = self.is_active(b)
        if form == "gt_float":
            c = self.choose(["0.1", "-0.3"])
            return E(f"({a.plain} * ({b.plain} > {c}).astype(float))",
                     f"({a.instr} * " + (f"_k.gt({b.instr}, {c})" if live else f"({b.instr} > {c})") + ".astype(float))", ARR)
        if form in ("to_int", "to_int_method"):
            text = "np.asarray({0} * 3.0, dtype=int)" if form == "to_int" else "({0} * 3.0).astype(int)"
            return E(f"({a.plain} * {text.format(b.plain)})",
                     f"({a.instr} * " + (f"_k.toint({b.instr} * 3.0)" if live else text.format(b.instr)) + ")", ARR)
        if form == "to_bool":
            return E(f"({a.plain} + np.sin({b.plain}).astype(bool))",
                     f"({a.instr} + " + (f"_k.tobool(np.sin({b.instr}))" if live else f"np.sin({b.instr}).astype(bool)") + ")", ARR)
        if form == "identity":
            return _fmt("({0}.astype(float) * {1}.astype(np.float64))", a, b)
        return _fmt("np.asarray({0} * {1}, dtype=np.float64)", a, b)

    def ex_decorated(self, d):
        self.features.add("decorated")
        a, s = super().arr_expr(d), self.scal_expr(0)
        return _fmt(self.choose(["deco_wraps({0}, {1})", "deco_plain({0}, {1})"]), a, s, kind=ARR)

    def ex_recursion(self, d):
        self.features.add("recursion")
        a = super().arr_expr(d)
        if self.coin(0.4):      # a depth that depends on the data (a jump where it changes: FD's backstop)
            return _fmt("rec_data({0}, np.tanh({1}))", a, self.scal_leaf(), kind=ARR)
        return _fmt("rec({0}, " + str(self.integer(0, 3)) + ")", a)

    def ex_custom_rule(self, d):
        self.features.add("custom_rule")
        a = super().arr_expr(d)
        return _fmt(self.choose(["softclip({0})", "softplus(0.5 * {0})"]), a)

    # --- statements ----------------------------------------------------------------------

    def statement(self, depth):
        kinds = []
        if self.on("nested_ad"):
            kinds.append("nested_ad")
        if self.on("while_data") and depth < 2:
            kinds.append("while_data")
        if self.on("masked_write") and self.writable_arrays():
            kinds.append("masked_write")
        if self.on("repeated_index_write") and self.writable_arrays():
            kinds.append("repeated_write")
        if self.on("return_in_loop") and self.loops:
            kinds.append("return_in_loop")
        if self.on("sparse_methods"):
            kinds.append("sparse_methods")
        if kinds and self.coin(self.p_hunt):
            return getattr(self, "st_" + self.choose(kinds))(depth)
        return super().statement(depth)

    def st_nested_ad(self, depth):
        name = self.new_name()
        if self.coin():
            a, s = self.arr_expr(1), self.scal_expr(0)
            e = _fmt("srcad.grad(inner_loss)({0}, {1})", a, s, kind=ARR)
            kind = ARR
        else:
            s = self.scal_expr(1)
            e = _fmt(self.choose(["srcad.grad(srcad.grad(inner_scalar))({0})", "srcad.grad(inner_scalar)({0})"]),
                     _fmt("np.tanh({0})", s), kind=SCAL)
            kind = SCAL
        self.line(depth, f"{name} = {e.plain}", f"{name} = {e.instr}")
        self.define(name, kind)
        self.mark(name, e.plain)
        self.features.add("nested_ad")

    def st_while_data(self, depth):
        if self.writable_arrays() and self.coin(0.4):
            return self.st_while_array(depth)
        j, s = self.new_name("j"), self.new_name("s")
        start = self.scal_expr(1)
        c = self.choose(["0.5", "1.2", "2.0"])
        self.line(depth, f"{j} = 0")
        self.line(depth, f"{s} = np.tanh({start.plain})", f"{s} = np.tanh({start.instr})")
        self.define(s, SCAL)
        self.mark(s, start.plain)
        live = s in self.active
        cond_i = f"_k.lt({s}, {c})" if live else f"{s} < {c}"
        self.line(depth, f"while {s} < {c} and {j} < 4:", f"while {cond_i} and {j} < 4:")
        frame = _Frame(j)
        self.loops.append(frame)
        saved_env, saved_order, saved_dicts = dict(self.env), list(self.order), dict(self.dicts)
        try:
            self.line(depth + 1, f"{j} += 1")
            self.line(depth + 1, f"{s} = {s} + 0.4 + 0.2 * np.sin({s})")
            self.body(depth + 1, 1, 2)
        finally:
            self.loops.pop()
            self.env, self.order, self.dicts = saved_env, saved_order, saved_dicts   # may run 0 times
        self.features.add("while_data")

    def st_while_array(self, depth):
        """while np.sum(v * v) < c: v is written in place in the body (the condition reads it)."""
        v = self.choose(self.writable_arrays())
        j = self.new_name("j")
        c = self.choose(["2.0", "4.0", "8.0"])
        live = v in self.active
        self.line(depth, f"{j} = 0")
        cond = f"np.sum({v} * {v})"
        self.line(depth, f"while {cond} < {c} and {j} < 3:",
                  f"while {'_k.lt(' + cond + ', ' + c + ')' if live else cond + ' < ' + c} and {j} < 3:")
        frame = _Frame(j)
        self.loops.append(frame)
        saved_env, saved_order, saved_dicts = dict(self.env), list(self.order), dict(self.dicts)
        try:
            self.line(depth + 1, f"{j} += 1")
            s = self.scal_leaf()
            self.line(depth + 1, f"{v} *= 1.5 + 0.1 * np.tanh({s.plain})", f"{v} *= 1.5 + 0.1 * np.tanh({s.instr})")
            self.line(depth + 1, f"{v} += 0.3")
            self.mark(v, s.plain)
            self.body(depth + 1, 0, 1)
        finally:
            self.loops.pop()
            self.env, self.order, self.dicts = saved_env, saved_order, saved_dicts
        self.features.add("while_data")

    def st_masked_write(self, depth):
        v = self.choose(self.writable_arrays())
        a, b = self.arr_leaf(), self.arr_leaf()
        m = self.new_name("m")
        c = self.choose(["0.1", "-0.2", "0.4"])
        live = self.is_active(a)
        self.line(depth, f"{m} = {a.plain} > {c}", f"{m} = " + (f"_k.gt({a.instr}, {c})" if live else f"{a.instr} > {c}"))
        form = self.choose(["set", "mul", "add_not", "set_scalar"])
        if form == "set":
            self.line(depth, f"{v}[{m}] = 0.5 * np.sin({b.plain})[{m}]")
        elif form == "mul":
            self.line(depth, f"{v}[{m}] *= 1.5")
        elif form == "add_not":
            s = self.scal_leaf()
            self.line(depth, f"{v}[~{m}] += {s.plain}", f"{v}[~{m}] += {s.instr}")
        else:
            s = self.scal_leaf()
            self.line(depth, f"{v}[{m}] = {s.plain}", f"{v}[{m}] = {s.instr}")
        self.mark(v, self.plain[-1])
        self.features.add("masked_write")

    def st_repeated_write(self, depth):
        v = self.choose(self.writable_arrays())
        a = self.arr_expr(1)
        form = self.choose(["set", "aug", "scalar"])
        if form == "set":
            self.line(depth, f"{v}[[0, 2, 0, 1]] = {a.plain}", f"{v}[[0, 2, 0, 1]] = {a.instr}")
        elif form == "aug":
            self.line(depth, f"{v}[[1, 1, 3]] += np.sin({a.plain})[:3]", f"{v}[[1, 1, 3]] += np.sin({a.instr})[:3]")
        else:
            s = self.scal_expr(0)
            self.line(depth, f"{v}[[2, 2]] = {s.plain}", f"{v}[[2, 2]] = {s.instr}")
        self.mark(v, self.plain[-1])
        self.features.add("repeated_index_write")

    def st_return_in_loop(self, depth):
        cond_p, cond_i = self.condition()
        e = self.return_expr()
        self.line(depth, f"if {cond_p}:", f"if {cond_i}:")
        self.line(depth + 1, f"return np.sum({e.plain})", f"return np.sum({e.instr})")
        self.loops[-1].jumps = True
        self.features.add("return_in_loop")

    def st_sparse_methods(self, depth):
        vals = self.arr_expr(1)
        a = self.new_name("A")
        if self.coin():
            text = ("scipy.sparse.coo_array(({0}[[0, 1, 2, 3, 0, 2]] * 1.5, (np.array([0, 1, 1, 3, 0, 2]), "
                    "np.array([1, 2, 2, 0, 1, 3]))), shape=(4, 4))")
        else:
            text = ("scipy.sparse.csr_array((np.cos({0}[[0, 1, 2, 3, 0, 2, 1]]), np.array([2, 1, 1, 0, 3, 3, 0]), "
                    "np.array([0, 3, 4, 6, 7])), shape=(4, 4))")
        self.line(depth, f"{a} = {text.format(vals.plain)}", f"{a} = {text.format(vals.instr)}")
        v = self.arr_leaf()
        use = self.choose(["np.asarray({0}.power(2).sum(axis=1)).ravel() * {1}",
                           "np.asarray({0}.multiply({1}[None, :]).sum(axis=0)).ravel()",
                           "({0}.power(2) @ {1})", "({0} @ ({0} @ {1}))", "(({0} * 2.0).T @ {1})"])
        name = self.new_name()
        self.line(depth, f"{name} = {use.format(a, v.plain)}", f"{name} = {use.format(a, v.instr)}")
        self.define(name, ARR)
        self.mark(name, vals.plain + " " + v.plain)
        self.features.add("sparse_methods")

    # --- the end of the program ------------------------------------------------------------

    def build(self):
        self.body(0, 3, 7)
        if self.on("return_branches") and self.coin(0.3):
            c1p, c1i = self.condition()
            self.line(0, f"if {c1p}:", f"if {c1i}:")
            self._returning_branch()
            if self.coin():
                c2p, c2i = self.condition()
                self.line(0, f"elif {c2p}:", f"elif {c2i}:")
                self._returning_branch()
            self.line(0, "else:")
            self._returning_branch()
            self.features.add("return_branches")
        else:
            e = self.return_expr()
            self.line(0, f"return np.sum({e.plain})", f"return np.sum({e.instr})")
        header = ("import numpy as np\nimport scipy.sparse\nimport scipy.special\nimport srcad\n"
                  + DICT_HELPER + HUNT_HEADER + "\n\ndef prog(x, y):\n")
        reject = None if self.expect_reject is None else header.count("\n") + self.expect_reject
        return Program(header + "\n".join(self.plain) + "\n",
                       header + "\n".join(self.instr) + "\n", frozenset(self.features), reject)

    def _returning_branch(self):
        saved_env, saved_order, saved_dicts = dict(self.env), list(self.order), dict(self.dicts)
        if self.coin():
            self.body(1, 1, 2)
        e = self.return_expr()
        self.line(1, f"return np.sum({e.plain})", f"return np.sum({e.instr})")
        self.env, self.order, self.dicts = saved_env, saved_order, saved_dicts


def random_program(rng, hunt=HUNT_FEATURES, sparse=True, extended=True, focus=2, plain_share=0.35):
    """A random program from `rng` (a random.Random). Each program focuses on one or two of the
    constructs in `hunt` (so a finding names its construct, and a refusal of one construct does
    not hide the others); in `plain_share` of them the base generator's in-place writes, aliases,
    dicts and sparse matrices are off, so that autograd can run more of them."""
    b = _Hunter(rng)
    pool = sorted(hunt)
    b.hunt = frozenset(rng.sample(pool, min(len(pool), rng.randint(1, focus)))) if pool else frozenset()
    plain = rng.random() < plain_share
    b.sparse, b.extended = sparse and not plain, extended and not plain
    b.p_hunt = 0.5
    return b.build()


@st.composite
def hunting_programs(draw, hunt=HUNT_FEATURES):
    """The hypothesis strategy of the fuzzer's programs (the constructs in `hunt`)."""
    b = _Hunter(draw)
    b.hunt = frozenset(hunt)
    b.sparse, b.extended = True, True
    return b.build()


# =============================================================================================
# Reference side: kink distances, inputs, finite differences
# =============================================================================================

class _Kinks:
    """Evaluates kink sites like numpy does and records their smallest distance to the kink."""

    def __init__(self):
        self.margin = np.inf

    def _note(self, d):
        d = np.min(np.abs(d)) if np.size(d) else np.inf
        self.margin = min(self.margin, float(d))

    def gt(self, a, c):
        self._note(np.asarray(a) - c)
        return a > c

    def lt(self, a, c):
        self._note(np.asarray(a) - c)
        return a < c

    def toint(self, a):
        """np.asarray(a, dtype=int): a kink at every integer."""
        a = np.asarray(a)
        self._note(a - np.trunc(a))
        self._note(a - np.trunc(a) - np.sign(a))
        return a.astype(int)

    def tobool(self, a):
        self._note(a)
        return np.asarray(a).astype(bool)

    def maximum(self, a, b):
        self._note(np.asarray(a) - b)
        return np.maximum(a, b)

    def minimum(self, a, b):
        self._note(np.asarray(a) - b)
        return np.minimum(a, b)

    def abs(self, a):
        self._note(a)
        return np.abs(a)

    def clip(self, a, lo, hi):
        self._note(np.asarray(a) - lo)
        self._note(np.asarray(a) - hi)
        return np.clip(a, lo, hi)

    def amax(self, a):
        s = np.sort(np.ravel(a))
        if s.size > 1:
            self._note(s[-1] - s[-2])
        return np.max(a)

    def amin(self, a):
        s = np.sort(np.ravel(a))
        if s.size > 1:
            self._note(s[1] - s[0])
        return np.min(a)

    def rowmax(self, a, axis):
        """srcad.sparse.reduce_max(a, axis=1): the gap between each row's two largest stored
        values, duplicates merged first (as scipy merges them)."""
        c = a.tocsr()
        c.sum_duplicates()
        for r in range(c.shape[0]):
            s = np.sort(c.data[c.indptr[r]:c.indptr[r + 1]])
            if s.size > 1:
                self._note(s[-1] - s[-2])
        return srcad.sparse.reduce_max(a, axis=axis)


_INSTRUMENTED_DIR = []


def _instrumented_function(program):
    if "srcad.grad(" not in program.instrumented:
        ns = {}
        exec(compile(program.instrumented, "<instrumented prog>", "exec"), ns)
        return ns
    # nested AD inside the program: srcad reads the helpers' source, so the copy needs a file
    import pathlib
    import tempfile
    if not _INSTRUMENTED_DIR:
        _INSTRUMENTED_DIR.append(pathlib.Path(tempfile.mkdtemp(prefix="srcad_instrumented_")))
    module = import_program(program.instrumented, _INSTRUMENTED_DIR[0])
    sys.modules.pop(module.__name__, None)
    return module.__dict__


def find_inputs(program, seed):
    """Inputs (x, y) at which every kink site is at least MARGIN away, and the program's value
    there (from the instrumented copy), or None."""
    ns = _instrumented_function(program)
    for attempt in range(INPUT_TRIES):
        rng = np.random.default_rng([seed, attempt])
        x, y = rng.uniform(-1.5, 1.5, (2, N))
        kinks = _Kinks()
        ns["_k"] = kinks
        try:
            with np.errstate(all="raise"):
                value = ns["prog"](x.copy(), y.copy())
        except FloatingPointError:
            continue
        if kinks.margin >= MARGIN and np.isfinite(value) and abs(value) < MAX_MAGNITUDE:
            return x, y, value
    return None


_module_ids = itertools.count()


def import_program(source, directory):
    """Write `source` to a fresh .py file in `directory` and import it (unique module name)."""
    name = f"srcad_prop_prog_{next(_module_ids)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module




# =============================================================================================
# The fuzzer's check: one program against finite differences and autograd
# =============================================================================================

class Result:
    """The outcome of one program: "ok", "wrong", "crash" (a raw, non-srcad exception), "refused"
    (a named srcad error) or "skipped" (no inputs away from every kink); `mode` says where
    (reverse, forward, autograd, int_input), `detail` the numbers or the exception."""

    def __init__(self, outcome, mode="", detail="", features=frozenset()):
        self.outcome, self.mode, self.detail, self.features = outcome, mode, detail, features
        self.autograd = "not covered"     # or "agree" / "disagree"

    def __repr__(self):
        return f"Result({self.outcome}, {self.mode})"


def _run_srcad(fn):
    try:
        return fn(), None
    except srcad.SrcadError as exc:
        return None, ("refused", f"{type(exc).__name__}: {exc}")
    except Exception as exc:        # noqa: BLE001 - a raw exception is what the fuzzer looks for
        import traceback
        return None, ("crash", f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc(limit=-4)))


def check_program(program, seed, directory, use_autograd=True, int_input=False):
    """Run `program` through srcad (reverse and forward mode) at inputs drawn from `seed`, against
    central differences (float64, two steps that must agree) and, where autograd runs the code,
    against autograd's gradient (disagreements beyond FD's resolution are arbitrated by FD)."""
    from fdcheck import numerical_grad
    feats = program.features
    try:
        inputs = find_inputs(program, seed)
    except Exception as exc:      # the program fails under numpy itself: the generator's matter
        return Result("skipped", "numpy", f"{type(exc).__name__}: {exc}", feats)
    if inputs is None:
        return Result("skipped", features=feats)
    x, y, value = inputs
    module = import_program(program.source, directory)
    try:
        prog = module.prog
        try:
            with np.errstate(all="ignore"):
                v0 = prog(x.copy(), y.copy())
                fd = [numerical_grad(prog, (x, y), k, eps=1e-6) for k in (0, 1)]
                fd_large = [numerical_grad(prog, (x, y), k, eps=1e-4) for k in (0, 1)]
        except Exception as exc:       # the program itself fails under numpy: a generator matter
            return Result("skipped", "numpy", f"{type(exc).__name__}: {exc}", feats)
        if not np.isclose(v0, value, rtol=1e-12, atol=1e-12):
            return Result("skipped", "numpy", "instrumented copy differs", feats)
        scale = max(1.0, *(float(np.max(np.abs(g))) for g in fd))
        if scale >= MAX_MAGNITUDE or not all(np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale)
                                               for a, b in zip(fd, fd_large)):
            return Result("skipped", "fd", "finite differences unstable", feats)

        got, err = _run_srcad(lambda: srcad.grad(prog, wrt=(0, 1))(x.copy(), y.copy()))
        if err:
            return Result(err[0], "reverse", err[1], feats)
        for k, (g, want) in enumerate(zip(got, fd)):
            if np.shape(g) != (N,) or not np.allclose(g, want, rtol=1e-5, atol=1e-6 * scale):
                return Result("wrong", "reverse", f"argument {k}: srcad {np.asarray(g).tolist()}\n"
                              f"  finite differences {want.tolist()}", feats)
        rng = np.random.default_rng(seed)
        u, v = rng.normal(size=N), rng.normal(size=N)
        res, err = _run_srcad(lambda: srcad.jvp(prog, (x.copy(), y.copy()), (u, v)))
        if err:
            return Result(err[0], "forward", err[1], feats)
        want_dot = float(fd[0] @ u + fd[1] @ v)
        if not np.isclose(float(res[1]), want_dot, rtol=1e-5, atol=1e-6 * scale * N):
            return Result("wrong", "forward", f"srcad.jvp {float(res[1])!r}, finite differences {want_dot!r}", feats)
        out = Result("ok", features=feats)
        if use_autograd:
            out.autograd = _against_autograd(prog, x, y, got, fd, scale)
            if out.autograd.startswith("disagree"):
                return Result("wrong", "autograd", out.autograd, feats)
        if int_input:
            xi = np.arange(1, N + 1)
            r, err = _run_srcad(lambda: srcad.grad(prog, wrt=(0, 1))(xi, y.copy()))
            if err is None:
                return Result("wrong", "int_input", f"an int64 argument got a gradient {[np.asarray(g).tolist() for g in r]}"
                              " (API: InputError)", feats)
            if err[0] == "crash" or not err[1].startswith("InputError"):
                return Result("crash" if err[0] == "crash" else "wrong", "int_input",
                              f"expected InputError, got {err[1]}", feats)
        return out
    finally:
        sys.modules.pop(module.__name__, None)


def _against_autograd(prog, x, y, got, fd, scale):
    import autograd
    import oracle
    try:
        g = oracle.translate(prog)
        want = oracle._autograd(lambda: [autograd.grad(g, k)(x.copy(), y.copy()) for k in (0, 1)])
        val = oracle._autograd(lambda: oracle.make_vjp(g, 0)(x.copy(), y.copy())[1])
        if not np.isclose(float(val), float(prog(x.copy(), y.copy())), rtol=1e-10, atol=1e-12):
            return "not covered: autograd computes another value"
    except oracle.NotCovered as exc:
        return f"not covered: {exc}"
    for k in (0, 1):
        a, s = np.asarray(want[k], dtype=float), np.asarray(got[k], dtype=float)
        if a.shape != s.shape:
            return "not covered: autograd's gradient has another shape"
        if not np.allclose(s, a, rtol=1e-7, atol=1e-9 * scale):
            # beyond FD's resolution both may pass FD; autograd agreeing with FD settles it
            if np.allclose(a, fd[k], rtol=1e-5, atol=1e-6 * scale) and \
                    np.max(np.abs(s - a)) > 1e-6 * scale:
                return f"disagree: argument {k}: srcad {s.tolist()}\n  autograd {a.tolist()}"
            if not np.allclose(a, fd[k], rtol=1e-5, atol=1e-6 * scale):
                return "not covered: autograd disagrees with finite differences"
    return "agree"


# =============================================================================================
# Sparse arguments: non-canonical patterns, and the same matrix mutated in place between calls
# =============================================================================================

SPARSE_INPUT_OPS = [
    "np.sum(np.sin(A @ y))", "np.sum((A.T @ y) ** 2)", "np.sum(A.sum(axis=0) * y)",
    "np.sum(A.sum(axis=1) * np.cos(y))", "np.sum((A.power(2) @ y) * y)", "(y @ (A @ y))",
    "np.sum((A * 2.0) @ np.tanh(A.T @ y))", "np.sum(A.multiply(np.outer(y, np.cos(y))).sum(axis=0))",
    "np.sum(np.exp(0.2 * (A @ (A @ y))))",
]


def sparse_input_program(rng):
    """`prog(A, y)`: a sum of two or three of SPARSE_INPUT_OPS (A: a sparse argument)."""
    ops = rng.sample(SPARSE_INPUT_OPS, rng.randint(2, 3))
    body = "    s = 0.0\n" + "".join(f"    s = s + {op}\n" for op in ops) + "    return s\n"
    src = "import numpy as np\nimport scipy.sparse\nimport srcad\n\n\ndef prog(A, y):\n" + body
    return Program(src, src, frozenset({"sparse_input"}))


def _noncanonical(rng, fmt):
    """A 4x4 sparse matrix in a form SciPy does not keep canonical: unsorted and repeated column
    (row) indices within a row (column) for CSR (CSC), repeated coordinates for COO."""
    n, nnz = N, rng.randint(5, 9)
    nprng = np.random.default_rng(rng.randint(0, 2 ** 31))
    data = nprng.uniform(0.5, 1.5, nnz) * nprng.choice([-1.0, 1.0], nnz)
    if fmt == "coo":
        rows, cols = nprng.integers(0, n, nnz), nprng.integers(0, n, nnz)
        rows[-1], cols[-1] = rows[0], cols[0]                       # one duplicate at least
        return scipy.sparse.coo_array((data, (rows, cols)), shape=(n, n))
    counts = np.bincount(nprng.integers(0, n, nnz), minlength=n)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = nprng.integers(0, n, nnz)                              # unsorted, maybe repeated
    cls = scipy.sparse.csr_array if fmt == "csr" else scipy.sparse.csc_array
    return cls((data, indices, indptr), shape=(n, n))


def _mutate_in_place(A, rng):
    """Refill A's index arrays and values in place with another canonical pattern of the same
    shape (a data loader reusing its buffers); False if A's row counts allow no such pattern."""
    nprng = np.random.default_rng(rng.randint(0, 2 ** 31))
    if A.format == "coo":
        flat = np.sort(nprng.choice(N * N, A.nnz, replace=False))
        A.coords[0][:], A.coords[1][:] = flat // N, flat % N
    else:
        counts = np.diff(A.indptr)
        if np.any(counts > N):
            return False
        for r, c in enumerate(counts):
            A.indices[A.indptr[r]:A.indptr[r + 1]] = np.sort(nprng.choice(N, c, replace=False))
    A.data[:] = nprng.uniform(0.5, 1.5, A.nnz)
    return True


def _pattern(A):
    if A.format == "coo":
        return (A.coords[0].copy(), A.coords[1].copy(), A.nnz)
    return (A.indices.copy(), A.indptr.copy(), A.nnz)


def _same_pattern(p, q):
    return p[2] == q[2] and all(np.array_equal(a, b) for a, b in zip(p[:2], q[:2]))


def check_sparse_input(rng, seed, directory, mutate=True):
    """A non-canonical sparse argument, differentiated (reverse: a value per stored entry; forward:
    a tangent of A's pattern), then mutated in place and differentiated again: each call against
    central differences over the stored values."""
    from fdcheck import numerical_grad
    program = sparse_input_program(rng)
    fmt = rng.choice(["csr", "csc", "coo"])
    A = _noncanonical(rng, fmt)
    y = np.random.default_rng(seed).uniform(-1.0, 1.0, N)
    module = import_program(program.source, directory)
    feats = program.features | {f"sparse_input_{fmt}"}
    try:
        prog = module.prog
        for call in ("first", "mutated"):
            if call == "mutated" and not (mutate and _mutate_in_place(A, rng)):
                break
            if call == "mutated":
                feats = feats | {"sparse_input_mutated"}
            # on copies: SciPy may sort or merge a non-canonical matrix in place while f runs
            on_copy = lambda a, b: prog(a.copy(), b)      # noqa: E731
            fd_A = numerical_grad(on_copy, (A, y), 0, eps=1e-6)
            fd_y = numerical_grad(on_copy, (A, y), 1, eps=1e-6)
            scale = max(1.0, float(np.max(np.abs(fd_A))), float(np.max(np.abs(fd_y))))
            before = _pattern(A)
            got, err = _run_srcad(lambda: srcad.grad(prog, wrt=(0, 1))(A, y.copy()))
            where = f"{call} call, {fmt}, pattern {before[:2]!r}\n{program.source}"
            if not _same_pattern(before, _pattern(A)):
                # SciPy merged or sorted the argument in place while f ran: the user's matrix changed
                call = call + ", argument merged in place by scipy"
            if err:
                return Result(err[0], f"reverse ({call})", err[1] + "\n" + where, feats)
            gA, gy = got
            gA_vals = np.asarray(gA.data if scipy.sparse.issparse(gA) else gA, dtype=float).ravel()
            if gA_vals.shape != fd_A.shape or not np.allclose(gA_vals, fd_A, rtol=1e-5, atol=1e-6 * scale) \
                    or not np.allclose(gy, fd_y, rtol=1e-5, atol=1e-6 * scale):
                return Result("wrong", f"reverse ({call})", f"srcad dA {gA_vals.tolist()}\n  fd {fd_A.tolist()}\n"
                              f"srcad dy {np.asarray(gy).tolist()}\n  fd {fd_y.tolist()}\n" + where, feats)
            nprng = np.random.default_rng(seed + 1)
            dA = A.copy()
            dA.data = nprng.normal(size=A.nnz)
            dy = nprng.normal(size=N)
            res, err = _run_srcad(lambda: srcad.jvp(prog, (A, y.copy()), (dA, dy)))
            if err:
                return Result(err[0], f"forward ({call})", err[1] + "\n" + where, feats)
            want = float(fd_A @ dA.data + fd_y @ dy)
            if not np.isclose(float(res[1]), want, rtol=1e-5, atol=1e-6 * scale * N):
                return Result("wrong", f"forward ({call})", f"srcad.jvp {float(res[1])!r}, fd {want!r}\n" + where, feats)
        return Result("ok", features=feats)
    finally:
        sys.modules.pop(module.__name__, None)
