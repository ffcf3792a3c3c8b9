"""The benchmark plot's bars say what they show: a slowdown plotted as its inverse is labelled with
both numbers (a bar at 0.0554 never reads "18.04x")."""
import os
import sys

# benchmarks/ lives at the repository's root, which is not on sys.path under the `pytest` command
# (and must not stay there: the root's srcad/ is the uninstalled source tree)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
try:
    from benchmarks.report import bar_label, plotted
finally:
    sys.path.remove(ROOT)


def test_inverted_ratio_is_labelled_with_the_bar_and_the_measurement():
    row = {"ratio": 18.04, "unit": "x", "higher_is_better": False}
    assert abs(plotted(row) - 1 / 18.04) < 1e-12
    assert bar_label(row) == "0.0554x = 1 / 18.04x"


def test_speedup_is_labelled_as_measured():
    row = {"ratio": 3.0411, "unit": "x", "higher_is_better": True}
    assert plotted(row) == 3.0411 and bar_label(row) == "3.04x"
    assert bar_label({"ratio": 579.07, "unit": "x", "higher_is_better": True}) == "579x"
