"""Composition and nesting: a function that a srcad operator returned (`srcad.grad(f)`,
`srcad.jacobian(f)`, ...) can be differentiated in turn, at top level (`grad(grad(f))`) or
called inside differentiated code (`def g(x): return df(x) @ v`).

Each such function carries a `Derived` (its `__srcad_derived__`): the operator, f and the
options. srcad never differentiates the function it wraps in its place; it differentiates a
*plain function* that computes the same thing through f's generated derivative module, which is
plain Python over NumPy and srcad.runtime (every helper of which has rules in both modes):

    def grad_of_f(x):
        '''srcad.grad(f, wrt=0) as a plain function: f's adjoint, seeded with grad's checked 1.0.'''
        grads = f_vjp(x, f_bar=grad_of_f_seed)
        return grads

(`f_vjp` here is grad's "checked" adjoint: it checks f's value is a scalar and returns the
gradient only; value_and_grad and has_aux call `f_value_and_vjp`, which returns the value too.)

The plain function is itself generated code (a module srcad/cache.py loads), so it is
transformed like any user function: its call of `f_vjp` is a call of a user function,
whose generated code is transformed in turn (reverse over reverse, forward over reverse, ...).
It is rebuilt when f's derivative module is (a global f reads was rebound), and the code
differentiated through it is then stale too (its Parsed watches `Derived.current`).
"""
import inspect
import types

from . import cache
from . import runtime as rt
from .errors import SrcadError, UnsupportedSyntaxError
from .inputs import cache_variant, differentiable_arg
from .runtime.checks import check_scalar



class Derived:
    """What a srcad operator returned: the operator's name, the function as the user passed it,
    wrt, and the options that change the result."""

    def __init__(self, op, f, wrt, options=None):
        self.op, self.f, self.wrt, self.options = op, f, wrt, dict(options or {})
        self._held = (None, None)       # (the derivative functions the plain one calls, the plain one)
        self._quick = None              # (what grad's plain function is made from, the plain one)

    def __repr__(self):
        return f"<srcad.{self.op} of {getattr(self.f, '__qualname__', self.f)!r}>"

    # the watch protocol of frontend/parse.py (Parsed.extra_watch): what the plain function is now
    def current(self, key):
        return self.plain()

    def plain(self):
        """The plain Python function computing this operator's result (see the module docstring),
        the same object as long as f's derivative modules are the same."""
        from .frontend.callables import unpack_callable
        func, pre, kw = unpack_callable(self.f)
        if not isinstance(func, types.FunctionType):
            from .frontend.parse import parse_function
            parse_function(func)        # names what func is, in a sentence
        quick = None
        if self.op in ("grad", "value_and_grad") and not self.options.get("row_sparse"):
            # what grad's plain function is made from: f's adjoint module (a new one when f or a
            # global it reads changed) and the bound arguments. The same: the same plain function,
            # without building its parts again (a jvp of grad per call, a Hessian per step)
            quick = (func, cache.module(func, "reverse", _shift(self.wrt, len(pre)), (), _gradient_variant(self)),
                     tuple(map(id, pre)), tuple((k, id(v)) for k, v in kw.items()))
            if self._quick is not None and self._quick[0] == quick:
                return self._quick[1]
        parts = _parts(self, func, pre, kw)
        key = tuple(id(p) for p in parts["calls"].values()) + tuple(id(v) for v in parts["supplied"].values())
        held_key, held = self._held
        if held is not None and held_key == key:
            self._quick = (quick, held) if quick is not None else None
            return held
        fn = _load(parts)
        fn.__srcad_watch__ = [(self, "plain", fn)]
        self._held = (key, fn)
        self._quick = (quick, fn) if quick is not None else None
        return fn


def derived(wrapper, op, f, wrt, **options):
    """Mark wrapper (what a srcad operator returns) as the operator `op` of f."""
    wrapper.__srcad_derived__ = Derived(op, f, wrt, options)
    return wrapper


def derived_of(f):
    return getattr(f, "__srcad_derived__", None)


