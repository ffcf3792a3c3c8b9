"""The differential fuzzer in CI: random programs built where srcad's bugs were (issue 28).

tests/fuzzgen.py draws programs that focus on one or two of its HUNT_FEATURES (casts, decorated
and nested-AD helpers, returns in every branch shape and inside loops, data-dependent `while`,
recursion, cumprod, diag, masked writes, take, repeated-index writes, custom rules, sparse methods
SciPy reorders in place, int64 inputs), on top of the property test's statements. Each runs through
srcad.grad and srcad.jvp and is checked against float64 central differences and, where autograd
runs the code, against autograd (`fuzzgen.check_program`). A wrong number or a raw exception fails;
a named refusal is counted. `python -m benchmarks.fuzz --n 10000` runs the same check on more.

KNOWN: constructs whose bugs are filed in issue 28 and fixed on other branches; CI leaves them out
until the fix lands (then delete the entry: `test_known_constructs_still_fail` fails to say so).
"""
import collections
import random

import pytest

import fuzzgen

KNOWN = {
    # the generator's decorators are `def wrapper(*args)`: srcad refuses *args functions with a named
    # error (a refusal, not a number; supporting *args is open in issue 28)
    "decorated": "issue 28: *args wrappers are refused (UnsupportedSyntaxError), not differentiated",
    "nested_ad": "issue 28: srcad.grad(f) inside a differentiated function: some forms still refused",
}
# a repro per known construct: each must still be wrong or refused while it is listed
KNOWN_REPROS = {
    "decorated": "    return np.sum(deco_wraps(x, y[0]))\n",
}

PROGRAMS = 150          # CI: a few hundred programs (these and the sparse ones), deterministic
SPARSE_PROGRAMS = 30
SEED = 2028


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("srcad_hunt_programs")


def _kinds():
    return sorted(set(fuzzgen.HUNT_FEATURES) - set(KNOWN))


def test_random_hunting_programs(prog_dir):
    counts, problems = collections.Counter(), []
    by_feature = collections.defaultdict(collections.Counter)
    for i in range(PROGRAMS):
        rng = random.Random(SEED * 1_000_003 + i)
        program = fuzzgen.random_program(rng, hunt=_kinds())
        assert not (set(program.features) & set(KNOWN)), program.features
        r = fuzzgen.check_program(program, SEED + i, prog_dir, use_autograd=i % 2 == 0)
        counts[r.outcome] += 1
        counts["autograd " + r.autograd.split(":")[0]] += 1
        for f in program.features:
            by_feature[f][r.outcome] += 1
        if r.outcome in ("wrong", "crash"):
            problems.append(f"program {i} ({r.outcome} in {r.mode} mode, {sorted(program.features)}):\n"
                            f"{program.source.split('def prog(x, y):', 1)[1]}\n{r.detail}")
    print("\nhunting programs:", dict(counts))
    for f, c in sorted(by_feature.items()):
        print(f"  {f:22s} {dict(c)}")
    assert not problems, f"{len(problems)} of {PROGRAMS} programs:\n\n" + "\n\n".join(problems[:5])
    assert counts["ok"] >= PROGRAMS // 2, counts          # the generator mostly writes what srcad does
    assert counts["autograd agree"] >= 5, counts           # autograd runs a share of them (7 at writing)


def test_random_sparse_arguments(prog_dir):
    """Non-canonical sparse arguments (CSR/CSC with unsorted, repeated indices; COO with repeated
    coordinates): reverse and forward mode against differences over the stored values, and again
    after the matrix is refilled in place (unless that is still in KNOWN)."""
    counts, problems = collections.Counter(), []
    for i in range(SPARSE_PROGRAMS):
        r = fuzzgen.check_sparse_input(random.Random(SEED + i), SEED + i, prog_dir,
                                       mutate="sparse_input_mutated" not in KNOWN)
        counts[r.outcome] += 1
        if r.outcome in ("wrong", "crash"):
            problems.append(f"sparse program {i}: {r.outcome} in {r.mode} mode\n{r.detail}")
    print("\nsparse arguments:", dict(counts))
    assert not problems, "\n\n".join(problems[:3])
    assert counts["ok"] >= SPARSE_PROGRAMS * 3 // 4, counts


def test_mutated_sparse_argument_still_listed(prog_dir):
    """While `sparse_input_mutated` is in KNOWN, some refilled matrix still gets a wrong gradient."""
    if "sparse_input_mutated" not in KNOWN:
        return
    bad = 0
    for i in range(12):
        r = fuzzgen.check_sparse_input(random.Random(i), i, prog_dir, mutate=True)
        bad += r.outcome in ("wrong", "crash")
    assert bad, "refilled sparse arguments now work: remove sparse_input_mutated from KNOWN"


def _program(body):
    header = fuzzgen.HUNT_HEADER
    src = ("import numpy as np\nimport scipy.sparse\nimport scipy.special\nimport srcad\n" + header
           + "\n\ndef prog(x, y):\n" + body)
    return fuzzgen.Program(src, src, frozenset())


@pytest.mark.parametrize("feature", sorted(KNOWN_REPROS))
def test_known_constructs_still_fail(feature, prog_dir):
    """While a construct is in KNOWN its repro is still wrong or refused; once it is ok, remove the
    entry (and this repro) so that CI draws the construct again."""
    r = fuzzgen.check_program(_program(KNOWN_REPROS[feature]), 5, prog_dir, use_autograd=False)
    assert r.outcome in ("wrong", "refused", "crash"), (
        f"{feature} now works ({r.outcome}): remove it from KNOWN in tests/test_property_hunt.py ({KNOWN[feature]})")


def test_int_input_is_an_input_error_or_listed(prog_dir):
    """API: a differentiated int64 argument raises InputError (listed in KNOWN until fixed)."""
    r = fuzzgen.check_program(_program("    return np.sum(np.sin(x) * y)\n"), 3, prog_dir, use_autograd=False,
                              int_input=True)
    if "int_input" in KNOWN:
        assert r.outcome == "wrong" and r.mode == "int_input", (
            f"int64 arguments now raise InputError: remove int_input from KNOWN ({r})")
    else:
        assert r.outcome == "ok", r.detail


def test_the_check_bites(prog_dir):
    """check_program reports a wrong derivative: a custom rule with a wrong pullback is 'wrong'."""
    body = "    return np.sum(softclip(x) * y)\n"
    src = _program(body).source.replace("return (dy * (1.0 - t * t),)", "return (dy * (1.0 - t),)")
    r = fuzzgen.check_program(fuzzgen.Program(src, src, frozenset()), 4, prog_dir, use_autograd=False)
    assert r.outcome == "wrong" and r.mode == "reverse", r
