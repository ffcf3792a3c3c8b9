"""The client side (program, scatter, tree reduction) and the worker side (compile once, run a
shard, add two partial results) of srcad.distributed.value_and_grad."""
import atexit
import collections
import hashlib
import inspect
import os
import re
import sys
import threading
import time
import traceback

import numpy as np
import scipy.sparse as sp

from .. import tree as _tree
from ..errors import SrcadError
from ..runtime.rowsparse import RowSparse
from ..syntax import source_lines



class ShardError(SrcadError):
    """f or its derivative failed on a worker; the message names the shard and the user's line."""


class Program:
    """What travels to the workers: the generated module's text, the objects srcad supplies to it
    (the values of the user's globals and closure variables that the code reads), and the function
    to call. Its digest covers the text and the content of every supplied value, so a worker's
    compiled module (cached by digest) runs with exactly these values: two closures of the same
    code over other arrays, or a global rebound or changed in place, make another program."""

    def __init__(self, text, supplied, main, fname, seed_name):
        self.text, self.supplied, self.main = text, supplied, main
        self.fname, self.seed_name = fname, seed_name
        h = hashlib.sha256(text.encode())
        h.update(supplied_digest(supplied))
        self.digest = h.hexdigest()[:32]

    def __repr__(self):
        return f"<srcad program {self.main} {self.digest}>"


def supplied_digest(supplied):
    """A digest of the names and the content of the values srcad supplies to a generated module:
    arrays (dense and scipy sparse) by dtype, shape and a fingerprint of their bytes, anything else
    by its pickle (cloudpickle, as Dask sends it); an object that does not pickle by its identity."""
    h = hashlib.sha256()
    for name in sorted(supplied):
        h.update(name.encode() + b"\0")
        h.update(_value_digest(supplied[name]))
    return h.digest()


def _value_digest(v):
    from .. import _kernels
    if isinstance(v, np.ndarray) and not v.dtype.hasobject:
        return repr((type(v).__name__, v.dtype.str, v.shape, _kernels.fingerprint(v))).encode()
    if sp.issparse(v):
        parts = [getattr(v, a) for a in ("data", "indices", "indptr", "row", "col", "offsets")
                 if isinstance(getattr(v, a, None), np.ndarray)]
        return repr((type(v).__name__, v.shape, v.format, [_value_digest(a) for a in parts])).encode()
    import pickle
    try:
        import cloudpickle as pickler
    except ImportError:
        pickler = pickle
    try:
        return hashlib.sha256(pickler.dumps(v)).digest()
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        # an object that does not pickle cannot travel either: Dask says so when it sends it
        return repr(("id", type(v).__qualname__, id(v))).encode()


def _dask():
    try:
        import distributed
    except ImportError:
        raise SrcadError("srcad.distributed needs Dask's distributed scheduler, which is not installed: "
                         "pip install \"srcad[distributed]\" (or pip install \"dask[distributed]\")") from None
    return distributed


# ---- client side ---------------------------------------------------------------------------
_LOCAL = {}                  # the LocalCluster and Client srcad started itself, if any
_LOCK = threading.Lock()


def _after_fork_in_child():
    global _LOCK
    _LOCK = threading.Lock()
    _LOCAL.clear()           # the parent's cluster and client are the parent's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _client(client):
    """The client to use: the given one, the current Dask client, or a LocalCluster of worker
    processes that srcad starts once per process (closed at exit)."""
    if client is not None:
        return client
    distributed = _dask()
    try:
        return distributed.get_client()
    except ValueError:
        pass
    with _LOCK:
        if "client" not in _LOCAL:
            cluster = distributed.LocalCluster(n_workers=min(2, os.cpu_count() or 1), threads_per_worker=1,
                                               processes=True, dashboard_address=None)
            _LOCAL["cluster"], _LOCAL["client"] = cluster, distributed.Client(cluster)
            atexit.register(_close_local)
        return _LOCAL["client"]


def _close_local():
    client, cluster = _LOCAL.pop("client", None), _LOCAL.pop("cluster", None)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()


def _program(f, wrt, options):
    """The generated value-and-gradient module of f, as a Program, and the arguments a lambda,
    method or partial binds in front of the caller's."""
    from .. import api
    passed = api._as_passed(f, "distributed.value_and_grad")
    func, pre = (passed[0], tuple(passed[1])) if passed else (f, ())
    return Program(*api.generated_program(func, api._shift(wrt, len(pre)), **options)), pre


