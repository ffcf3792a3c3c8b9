"""The package's layout, checked mechanically: which layer imports which, and what each pass
says about itself. These read the source with `ast`; nothing is imported or run."""
import ast
import os

import srcad

ROOT = os.path.dirname(srcad.__file__)


def _modules(sub=""):
    base = os.path.join(ROOT, sub)
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path) as fh:
                    yield os.path.relpath(path, ROOT), ast.parse(fh.read(), path)


def _package_of(rel):
    """'frontend/normalize.py' -> ['srcad', 'frontend']; '__init__.py' files name their package."""
    return ["srcad"] + rel.split(os.sep)[:-1]


def _imported(tree, rel):
    """(node, absolute dotted name) for every import in a module, relative ones resolved."""
    pkg = _package_of(rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if node.module is None:             # `from . import x`: x may be a module
                for a in node.names:
                    yield node, f"{mod}.{a.name}"
            else:
                yield node, mod


def test_frontend_never_imports_transform():
    bad = [f"{rel}:{node.lineno} imports {mod}" for rel, tree in _modules("frontend")
           for node, mod in _imported(tree, rel) if mod == "srcad.transform" or mod.startswith("srcad.transform.")]
    assert not bad, "the frontend must not depend on the modes:\n" + "\n".join(bad)


def test_import_resolution_sees_relative_imports():
    # the checker itself: a relative import out of frontend/ resolves to its absolute name
    tree = ast.parse("from ..transform.templates import x\nfrom ..syntax import N\nfrom . import parse\n")
    got = {mod for _, mod in _imported(tree, os.path.join("frontend", "m.py"))}
    assert got == {"srcad.transform.templates", "srcad.syntax", "srcad.frontend.parse"}




def test_the_pass_classes_are_documented_as_passes():
    want = {"Reverse": "transform/reverse.py", "Forward": "transform/forward.py", "Unit": "transform/unit.py",
            "Analysis": "frontend/analyze.py", "Normalizer": "frontend/normalize.py",
            "_Aliases": "frontend/aliases.py", "_Desugar": "frontend/inplace.py", "_Fence": "frontend/fence.py",
            "_Lowerer": "frontend/jumps.py"}
    found = {}
    for rel, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in want and rel == want[node.name]:
                found[node.name] = ast.get_docstring(node) or ""
    assert set(found) == set(want)
    for name, doc in found.items():
        for word in ("Input", "Output", "Invariant"):
            assert word in doc, f"{name}'s docstring does not state its {word.lower()}"



def test_frontend_docstring_follows_the_order_the_driver_runs_the_passes():
    """The order of srcad/frontend/__init__.py's listing is the order in which transform/unit.py
    first calls each frontend module's entry point."""
    with open(os.path.join(ROOT, "frontend", "__init__.py")) as fh:
        doc = ast.get_docstring(ast.parse(fh.read()))
    listed = [ln.split()[0] for ln in doc.splitlines() if ln.startswith("  ") and not ln.startswith("   ")
              and ln.split()[0].endswith(".py")]
    with open(os.path.join(ROOT, "transform", "unit.py")) as fh:
        tree = ast.parse(fh.read())
    module_of = {a.asname or a.name: node.module.split(".")[-1] + ".py" for node in tree.body
                 if isinstance(node, ast.ImportFrom) and node.level == 2 and (node.module or "").startswith("frontend.")
                 for a in node.names}
    calls = sorted((n.lineno, n.col_offset, n.func.id) for n in ast.walk(tree)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in module_of)
    order = []
    for _, _, name in calls:      # helpers that the listing names inside a pass's line are left out
        if module_of[name] not in order and module_of[name] in listed:
            order.append(module_of[name])
    assert listed == order
