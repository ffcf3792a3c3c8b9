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


def test_no_catch_all_handlers():
    """`except Exception` (or a bare `except:`) hides the error that was not meant; a handler
    names what it expects. `except BaseException` is allowed only to clean up and re-raise."""
    bad = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ExceptHandler):
                continue
            caught = [] if node.type is None else (node.type.elts if isinstance(node.type, ast.Tuple) else [node.type])
            names = {c.id for c in caught if isinstance(c, ast.Name)}
            reraises = bool(node.body) and isinstance(node.body[-1], ast.Raise) and node.body[-1].exc is None
            if node.type is None or "Exception" in names or ("BaseException" in names and not reraises):
                bad.append(f"{rel}:{node.lineno}")
    assert not bad, "catch-all exception handlers:\n" + "\n".join(bad)


def test_every_pass_class_says_what_it_does():
    """Every class of the frontend and the modes opens with a docstring; the passes' docstrings
    state their input, output and invariants."""
    missing, vague = [], []
    for sub in ("frontend", "transform"):
        for rel, tree in _modules(sub):
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    doc = ast.get_docstring(node)
                    if not doc:
                        missing.append(f"{rel}:{node.lineno} {node.name}")
                    elif "pass" in doc.split("\n")[0] and not all(w in doc for w in ("Input", "Output", "Invariant")):
                        vague.append(f"{rel}:{node.lineno} {node.name}")
    assert not missing, "classes without a docstring:\n" + "\n".join(missing)
    assert not vague, "pass classes whose docstring lacks Input/Output/Invariant:\n" + "\n".join(vague)


