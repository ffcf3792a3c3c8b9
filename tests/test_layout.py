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