def value_and_grad(f, wrt=0, client=None, reduce="sum", **options):
    """Data-parallel srcad.value_and_grad on a Dask cluster.

    Returns vg(*params, shards=...): for every shard s (a tuple of arrays, or a Dask Future of
    one, e.g. from client.scatter), f(*params, *s) and its gradient with respect to params[wrt]
    run on a worker; the result is (value, gradient) summed over the shards (reduce="sum") or
    averaged (reduce="mean"), in the form srcad.value_and_grad gives. `options` are those of
    srcad.value_and_grad (row_sparse, check_numerics). After a call, vg.last_stats
    holds the shard count, the seconds taken and the bytes of parameters and gradients moved.
    """
    if reduce not in ("sum", "mean"):
        raise SrcadError(f"srcad.distributed.value_and_grad: reduce must be 'sum' or 'mean', not {reduce!r}")
    from .. import api
    known = [n for n, p in inspect.signature(api.generated_program).parameters.items() if p.kind == p.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SrcadError(f"srcad.distributed.value_and_grad does not take {', '.join(unknown)}; its options are "
                         f"those of srcad.value_and_grad: {', '.join(known)}")
    _dask()
    state = {"program": None, "scattered": {}}

    def vg(*params, shards):
        shards = list(shards)
        if not shards:
            raise SrcadError("srcad.distributed.value_and_grad needs at least one shard")
        c = _client(client)
        t0 = time.perf_counter()
        # the program as f's code and the values it reads are now (srcad's cache: identity tests),
        # sent again when its digest (text and supplied values' content) changed
        program, pre = _program(f, wrt, options)
        params = pre + params
        key = (id(c), program.digest)
        futures, inputs, runs = [], [], []
        try:
            if key not in state["scattered"]:      # the text travels once per client; workers compile it once
                state["scattered"] = {key: c.scatter(program, broadcast=True, hash=False)}
            prog_f = state["scattered"][key]
            params_f = c.scatter([params], broadcast=True, hash=False)[0]
            for k, s in enumerate(shards):
                if not _is_future(s):
                    if not isinstance(s, (tuple, list)):
                        raise SrcadError(f"shard {k} must be a tuple of the arguments that follow the parameters "
                                         f"(or a Dask Future of one), not {type(s).__name__}")
                    s = c.scatter([tuple(s)], hash=False)[0]
                inputs.append(s)
                futures.append(c.submit(_run_shard, prog_f, params_f, s, k, pure=False))
            runs = list(futures)
            sizes = c.gather(c.map(_result_bytes, futures, pure=False))
            n = len(futures)
            while len(futures) > 1:               # a fixed tree: the same sums in the same order every run
                pairs = [c.submit(_combine, futures[i], futures[i + 1], pure=False)
                         for i in range(0, len(futures) - 1, 2)]
                futures = pairs + futures[len(futures) - len(futures) % 2:]
            result = futures[0]
            if reduce == "mean":
                result = c.submit(_scale, result, 1.0 / n, pure=False)
            value, g = result.result()
        except _lost_errors() as exc:
            state["scattered"] = {}              # the program may be gone with the worker: send it again
            raise _lost(exc, runs, inputs) from None
        vg.last_stats = {"shards": n, "seconds": time.perf_counter() - t0,
                         "param_bytes": _nbytes(params) * len(c.scheduler_info()["workers"]),
                         "gradient_bytes": int(sum(sizes)), "result_bytes": _nbytes(g)}
        return value, g

    vg.last_stats = None
    vg.__name__ = getattr(f, "__name__", "value_and_grad")
    vg.__doc__ = f"srcad.distributed.value_and_grad of {vg.__name__}"
    return vg


def _lost_errors():
    """What Dask raises when a task or its data is lost (a worker killed, out of memory, gone)."""
    import asyncio
    import concurrent.futures
    kinds = [asyncio.CancelledError, concurrent.futures.CancelledError]
    for module, name in (("distributed.client", "FutureCancelledError"), ("distributed.scheduler", "KilledWorker"),
                         ("distributed", "KilledWorker"), ("distributed.comm.core", "CommClosedError")):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type):
            kinds.append(kind)
    return tuple(kinds)


def _lost(exc, runs, inputs):
    """ShardError naming the shards whose task or data Dask lost."""
    def status(x):
        return getattr(x, "status", None) if _is_future(x) else None
    # the root cause first: a shard's own data lost, then a task lost or failed, then one cancelled after
    bad = ([k for k, s in enumerate(inputs) if status(s) in ("cancelled", "lost", "error")]
           or [k for k, r in enumerate(runs) if status(r) in ("lost", "error")]
           or [k for k, r in enumerate(runs) if status(r) == "cancelled"])
    if not runs:
        return ShardError(
            f"a worker was lost while srcad sent the program, the parameters or the shards ({type(exc).__name__}: "
            f"{exc}): it died (killed, out of memory, its machine gone). Call again once the cluster has "
            f"replaced it; a shard scattered to that worker is gone with it: scatter it again.")
    which = f"shard {bad[0]}" if len(bad) == 1 else (f"shards {', '.join(map(str, bad))}" if bad else "a shard")
    return ShardError(
        f"{which}: Dask lost the task or its data ({type(exc).__name__}: {exc}): the worker that held it "
        f"died (killed, out of memory, its machine gone). A shard scattered to that worker is gone with it; "
        f"scatter it again (or pass the shard as a tuple, which srcad sends with each call) and call again.")


