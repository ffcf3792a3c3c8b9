"""`srcad rules` / `python -m srcad rules`: the rule table, generated from the registry."""
import os
import subprocess
import sys

import numpy as np

import srcad  # noqa: F401  (fills the table)
from srcad.cli import main
from srcad.rules import registry
from srcad.rules.listing import format_rules, key_name

# The package under test (installed in CI, a built source tree in development): subprocesses import
# the same one and run outside the source tree, so an unbuilt `srcad/` in the cwd cannot shadow it.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(srcad.__file__)))


def _rows(text):
    """{operation: (reverse, forward, through)} from the printed table."""
    out = {}
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("operation"))
    for line in lines[start + 1:]:
        if not line.strip():
            break
        parts = line.split()
        name = line[:line.index("  ")].strip() if "  " in line else parts[0]
        rest = line[len(name):].split(None, 2)
        out[name] = (rest[0] == "yes", rest[1] == "yes", rest[2] if len(rest) > 2 else "")
    return out


def test_python_dash_m_prints_every_user_facing_rule(tmp_path):
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-m", "srcad", "rules"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = _rows(res.stdout)
    for key, rule in registry._TABLE.items():
        name = key_name(key)
        internal = getattr(key, "__module__", "").startswith("srcad.runtime") or key == ".pop"
        if rule.nondiff and not internal:
            assert name in res.stdout, f"non-differentiable {name} is not listed"
        elif not internal:
            assert name in rows, f"{name} ({key!r}) is missing from `srcad rules`"
            assert rows[name][0] == bool(rule.vjp), name
            assert rows[name][1] == bool(rule.jvp), name
    # a few rows a user looks for, with their modes and differentiable arguments
    assert rows["numpy.sin"] == (True, True, "x")
    assert rows["x ** y"] == (True, True, "x, y")
    assert rows["numpy.where"][2] == "x, y"
    assert rows["x.sum()"][:2] == (True, True)
    assert "numpy.argmax" in res.stdout.split("no derivative")[1]


def test_srcad_rules_all_lists_runtime_helpers(capsys):
    assert main(["rules", "--all"]) == 0
    text = capsys.readouterr().out
    rows = _rows(text)
    assert rows["srcad.runtime.cumsum_vjp"] == (False, True, "g")
    assert rows["srcad.runtime.sum_vjp"] == (True, True, "c")     # reverse over reverse composes
    assert "srcad.runtime.solve_vjp_a" in rows
    assert main(["rules"]) == 0
    assert "srcad.runtime.sum_vjp" not in capsys.readouterr().out


def test_listing_follows_the_registry():
    """A rule added to (a copy of) the table shows up with its modes, without touching the listing."""
    table = dict(registry._TABLE)

    def my_special(x):
        return x

    registry.defrule(my_special, "x", None, "x_dot")      # forward only
    try:
        table[my_special] = registry._TABLE[my_special]
    finally:
        registry._TABLE.pop(my_special)
    rows = _rows(format_rules(table=table))
    name = key_name(my_special)
    assert rows[name] == (False, True, "x")
    assert np.all([n in rows for n in ("numpy.exp", "numpy.linalg.solve")])