# ---- the plain functions ---------------------------------------------------------------------
def _params(func, pre, kw, name):
    """The plain function's parameters: func's, less those bound in front or by keyword, with
    their defaults (each supplied as a module-level name)."""
    sig = inspect.signature(func, follow_wrapped=False)
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            code = func.__code__
            raise UnsupportedSyntaxError(
                f"differentiating srcad's derivative of {func.__qualname__}, which takes *args or **kwargs",
                code.co_filename, code.co_firstlineno, 0,
                hint=f"name every parameter of {func.__qualname__}")
    params = [p for p in params[len(pre):] if p.name not in kw]
    return params


def _signature_text(params, name, supplied):
    out, star = [], False
    for p in params:
        if p.kind == p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        if p.default is p.empty:
            out.append(p.name)
        else:
            dname = f"{name}_default_{p.name}"
            supplied[dname] = p.default
            out.append(f"{p.name}={dname}")
    return ", ".join(out)


def _call_text(params):
    return ", ".join(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}" for p in params)


def _front(pre, kw, name, supplied):
    """The arguments bound in front and by keyword, as module-level names of the plain module."""
    front = []
    for k, v in enumerate(pre):
        supplied[f"{name}_bound_{k}"] = v
        front.append(f"{name}_bound_{k}")
    keywords = []
    for k, v in kw.items():
        supplied[f"{name}_bound_{k}"] = v
        keywords.append(f"{k}={name}_bound_{k}")
    return front, keywords


def _shift(wrt, n):
    if isinstance(wrt, (tuple, list)):
        return tuple(_shift(w, n) for w in wrt)
    return wrt + n if isinstance(wrt, int) and wrt >= 0 else wrt


def _single(func, wrt, what):
    if isinstance(wrt, (tuple, list)):
        raise SrcadError(f"{what} takes a single wrt (an int or a parameter name), not {wrt!r}. "
                         f"Differentiate one argument at a time.")
    params = list(inspect.signature(func, follow_wrapped=False).parameters)
    return params.index(wrt) if isinstance(wrt, str) else wrt % len(params)


def _tangent_names(fn, n):
    """The tangent parameters of a generated tangent function: its last n parameters."""
    return list(cache.signature(fn).parameters)[-n:]


def _gradient_variant(d):
    """The adjoint grad's plain function calls. checkpoint=k gives the same gradient, bit for bit,
    as checkpoint=None, whose code (no revolve schedule) is what is differentiated again. grad
    alone: the "checked" adjoint (the value checked, not returned), so that forward mode over it
    (jvp/hessian of grad) carries no tangent of the value."""
    opts = d.options
    only = d.op != "value_and_grad" and not opts.get("has_aux")
    return ("checked" if only else "value") + ("+numerics" if opts.get("check_numerics") else "")


def _gradient_parts(d, func, pre, kw, name):
    """grad / value_and_grad: f's adjoint returning the value too, with grad's checked seed."""
    opts = d.options
    if opts.get("row_sparse"):
        raise SrcadError(f"srcad.{d.op}(..., row_sparse=True) returns RowSparse gradients, which srcad does not "
                         f"differentiate again. Drop row_sparse to compose {d.op}.")
    variant = _gradient_variant(d)
    wrt = _shift(d.wrt, len(pre))
    mod = cache.module(func, "reverse", wrt, (), variant)
    main = getattr(mod, mod.srcad_main)
    seed_param = list(cache.signature(main).parameters)[-1]
    supplied = {}
    params = _params(func, pre, kw, name)
    front, keywords = _front(pre, kw, name, supplied)
    has_aux = bool(opts.get("has_aux"))
    if getattr(d, "seed", None) is None:       # one per Derived: the plain function is rebuilt only when it must be
        d.seed = rt.ScalarSeed(lambda y: check_scalar(y, func, has_aux), has_aux)
    supplied[f"{name}_seed"] = d.seed
    args = ", ".join(a for a in front + [_call_text(params)] + keywords + [f"{seed_param}={name}_seed"] if a)
    fname = mod.srcad_main
    what = f"srcad.{d.op}({func.__name__}, wrt={d.wrt!r}{', has_aux=True' if has_aux else ''})"
    if d.op == "value_and_grad":
        body = [f"value_and_grads = {fname}({args})", "return value_and_grads"]
    elif has_aux:
        body = [f"value, grads = {fname}({args})", "aux = value[1]", "return (grads, aux)"]
    else:
        body = [f"grads = {fname}({args})", "return grads"]
    doc = f"{what} as a plain function: {func.__name__}'s adjoint, seeded with grad's checked 1.0."
    return dict(name=name, signature=_signature_text(params, name, supplied), doc=doc, body=body,
                calls={fname: main}, supplied=supplied)


