"""The whole suite writes srcad's generated files into a temporary cache directory of its own,
never into the user's cache (tests that need a particular directory set SRCAD_CACHE_DIR)."""
import os
import shutil
import tempfile

import pytest

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
              "test_benchmarks_smoke.py",
              # the sweeps, ~180 s of the ~265 s (CPU) the rest took (2026-11-25, a 1-in-12 sample with
              # per-test CPU times, checked against full runs of three files): every rule x mode
              # (systematic, rules_coverage), the autograd oracle over the corpus, and the sparse
              # finite-difference grids over formats x dtypes x index types
              "test_systematic.py", "test_oracle.py", "test_rules_coverage.py", "test_sparse.py",
              "test_sparse_forward.py", "test_sparse_edge.py", "test_transform_fixes.py", "test_numerics_fixes.py",
              "test_checkpoint_fuzz.py"}
SLOW_TESTS = {   # each over 2 s (on 2 cores shared with other jobs, 2026-11-25), and
    # the random-program hunts (21 s, 10 s and 1.6 s of a 115 s quick run, 2026-11-25)
    "test_property_hunt.py::test_random_hunting_programs",
    "test_property_hunt.py::test_random_sparse_arguments",
    "test_sparse_duplicates_second_order.py::test_random_sparse_programs_second_order",
    # the check that every error path is rendered, which counts the slow CLI subprocess cases
    "test_error_messages.py::test_every_error_path_is_rendered",
    "test_api_extras.py::test_row_gather_gradient_million_rows_matches_add_at_and_is_thread_deterministic",
    "test_cache.py::test_a_directory_others_may_write_to_is_refused",
    "test_cache.py::test_a_directory_owned_by_another_user_is_refused",
    "test_cache.py::test_an_edited_cached_file_is_rewritten_and_never_run",
    "test_cache.py::test_an_empty_cached_file_does_not_break_later_processes",
    "test_cache.py::test_an_unusable_cache_dir_falls_back_to_memory",
    "test_cache.py::test_importing_srcad_changes_nothing_process_wide",
    "test_cache.py::test_the_bound_is_applied_while_writing",
    "test_cache.py::test_thread_count_follows_the_openmp_convention",
    "test_checkpoint.py::test_checkpoint_decorator_against_finite_differences",
    "test_checkpoint.py::test_peak_memory_of_long_loop",
    "test_dicts.py::test_dict_argument_second_order",
    "test_dicts.py::test_forward_matches_finite_differences",
    "test_dicts.py::test_joined_and_repeated_lists_match_finite_differences",
    "test_dicts.py::test_user_style_dict_programs",
    "test_functions_as_passed.py::test_lambda_through_grad_jvp_and_jacobian",
    "test_functions_as_passed.py::test_method_through_vjp_jvp_jacobian_hessian",
    "test_jacobian_hessian.py::test_tridiagonal_needs_three_colours",
    "test_kernels.py::test_gradient_of_row_gather_from_million_row_table",
    "test_kernels.py::test_large_outputs_reuse_dropped_blocks_and_never_leak_old_values",
    "test_kernels.py::test_sparse_kernels_bit_identical_for_1_and_2_threads",
    "test_kernels_panels.py::test_large_skewed_product_bit_identical_for_1_and_2_threads_with_default_plan",
    "test_layout.py::test_every_pass_class_says_what_it_does",
    "test_layout.py::test_frontend_never_imports_transform",
    "test_layout.py::test_no_catch_all_handlers",
    "test_layout.py::test_runtime_imports_go_one_way",
    "test_layout.py::test_runtime_modules_import_only_those_listed_above_them",
    "test_layout.py::test_the_pass_classes_are_documented_as_passes",
    "test_pytrees.py::test_hessian_through_a_callee_returning_a_pytree",
    "test_rules_coverage.py::test_second_order",
}


_STARTS_A_SUBPROCESS = {}      # test function -> whether its source starts one


def _starts_a_subprocess(item):
    """Whether the test's source names subprocess or sys.executable: read once per function (a
    parametrized test has many items; inspect.getsource took a quarter of collection)."""
    import inspect
    fn = getattr(item, "function", None)
    if fn not in _STARTS_A_SUBPROCESS:
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError, AttributeError):
            src = ""
        _STARTS_A_SUBPROCESS[fn] = "subprocess" in src or "sys.executable" in src
    return _STARTS_A_SUBPROCESS[fn]


# ---- the order of files for `pytest -n 2 --dist loadfile --no-loadscope-reorder` (.ci/run) ----------
# Each worker is given the next file when it is free: the files that take longest go first (measured
# with -n 2, 2026-11-25: each over 30 s of CPU), so that neither worker is left with one of them at
# the end while the other waits. The order within a file is kept; without xdist nothing moves.
LONGEST_FIRST = ["test_property_modes.py", "test_compile.py", "test_autograd_surface.py", "test_systematic.py",
                 "test_kernels.py", "test_checkpoint.py", "test_property_hunt.py", "test_rules_coverage.py",
                 "test_oracle.py", "test_sparse.py", "test_transform_fixes.py", "test_cache.py",
                 "test_property.py", "test_compile_fusion.py", "test_safety.py", "test_error_messages.py"]


def _longest_first(items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)), len(rank)))    # a stable sort


def pytest_collection_modifyitems(config, items):
    import pytest
    if os.environ.get("PYTEST_XDIST_WORKER"):     # every worker collects, and sorts, the same way
        _longest_first(items)
    for item in items:
        name = os.path.basename(str(item.fspath))
        if (name in SLOW_FILES or f"{name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS
                or _starts_a_subprocess(item)):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _sys_path_as_it_was():
    """sys.path restored after each test: `srcad emit pkg.mod:f` run in-process (cli.main) puts the
    working directory first, as the command does in its own process; left there, a later test's
    child process given this sys.path would import the repository's unbuilt srcad/."""
    import sys
    saved = list(sys.path)
    yield
    sys.path[:] = saved
