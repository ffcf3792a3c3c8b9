"""The benchmark's report: the table as text and the ratios as a bar chart (matplotlib, optional).
Rows are the dicts benchmarks/run.py builds (key, workload, measure, ratio, unit, srcad_s,
other_s, other, target, higher_is_better, met, note)."""
import numpy as np


def fmt_ratio(row):
    r = row["ratio"]
    if r is None:
        return "-"
    return f"{r:.3g}{row['unit']}" if row["unit"] != "x" else f"{r:.2f}x" if r < 100 else f"{r:.0f}x"


def fmt_time(s):
    if s is None:
        return "-"
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def table(rows):
    head = ("workload", "measure", "srcad", "other", "ratio", "target", "met", "note")
    lines = []
    for r in rows:
        other = "" if r["other"] is None else f"{r['other'][:24]} {fmt_time(r['other_s'])}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "NO")
        lines.append((r["workload"], r["measure"], fmt_time(r["srcad_s"]) if r["srcad_s"] else "", other,
                      fmt_ratio(r) if r["ratio"] is not None else "", r["target"] or "", met, r["note"]))
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    widths[0], widths[1] = min(widths[0], 44), min(widths[1], 52)
    out = []
    for k, line in enumerate([head] + lines):
        cells = [str(c)[:w].ljust(w) if i < 2 else str(c).rjust(w) if i in (2, 3, 4) else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out)


SHORT = {"tiny": "sum(x * x), 3 entries", "thirty_lines": "30-line function", "scalar_loop": "scalar loop",
         "mlp": "dense MLP", "banded_jacobian": "banded Jacobian", "row_max": "sparse row max",
         "spmm": "SpMM", "sparse_lsq": "sparse least squares", "embedding": "embedding",
         "tape": "tape"}


def plotted(row):
    """The bar's length for a ratio row: how much better srcad is, higher always better (the
    ratio itself for a speed-up, its inverse for a slowdown or a memory ratio)."""
    return row["ratio"] if row["higher_is_better"] else 1.0 / row["ratio"]


def bar_label(row):
    """The text beside a bar: the length it shows, and for an inverted ratio the measurement
    it comes from (a grad 18.04x slower than the primal is a bar at 0.0554 = 1 / 18.04x)."""
    v = plotted(row)
    shown = f"{v:.3g}x" if v < 100 else f"{v:.0f}x"
    return shown if row["higher_is_better"] else f"{shown} = 1 / {fmt_ratio(row)}"


def plot(rows, path, meta=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = [r for r in rows if r["ratio"] is not None and r["unit"] == "x"]
    fig, ax = plt.subplots(figsize=(10, 0.38 * len(rows) + 1.2))
    labels, values, colours = [], [], []
    for r in rows:
        better = plotted(r)
        prefix = r["key"].split("/")[0]
        labels.append(f"{SHORT.get(prefix, r['workload'])}: {r['measure']}"[:50])
        values.append(better)
        colours.append("#999999" if r["met"] is None else "#2a9d55" if r["met"] else "#d1495b")
    y = np.arange(len(rows))[::-1]
    ax.barh(y, values, color=colours)
    for yi, r in zip(y, rows):
        if r["target"] is not None:
            t = float(r["target"].split()[1])
            t = t if r["higher_is_better"] else 1.0 / t
            ax.plot([t, t], [yi - 0.4, yi + 0.4], color="black", lw=2)
        ax.text(values[len(rows) - 1 - yi] * 1.05, yi, bar_label(r), va="center", fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=0.5)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("bar: how much better srcad is, log scale (a speed-up as measured; a slowdown or a memory "
                  "ratio as 1 / the measured ratio, both shown); black tick: target", fontsize=8)
    title = "srcad benchmark: green target met, red not met, grey no target"
    if meta:
        title += (f"\n{meta.get('date', '')[:10]}, {meta.get('threads')} threads, {meta.get('cpus')} CPUs"
                  f"{' (quick sizes)' if meta.get('quick') else ''}; medians, noisy on a shared machine")
    ax.set_title(title, fontsize=9)
    fig.subplots_adjust(left=0.34, right=0.97, top=1 - 0.7 / fig.get_figheight(),
                        bottom=0.7 / fig.get_figheight())
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
