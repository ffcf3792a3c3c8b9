"""srcad.compiled: the generated derivative as Cython, compiled and cached (`compile=True`).

`srcad.grad(f, compile=True)` (and value_and_grad, vjp, jvp, jacobian) runs the same generated
module as the Python path, written as Cython by srcad/compiled/pyx.py (typed where the signature
proves it, Python objects elsewhere; numbers and small 1-D arrays as C doubles where smallvec.py's
rules hold, a module per length of the call's small arrays) and built by srcad/compiled/build.py (cached per text,
signature and machine). When the build fails (no C compiler, a Cython error, no usable cache
directory) srcad says why in one CompileWarning per module and runs the Python module instead.

`last_build()` says what the last compiled module cost (seconds, or where it was reused from);
the logger "srcad.compiled" logs each build at INFO level.
"""
import ast
import functools
import logging
import threading
import warnings

import numpy as np

from .. import cache
from .build import LAST, BuildError, load, module_name
from .common import require_bound
from .pyx import TranslateError, translate
from .vecexpr import SMALL

log = logging.getLogger("srcad.compiled")

__all__ = ["CompileWarning", "function", "last_build", "pyx_text", "small_lengths"]


class CompileWarning(UserWarning):
    """A compiled derivative could not be built; srcad runs the Python module instead."""


_lock = threading.RLock()
_MODULES = {}        # (module name) -> [(supplied dict, extension module)]: one per supplied values
_WARNED = set()
_NAMED = {}          # (source, main, kinds, stem) -> (pyx text, module name): translated once


def last_build():
    """What the last compiled derivative cost: {'module', 'seconds', 'reused' (None: built now,
    'disk': loaded from the cache directory, 'process': already loaded), 'path', and for a build
    'cython_seconds' and 'cc_seconds'}; {} before any."""
    return dict(LAST)


def pyx_text(source, main, kinds, free=(), shapes=None):
    """The Cython text of the generated module `source` whose main function `main` is called with
    arguments of the given kinds ({parameter name: kind key}); free: the names srcad supplies;
    shapes: {parameter: length} of the small 1-D arrays the text is scalarised for."""
    return translate(source, {main: kinds}, free, None if not shapes else {main: shapes})[0]


def small_lengths(source, main, kinds, args):
    """{parameter: length} of the 1-D float64 arrays among args (main's leading parameters) short
    enough to scalarise; None without args."""
    if args is None:
        return None
    out = {}
    for p, v in zip(_main_params(source, main), args):
        if kinds.get(p) == ("d", 1) and isinstance(v, np.ndarray) and v.ndim == 1 and 0 < v.shape[0] <= SMALL:
            out[p] = v.shape[0]
    return out


def _with_live_defaults(fn, live):
    """fn called with live's default values for the parameters the caller leaves out."""
    code = live.__code__
    pos = code.co_varnames[:code.co_argcount]
    first = len(pos) - len(live.__defaults__ or ())
    names = pos[first:]

    @functools.wraps(live)
    def call(*args, **kwargs):
        defaults = live.__defaults__ or ()
        for k in range(max(0, len(args) - first), len(names)):
            if names[k] not in kwargs:
                kwargs[names[k]] = defaults[k]
        for name, value in (live.__kwdefaults__ or {}).items():
            kwargs.setdefault(name, value)
        return fn(*args, **kwargs)
    return call


