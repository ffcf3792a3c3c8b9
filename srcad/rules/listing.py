"""The rule table as a reader sees it: every supported function with its modes (`srcad rules`).

Generated from the registry, so it is never out of date: one row per rule key, named the way a
user writes it (`numpy.sin`, `x.sum(...)`, `x + y`), with the parameters a derivative flows
through and the modes that have a rule: reverse (an adjoint template) and forward (a tangent
template). Operations declared non-differentiable (shapes, indices, comparisons, draws) are
listed apart; srcad's own runtime helpers (whose rules let second-order derivatives run over
generated code) are shown with `--all`.
"""
import ast
import importlib
from dataclasses import dataclass

from . import numpy_rules  # noqa: F401  (fills the table)
from .registry import _TABLE

_OPERATORS = {
    "Add": "x + y", "Sub": "x - y", "Mult": "x * y", "Div": "x / y", "Pow": "x ** y", "Mod": "x % y",
    "MatMult": "x @ y", "USub": "-x", "UAdd": "+x", "Copy": "y = x", "Subscript": "x[idx]",
    "FloorDiv": "x // y", "BitOr": "x | y", "BitAnd": "x & y", "BitXor": "x ^ y", "LShift": "x << y",
    "RShift": "x >> y", "Invert": "~x",
}
# where a user reaches a function from: the first module that exposes it under its name wins
_MODULES = ("numpy", "numpy.linalg", "numpy.random", "numpy.fft", "scipy.special", "scipy.linalg", "scipy.stats",
            "scipy.sparse", "math", "builtins", "srcad", "srcad.sparse",
            "srcad.runtime")    # the helpers generated code calls as rt.<name>, wherever they live


@dataclass(frozen=True)
class Row:
    """One row of the rule listing: a function as users write it and which modes cover it."""
    name: str            # as a user writes it
    params: tuple        # the parameters a derivative flows through
    reverse: bool
    forward: bool
    nondiff: bool
    internal: bool       # a srcad runtime helper (called by generated code, not by users)


def _public_name(obj):
    owner = getattr(obj, "__self__", None)
    if owner is not None and not isinstance(owner, type) and type(owner).__module__ != "builtins":
        # a bound method of a public object: scipy.stats.norm.logpdf
        for modname in _MODULES:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            for attr, value in vars(mod).items():
                if value is owner:
                    return f"{modname}.{attr}.{obj.__name__}"
    name = getattr(obj, "__name__", None)
    for modname in _MODULES:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        if name and getattr(mod, name, None) is obj:
            return f"{modname}.{name}"
    if name is None:        # an instance a module exposes (np.r_): the module's name for it
        for modname in _MODULES:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            attr = next((a for a, v in vars(mod).items() if v is obj and not a.startswith("_")), None)
            if attr is not None:
                return f"{modname}.{attr}"
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    qual = getattr(obj, "__qualname__", None) or name or repr(obj)
    return f"{mod}.{qual}"


def key_name(key):
    """How a user writes the operation a rule key stands for."""
    if isinstance(key, str) and key.startswith("op:"):
        return _OPERATORS.get(key[3:], f"operator {key[3:]}")
    if isinstance(key, str) and key.startswith("."):
        return f"x{key}" if key[1:] in ("T", "data", "shape", "ndim", "size", "dtype", "nnz", "indices",
                                        "indptr", "row", "col", "format") else f"x{key}()"
    return _public_name(key)


def _internal(key):
    if key == ".pop":       # generated adjoints undo a list append with `xs.pop()`
        return True
    mod = getattr(key, "__module__", "") or ""
    return mod.startswith("srcad.runtime") or mod == "srcad.runtime"


def _flows(template):
    """Does a derivative flow through this template ("0": the argument lends only its shape)?"""
    return template is not None and not (isinstance(template, ast.Constant) and template.value == 0)


def rows(table=None):
    """One Row per rule key, sorted by name."""
    table = _TABLE if table is None else table
    out = []
    for key, rule in table.items():
        params = tuple(p for p in rule.params if _flows(rule.vjp.get(p)) or _flows(rule.jvp.get(p)))
        out.append(Row(key_name(key), params, bool(rule.vjp) or rule.user_vjp is not None,
                       bool(rule.jvp) or rule.user_jvp is not None, rule.nondiff, _internal(key)))
    return sorted(out, key=_order)


def _order(row):
    """Operators first, then methods and attributes, then functions by module."""
    if not row.name[:1].isalpha() or row.name in _OPERATORS.values():
        return (0, row.name)
    if row.name.startswith("x."):
        return (1, row.name)
    return (2, row.name.lower())


def format_rules(include_internal=False, table=None):
    """The text `srcad rules` prints."""
    all_rows = [r for r in rows(table) if include_internal or not r.internal]
    diff = [r for r in all_rows if not r.nondiff]
    nondiff = [r for r in all_rows if r.nondiff]
    width = max([len(r.name) for r in diff] + [20])
    lines = [f"srcad derivative rules: {len(diff)} differentiable operations, "
             f"{len(nondiff)} without a derivative (generated from srcad/rules/)", "",
             f"{'operation':<{width}}  reverse  forward  derivative through"]
    for r in diff:
        lines.append(f"{r.name:<{width}}  {'yes' if r.reverse else '-':<7}  {'yes' if r.forward else '-':<7}  "
                     f"{', '.join(r.params) or '(registered rule)'}")
    lines += ["", "no derivative (piecewise constant: shapes, indices, comparisons, random draws):"]
    lines += _wrap(", ".join(r.name for r in nondiff))
    lines += ["", "Register a rule for anything else with srcad.register_vjp / srcad.register_jvp."]
    if not include_internal:
        lines.append("`srcad rules --all` also lists the rules of srcad's runtime helpers "
                     "(what makes hessian/hvp work over generated code).")
    return "\n".join(lines) + "\n"


def _wrap(text, width=100):
    out, line = [], "  "
    for word in text.split(" "):
        if len(line) + len(word) > width:
            out.append(line.rstrip())
            line = "  "
        line += word + " "
    out.append(line.rstrip())
    return out
