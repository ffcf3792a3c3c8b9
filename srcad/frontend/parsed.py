"""Parsed: a user function's syntax tree and what its names refer to (built by parse.py, read by
every pass): resolving a name or attribute chain to its object, and quoting the user's own text
and place for an error message."""
import ast
import builtins
import linecache
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple


_UNBOUND = object()


class ReceiverKind(StrEnum):
    """What a method's first parameter is known to hold (callables.method_function)."""
    INSTANCE = "instance"   # an instance of the class
    CLASS = "class"         # the class itself (a classmethod, or a method of a class object)


class MethodOf(NamedTuple):
    """A method copy's `__srcad_receiver__` (callables.method_function): what its first parameter holds."""
    kind: ReceiverKind
    cls: type               # the class the method was taken from


class Receiver(NamedTuple):
    """What a method's first parameter holds (methods.py resolves `self.f(...)` with it)."""
    param: str              # the first parameter's name (`self`, `cls`)
    kind: ReceiverKind
    cls: type               # the class the method was taken from
    instance: object        # a weak reference to the instance, or None


@dataclass
class Parsed:
    """A user function's syntax tree (line numbers as in its file) and what its names refer to."""
    func: object
    tree: ast.FunctionDef
    filename: str
    env: dict = field(default_factory=dict)   # free name -> object (closure cells, globals, builtins)
    receiver: Receiver = None   # a method's first parameter and what it holds
    extra_watch: list = field(default_factory=list)   # (watch, key, object) beyond free names: callables.py
    generated: bool = False                   # srcad's own generated code, transformed again
    global_writes: set = field(default_factory=set)   # (line, name): writes into shared objects (aliases)
    renamed: dict = field(default_factory=dict)       # a decorator wrapper's closure names: new -> old
    original: object = None   # the function's tree as the user wrote it (error messages quote it: `text`)
    _by_place: dict = None

    def current(self, name):
        """What a free name of the function refers to now (closure cell, else module global)."""
        code = self.func.__code__
        name = self.renamed.get(name, name)
        if name in code.co_freevars:
            try:
                return self.func.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:
                return _UNBOUND
        return self.func.__globals__.get(name, _UNBOUND)

    def text(self, node):
        """The user's own text for `node`, a node of the function as srcad rewrote it (temporaries
        such as `pow_x` in place of `x ** 2`): the expression the user wrote at node's place
        (file, line and column), read from the tree as parsed; ast.unparse(node) when the user's
        code has nothing there (srcad's own generated code, transformed again)."""
        found = self._user_node(node)
        return ast.unparse(found if found is not None else node)

    def value_text(self, v, sites=None):
        """How a message names the value of variable `v` of the rewritten function: `v` when the
        user's code has that name, else the user's expression that srcad computed into it (its
        first assignment among `sites`, (statement, depth) pairs)."""
        if self.original is None or any(isinstance(n, ast.Name) and n.id == v or isinstance(n, ast.arg)
                                        and n.arg == v for n in ast.walk(self.original)):
            return f"`{v}`"
        st = next((st for st, _ in sites or () if isinstance(st, ast.Assign)), None)
        found = self._user_node(st.value) if st is not None else None
        return f"`{ast.unparse(found)}`" if found is not None else f"`{v}`"

    def _user_node(self, node):
        if self.original is None or not hasattr(node, "lineno"):
            return None
        if self._by_place is None:
            by_place = {}
            for n in ast.walk(self.original):
                if isinstance(n, ast.expr) and hasattr(n, "lineno"):
                    by_place.setdefault((n.lineno, n.col_offset), []).append(n)
            self._by_place = by_place
        here = self._by_place.get((node.lineno, node.col_offset), [])
        if not here:
            return None

        def span(n):
            return (n.end_lineno or 0, n.end_col_offset or 0)
        same = [n for n in here if type(n) is type(node)]
        exact = [n for n in same if span(n) == span(node)]
        if exact:
            return exact[0]

        def head(n):        # what a call calls, an attribute's name
            n = n.func if isinstance(n, ast.Call) else n
            return n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None
        alike = [n for n in same if head(n) == head(node)] or same or here
        return max(alike, key=span)

    def line_text(self, lineno):
        return linecache.getline(self.filename, lineno).strip()

    def where(self, node):
        return self.filename, getattr(node, "lineno", 0), getattr(node, "col_offset", 0)

    @staticmethod
    def is_global_ref(node, locals_):
        """A name or attribute chain that refers to a module-level object, not a local value."""
        if isinstance(node, ast.Name):
            return node.id not in locals_
        return isinstance(node, ast.Attribute) and Parsed.is_global_ref(node.value, locals_)

    def try_resolve(self, node, locals_):
        """(True, object) for a name the function does not assign, else (False, None)."""
        try:
            return True, self.resolve(node, locals_)
        except KeyError:
            return False, None

    def resolve(self, node, locals_):
        """The object an expression names (`np.sin`, a closure cell, a global), or raise KeyError."""
        if isinstance(node, ast.Name):
            if node.id in locals_:
                raise KeyError(node.id)
            if node.id in self.env:
                return self.env[node.id]
            if hasattr(builtins, node.id):
                return getattr(builtins, node.id)
            raise KeyError(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value, locals_)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise KeyError(node.attr) from None
        raise KeyError(type(node).__name__)