def _is_future(x):
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(x, distributed.Future)


def _nbytes(tree):
    total = 0
    for x in _tree.tree_leaves(tree):
        if isinstance(x, RowSparse):
            total += x.indices.nbytes + x.values.nbytes
        elif sp.issparse(x):
            total += sum(a.nbytes for a in (getattr(x, n, None) for n in ("data", "indices", "indptr", "row", "col"))
                         if isinstance(a, np.ndarray))
        else:
            total += np.asarray(x).nbytes
    return total


# ---- worker side ---------------------------------------------------------------------------
_MODULES = collections.OrderedDict()    # per worker process: program digest -> loaded module
_MODULES_MAX = 32


def _function(program):
    """The loaded module of a program, by its digest (text and supplied values), and its main function."""
    mod = _MODULES.get(program.digest)
    if mod is None:
        from .. import cache
        mod = cache.load(program.text, program.fname, program.supplied)
        _MODULES[program.digest] = mod
        while len(_MODULES) > _MODULES_MAX:
            _MODULES.popitem(last=False)
    else:
        _MODULES.move_to_end(program.digest)
    return mod, getattr(mod, program.main)


class _Named:
    """Stands for the user's function in messages (workers do not have it)."""

    def __init__(self, name):
        self.__name__ = name


# what user code (and the generated code around it) raises when it fails on a shard's data: NumPy's and
# SciPy's errors (LinAlgError is a ValueError), Python's own, srcad's; these reach the driver as ShardError
_USER_CODE_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError, AttributeError, NameError,
                     AssertionError, RuntimeError, OSError, SrcadError)


def _run_shard(program, params, shard, index):
    from .. import api
    mod, fn = _function(program)
    args = tuple(params) + tuple(shard)
    try:
        return api._call_checked(fn, _Named(program.fname), args, {}, program.seed_name, False)
    except _USER_CODE_ERRORS as e:  # a failure of user code: name the shard and the user's line
        where = _user_line(e, mod, program)
        raise ShardError(f"shard {index}: {type(e).__name__}: {e}{where}") from None


def _user_line(exc, mod, program):
    """' (at <file>:<line>: <text>)' for the user line whose generated code raised exc."""
    path = getattr(mod, "__file__", None)
    lineno = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == path or frame.f_globals is mod.__dict__:
            lineno = line
    if lineno is None:
        return ""
    lines = source_lines(program.text, False)
    source = re.search(r"\((.*):\d+\)", lines[0])
    for k in range(min(lineno, len(lines)) - 1, -1, -1):
        m = re.match(r"\s*# (?:adjoint of )?L(\d+): (.*)", lines[k])
        if m:
            file = source.group(1) if source else program.fname
            return f" (at {file}:{m.group(1)}: `{m.group(2).strip()}`)"
    return ""


def _result_bytes(result):
    return _nbytes(result[1])


def _add(x, y):
    """x + y for two gradients of the same argument, never densifying a sparse one."""
    if x is None:
        return y
    if y is None:
        return x
    if isinstance(x, RowSparse) or isinstance(y, RowSparse):
        if not (isinstance(x, RowSparse) and isinstance(y, RowSparse)):
            return np.asarray(x) + np.asarray(y)
        return merge_rows(np.concatenate([x.indices, y.indices]), np.concatenate([x.values, y.values]), x.shape)
    if sp.issparse(x) and sp.issparse(y):
        if _same_pattern(x, y):
            out = x.copy()
            out.data = x.data + y.data
            return out
        return type(x)(x + y)
    return x + y


def merge_rows(indices, values, shape):
    """The RowSparse holding each row once: repeated rows summed in order (the same bits for the
    same inputs), rows sorted."""
    from .. import _kernels
    rows, inverse = np.unique(indices, return_inverse=True)
    merged = _kernels.scatter_add_rows(np.ascontiguousarray(values), inverse.astype(indices.dtype), len(rows))
    return RowSparse(rows.astype(indices.dtype), merged, shape)


def _same_pattern(a, b):
    if a.format != b.format or a.shape != b.shape:
        return False
    if a.format == "coo":
        return np.array_equal(a.row, b.row) and np.array_equal(a.col, b.col)
    return np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)


def _combine(a, b):
    return a[0] + b[0], _tree.tree_map(_add, a[1], b[1])


def _scale_leaf(x, s):
    if x is None:
        return None
    if isinstance(x, RowSparse):
        return RowSparse(x.indices, x.values * s, x.shape)
    if sp.issparse(x):
        out = x.copy()
        out.data = x.data * s
        return out
    return x * s


def _scale(result, s):
    return result[0] * s, _tree.tree_map(lambda x: _scale_leaf(x, s), result[1])

