"""GradBench's problems, every tool in one process: `python -m benchmarks gradbench`.

    python -m benchmarks gradbench                     # the full sizes (many minutes on 2 cores)
    python -m benchmarks gradbench --quick             # small sizes, well under a minute
    python -m benchmarks gradbench --problems lse,gmm --threads 1,2

For each problem and size: the primal, srcad's derivative, and HIPS autograd's, PyTorch's and JAX's
(jax.jit, float64) when installed, timed with in-process timers, interleaved (each tool in turn, so
all see the same machine load), the garbage collector off during the runs; the figures are medians;
the first call (srcad: transformation, sparsity detection; JAX: tracing and XLA compilation) is
reported separately. Threads: srcad's kernels, BLAS (threadpoolctl) and PyTorch are limited to the
given count; XLA's CPU thread pool is sized once per process, when JAX starts, to the first count
given (common.jax_module: the backend is started under a CPU affinity of that many cores), so run
one process per thread count to compare JAX at each. Correctness: srcad's derivative against central
finite differences (or the problem's known answer), and every peer's derivative against srcad's
(max relative difference; a sparse Jacobian compared sparse).

Prints a table (problem, size, threads, primal, srcad d/p, first calls, autograd/torch/jax d/p,
srcad's speed-up over each, check), the geometric mean of srcad's speed-up over each peer, and adds
the rows to benchmarks/results.json and its plot (results-quick.* for --quick) in the form
benchmarks/run.py writes."""
import argparse
import contextlib
import gc
import importlib
import json
import os
import statistics
import time
import traceback

import numpy as np

from benchmarks.run import _use_built_srcad

_use_built_srcad()
import srcad  # noqa: E402

from benchmarks.gradbench import PROBLEMS  # noqa: E402
from benchmarks.gradbench.common import jax_module, jax_threads, torch_module  # noqa: E402
from benchmarks.gradbench.tables import PEERS, differs, fmt_s, geomeans, report_rows, table  # noqa: E402
from benchmarks.report import plot  # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:                         # optional: BLAS then uses its own thread count
    threadpool_limits = None


