"""The public API's docstrings: every function and class in `srcad.__all__` (and the functions of
`srcad.sparse`) has a numpydoc docstring with the sections a user looks for, and its examples run
and print what they say (doctest). A wrong example fails here, in the README's test command; the
API reference (docs/api.rst) is generated from the same docstrings."""
import doctest
import inspect
import types

import pytest

import srcad
import srcad.sparse

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


def _public():
    out = {}
    for name in srcad.__all__:
        obj = getattr(srcad, name)
        if isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        out[f"srcad.{name}"] = obj
    for name in srcad.sparse.__all__ if hasattr(srcad.sparse, "__all__") else ():
        obj = getattr(srcad.sparse, name)
        if inspect.isfunction(obj) and f"srcad.{name}" not in out:
            out[f"srcad.sparse.{name}"] = obj
    return out


PUBLIC = _public()

# functions that raise nothing of their own (no Raises section)
NO_RAISES = {"srcad.get_num_threads", "srcad.tune_memory", "srcad.tree_leaves", "srcad.tree_flatten"}


def _sections(doc):
    return {s for s in ("Parameters", "Returns", "Raises", "Examples") if f"\n{s}\n{'-' * len(s)}\n" in doc}


def _expected(name, obj):
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return {"Examples"}          # raised by srcad, not called: what raises it, and an example
    want = {"Examples"}
    try:
        takes = bool(inspect.signature(obj).parameters)
    except ValueError:          # a str subclass: takes its text
        takes = True
    if takes:
        want.add("Parameters")
    if not isinstance(obj, type):
        want.add("Returns")
        if name not in NO_RAISES:
            want.add("Raises")
    return want


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_numpydoc_sections(name):
    obj = PUBLIC[name]
    doc = inspect.getdoc(obj) or ""
    missing = _expected(name, obj) - _sections("\n" + doc + "\n")
    assert not missing, f"{name}'s docstring lacks the numpydoc section(s) {sorted(missing)}"


def run_examples(obj, name):
    """Run the examples of obj's docstring (and of its methods', for a class) as doctest does;
    returns (failures, attempted, report)."""
    import io
    # the examples run as a user's script does: functions they define belong to `__main__` (a
    # function whose __module__ is srcad's own is srcad's internals, not user code to transform)
    globs = {"__name__": "__main__", name.split(".")[-1]: obj}
    tests = doctest.DocTestFinder(recurse=isinstance(obj, type)).find(obj, name, module=False, globs=globs)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for t in tests:
        runner.run(t, out=out.write)
    res = runner.summarize(verbose=False)
    return res.failed, res.attempted, out.getvalue()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_examples_run(name):
    failed, attempted, report = run_examples(PUBLIC[name], name)
    assert attempted, f"{name}'s docstring has no example"
    assert not failed, report


def test_a_wrong_example_fails():
    def add_one(x):
        """
        >>> add_one(1)
        3
        """
        return x + 1
    failed, attempted, report = run_examples(add_one, "add_one")
    assert (failed, attempted) == (1, 1) and "Expected:\n    3\nGot:\n    2" in report
