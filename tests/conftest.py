"""The whole suite writes srcad's generated files into a temporary cache directory of its own,
never into the user's cache (tests that need a particular directory set SRCAD_CACHE_DIR)."""
import os
import shutil
import tempfile

_made = []


def pytest_configure(config):
    d = tempfile.mkdtemp(prefix="srcad-test-cache-")
    _made.append(d)
    os.environ["SRCAD_CACHE_DIR"] = d


def pytest_unconfigure(config):
    for d in _made:
        shutil.rmtree(d, ignore_errors=True)


# ---- the `slow` marker (registered in pyproject.toml) ------------------------------------------
# `pytest -m "not slow"` leaves these out for a quick run (under 90 s on 2 cores); CI runs
# everything. Slow: whole files that fuzz (hypothesis), start Dask clusters or build big sparse
# inputs; any test whose code starts a Python subprocess; and single tests measured at several
# seconds (pytest --durations=60).
SLOW_FILES = {"test_property.py", "test_property_modes.py", "test_distributed.py", "test_sparse_big.py",
              "test_benchmarks_smoke.py"}
SLOW_TESTS = set()


def _starts_a_subprocess(item):
    import inspect
    try:
        src = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return False
    return "subprocess" in src or "sys.executable" in src


def pytest_collection_modifyitems(config, items):
    import pytest
    for item in items:
        name = os.path.basename(str(item.fspath))
        if (name in SLOW_FILES or f"{name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS
                or _starts_a_subprocess(item)):
            item.add_marker(pytest.mark.slow)