def _same(a, b):
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def _main_params(source, main):
    for fn in ast.parse(source).body:
        if isinstance(fn, ast.FunctionDef) and fn.name == main:
            return [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return []


def function(source, supplied, main, stem, kinds, live=None, fallback=None, small=None):
    """The compiled main function of the generated module `source` for arguments of these kinds,
    or None after one CompileWarning naming why it could not be built (the caller runs the Python
    module). live: the Python module's main function when the user's function has defaults: the
    compiled one is called with its default values as they are now (srcad/cache.py gives the
    Python function the user's live defaults; a Cython function's defaults cannot be replaced).

    When the signature has 1-D float64 arrays, each call of a new small length (<= SMALL) builds
    a module scalarised for those lengths (smallvec.py), used when the code allows it (else the
    general module runs). fallback: the Python module's main function: with it the general module
    is built only when a call needs it (a call of small arrays builds one module, not two).
    small: (source, supplied) of the module the small-length builds start from, when it is not
    `source` (grad's split adjoint keeps callee frames in a list, which smallvec.py does not
    scalarise; the recomputing adjoint it speeds up computes the same numbers)."""
    small_source, small_supplied = small or (source, supplied)
    cands = [(k, p) for k, p in enumerate(_main_params(source, main)) if kinds.get(p) == ("d", 1)]
    if cands and fallback is not None:
        general = functools.partial(_built, source, supplied, main, stem, kinds, None)
    else:
        built = _built(source, supplied, main, stem, kinds, None)
        if built is None:
            return None
        general, fallback = (lambda: built), built
        fn = built
    if cands:
        fn = _by_length(general, fallback, cands, lambda key: _built(small_source, small_supplied, main, stem, kinds,
                                                                     {p: n for (_, p), n in zip(cands, key) if n}))
    return fn if live is None else _with_live_defaults(fn, live)


def _by_length(general, fallback, cands, build_for):
    """The module built for the lengths of the call's small 1-D arrays, or the general one
    (general(): built when first needed; fallback when it cannot be)."""
    table = {}

    @functools.wraps(fallback)       # (its signature: callers map tangents to parameter names by it)
    def call(*args, **kwargs):
        key = []
        for k, name in cands:
            v = args[k] if k < len(args) else kwargs.get(name)
            key.append(v.shape[0] if type(v) is np.ndarray and v.ndim == 1 and v.dtype.char == "d"
                       and 0 < v.shape[0] <= SMALL else 0)
        key = tuple(key)
        fn = table.get(key)
        if fn is None:
            fn = (build_for(key) if any(key) else None) or table.get("general")
            if fn is None:
                fn = table["general"] = general() or fallback
            table[key] = fn
        return fn(*args, **kwargs)
    return call


def _built(source, supplied, main, stem, kinds, shapes):
    """The compiled main function (None after one warning; with shapes, None also when nothing
    could be scalarised: no warning, the general module serves)."""
    key = None
    try:
        memo = (source, main, tuple(sorted(kinds.items(), key=lambda kv: kv[0])), stem, tuple(sorted(supplied)),
                tuple(sorted((shapes or {}).items())))
        named = _NAMED.get(memo)
        if named is None:
            require_bound(source, supplied)     # (Cython's own message does not say which name)
            text, notes = translate(source, {main: kinds}, supplied, None if shapes is None else {main: shapes})
            if shapes is not None and not notes["vector"]:
                log.info("srcad does not scalarise %s for the lengths %s: %s", main, shapes, notes["why"])
                named = _NAMED[memo] = (None, None)
            else:
                named = _NAMED[memo] = (text, module_name(stem, text, memo[2] + memo[5]))
        text, base = named
        if text is None:
            return None
        with _lock:
            held = _MODULES.setdefault(base, [])
            for have, mod in held:
                if _same(have, supplied):
                    LAST.clear()
                    LAST.update(module=mod.__name__, seconds=0.0, reused="process",
                                path=str(getattr(mod, "__file__", "")))
                    break
            else:
                # an extension loads once per process: other supplied values need a module of their own
                key = base if not held else f"{base}_{len(held) + 1}"
                if key != base:
                    text = text + f"# copy {len(held) + 1}: the same code with other values of its free names\n"
                mod = load(key, text)
                mod.__dict__.update(supplied)
                held.append((dict(supplied), mod))
        return getattr(mod, main)
    except (BuildError, TranslateError, OSError, AttributeError, TypeError) as exc:
        why = str(exc)
        if (main, key, why) not in _WARNED:
            _WARNED.add((main, key, why))
            warnings.warn(f"srcad could not compile the derivative {main} ({why}); it runs the Python "
                          f"module instead (the same results, without the compiled speed)", CompileWarning,
                          stacklevel=cache._user_level())
        return None
