"""Sphinx configuration of srcad's documentation: `python -m sphinx -W --keep-going -b html docs
docs/_build/html` (or `bash docs/build`), from an environment where srcad is installed."""
import os
import sys

import srcad
from srcad.rules.listing import format_rules

project = "srcad"
author = "the srcad developers"
copyright = "2026, the srcad developers"
release = version = srcad.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # the signatures as written; types are in srcad/_typed.pyi
napoleon_numpy_docstring = True
napoleon_google_docstring = False
exclude_patterns = ["_build", "build"]
html_theme = "alabaster"
html_static_path = []
nitpicky = False

# the rule list, generated from the rule table at every build (`srcad rules`)
_here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(_here, "_generated"), exist_ok=True)
_rules = format_rules(include_internal=False)
_path = os.path.join(_here, "_generated", "rules.txt")
if not os.path.exists(_path) or open(_path).read() != _rules:
    with open(_path, "w") as fh:
        fh.write(_rules)
sys.path.insert(0, os.path.join(_here, "..", "examples"))


def _plain_docstrings(app, what, name, obj, options, lines):
    """A docstring without numpydoc sections or examples is prose written for `help()`, not
    reST: shown as it reads there (a literal block), so its asterisks and underscores stay."""
    text = "\n".join(lines)
    if not text.strip() or "\n---" in text or ">>>" in text:
        return
    lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_docstrings)

# the pages' examples run as a module named "docs" would (functions defined in them get a
# __module__, as in a script or a notebook)
doctest_global_setup = "__name__ = 'docs'"
