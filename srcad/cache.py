"""cache: the generated code of each derivative, built once per process and loaded once.

In memory, per process:
  - the generated text of each (function, mode, wrt, options), built once;
  - the loaded module of each, dropped when a global or closure variable that the generated
    code read has been rebound since (`_fresh`), or when a rule was registered after it;
  - an operator's hold on its modules between calls (`Handle`), one per abstract signature.

`load` makes a module run the text srcad holds in memory, whatever is on disk. Its file in the
cache directory (srcad/cachedir.py: private, verified by hash, bounded) is what tracebacks, pdb
and editors show; when there is no usable directory the text is registered with `linecache`, so
tracebacks still show the generated lines. The directory's names (`location`, `info`, `clear`,
`evict`, ...) are also read here, where the CLI, srcad/compiled/ and the tests find them.
"""
import functools
import inspect
import os
import threading

from .cachedir import (ENV_DIR, ENV_MAX_FILES, ENV_MAX_MB, _FILE, _TAG, _disk, _open_dir,  # noqa: F401
                       _problem, _store, _user_level, clear, default_dir, digest, evict, file_stem, info,
                       location)
from .rules import registry
from .transform.compile import compile_module
from .transform.pipeline import Options, build


_TEXTS = {}              # key -> (text, supplied names, main function name, watch)
_MODULES = {}            # key -> loaded module
_lock = threading.RLock()


def _after_fork_in_child():
    """A child forked while another thread compiled (holding _lock) would wait for it forever:
    the child gets a fresh lock (the compiling thread does not exist there)."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
_seen = {"generation": None}
_cleared = [0]           # clear_memory() calls: a Handle then looks its module up again


# ---- the keys and the in-memory caches --------------------------------------------------------
def _key(func, mode, wrt, row_sparse, variant, sig=None):
    wrt = tuple(wrt) if isinstance(wrt, (tuple, list)) else wrt
    return (func, mode, wrt, tuple(row_sparse), variant, sig, registry.generation[0])


def _fresh(watch):
    """Whether every binding the generated code was built from is unchanged: the global and
    closure variables it read, and each transformed function's code object and defaults
    (frontend/freshness.py DefinitionWatch). Identity tests only, no file is read."""
    for p, k, v in watch:
        if p.current(k) is not v:
            return False
    return True


def text(func, mode="reverse", wrt=0, variant="plain", sig=None):
    """The generated module text of func's derivative (the plain `<f>_vjp` / `<f>_jvp` of emit);
    sig, an abstract signature (transform/kinds/), specialises it to arguments of those kinds."""
    return _entry(_key(func, mode, wrt, (), variant, sig), func, mode, wrt, (), variant, sig)[0]


def _entry(key, func, mode, wrt, row_sparse, variant, sig=None):
    entry = _TEXTS.get(key)
    if entry is not None and _fresh(entry[3]):
        return entry
    with _lock:
        _forget_old_generations()
        entry = _TEXTS.get(key)
        if entry is None or not _fresh(entry[3]):
            entry = _TEXTS[key] = build(func, Options.from_variant(mode, wrt, row_sparse, variant, sig))
            _MODULES.pop(key, None)
        return entry


def entry(func, mode, wrt, row_sparse=(), variant="plain", sig=None):
    """(text, supplied names, main function name, watch) of func's derivative module."""
    return _entry(_key(func, mode, wrt, row_sparse, variant, sig), func, mode, wrt, row_sparse, variant, sig)


def module(func, mode, wrt, row_sparse=(), variant="plain", sig=None):
    """The loaded module of func's derivative; its main function is `module.srcad_main`. With an
    abstract signature sig (transform/kinds/: the kinds of the call's arguments) the code is
    specialised to arguments of those kinds, and cached per signature."""
    key = _key(func, mode, wrt, row_sparse, variant, sig)
    mod = _MODULES.get(key)
    if mod is not None and _fresh(mod.srcad_watch):
        return mod
    with _lock:
        _forget_old_generations()
        mod = _MODULES.get(key)
        if mod is None or not _fresh(mod.srcad_watch):
            source, supplied, main, watch = _entry(key, func, mode, wrt, row_sparse, variant, sig)
            mod = load(source, func.__name__, supplied)
            mod.srcad_main, mod.srcad_watch = main, watch
            _use_live_defaults(getattr(mod, main), func)
            _MODULES[key] = mod
        return mod


