"""build: compile a `.pyx` text into an extension module, cached on disk per user and machine.

Where: `<srcad cache directory>/compiled/` (srcad/cache.py's location and rules: created private
(0700), refused when another user owns it or others may write to it). Each build is one directory
`<module name>/` holding the `.pyx` text, the extension and a manifest with the SHA-256 of both.
The module name carries the hash of the text, the abstract signature, the Python ABI, the Cython
version and the compiler flags, so a second process (or a later session) with the same code and
signature loads the built extension instead of compiling again.

A build happens in a temporary directory of its own and is renamed into place in one step (a
directory rename is atomic): a reader sees no build or a whole one; when two processes build the
same module, the first rename wins and the other uses it. Before loading, the manifest is checked
against the files (the text must be the text srcad wants to run, the extension the one that was
built from it); a mismatch (edited, truncated) is reported once with a CacheWarning, the build is
removed and compiled again.

Toolchain: the kernels' (setup.py) but `-O2` (a third of -O3's compile time on these modules, the
same speed on them within noise): `-ffp-contract=off` (no fused multiply-adds: the same rounding
as the Python path), the baseline instruction set (no -march), the C compiler of this Python's
sysconfig or `$CC`. Cython runs in this process (its compiler stays loaded for the next build;
`$SRCAD_COMPILE_CYTHON_PROCESS=1`: in a child process, as it does anyway when it reports an
error). The C compiler runs niced by `$SRCAD_COMPILE_NICE` (default 0).

Build times on a 2-core machine shared by eight busy processes (load 11-16; CPU seconds, which
the load does not inflate, in brackets): GradBench det's module 41,000 lines of C with -O3 and typed
memoryviews, gcc 55-90 s [15 s]; 23,500 lines with views.py's buffer views, -O2 [7.5 s], -O1 [4 s].
"""
import hashlib
import importlib.machinery
import importlib.util
import linecache
import logging
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import warnings
from pathlib import Path

from .. import cache
from ..errors import CacheWarning

log = logging.getLogger("srcad.compiled")

CFLAGS = ["-O2", "-ffp-contract=off", "-fno-strict-aliasing", "-DNDEBUG", "-fPIC", "-w"]
_lock = threading.RLock()
_LOADED = {}         # module name -> loaded module (an extension loads once per process)
LAST = {}            # what the last compiled module cost: see srcad.compiled.last_build()


class BuildError(Exception):
    """The build failed; the message names the step and the compiler's words."""


def _toolchain_tag():
    try:
        import Cython
    except ImportError:
        raise BuildError("Cython is not installed: pip install cython (or srcad[compile])") from None
    return f"{sys.implementation.cache_tag}|{sysconfig.get_config_var('EXT_SUFFIX')}|cython {Cython.__version__}|" \
           f"{' '.join(CFLAGS)}|{sys.platform}|{os.uname().machine if hasattr(os, 'uname') else ''}"


def module_name(stem, pyx_text, signature):
    h = hashlib.sha256(f"{pyx_text}\0{signature!r}\0{_toolchain_tag()}".encode()).hexdigest()[:24]
    return f"srcad_cy_{cache.file_stem(stem)[:40]}_{h}"


def directory():
    """The private directory of compiled builds, or raise BuildError saying why there is none."""
    base = cache._open_dir()
    if base is None:
        raise BuildError(f"the cache directory {cache.location()} cannot be used (see the CacheWarning)")
    d = base / "compiled"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"{d} cannot be created ({exc.strerror})") from None
    why = cache._problem(d)
    if why:
        raise BuildError(f"{d}: {why}")
    return d


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _ext_path(entry, name):
    return entry / f"{name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _verify(entry, name, pyx_text):
    """None when entry holds the build of pyx_text intact, else what is wrong with it."""
    try:
        manifest = dict(line.split(" ", 1) for line in (entry / "manifest").read_text().splitlines() if " " in line)
        pyx = (entry / f"{name}.pyx").read_bytes()
        ext = _ext_path(entry, name).read_bytes()
    except (OSError, ValueError) as exc:
        return f"it is incomplete ({exc})"
    if pyx != pyx_text.encode() or manifest.get("pyx") != _sha(pyx):
        return "its .pyx text is not the text srcad generated"
    if manifest.get("ext") != _sha(ext):
        return "its extension does not match the SHA-256 recorded when it was built"
    return None


def _remove(entry):
    trash = entry.with_name(f".trash.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        os.rename(entry, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _nice():
    n = os.environ.get("SRCAD_COMPILE_NICE", "").strip()
    if n.isdigit() and int(n) > 0 and hasattr(os, "nice"):
        return lambda: os.nice(int(n))
    return None


def _run(cmd, step, cwd):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, preexec_fn=_nice(), timeout=600)
    except FileNotFoundError:
        raise BuildError(f"{step}: the program {cmd[0]!r} was not found (set CC to a C compiler, or install one)") \
            from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{step}: {exc}") from None
    if p.returncode != 0:
        words = (p.stderr or p.stdout).strip().splitlines()
        raise BuildError(f"{step} failed (exit {p.returncode}): " + " | ".join(words[-6:]))


def _cython_here(tmp, name):
    """Cython run in this process (True when it wrote the C file): a second build then costs a
    fraction of the first (Cython's compiler and utility code stay loaded; a new process pays ~1.5 s
    of CPU to start it). Its messages go to a listing file, not to the user's stderr. Anything
    unusual (an error, Cython not importable this way) -> False: the build runs Cython in a child
    process, which reports the error."""
    if os.environ.get("SRCAD_COMPILE_CYTHON_PROCESS"):
        return False
    try:
        from Cython.Compiler.Errors import PyrexError
        from Cython.Compiler.Main import CompilationOptions, compile_single, default_options
    except ImportError:
        return False
    try:
        opts = CompilationOptions(default_options, language_level=3, output_file=str(tmp / f"{name}.c"),
                                  errors_to_stderr=False, use_listing_file=True)
        result = compile_single(str(tmp / f"{name}.pyx"), opts, full_module_name=name)
    except (PyrexError, OSError, ValueError, TypeError, AttributeError, KeyError, RuntimeError):
        return False            # (Cython's own failures: the child process says what they are)
    return not result.num_errors and (tmp / f"{name}.c").exists()