def _jacobian_parts(d, func, pre, kw, name, tangent_of=None):
    """jacobian (and hessian, the jacobian of the gradient): one tangent sweep per unit direction
    of the argument, the columns stacked."""
    k = _single(func, _shift(d.wrt, len(pre)), f"srcad.{d.op}")
    if d.options.get("sparsity") is not None:
        raise SrcadError(f"srcad.jacobian(..., sparsity={d.options['sparsity']!r}) returns a sparse matrix, which srcad "
                         f"does not differentiate again. Drop sparsity to compose jacobian.")
    sweep = tangent_of or func
    mod = cache.module(sweep, "forward", k)
    main = getattr(mod, mod.srcad_main)
    dot = _tangent_names(main, 1)[0]
    supplied = {}
    params = _params(func, pre, kw, name)
    front, keywords = _front(pre, kw, name, supplied)
    x = list(inspect.signature(func, follow_wrapped=False).parameters)[k]
    args = ", ".join(a for a in front + [_call_text(params)] + keywords if a)
    fname = mod.srcad_main
    body = ["columns = []",
            f"for j in range(np.size({x})):",
            f"    value, column = {fname}({args}, {dot}=rt.unit_direction({x}, j))",
            "    columns.append(column)",
            f"jac = rt.stack_columns(columns, {x})",
            "return jac"]
    doc = (f"srcad.{d.op}({func.__name__}, wrt={d.wrt!r}) as a plain function: one tangent sweep per entry of "
           f"{x}, the columns stacked.")
    return dict(name=name, signature=_signature_text(params, name, supplied), doc=doc, body=body,
                calls={fname: main}, supplied=supplied)


def _hvp_parts(d, func, pre, kw, name, gradient):
    k = _single(func, _shift(d.wrt, len(pre)), "srcad.hvp")
    mod = cache.module(gradient, "forward", k)
    main = getattr(mod, mod.srcad_main)
    dot = _tangent_names(main, 1)[0]
    supplied = {}
    params = _params(func, pre, kw, name)
    front, keywords = _front(pre, kw, name, supplied)
    if any(p.name == "v" for p in params):
        raise SrcadError(f"composing srcad.hvp of {func.__name__}, which has a parameter named v: rename it")
    args = ", ".join(a for a in front + [_call_text(params)] + keywords if a)
    fname = mod.srcad_main
    body = [f"g, hv = {fname}({args}, {dot}=v)", "return hv"]
    doc = f"srcad.hvp({func.__name__}, wrt={d.wrt!r}) as a plain function: forward mode over the gradient."
    sig = _signature_text(params, name, supplied)
    sig = sig + ", v" if "*" not in sig.split(", ") else sig.replace("*", "v, *", 1)
    return dict(name=name, signature=sig, doc=doc, body=body, calls={fname: main}, supplied=supplied)


