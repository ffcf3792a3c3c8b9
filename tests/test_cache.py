"""The compile cache (srcad/cache.py): private, verified, bounded, safe under threads and
processes; stale source; thread-count environment; `python -m srcad`.

Every test uses a cache directory of its own under tmp_path (SRCAD_CACHE_DIR), never the user's.
Gradients are checked against their analytic values: d/dx sum(k sin(x) + x^2) = k cos(x) + 2x.
"""
import hashlib
import importlib
import importlib.util
import os
import pathlib
import re
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
import warnings

import numpy as np
import pytest

import srcad
from srcad import cache

SRCAD_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(srcad.__file__)))
# Children run outside the source tree: CI installs srcad and runs pytest in the repository, where
# the unbuilt srcad/ in the working directory would come first on a child's sys.path.
CHILD_CWD = tempfile.mkdtemp(prefix="srcad-test-cwd-")
X = np.linspace(-1.0, 1.0, 5)


def want(k, x=X):
    return k * np.cos(x) + 2 * x


def write_module(tmp_path, name, n):
    """A module of n functions f1..fn with f_k(x) = sum(k sin(x) + x^2), imported fresh."""
    src = "import numpy as np\n\n" + "".join(
        f"\ndef f{k}(x):\n    s = {k}.0 * np.sin(x)\n    return np.sum(s + x ** 2)\n\n" for k in range(1, n + 1))
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    return path, load(path, name)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def child_env(**extra):
    env = {k: v for k, v in os.environ.items()        # the suite's own cache dir stays (tests/conftest.py)
           if not k.startswith(("SRCAD_", "OMP_")) or k == "SRCAD_CACHE_DIR"}
    env["PYTHONPATH"] = SRCAD_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env(**env), cwd=CHILD_CWD,
                          capture_output=True, text=True, timeout=120)


def generated(d):
    return sorted(p for p in d.iterdir() if re.fullmatch(r"\w+_[0-9a-f]{24}\.py", p.name))


def check_files(d):
    """Every generated file's content hashes to the name it carries; no temporaries are left."""
    files = generated(d)
    for p in files:
        h = p.name[:-3].rsplit("_", 1)[1]
        assert hashlib.sha256(p.read_bytes()).hexdigest()[:24] == h, p
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]
    return files


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("SRCAD_CACHE_DIR", str(d))
    return d


# ---- location, privacy --------------------------------------------------------------------------
def test_the_directory_is_the_users_cache_location_and_private(fresh_cache, monkeypatch, tmp_path):
    assert cache.location() == fresh_cache
    monkeypatch.delenv("SRCAD_CACHE_DIR")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.location() == tmp_path / "xdg" / "srcad"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert cache.location() == pathlib.Path.home() / ".cache" / "srcad"
    monkeypatch.setenv("SRCAD_CACHE_DIR", str(fresh_cache))
    _, mod = write_module(tmp_path, "cache_loc_mod", 1)
    np.testing.assert_allclose(srcad.grad(mod.f1)(X), want(1))
    if os.name == "posix":
        assert stat.S_IMODE(fresh_cache.stat().st_mode) == 0o700
    files = check_files(fresh_cache)
    assert len(files) == 1 and files[0].name.startswith("f1_")
    assert "def f1_value_and_vjp(x" in files[0].read_text()


# ---- concurrency ----------------------------------------------------------------------------------
def test_four_threads_compiling_new_functions_at_once(fresh_cache, tmp_path):
    _, mod = write_module(tmp_path, "cache_threads_mod", 12)
    start = threading.Barrier(4)
    errors, results = [], {}

    def work(t):
        try:
            start.wait()
            for k in range(1, 13):      # every thread compiles every function: the same files at once
                k = (k + 3 * t) % 12 + 1
                results[t, k] = srcad.grad(getattr(mod, f"f{k}"))(X)
        except Exception:                     # noqa: BLE001  (reported below with its traceback)
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(results) == 48
    for (_, k), g in results.items():
        np.testing.assert_allclose(g, want(k))
    assert len(check_files(fresh_cache)) == 12


