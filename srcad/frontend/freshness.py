"""freshness: is the source srcad reads for a function the source of the code Python runs?

Python compiles a module once, when it is imported; `inspect` reads the file as it is now. If the
file was edited since (and the module not reloaded), srcad would differentiate text that is not
running, and `f(x)` and `value_and_grad(f)(x)[0]` would disagree. So the file's text as srcad
reads it is compiled again (once per version of the file), and the function's code object in it
(found by name and first line) must equal the live one: bytecode, constants, names, line table.
The whole file is compiled, since a function's bytecode depends on its context (enclosing
classes and functions, the module's imports and `from __future__` lines).

That comparison is exact for code that Python's own loader compiled from the file and for text
srcad registered itself. For code that came through another loader (an import hook that rewrites
code, such as pytest's assertion rewriting, or an interactive shell), only the function's name,
parameters and first line are compared.

Once generated, a derivative stays valid while the function is the one it was generated from:
`DefinitionWatch` lets the cache check that per call by identity only (the code object, the
defaults and keyword defaults), with no file read.
"""
import functools
import importlib.machinery
import linecache
import os
import re
import types

from ..errors import StaleSourceError


def check_source(func, start):
    """Raise StaleSourceError if the source read for func (its first line at `start`) is not the
    source of func's running code. Returns whether that could be decided exactly (if not, call
    check_def with the parsed def)."""
    if not _exact(func):
        return False
    code = func.__code__
    text = "".join(linecache.getlines(code.co_filename, func.__globals__))
    module = _compile_file(code.co_filename, text)
    if module is None or not any(_same(c, code) for c in _at_line(module, code.co_firstlineno)):
        _stale(func, start)
    return True


def check_def(func, start, node):
    """The weaker check: the def read has func's name, parameters and first line."""
    code = func.__code__
    args = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    read = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    if node.name != code.co_name or tuple(read) != args or start != code.co_firstlineno:
        _stale(func, start)


def _exact(func):
    """Whether func's code was compiled from its file's text as read (no rewriting loader)."""
    filename = func.__code__.co_filename
    if filename.startswith("<srcad-") or (func.__module__ or "").startswith("srcad_generated."):
        return True         # text srcad compiled and registered in linecache itself
    g = func.__globals__
    loader = g.get("__loader__")
    file = g.get("__file__")
    return (type(loader) is importlib.machinery.SourceFileLoader and isinstance(file, str)
            and os.path.normcase(os.path.abspath(file)) == os.path.normcase(os.path.abspath(filename)))


@functools.lru_cache(maxsize=16)
def _compile_file(filename, text):
    """The module code of a file's text (None if it does not compile), as Python's import makes it."""
    try:
        return compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _at_line(code, firstlineno):
    """The code objects inside a module's code that start at the given line."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_firstlineno == firstlineno:
                yield c
            yield from _at_line(c, firstlineno)


def _same(compiled, live):
    """Equal code, up to the name (srcad's own copies of a lambda carry a name of their own)."""
    names = {"co_name": live.co_name}
    if hasattr(live, "co_qualname"):
        names["co_qualname"] = live.co_qualname
    return compiled.replace(**names) == live


def _stale(func, start):
    code = func.__code__
    module = re.sub(r"[^\w.]", "_", func.__module__ or "module")
    raise StaleSourceError(
        f"{code.co_filename}:{start}: the source of `{func.__qualname__}` in this file no longer matches the code "
        f"Python is running: the file was edited after the module was imported. srcad differentiates the source "
        f"it reads, so it would differentiate code that does not run. Reload the module "
        f"(importlib.reload({module})) and take the function from it again, or restart "
        f"Python.")


class DefinitionWatch:
    """For the cache's freshness check: whether a function is still defined as it was, by
    identity: `func.__code__`, `func.__defaults__` and `func.__kwdefaults__` (reassigning any of
    them makes the generated code stale), and each keyword default's value (that dict may be
    changed in place). One watch entry `(w, None, w)`: `w.current(None)` is w while nothing
    changed."""

    __slots__ = ("func", "code", "defaults", "kwdefaults", "kwvalues")

    def __init__(self, func):
        self.func, self.code, self.defaults = func, func.__code__, func.__defaults__
        self.kwdefaults = func.__kwdefaults__
        self.kwvalues = tuple(self.kwdefaults.values()) if self.kwdefaults else ()

    def current(self, _key):
        f = self.func
        if f.__code__ is self.code and f.__defaults__ is self.defaults and f.__kwdefaults__ is self.kwdefaults:
            kw = self.kwdefaults
            if not kw or len(kw) == len(self.kwvalues) and all(
                    a is b for a, b in zip(kw.values(), self.kwvalues)):
                return self
        return None


def definition_watch(func):
    """The watch entries (watch, key, object) of func's definition (see DefinitionWatch)."""
    w = DefinitionWatch(func)
    return [(w, None, w)]