def _use_live_defaults(main, func):
    """Give the generated main function func's default objects as they are now (its
    `__defaults__` and `__kwdefaults__`), in place of its text's defaults, which are the source's
    expressions evaluated again: a default reassigned after the def (`f.__defaults__ = ...`), or
    one whose expression reads a name rebound since, is what Python passes to f, so it is what
    the derivative is taken at. (The watch rebuilds the module when they are reassigned.)"""
    code = getattr(func, "__code__", None)
    if code is None or not (func.__defaults__ or func.__kwdefaults__):
        return
    pos = code.co_varnames[:code.co_argcount]
    defaults = func.__defaults__ or ()
    user = dict(zip(pos[len(pos) - len(defaults):], defaults))
    user.update(func.__kwdefaults__ or {})
    gcode = main.__code__
    gpos = gcode.co_varnames[:gcode.co_argcount]
    gdefaults = main.__defaults__ or ()
    if gdefaults:
        main.__defaults__ = tuple(user.get(n, d) for n, d in zip(gpos[len(gpos) - len(gdefaults):], gdefaults))
    if main.__kwdefaults__:
        main.__kwdefaults__ = {n: user.get(n, d) for n, d in main.__kwdefaults__.items()}


class Handle:
    """An operator's hold on its derivative modules between calls (what grad(f) keeps), one per
    abstract signature of the arguments: looked up in the cache at the first call with that
    signature, then at each call only checked, by identity tests, to be still fresh: no rule
    registered and no clear_memory() since, and every binding it was built from unchanged
    (`_fresh`). Otherwise it is looked up again."""

    __slots__ = ("key", "held")

    def __init__(self, func, mode, wrt, row_sparse=(), variant="plain"):
        self.key = (func, mode, wrt, tuple(row_sparse), variant)
        self.held = {}      # signature -> (module, rule generation, clear_memory count), one object

    def module(self, sig=None):
        held = self.held.get(sig)
        if held is not None:
            mod, generation, cleared = held
            if generation == registry.generation[0] and cleared == _cleared[0] and _fresh(mod.srcad_watch):
                return mod
        generation, cleared = registry.generation[0], _cleared[0]
        mod = module(*self.key, sig)
        self.held[sig] = (mod, generation, cleared)
        return mod


def _forget_old_generations():
    """Drop what was generated before the latest rule registration (it is never used again)."""
    now = registry.generation[0]
    if _seen["generation"] != now:
        _seen["generation"] = now
        for table in (_TEXTS, _MODULES):
            for key in [k for k in table if k[-1] != now]:
                del table[key]


@functools.lru_cache(maxsize=4096)
def signature(fn):
    """inspect.signature of a generated function, computed once."""
    return inspect.signature(fn)


def clear_memory():
    """Forget every generated text and module of this process."""
    with _lock:
        _TEXTS.clear()
        _MODULES.clear()
        _cleared[0] += 1


def load(source, name, supplied):
    """A module running `source`, with srcad's free names supplied. Its file in the cache
    directory (or, when there is none, its text in linecache) is what tracebacks show."""
    h = digest(source)
    name = file_stem(name)
    modname = f"srcad_generated.{name}_{h}"
    d = _open_dir()
    filename = None
    if d is not None:
        path = d / f"{name}_{h}.py"
        if path.parent != d:            # (file_stem keeps every name inside d; this says so)
            raise AssertionError(f"srcad: cache file {path} outside {d}")
        if _store(d, path, source):
            filename = str(path)
    if filename is None:
        filename = f"<srcad-generated {name}_{h}.py>"
    return compile_module(source, modname, filename, supplied)