def _pullback_parts(d, func, pre, kw, name):
    """The pullback srcad.vjp(f, *args) returned: f's adjoint at those arguments, linear in dy."""
    args = tuple(pre) + tuple(d.options["args"])
    idx = tuple(k for k, a in enumerate(args) if differentiable_arg(a))
    mod = cache.module(func, "reverse", idx, (), "plain")
    main = getattr(mod, mod.srcad_main)
    seed_param = list(cache.signature(main).parameters)[-1]
    supplied = {f"{name}_arg_{k}": a for k, a in enumerate(args)}
    call = ", ".join(list(supplied) + [f"{seed_param}=dy"])
    fname = mod.srcad_main
    body = [f"grads = {fname}({call})"]
    out = []
    for k in range(len(pre), len(args)):
        if k in idx:
            body.append(f"grad_{k} = grads[{idx.index(k)}]")
            out.append(f"grad_{k}")
        else:
            out.append("None")
    body.append(f"return ({', '.join(out)}{',' if len(out) == 1 else ''})")
    doc = f"the pullback srcad.vjp({func.__name__}, ...) returned, as a plain function: its adjoint at those arguments."
    return dict(name=name, signature="dy", doc=doc, body=body, calls={fname: main}, supplied=supplied)


def _jvp_parts(d, func, pre, kw, name):
    """srcad.jvp(f, primals, tangents) called inside differentiated code: f's tangent code, the
    primals then the tangents (of the positions d.wrt) as parameters, returning (value, tangent)."""
    n, idx = d.options["n"], d.wrt
    mod = cache.module(func, "forward", tuple(k + len(pre) for k in idx))
    main = getattr(mod, mod.srcad_main)
    dots = _tangent_names(main, len(idx))
    supplied = {}
    params = _params(func, pre, kw, name)
    if any(p.kind == p.KEYWORD_ONLY for p in params[:n]) or len(params) < n:
        raise SrcadError(f"srcad.jvp({func.__name__}, ...) inside a differentiated function with {n} primals for "
                         f"{len(params)} positional parameters. Pass one primal per positional parameter.")
    front, keywords = _front(pre, kw, name, supplied)
    primal_names = [p.name for p in params[:n]]
    tangent_names = [f"{primal_names[k]}_tangent" for k in idx]
    args = ", ".join(a for a in front + primal_names + keywords if a)
    ts = ", ".join(f"{dot}={t}" for dot, t in zip(dots, tangent_names))
    body = [f"value, tangent = {mod.srcad_main}({args}, {ts})", "return (value, tangent)"]
    doc = (f"srcad.jvp({func.__name__}, primals, tangents) as a plain function: its tangent code along "
           f"{', '.join(tangent_names)}.")
    return dict(name=name, signature=", ".join(primal_names + tangent_names), doc=doc, body=body,
                calls={mod.srcad_main: main}, supplied=supplied)


def _parts(d, func, pre, kw):
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in func.__name__).strip("_") or "f"
    name = f"{d.op}_of_{base}"
    if d.op in ("grad", "value_and_grad"):
        return _gradient_parts(d, func, pre, kw, name)
    if d.op == "jacobian":
        return _jacobian_parts(d, func, pre, kw, name)
    if d.op == "pullback":
        return _pullback_parts(d, func, pre, kw, name)
    if d.op == "jvp":
        return _jvp_parts(d, func, pre, kw, name)
    if d.op in ("hessian", "hvp"):
        gradient = Derived("grad", d.f, d.wrt).plain()
        if d.op == "hvp":
            return _hvp_parts(d, func, pre, kw, name, gradient)
        return _jacobian_parts(d, func, pre, kw, name, tangent_of=gradient)
    raise SrcadError(f"srcad cannot differentiate the result of srcad.{d.op} again")


def _load(parts):
    name = parts["name"]
    supplied = dict(parts["supplied"])
    supplied.update(parts["calls"])
    lines = [f"# {parts['doc']}",
             "# generated by srcad so that the derivative can be differentiated in turn (srcad/composition.py)",
             "# names that srcad supplies when it loads this module: " + ", ".join(sorted(supplied)),
             "import numpy as np",
             "from srcad import runtime as rt",
             "", "",
             f"def {name}({parts['signature']}):",
             f"    {parts['doc']!r}"]
    lines += ["    " + b for b in parts["body"]]
    mod = cache.load("\n".join(lines) + "\n", name, supplied)
    return getattr(mod, name)