def timed_first(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def interleaved(fns, repeat, budget):
    """Median time of each fn, run in turn; a fn whose runs add up to `budget` seconds stops early
    (at least one timed run each; the first, untimed call has been made already). Each timed call
    starts after a 1 ms sleep (untimed): on a saturated machine, a call that hands its work to a
    pool thread (XLA's executor, OpenMP/BLAS at 2 threads) right after the main thread ran busy
    otherwise waited for the scheduler: JAX's lse n=10^4 gradient took 3-6 ms after 1 ms of busy
    Python, 0.2-0.4 ms after a 1 ms sleep (load 8-11 on 2 cores)."""
    times = [[] for _ in fns]
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            for fn, t_fn in zip(fns, times):
                if t_fn and sum(t_fn) > budget:
                    continue
                time.sleep(0.001)
                t = time.perf_counter()
                fn()
                t_fn.append(time.perf_counter() - t)
    finally:
        gc.enable()
    return [statistics.median(t) for t in times]


def limits(n):
    srcad.set_num_threads(n)
    if torch_module() is not None:
        torch_module().set_num_threads(n)
    return threadpool_limits(limits=n) if threadpool_limits else contextlib.nullcontext()


def run_one(mod, size, threads, repeat, budget, say, quick=False):
    args = mod.data(size)
    row = {"problem": mod.__name__.rsplit(".", 1)[1], "size": mod.label(size), "threads": threads}
    tools = {"srcad": mod.srcad_derivative, "autograd": mod.autograd_derivative, "torch": mod.torch_derivative,
             "jax": getattr(mod, "jax_derivative", lambda: None)}
    live, notes, first, outs = {}, [], {}, {}
    _, first["primal"] = timed_first(lambda: mod.primal(*args))
    for name, make in tools.items():
        fn = make()
        if fn is None:
            continue
        try:
            outs[name], first[name] = timed_first(lambda fn=fn: fn(*args))
            live[name] = fn
        except Exception as e:           # a refusal or a crash is a finding: reported, not hidden
            notes.append(f"{name} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            if name == "srcad":
                say(traceback.format_exc(limit=-4))
    check = []
    if "srcad" in outs:
        err = mod.fd_check(args, outs["srcad"])
        check.append(f"fd {'ok' if err < 1e-5 else 'FAIL'} ({err:.0e})")
        for name in PEERS:
            if name in outs:
                e = differs(outs[name], outs["srcad"])
                check.append(f"{name} {'ok' if e < 1e-6 else 'DIFFERS'} ({e:.0e})")
    else:
        check.append("srcad FAILED")
    # a peer slower than the budget on its first two calls is timed by the second alone in --quick
    # runs (not JAX: its first call is the compilation; a second call because torch's first
    # double-backward took 4-5 s at kmeans' quick size, then 2 ms a call)
    once = {}
    for n in live:
        if quick and n not in ("srcad", "jax") and first[n] > budget:
            _, again = timed_first(lambda fn=live[n]: fn(*args))
            if again > budget:
                once[n] = again
    names = ["primal"] + [n for n in live if n not in once]
    fns = [lambda: mod.primal(*args)] + [lambda fn=live[n]: fn(*args) for n in names[1:]]
    t = dict(zip(names, interleaved(fns, repeat, budget)), **once)
    row.update(primal_s=t["primal"], first_s={k: v for k, v in first.items()},
               times_s={n: t[n] for n in live}, check="; ".join(check), notes="; ".join(notes),
               jax_threads=jax_threads() if "jax" in live else None)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks gradbench", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, well under a minute")
    ap.add_argument("--problems", default=",".join(PROBLEMS), help="comma-separated subset of " + ",".join(PROBLEMS))
    ap.add_argument("--threads", default="1", help="thread counts to run, e.g. 1,2 (default 1)")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per tool (default 3 quick, 5 full)")
    ap.add_argument("--out", default=None, help="directory of results.json / results.png (default: benchmarks/)")
    ap.add_argument("--no-save", action="store_true", help="print the table only")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()

    def say(text):
        print(f"[{time.perf_counter() - t0:6.1f} s] {text}", flush=True)
    repeat = a.repeat or (3 if a.quick else 5)
    budget = 0.5 if a.quick else 10.0
    rows = []
    thread_counts = [int(n) for n in a.threads.split(",")]
    if jax_module(threads=thread_counts[0]) is not None:
        say(f"jax: XLA's CPU pool started with {jax_threads()} thread(s) for this whole process")
    for name in a.problems.split(","):
        mod = importlib.import_module(f"benchmarks.gradbench.{name.strip()}")
        for size in mod.SIZES["quick" if a.quick else "full"]:
            for threads in thread_counts:
                with limits(threads):
                    r = run_one(mod, size, threads, repeat, budget, say, a.quick)
                rows.append(r)
                t = r["times_s"]
                say(f"{r['problem']} {r['size']} {threads} thr: primal {fmt_s(r['primal_s'])}, "
                    + ", ".join(f"{n} {fmt_s(v)}" for n, v in t.items()) + f"; {r['check']} {r['notes']}")
    print("\n" + table(rows))
    print("\n" + "\n".join(geomeans(rows)))
    if jax_module() is None:
        jax_note = "jax: not installed here (not run)"
    else:
        jax_note = (f"jax: jax.jit, float64; XLA's CPU pool has {jax_threads()} thread(s) in this process"
                    + ("" if set(thread_counts) == {jax_threads()} else
                       " (rows at other thread counts: JAX still uses that pool)")
                    + "; jax 1st = its first call (tracing and compilation)")
    print(f"\n{jax_note}. d/p = derivative time / primal time (medians); vs X = X's time / srcad's; "
          "srcad 1st = first call (transformation, sparsity detection).")
    if not a.no_save:
        out = a.out or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        stem = os.path.join(out, "results-quick" if a.quick else "results")
        data = {"meta": {}, "rows": []}
        if os.path.exists(stem + ".json"):
            with open(stem + ".json") as fh:
                data = json.load(fh)
        done = {r["problem"] for r in rows}
        data["rows"] = [r for r in data["rows"] if not (r["key"].startswith("gradbench_")
                                                        and r["key"].split("/")[0][10:] in done)]
        data["rows"] += report_rows(rows)
        data["gradbench"] = [r for r in data.get("gradbench", []) if r["problem"] not in done] + rows
        with open(stem + ".json", "w") as fh:
            json.dump(data, fh, indent=1)
        png = plot(data["rows"], stem + ".png", data.get("meta"))
        print(f"rows added to {stem}.json" + (f" and {png}" if png else ""))
    return rows


if __name__ == "__main__":
    main()
