"""The generated derivative units the operators run: loaded through srcad/cache.py for a
function, mode, wrt and variant, specialised to the abstract signature of the call
(transform/kinds.py), compiled by Cython on request (srcad/compiled/), and called with their
tangent or seed parameters by name."""
import ast

from .. import cache
from ..frontend.callables import method_function
from ..transform.kinds import signature as _signature
from .passing import _params


def _module(func, mode, wrt, row_sparse=(), variant="plain", sig=None):
    """The loaded derivative module (srcad/cache.py keeps it); its main function is `srcad_main`.
    sig: the abstract signature of the call (transform/kinds.py), which the code is specialised to."""
    return cache.module(func, mode, wrt, row_sparse, variant, sig)


def _row_sparse_names(func, wrt, row_sparse):
    if not row_sparse:
        return ()
    params = _params(func)
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    return tuple(params[w] if isinstance(w, int) else w for w in ws)


def _vjp_function(f, wrt, variant="plain"):
    """The generated adjoint function of f (loaded from its cache file, so it can be transformed again).
    variant="value": the one value_and_grad runs, returning (f's value, gradient) and checking the
    seed it is given (rt.seed)."""
    mod = _module(f, "reverse", wrt, variant=variant)
    adjoint = getattr(mod, mod.srcad_main)
    receiver = getattr(f, "__srcad_receiver__", None)
    instance = getattr(f, "__srcad_instance__", lambda: None)()
    # a method's adjoint calls `self.helper(...)` as the method did: the same class resolves it
    return method_function(adjoint, receiver.kind, receiver.cls, instance) if receiver else adjoint


def _call_jvp(fn, primals, dots, kwargs=None):
    """fn(primals, tangents): the generated tangent function's tangent parameters are its last
    len(dots) parameters, in wrt order (named `<param>_dot`, or `<param>_dot_2` where f already
    has a parameter of that name: forward over forward). dots: a list in wrt order, or a dict
    {tangent parameter name: tangent}. kwargs: f's own keyword arguments, passed on by name."""
    if not isinstance(dots, dict):
        sig = cache.signature(fn)
        dots = dict(zip(list(sig.parameters)[len(sig.parameters) - len(dots):], dots))
    return fn(*primals, **kwargs, **dots) if kwargs else fn(*primals, **dots)


def _kinds_of(main, source, sig, mode, primals=None, dots=None):
    """{parameter of the generated main function: kind key} for a call with arguments of the
    signature sig (or the actual primals and tangents): what srcad/compiled types. In forward
    mode a tangent `<p>_dot` without an actual value is taken to be of its primal's kind."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == main)
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    kinds = {}
    if primals is not None:
        sig = _signature(tuple(primals))
    if sig is not None:
        kinds.update(zip(names, sig[0]))
        kinds.update(sig[1])
    if dots is not None:
        kinds.update(zip(names[len(names) - len(dots):], _signature(tuple(dots))[0]))
    elif mode == "forward":
        for n in names:
            base = n.rsplit("_dot", 1)[0] if "_dot" in n else None
            if base in kinds and n not in kinds:
                kinds[n] = kinds[base]
    return kinds


def _compiled(fn, f, mode, wrt, row_sparse, variant, sig, primals=None, dots=None, seed=None):
    """The compiled form (srcad/compiled) of the generated function fn, or None when it cannot be
    built (after one warning)."""
    from .. import compiled
    source, supplied, main, _ = cache.entry(f, mode, wrt, row_sparse, variant, sig)
    kinds = _kinds_of(main, source, sig, "reverse" if dots is None else mode, primals, dots)
    kinds.update(seed or {})
    live = fn if getattr(f, "__defaults__", None) or getattr(f, "__kwdefaults__", None) else None
    small = None
    if "+split" in variant:     # small arrays scalarised (smallvec.py) from the recomputing adjoint
        small = cache.entry(f, mode, wrt, row_sparse, variant.replace("+split", ""), sig)[:2]
    return compiled.function(source, supplied, main, getattr(f, "__name__", "f"), kinds, live, fallback=fn,
                             small=small)
