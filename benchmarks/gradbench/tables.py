"""The GradBench run's table, geometric means and results.json rows (benchmarks/gradbench/run.py), kept
apart from the runner so they import without srcad's peers (torch, JAX)."""
import math

import numpy as np

from benchmarks.gradbench.common import rel_err

PEERS = ("autograd", "torch", "jax")


def flat(d):
    d = d if isinstance(d, tuple) else (d,)
    return np.concatenate([np.ravel(x.toarray() if hasattr(x, "toarray") else np.asarray(x, dtype=float))
                           for x in d])


def differs(a, b):
    """Max relative difference of two derivatives (arrays, tuples of arrays, or sparse matrices)."""
    if hasattr(a, "tocsr") or hasattr(b, "tocsr"):
        return rel_err(a, b)
    return rel_err(flat(a), flat(b))


def fmt_s(s):
    return "-" if s is None else f"{s * 1e6:.0f}us" if s < 1e-3 else f"{s * 1e3:.1f}ms" if s < 1 else f"{s:.2f}s"


def table(rows):
    head = ("problem", "size", "thr", "primal", "srcad d/p", "srcad 1st", "autograd d/p", "torch d/p",
            "jax d/p", "jax 1st", "vs autograd", "vs torch", "vs jax", "check")
    lines = []
    for r in rows:
        t, p = r["times_s"], r["primal_s"]
        dp = {n: (f"{t[n] / p:.2f}" if n in t else "-") for n in ("srcad",) + PEERS}
        sp = {n: (f"{t[n] / t['srcad']:.2f}x" if n in t and "srcad" in t else "-") for n in PEERS}
        lines.append((r["problem"], r["size"], str(r["threads"]), fmt_s(p), dp["srcad"],
                      fmt_s(r["first_s"].get("srcad")), dp["autograd"], dp["torch"], dp["jax"],
                      fmt_s(r["first_s"].get("jax")), sp["autograd"], sp["torch"], sp["jax"],
                      r["check"] + (f" [{r['notes']}]" if r["notes"] else "")))
    widths = [max(len(x[i]) for x in lines + [head]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [head] + lines]
    out.insert(1, "-" * len(out[0]))
    return "\n".join(out)


def geomeans(rows):
    """Lines giving, per peer and thread count, the geometric mean over the rows where both ran of
    the peer's derivative time / srcad's (> 1: srcad faster), and the rows where srcad is behind."""
    out = []
    for peer in PEERS:
        for thr in sorted({r["threads"] for r in rows}):
            pairs = [(r, r["times_s"][peer] / r["times_s"]["srcad"]) for r in rows
                     if r["threads"] == thr and peer in r["times_s"] and "srcad" in r["times_s"]]
            if not pairs:
                continue
            gm = math.exp(sum(math.log(x) for _, x in pairs) / len(pairs))
            behind = ", ".join(f"{r['problem']} {r['size']} ({x:.2f}x)" for r, x in pairs if x < 1)
            out.append(f"srcad vs {peer}, {thr} thr: geometric mean {gm:.2f}x over {len(pairs)} rows"
                       + (f"; behind: {behind}" if behind else "; behind: none"))
    return out


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
            for peer in PEERS:
                if peer in t:
                    out.append({**base, "key": f"gradbench_{r['problem']}/vs_{peer}", "workload": label,
                                "measure": f"speed-up over {peer}", "ratio": t[peer] / t["srcad"],
                                "srcad_s": t["srcad"], "other_s": t[peer], "other": peer, "higher_is_better": True})
    return out