def _compile(tmp, name, pyx_text):
    """Cython, then the C compiler, in the directory tmp. Returns (cython seconds, cc seconds)."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        raise BuildError(f"no C compiler: {cc[0] if cc else '(empty)'!r} was not found (set CC to a C compiler, "
                         f"or install one)")
    (tmp / f"{name}.pyx").write_text(pyx_text)
    t0 = time.perf_counter()
    if not _cython_here(tmp, name):
        _run([sys.executable, "-m", "cython", "-3", "--fast-fail", f"{name}.pyx", "-o", f"{name}.c"], "Cython", tmp)
    t1 = time.perf_counter()
    include = sysconfig.get_paths()["include"]
    omp = ["-fopenmp"] if "from cython.parallel cimport prange" in pyx_text else []    # fused loops (fuse.py)
    _run(cc + CFLAGS + omp + [f"-I{include}", "-c", f"{name}.c", "-o", f"{name}.o"], "the C compiler", tmp)
    ldshared = shlex.split(os.environ.get("LDSHARED") or sysconfig.get_config_var("LDSHARED") or "cc -shared")
    if os.environ.get("CC"):
        ldshared = cc + ["-shared"] + [a for a in ldshared[1:] if a != "-shared"]
    _run(ldshared + [f"{name}.o", "-o", _ext_path(tmp, name).name] + omp, "the linker", tmp)
    t2 = time.perf_counter()
    for suffix in (".c", ".o", ".lis"):
        try:
            os.unlink(tmp / f"{name}{suffix}")
        except OSError:
            pass
    pyx = (tmp / f"{name}.pyx").read_bytes()
    ext = _ext_path(tmp, name).read_bytes()
    (tmp / "manifest").write_text(f"pyx {_sha(pyx)}\next {_sha(ext)}\n")
    return t1 - t0, t2 - t1


def _import(entry, name):
    path = _ext_path(entry, name)
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def load(name, pyx_text):
    """The extension module `name` built from pyx_text: loaded already, from the disk cache, or
    built now. Raises BuildError (with the reason) when it cannot be had."""
    with _lock:
        mod = _LOADED.get(name)
        if mod is not None:
            LAST.clear()
            LAST.update(module=name, seconds=0.0, reused="process", path=str(getattr(mod, "__file__", "")))
            return mod
        d = directory()
        entry = d / name
        t0 = time.perf_counter()
        timing = None
        if entry.exists():
            why = _verify(entry, name, pyx_text)
            if why is not None:
                warnings.warn(f"srcad's compiled build {entry} is not usable: {why}; srcad builds it again",
                              CacheWarning, stacklevel=cache._user_level())
                _remove(entry)
        if not entry.exists():
            tmp = d / f"tmp.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}"
            tmp.mkdir(mode=0o700)
            try:
                timing = _compile(tmp, name, pyx_text)
                try:
                    os.rename(tmp, entry)
                except OSError:
                    if not entry.exists():
                        raise
                    # another process put the same build there first: use it (checked below)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            why = _verify(entry, name, pyx_text)
            if why is not None:
                raise BuildError(f"the build at {entry} is not usable: {why}")
        try:
            mod = _import(entry, name)
        except ImportError as exc:
            raise BuildError(f"the built extension {entry} cannot be imported: {exc}") from None
        total = time.perf_counter() - t0
        _LOADED[name] = mod
        # tracebacks name `<module>.pyx` (Cython's file name at the build): they show its lines, whose
        # `# L<n>:` comments give the user's line
        lines = pyx_text.splitlines(keepends=True)
        linecache.cache[f"{name}.pyx"] = (len(pyx_text), None, lines, f"{name}.pyx")
        LAST.clear()
        LAST.update(module=name, seconds=total, reused="disk" if timing is None else None, path=str(entry))
        if timing is not None:
            LAST.update(cython_seconds=timing[0], cc_seconds=timing[1])
            log.info("srcad compiled %s in %.2f s (Cython %.2f s, C compiler %.2f s)", name, total, *timing)
        else:
            log.info("srcad loaded the compiled %s from %s", name, entry)
        return mod


def _entries():
    try:
        d = cache.location() / "compiled"
        if not d.is_dir() or d.is_symlink() or cache._problem(d):
            return []
        return [e for e in d.iterdir() if e.name.startswith(("srcad_cy_", "tmp.", ".trash.")) and e.is_dir()
                and not e.is_symlink()]
    except OSError:
        return []


def info():
    """{'dir', 'builds', 'bytes'}: the compiled builds in the cache directory."""
    n = size = 0
    for e in _entries():
        n += e.name.startswith("srcad_cy_")
        for f in e.iterdir():
            try:
                size += f.lstat().st_size
            except OSError:
                pass
    return {"dir": str(cache.location() / "compiled"), "builds": n, "bytes": size}


def clear():
    """Remove every compiled build from the cache directory (and unfinished ones); how many builds.
    A module this process has loaded stays loaded (its file goes; the next process builds again)."""
    n = 0
    for e in _entries():
        n += e.name.startswith("srcad_cy_")
        _remove(e) if e.name.startswith("srcad_cy_") else shutil.rmtree(e, ignore_errors=True)
    return n
