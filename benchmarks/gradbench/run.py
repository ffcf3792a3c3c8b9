"""GradBench's problems, every tool in one process: `python -m benchmarks gradbench`.

    python -m benchmarks gradbench                     # the full sizes (many minutes on 2 cores)
    python -m benchmarks gradbench --quick             # small sizes, well under a minute
    python -m benchmarks gradbench --problems lse,gmm --threads 1,2

For each problem and size: the primal, srcad's derivative, and HIPS autograd's and PyTorch's when
installed (JAX's when installed: not written yet, reported as not run), timed with in-process timers,
interleaved (each tool in turn, so all see the same machine load), the garbage collector off during
the runs; the figures are medians; the first call (transformation, sparsity detection, JIT) is
reported separately. Threads: srcad's kernels, BLAS (threadpoolctl) and PyTorch are limited to the
given count. Correctness: srcad's derivative against central finite differences (or the problem's
known answer), and every peer's derivative against srcad's.

Prints a table (problem, size, threads, primal, srcad d/p, first call, autograd d/p, torch d/p,
srcad's speed-up over each, check) and adds the rows to benchmarks/results.json and its plot
(results-quick.* for --quick) in the form benchmarks/run.py writes."""
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
from benchmarks.gradbench.common import rel_err, torch_module  # noqa: E402
from benchmarks.report import plot  # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:                         # optional: BLAS then uses its own thread count
    threadpool_limits = None


def flat(d):
    d = d if isinstance(d, tuple) else (d,)
    return np.concatenate([np.ravel(x.toarray() if hasattr(x, "toarray") else np.asarray(x, dtype=float))
                           for x in d])


def timed_first(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def interleaved(fns, repeat, budget):
    """Median time of each fn, run in turn; a fn whose runs add up to `budget` seconds stops early
    (at least one timed run each; the first, untimed call has been made already)."""
    times = [[] for _ in fns]
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            for fn, t_fn in zip(fns, times):
                if t_fn and sum(t_fn) > budget:
                    continue
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
    tools = {"srcad": mod.srcad_derivative, "autograd": mod.autograd_derivative, "torch": mod.torch_derivative}
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
        for name in ("autograd", "torch"):
            if name in outs:
                e = rel_err(flat(outs[name]), flat(outs["srcad"]))
                check.append(f"{name} {'ok' if e < 1e-6 else 'DIFFERS'} ({e:.0e})")
    else:
        check.append("srcad FAILED")
    # a peer slower than the budget on its first call (no transformation to amortise) is timed by
    # that call alone in --quick runs
    once = {n: first[n] for n in live if quick and n != "srcad" and first[n] > budget}
    names = ["primal"] + [n for n in live if n not in once]
    fns = [lambda: mod.primal(*args)] + [lambda fn=live[n]: fn(*args) for n in names[1:]]
    t = dict(zip(names, interleaved(fns, repeat, budget)), **once)
    row.update(primal_s=t["primal"], first_s={k: v for k, v in first.items()},
               times_s={n: t[n] for n in live}, check="; ".join(check), notes="; ".join(notes))
    return row


def fmt_s(s):
    return "-" if s is None else f"{s * 1e6:.0f}us" if s < 1e-3 else f"{s * 1e3:.1f}ms" if s < 1 else f"{s:.2f}s"


def table(rows):
    head = ("problem", "size", "thr", "primal", "srcad d/p", "srcad 1st", "autograd d/p", "torch d/p",
            "jax d/p", "vs autograd", "vs torch", "vs jax", "check")
    lines = []
    for r in rows:
        t, p = r["times_s"], r["primal_s"]
        dp = {n: (f"{t[n] / p:.2f}" if n in t else "-") for n in ("srcad", "autograd", "torch")}
        sp = {n: (f"{t[n] / t['srcad']:.2f}x" if n in t and "srcad" in t else "-") for n in ("autograd", "torch")}
        lines.append((r["problem"], r["size"], str(r["threads"]), fmt_s(p), dp["srcad"],
                      fmt_s(r["first_s"].get("srcad")), dp["autograd"], dp["torch"], "-", sp["autograd"],
                      sp["torch"], "-", r["check"] + (f" [{r['notes']}]" if r["notes"] else "")))
    widths = [max(len(x[i]) for x in lines + [head]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [head] + lines]
    out.insert(1, "-" * len(out[0]))
    return "\n".join(out)


def report_rows(rows):
    """The rows in benchmarks/run.py's form (one per problem, size and thread count), for results.json
    and the plot: srcad's derivative / primal, and srcad's speed-up over each peer."""
    out = []
    for r in rows:
        t, p = r["times_s"], r["primal_s"]
        label = f"GradBench {r['problem']} ({r['size']}, {r['threads']} thr)"
        base = {"unit": "x", "target": None, "met": None, "note": r["check"]}
        if "srcad" in t:
            out.append({**base, "key": f"gradbench_{r['problem']}/derivative_over_primal", "workload": label,
                        "measure": "srcad derivative / primal", "ratio": t["srcad"] / p, "srcad_s": t["srcad"],
                        "other_s": p, "other": "primal", "higher_is_better": False})
            for peer in ("autograd", "torch"):
                if peer in t:
                    out.append({**base, "key": f"gradbench_{r['problem']}/vs_{peer}", "workload": label,
                                "measure": f"speed-up over {peer}", "ratio": t[peer] / t["srcad"],
                                "srcad_s": t["srcad"], "other_s": t[peer], "other": peer, "higher_is_better": True})
    return out


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
    for name in a.problems.split(","):
        mod = importlib.import_module(f"benchmarks.gradbench.{name.strip()}")
        for size in mod.SIZES["quick" if a.quick else "full"]:
            for threads in (int(n) for n in a.threads.split(",")):
                with limits(threads):
                    r = run_one(mod, size, threads, repeat, budget, say, a.quick)
                rows.append(r)
                t = r["times_s"]
                say(f"{r['problem']} {r['size']} {threads} thr: primal {fmt_s(r['primal_s'])}, "
                    + ", ".join(f"{n} {fmt_s(v)}" for n, v in t.items()) + f"; {r['check']} {r['notes']}")
    print("\n" + table(rows))
    print("\njax: not installed here (not run). d/p = derivative time / primal time (medians); "
          "vs X = X's time / srcad's; srcad 1st = first call (transformation, sparsity detection).")
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