def test_the_pass_classes_are_documented_as_passes():
    want = {"Reverse": "transform/reverse/driver.py", "Forward": "transform/forward.py", "Unit": "transform/unit.py",
            "Analysis": "frontend/analyze.py", "Normalizer": "frontend/normalize/driver.py",
            "_Aliases": "frontend/aliases/analysis.py", "_Desugar": "frontend/inplace.py", "_Fence": "frontend/fence.py",
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


def test_package_docstrings_list_every_module_in_pipeline_order():
    """srcad/frontend/__init__.py and srcad/transform/__init__.py name each of their modules (a
    reader finds every pass from the folder listing and the package docstring)."""
    for sub in ("frontend", "transform"):
        with open(os.path.join(ROOT, sub, "__init__.py")) as fh:
            doc = ast.get_docstring(ast.parse(fh.read())) or ""
        modules = sorted(f for f in os.listdir(os.path.join(ROOT, sub)) if f.endswith(".py") and f != "__init__.py")
        unlisted = [m for m in modules if m not in doc]
        assert not unlisted, (f"srcad/{sub}/__init__.py's docstring does not name {unlisted}: add a line saying "
                              f"what each does (input -> output) at its place in the pipeline")


def test_frontend_docstring_follows_the_order_the_driver_runs_the_passes():
    """The order of srcad/frontend/__init__.py's listing is the order in which transform/pipeline.py
    first calls each frontend module's entry point."""
    with open(os.path.join(ROOT, "frontend", "__init__.py")) as fh:
        doc = ast.get_docstring(ast.parse(fh.read()))
    listed = [ln.split()[0] for ln in doc.splitlines() if ln.startswith("  ") and not ln.startswith("   ")
              and ln.split()[0].endswith(".py")]
    with open(os.path.join(ROOT, "transform", "pipeline.py")) as fh:
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


def test_runtime_imports_go_one_way():
    """No function-local import of a sibling runtime module (such an import hides a cycle), and
    the runtime's __init__.py files (runtime/, runtime/sparse/, ...) only gather names: they define
    no helper of their own."""
    found = set()
    for rel, tree in _modules("runtime"):
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        for _, mod in _imported(ast.Module([node], []), rel):
                            if mod == "srcad.runtime" or mod.startswith("srcad.runtime."):
                                found.add((rel, mod))
    assert not found, f"function-local imports of runtime modules: {sorted(found)}"
    for rel, tree in _modules("runtime"):
        if os.path.basename(rel) == "__init__.py":
            defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            assert not defined, f"{rel} defines {defined}: put them in the module of their topic"


def _runtime_listing(package):
    """The modules (and packages, 'sparse/') a runtime package's __init__.py docstring lists, in order."""
    with open(os.path.join(ROOT, "runtime", package, "__init__.py")) as fh:
        doc = ast.get_docstring(ast.parse(fh.read())) or ""
    return [ln.split()[0] for ln in doc.splitlines() if ln.startswith("  ") and not ln.startswith("   ")
            and ln.split()[0].endswith((".py", "/"))]


def _runtime_packages():
    """'' (runtime/ itself) and the path of each package under it ('sparse/')."""
    base = os.path.join(ROOT, "runtime")
    return [os.path.relpath(d, base).replace(os.sep, "/") + "/" if d != base else ""
            for d, _, files in os.walk(base) if "__init__.py" in files]


def test_runtime_docstring_lists_every_module():
    """runtime/__init__.py names each module and package of the runtime; a package's __init__.py
    names each of its modules."""
    for package in _runtime_packages():
        here = os.path.join(ROOT, "runtime", package)
        entries = sorted(f for f in os.listdir(here) if f.endswith(".py") and f != "__init__.py")
        entries += sorted(d + "/" for d in os.listdir(here) if os.path.isfile(os.path.join(here, d, "__init__.py")))
        listed = _runtime_listing(package)
        assert [m for m in entries if m not in listed] == [], f"runtime/{package}__init__.py's docstring"


def test_runtime_listing_reads_packages():
    assert "sparse/" in _runtime_listing("") and "pattern.py" in _runtime_listing("sparse/")


def test_every_runtime_helper_generated_code_names_is_reachable_as_rt_name():
    """Rule templates call helpers as rt.<name> (or rt.<module>.<name>): each one resolves."""
    import re
    from srcad import runtime as rt
    rules = os.path.join(ROOT, "rules")
    missing = set()
    for f in os.listdir(rules):
        if f.endswith(".py"):
            with open(os.path.join(rules, f)) as fh:
                for dotted in re.findall(r"\brt\.([A-Za-z_][\w.]*)\(", fh.read()):
                    obj = rt
                    for part in dotted.split("."):
                        obj = getattr(obj, part, None)
                    if obj is None:
                        missing.add(dotted)
    assert not missing, sorted(missing)


def _listed_as(path, package):
    """How `package`'s listing names the runtime module at `path` ('sparse/pattern.py' inside
    runtime/): itself ('pattern.py' in 'sparse/'), or the package holding it ('sparse/' in '')."""
    inner = path[len(package):]
    return inner if "/" not in inner else inner.split("/")[0] + "/"


def test_runtime_modules_import_only_those_listed_above_them():
    """Each runtime package's docstring lists its modules bottom-up: each imports (at module level)
    only modules listed before it, in its own package or, through its package's place in the
    enclosing listing, above the package."""
    listings = {p: _runtime_listing(p) for p in _runtime_packages()}
    late = []
    for rel, tree in _modules("runtime"):
        path = os.path.relpath(rel, "runtime").replace(os.sep, "/")
        if os.path.basename(path) == "__init__.py":
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for _, mod in _imported(ast.Module([node], []), rel):
                    if not mod.startswith("srcad.runtime."):
                        continue
                    parts = mod.split(".")[2:]
                    dep = "/".join(parts) + (".py" if os.path.isfile(os.path.join(ROOT, "runtime", *parts) + ".py")
                                             else "/")
                    for package, order in listings.items():      # the innermost package holding both
                        if not (path.startswith(package) and dep.startswith(package)):
                            continue
                        a, b = _listed_as(path, package), _listed_as(dep, package)
                        if a != b:
                            assert a in order and b in order, f"runtime/{package}__init__.py does not list {a} or {b}"
                            if order.index(b) >= order.index(a):
                                late.append(f"{path} imports {dep}")
    assert not late, late
