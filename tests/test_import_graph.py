"""No import circles in srcad/: the graph of which module imports which, read with `ast`.

Module-level imports and function-level (lazy) imports are edges alike: a lazy import that
only hides a circle from Python's import machinery is still a circle in the design (two
modules that each need the other). Imports under `if TYPE_CHECKING:` are for annotations
only and are not edges. No import is excused: ALLOWED stays empty, and srcad/ has no circle.
"""
import ast
import functools
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "srcad")

# (importer, imported): a function-level import the circle check would skip, and why. Empty: the
# last one (rules.registry -> runtime) went when runtime_rules.py filed the helpers by name
# (registry.file_helpers). A new circle is broken, not listed here.
ALLOWED: dict = {}


def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _modules():
    out = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                out[_module_name(os.path.join(d, f))] = os.path.join(d, f)
    return out


def _is_type_checking(node):
    t = node.test
    return isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" or \
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"


def _imports(tree, name, is_package, modules):
    """[(imported module, lazy?)] of one module's syntax tree."""
    pkg = name if is_package else name.rpartition(".")[0]
    out = []

    def target(base, names):
        found = []
        for n in names:
            sub = f"{base}.{n}" if base else n
            if sub in modules:
                found.append(sub)
            elif base in modules:
                found.append(base)
        return found

    def visit(node, lazy):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, lazy)
            return
        if isinstance(node, ast.Import):
            out.extend((a.name, lazy) for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base.split(".")[0] == "srcad":
                out.extend((m, lazy) for m in target(base, [a.name for a in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child, lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


@functools.lru_cache(maxsize=None)
def import_graph():
    """{module: {imported module: "module" | "function"}} for every module of srcad/."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        with open(path) as fh:
            tree = ast.parse(fh.read())
        edges = {}
        for m, lazy in _imports(tree, name, path.endswith("__init__.py"), modules):
            if lazy and (name, m) in ALLOWED:
                continue
            if m != name and not name.startswith(m + "."):
                # (a module's own packages are imported before it: not an edge of the design)
                if edges.get(m) != "module":
                    edges[m] = "function" if lazy else "module"
        graph[name] = edges
    return graph


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _describe(comp, graph):
    lines = []
    for a in comp:
        for b, how in sorted(graph[a].items()):
            if b in comp:
                lines.append(f"  {a} -> {b} ({how}-level import)")
    return "\n".join(lines)


def test_the_graph_sees_imports():
    g = import_graph()
    assert "srcad.rules.registry" in g["srcad.transform.reverse.plain"]
    assert g["srcad.api.units"]["srcad.cache"] == "module"


def test_no_import_circles():
    assert ALLOWED == {}, f"no import is excused from the circle check: {sorted(ALLOWED)}"
    g = import_graph()
    found = cycles(g)
    if found:
        pytest.fail("import circles in srcad/ (break them: give the knowledge both modules need a home below both):\n"
                    + "\n".join(_describe(c, g) for c in found))


def test_allowed_edges_exist_and_are_lazy():
    """An ALLOWED entry names a function-level import that is there (a stale entry is removed)."""
    modules = _modules()
    for (a, b) in ALLOWED:
        with open(modules[a]) as fh:
            edges = _imports(ast.parse(fh.read()), a, modules[a].endswith("__init__.py"), modules)
        assert (b, True) in edges and (b, False) not in edges, (a, b)


def test_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b": "module"}, "b": {"c": "function"}, "c": {"a": "module"}, "d": {}}) == [["a", "b", "c"]]