def test_processes_compiling_at_once_into_a_fresh_cache(fresh_cache, tmp_path):
    path, _ = write_module(tmp_path, "cache_procs_mod", 10)
    code = f"""
        import importlib.util, sys, threading
        import numpy as np
        import srcad
        spec = importlib.util.spec_from_file_location("m", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        x = np.linspace(-1.0, 1.0, 5)
        bad = []
        def work(ks):
            for k in ks:
                g = srcad.grad(getattr(m, "f%d" % k))(x)
                if not np.allclose(g, k * np.cos(x) + 2 * x):
                    bad.append(k)
        ts = [threading.Thread(target=work, args=(range(1 + t, 11, 2),)) for t in range(2)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print("bad", bad)
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=child_env(SRCAD_CACHE_DIR=fresh_cache),
                              cwd=CHILD_CWD)
             for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "bad []", (out, err)
        assert "Warning" not in err, err
    assert len(check_files(fresh_cache)) == 10


# ---- verification of the files --------------------------------------------------------------------
def test_an_edited_cached_file_is_rewritten_and_never_run(fresh_cache, tmp_path):
    _, mod = write_module(tmp_path, "cache_tamper_mod", 1)
    np.testing.assert_allclose(srcad.grad(mod.f1)(X), want(1))
    (path,) = generated(fresh_cache)
    good = path.read_text()
    assert "np.cos(x)" in good
    path.write_text(good.replace("np.cos(x)", "(-7.0 * np.cos(x))"))     # a wrong adjoint
    cache.clear_memory()
    with pytest.warns(srcad.CacheWarning, match="does not match the hash in its name"):
        g = srcad.grad(mod.f1)(X)
    np.testing.assert_allclose(g, want(1))
    assert path.read_text() == good
    # a new process meeting the edited file: the same
    path.write_text(good.replace("np.cos(x)", "(-7.0 * np.cos(x))"))
    r = run(f"""
        import importlib.util, numpy as np, srcad
        spec = importlib.util.spec_from_file_location("m", {str(tmp_path / 'cache_tamper_mod.py')!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        x = np.linspace(-1.0, 1.0, 5)
        print(np.allclose(srcad.grad(m.f1)(x), np.cos(x) + 2 * x))
    """, SRCAD_CACHE_DIR=fresh_cache)
    assert r.returncode == 0 and r.stdout.split() == ["True"], r.stderr
    assert "does not match the hash in its name" in r.stderr
    assert path.read_text() == good


def test_an_empty_cached_file_does_not_break_later_processes(fresh_cache, tmp_path):
    path, mod = write_module(tmp_path, "cache_empty_mod", 2)
    np.testing.assert_allclose(srcad.grad(mod.f2)(X), want(2))
    (gen,) = generated(fresh_cache)
    gen.write_bytes(b"")
    code = f"""
        import importlib.util, numpy as np, srcad
        spec = importlib.util.spec_from_file_location("m", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        x = np.linspace(-1.0, 1.0, 5)
        print(np.allclose(srcad.grad(m.f2)(x), 2 * np.cos(x) + 2 * x))
    """
    first = run(code, SRCAD_CACHE_DIR=fresh_cache)
    assert first.returncode == 0 and first.stdout.split() == ["True"], first.stderr
    assert "is empty" in first.stderr
    second = run(code, SRCAD_CACHE_DIR=fresh_cache)           # the file was repaired: no warning now
    assert second.returncode == 0 and second.stdout.split() == ["True"], second.stderr
    assert "Warning" not in second.stderr
    assert gen.stat().st_size > 0 and check_files(fresh_cache)


# ---- unusable directories: one warning, compiled in memory, tracebacks still show the code --------
FALLBACK = """
    import importlib.util, re, traceback, warnings
    import numpy as np, srcad
    warnings.simplefilter("always")
    spec = importlib.util.spec_from_file_location("m", {path!r})
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    x = np.linspace(-1.0, 1.0, 5)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ok = [np.allclose(srcad.grad(getattr(m, "f%d" % k))(x), k * np.cos(x) + 2 * x) for k in (1, 2, 3)]
        H = srcad.hessian(m.f1)(x)          # forward mode over the adjoint read back from linecache
    ok.append(np.allclose(H, np.diag(-np.sin(x) + 2.0)))
    print("ok", all(ok))
    print("warnings", sum(issubclass(w.category, srcad.CacheWarning) for w in seen))
    print("message", [str(w.message) for w in seen][:1])
    y, pullback = srcad.vjp(m.f3, x)
    try:
        pullback("not a number")
    except (TypeError, ValueError):     # (np.full_like says ValueError: could not convert string to float)
        tb = traceback.format_exc()
    print("traceback", re.search(r'File "<srcad-generated f3_\\w+[.]py>", line \\d+, in f3_vjp\\n +\\w+_bar = ', tb) is not None)
"""


def fallback_run(tmp_path, d, name):
    path, _ = write_module(tmp_path, name, 3)
    r = run(FALLBACK.format(path=str(path)), SRCAD_CACHE_DIR=d)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert out["ok"] == "True" and out["traceback"] == "True", r.stdout
    assert out["warnings"] == "1", r.stdout            # one warning in the whole process
    return out["message"]


def test_an_unusable_cache_dir_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    message = fallback_run(tmp_path, blocker / "cache", "cache_unusable_mod")
    assert "cannot use its cache directory" in message and "SRCAD_CACHE_DIR" in message


def _make_read_only(d):
    """Make d unwritable even for root where the platform allows; False if it stays writable."""
    d.chmod(0o500)
    probe = d / "probe"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError:
        return True
    if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode != 0:
        return False
    return True


def test_a_read_only_cache_dir_falls_back_to_memory(tmp_path, monkeypatch):
    d = tmp_path / "ro"
    path, mod = write_module(tmp_path, "cache_ro_mod", 3)
    with monkeypatch.context() as m:         # a directory srcad made and used before (in this process)
        m.setenv("SRCAD_CACHE_DIR", str(d))
        np.testing.assert_allclose(srcad.grad(mod.f1)(X), want(1))
    assert generated(d)
    if not _make_read_only(d):
        pytest.skip("this user can write to a mode-0500 directory and chattr is unavailable")
    try:
        message = fallback_run(tmp_path, d, "cache_ro_mod2")
        assert "cannot use its cache directory" in message
    finally:
        subprocess.run(["chattr", "-i", str(d)], capture_output=True)
        d.chmod(0o700)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_directory_others_may_write_to_is_refused(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    message = fallback_run(tmp_path, d, "cache_open_mod")
    assert "others may write to it" in message
    assert not generated(d)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_directory_owned_by_another_user_is_refused(tmp_path):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    message = fallback_run(tmp_path, d, "cache_foreign_mod")
    assert "belongs to another user" in message
    assert not generated(d)


# ---- the size bound and the command line ------------------------------------------------------------
def test_eviction_keeps_the_most_recently_used_files(fresh_cache, tmp_path, monkeypatch):
    _, mod = write_module(tmp_path, "cache_evict_mod", 6)
    for k in range(1, 7):
        srcad.grad(getattr(mod, f"f{k}"))(X)
    files = check_files(fresh_cache)
    assert len(files) == 6
    for age, p in enumerate(sorted(files, key=lambda p: p.name)):
        os.utime(p, (1e9 + age, 1e9 + age))           # oldest first in name order
    other = fresh_cache / "notes.txt"
    other.write_text("not srcad's")
    monkeypatch.setenv("SRCAD_CACHE_MAX_FILES", "4")
    assert cache.evict() == 2
    kept = generated(fresh_cache)
    assert kept == sorted(files, key=lambda p: p.name)[2:] and other.exists()
    size = sum(p.stat().st_size for p in kept)
    assert cache.evict(max_bytes=size - 1) == 1          # the byte bound too
    assert len(generated(fresh_cache)) == 3
    # a module whose file was evicted keeps working, and its source stays readable
    cache.evict(max_files=0)
    assert not generated(fresh_cache)
    np.testing.assert_allclose(srcad.grad(mod.f3)(X), want(3))
    np.testing.assert_allclose(srcad.hessian(mod.f3)(X), np.diag(-3 * np.sin(X) + 2.0), atol=1e-12)
    assert other.exists()


def test_the_bound_is_applied_while_writing(fresh_cache, tmp_path):
    path, _ = write_module(tmp_path, "cache_bound_mod", 8)
    r = run(f"""
        import importlib.util, numpy as np, srcad
        spec = importlib.util.spec_from_file_location("m", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        for k in range(1, 9):
            srcad.grad(getattr(m, "f%d" % k))(np.ones(2))
    """, SRCAD_CACHE_DIR=fresh_cache, SRCAD_CACHE_MAX_FILES=3)
    assert r.returncode == 0, r.stderr
    assert 1 <= len(check_files(fresh_cache)) <= 3


def test_cache_command_line(fresh_cache, tmp_path, capsys):
    from srcad.cli import main
    _, mod = write_module(tmp_path, "cache_cli_mod", 2)
    srcad.grad(mod.f1)(X)
    srcad.grad(mod.f2)(X)
    (fresh_cache / "notes.txt").write_text("keep me")
    r = subprocess.run([sys.executable, "-m", "srcad", "cache", "--info"], env=child_env(SRCAD_CACHE_DIR=fresh_cache),
                       capture_output=True, text=True, cwd=CHILD_CWD)
    assert r.returncode == 0, r.stderr
    assert str(fresh_cache) in r.stdout and re.search(r"files\s*:\s*2\b", r.stdout), r.stdout
    assert main(["cache", "--clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert not generated(fresh_cache) and (fresh_cache / "notes.txt").read_text() == "keep me"
    assert main(["cache"]) == 0 and re.search(r"files\s*:\s*0\b", capsys.readouterr().out)


def test_python_m_srcad_version(capsys):
    r = subprocess.run([sys.executable, "-m", "srcad", "--version"], env=child_env(), capture_output=True, text=True,
                       cwd=CHILD_CWD)
    assert r.returncode == 0 and r.stdout.strip() == f"srcad {srcad.__version__}", (r.stdout, r.stderr)
    from srcad.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"srcad {srcad.__version__}"


# ---- threads and importing -------------------------------------------------------------------------
def test_thread_count_follows_the_openmp_convention(monkeypatch):
    from srcad import _kernels
    for var in ("SRCAD_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _kernels._default_num_threads() == cores
    monkeypatch.setenv("OMP_NUM_THREADS", "6,2")            # nested levels: the first one
    assert _kernels._default_num_threads() == 6
    monkeypatch.setenv("SRCAD_NUM_THREADS", "3")
    assert _kernels._default_num_threads() == 3
    monkeypatch.setenv("SRCAD_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="SRCAD_NUM_THREADS='many'"):
        _kernels._default_num_threads()
    # what a fresh process uses from its environment
    code = "import srcad; print(srcad.get_num_threads())"
    assert run(code, SRCAD_NUM_THREADS=3, OMP_NUM_THREADS=5).stdout.strip() == "3"
    assert run(code, OMP_NUM_THREADS=5).stdout.strip() == "5"


def test_importing_an_unbuilt_source_tree_says_to_build_it(tmp_path):
    import shutil
    shutil.copytree(os.path.dirname(srcad.__file__), tmp_path / "srcad",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "*.c"))
    r = subprocess.run([sys.executable, "-c", "import srcad"], cwd=tmp_path, capture_output=True, text=True,
                       env={k: v for k, v in child_env().items() if k != "PYTHONPATH"}, timeout=120)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and "circular" not in r.stderr, r.stderr
    assert "pip install ." in last and "build_ext --inplace" in last


# ---- stale source ---------------------------------------------------------------------------------
STALE_SRC = '''import numpy as np


def helper(x):
    return x ** 2


def f(x):
    return np.sum(helper(x))


def outer(a):
    def inner(x):
        return np.sum(a * np.sin(x))
    return inner


class Model:
    scale = 2.0

    def loss(self, x):
        return self.scale * np.sum(x ** 3)
'''


def consistent(fn, *args, wrt=0):
    """value_and_grad's value is what Python's own call returns; the gradient comes with it."""
    value, g = srcad.value_and_grad(fn, wrt=wrt)(*args)
    assert value == fn(*args)
    return g


def test_a_file_edited_after_import_asks_for_a_reload(tmp_path, monkeypatch):
    path = tmp_path / "cache_stale_mod.py"
    path.write_text(STALE_SRC)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("cache_stale_mod")
    np.testing.assert_allclose(consistent(mod.f, X), 2 * X)
    path.write_text(STALE_SRC.replace("return np.sum(helper(x))", "return np.sum(helper(x) * 10.0)"))
    assert mod.f(X) == np.sum(X ** 2)                       # Python still runs the old code
    np.testing.assert_allclose(consistent(mod.f, X), 2 * X)   # code generated before the edit: consistent
    for call in (lambda: srcad.grad(mod.f, wrt="x")(X),       # a new transformation reads the new text
                 lambda: srcad.jvp(mod.f, (X,), (np.ones_like(X),)),
                 lambda: srcad.emit(mod.f, mode="forward")):
        with pytest.raises(srcad.StaleSourceError) as err:
            call()
        msg = str(err.value)
        assert f"{path}:8" in msg and "`f`" in msg and "importlib.reload(cache_stale_mod)" in msg
    importlib.reload(mod)
    np.testing.assert_allclose(consistent(mod.f, X), 20 * X)  # the new code, on both sides


def test_stale_detection_has_no_false_alarms_and_sees_callees(tmp_path):
    path = tmp_path / "cache_stale_mod2.py"
    path.write_text(STALE_SRC)
    mod = load(path, "cache_stale_mod2")
    # closures and methods compile in their context: an unedited file passes
    np.testing.assert_allclose(consistent(mod.outer(3.0), X), 3.0 * np.cos(X))
    np.testing.assert_allclose(consistent(mod.Model.loss, mod.Model(), X, wrt=1), 6.0 * X ** 2)
    # an edit below the functions changes none of them
    path.write_text(STALE_SRC + "\n\ndef later(x):\n    return x\n")
    np.testing.assert_allclose(consistent(mod.outer(4.0), X), 4.0 * np.cos(X))
    # an edit of a callee: f's own text is unchanged, but srcad would read the new helper
    path.write_text(STALE_SRC.replace("return x ** 2", "return x ** 4.0"))
    with pytest.raises(srcad.StaleSourceError, match="`helper`"):
        srcad.grad(mod.f)(X)
    # lines inserted above a function: the text at its line is something else now
    path.write_text("# a new comment\n" + STALE_SRC)
    with pytest.raises(srcad.StaleSourceError, match="`outer.<locals>.inner`"):
        srcad.grad(mod.outer(5.0))(X)


def test_importing_srcad_changes_nothing_process_wide():
    r = run("""
        import os
        before = dict(os.environ)
        import srcad, srcad._kernels._malloc as m
        print(dict(os.environ) == before, m.tuned)
    """)
    assert r.returncode == 0 and r.stdout.split() == ["True", "False"], r.stderr


def test_a_rule_registration_drops_older_generated_code_from_memory(fresh_cache, tmp_path):
    from srcad.rules import registry
    _, mod = write_module(tmp_path, "cache_generation_mod", 2)
    np.testing.assert_allclose(srcad.grad(mod.f1)(X), want(1))

    def scaled(x):                       # a "compiled" function with a hand-written rule
        return 2.0 * x
    srcad.register_vjp(scaled, lambda x: (scaled(x), lambda dy: (2.0 * dy,)))
    np.testing.assert_allclose(srcad.grad(mod.f2)(X), want(2))
    now = registry.generation[0]
    assert cache._MODULES and all(k[-1] == now for k in list(cache._MODULES) + list(cache._TEXTS))
    np.testing.assert_allclose(srcad.grad(mod.f1)(X), want(1))     # rebuilt on demand
