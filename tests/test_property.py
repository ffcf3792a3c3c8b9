"""Property test: random programs, differentiated by srcad, against central finite differences.

A hypothesis strategy writes the *source text* of a function

    def prog(x, y):          # x, y: float64 arrays of shape (4,)
        ...
        return np.sum(...)

from straight-line assignments of numpy operations, overwrites of existing variables
(`v1 = np.cos(v1) + y`), augmented assignments, subscript writes into arrays that are fresh
copies (`v2 = x.copy()`, `np.zeros(4)`), `if`/`else` on data-dependent conditions, `for` loops
over `range`, over an array, `enumerate` and `zip`, `while` loops, `break`/`continue`, early
`return`, and dicts (displays with constant keys, item writes, reads, `.get`, loops over the dict
and its `.items()`, and a dict passed to a helper function that loops over its argument). Each
program is written to a temporary .py file and imported, so that srcad can read it with
`inspect.getsource`; `srcad.grad(prog, wrt=(0, 1))` is then compared with central differences.

Finite differences are only a sound reference away from kinks, so every program is also rendered
in an *instrumented* form, where each kink site (a branch or `np.where` condition, `np.maximum`,
`np.minimum`, `np.abs`, `np.clip`, `np.max`/`np.min` of an array) records how far its operands
are from the kink. Inputs are drawn until every such distance is at least `MARGIN`; as a
backstop, FD with two step sizes must agree. Programs that cannot be made well conditioned are
rejected with `assume`.

The statement kinds in use are listed in `FEATURES`; remove one while srcad does not support it
yet. On failure the message shows the program, its inputs and both gradients.
"""
import contextlib
import importlib.util
import itertools
import re
import sys
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse
from hypothesis import HealthCheck, Phase, assume, event, given, note, settings
from hypothesis import strategies as st

import srcad
from fdcheck import numerical_grad

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
        return self.draw(st.sampled_from(options))

    def coin(self, p_true=0.5):
        return self.draw(st.integers(0, 99)) < int(100 * p_true)

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
        return str(self.draw(st.integers(0, N - 1)))

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
        for _ in range(self.draw(st.integers(lo, hi))):
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
        keys = DICT_KEYS[:self.draw(st.integers(1, 3))]
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
        k = self.draw(st.integers(1, 4))
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
        k = self.draw(st.integers(1, 4))
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
        names = first + [self.choose(recent) for _ in range(self.draw(st.integers(0, 2)))]
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


def _instrumented_function(program):
    ns = {}
    exec(compile(program.instrumented, "<instrumented prog>", "exec"), ns)
    return ns


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


def _describe(program, x, y, fd=None, got=None):
    parts = ["program:", program.source,
             f"x = np.array({x.tolist()!r})", f"y = np.array({y.tolist()!r})"]
    if fd is not None:
        parts.append(f"finite differences: {[g.tolist() for g in fd]}")
    if got is not None:
        shown = [g.tolist() if isinstance(g, np.ndarray) else g for g in got] \
            if isinstance(got, tuple) else got
        parts.append(f"srcad.grad:         {shown!r}")
    return "\n".join(parts)


# =============================================================================================
# The property
# =============================================================================================

def _check_refused(program, prog_dir):
    """A program that writes through a view and reads the viewed array again is either made
    exact (a slice of one array: the slice is written back; then it is checked against finite
    differences like any program, and this returns False) or refused in both modes, naming the
    write through the view, before any code runs (never a number)."""
    module = import_program(program.source, prog_dir)
    try:
        x, y = np.linspace(-1.0, 1.0, N), np.linspace(0.5, -0.5, N)
        try:
            srcad.emit(module.prog, wrt=(0, 1))
        except srcad.UnsupportedSyntaxError:
            event("view write: refused")
        else:
            event("view write: made exact")
            return False
        for run in (lambda: srcad.grad(module.prog, wrt=(0, 1))(x, y),
                    lambda: srcad.jvp(module.prog, (x, y), (x, y))):
            with pytest.raises(srcad.UnsupportedSyntaxError) as info:
                run()
            msg = str(info.value)
            assert info.value.lineno == program.reject_line, msg + "\n" + program.source
            assert "a view of" in msg and "is read again" in msg, msg       # the write and the alias
            assert "instead" in msg or ".copy()" in msg, msg                  # the fix
    finally:
        sys.modules.pop(module.__name__, None)
    return True


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("srcad_property_programs")


@settings(max_examples=300, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(program=programs(rejecting=True, sparse=True, extended=True), seed=st.integers(0, 2 ** 32 - 1))
def test_random_program_gradient(program, seed, prog_dir):
    """Reverse mode (srcad.grad) and forward mode (srcad.jvp) of a random program against FD; a
    program that writes through a view and reads the viewed array again is made exact or refused."""
    note(program.source)
    for feature in sorted(program.features):
        event(f"feature: {feature}")
    if program.reject_line is not None and _check_refused(program, prog_dir):
        return

    inputs = find_inputs(program, seed)
    assume(inputs is not None)
    x, y, value = inputs

    module = import_program(program.source, prog_dir)
    try:
        prog = module.prog
        assert prog(x.copy(), y.copy()) == value, "generator bug: instrumented copy differs"
        fd = [numerical_grad(prog, (x, y), k, eps=1e-6) for k in (0, 1)]
        # Backstop against kinks the instrumentation missed: a second, larger step must agree.
        fd_large = [numerical_grad(prog, (x, y), k, eps=1e-4) for k in (0, 1)]
        scale = max(1.0, *(float(np.max(np.abs(g))) for g in fd))
        assume(scale < MAX_MAGNITUDE)
        assume(all(np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale) for a, b in zip(fd, fd_large)))

        x_in, y_in = x.copy(), y.copy()
        try:
            got = srcad.grad(prog, wrt=(0, 1))(x_in, y_in)
        except Exception as exc:
            raise AssertionError(
                f"srcad.grad raised {type(exc).__name__}: {exc}\n" + _describe(program, x, y)
            ) from exc

        msg = _describe(program, x, y, fd, got)
        assert np.array_equal(x_in, x) and np.array_equal(y_in, y), (
            "srcad.grad modified its input arrays\n" + msg)
        assert isinstance(got, tuple) and len(got) == 2, "wrt=(0, 1) must give a 2-tuple\n" + msg
        for g, want in zip(got, fd):
            assert isinstance(g, np.ndarray) and g.shape == (N,) and g.dtype == np.float64, (
                f"gradient should be a float64 array of shape ({N},), got {g!r}\n" + msg)
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6 * scale, err_msg=msg)

        # forward mode (generated tangent code) along a random direction, against the same FD
        rng = np.random.default_rng(seed)
        u, v = rng.normal(size=N), rng.normal(size=N)
        try:
            _, y_dot = srcad.jvp(prog, (x.copy(), y.copy()), (u, v))
        except Exception as exc:
            raise AssertionError(
                f"srcad.jvp raised {type(exc).__name__}: {exc}\n" + _describe(program, x, y)) from exc
        np.testing.assert_allclose(float(y_dot), float(fd[0] @ u + fd[1] @ v), rtol=1e-5,
                                   atol=1e-6 * scale * N, err_msg="forward mode\n" + msg)
    finally:
        sys.modules.pop(module.__name__, None)

