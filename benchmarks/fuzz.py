"""Differential fuzzer: random programs through srcad, against finite differences and autograd.

    python -m benchmarks.fuzz --n 10000 [--seed S] [--kinds cast,take,...] [--out DIR]

Draws `--n` programs from tests/fuzzgen.py (the property test's generator with the constructs
where srcad's bugs were: casts, decorated and nested-AD helpers, returns in every branch shape,
data-dependent `while`, recursion, cumprod, diag, masked writes, take, repeated-index writes,
custom rules, sparse methods SciPy reorders in place, int64 inputs). Each program runs through
`srcad.grad` (reverse) and `srcad.jvp` (forward), is checked against float64 central differences
and, where autograd runs the code, against autograd's gradient. Prints the counts of

    ok / wrong / crash (a raw, non-srcad exception) / refused (a named srcad error) / skipped

(skipped: no inputs away from every kink, or finite differences unstable), per construct, and
writes each wrong or crashing program, minimized (statements deleted while the outcome stays the
same), to `--out` (default fuzz-repros/) as a runnable .py file.
"""
import argparse
import collections
import json
import os
import pathlib
import random
import re
import signal
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import numpy as np  # noqa: E402

import fuzzgen  # noqa: E402
from fuzzgen import HUNT_FEATURES, Program, check_program, random_program  # noqa: E402

KINDS = sorted(HUNT_FEATURES | {"int_input", "sparse_input", "sparse_input_mutated"})


def _reason(detail):
    """A refusal's message without the file and line (so that equal refusals count together)."""
    first = detail.split("\n")[0]
    name, _, rest = first.partition(": ")
    rest = re.sub(r"^\S+\.py:\d+:\d+: ", "", rest)
    rest = re.sub(r"`[^`]*`", "`...`", rest)
    return f"{name}: {rest[:110]}"


def program_for(seed, i, kinds):
    rng = random.Random(seed * 1_000_003 + i)
    return random_program(rng, hunt=set(kinds) & HUNT_FEATURES)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def timed(seconds, fn, *args, **kwargs):
    """fn(*args) with a time limit (a candidate of the minimizer may loop forever once it lost
    its loop counter's increment); raises _Timeout."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


def _same(result, outcome, mode):
    return result.outcome == outcome and result.mode == mode


def minimize(program, seed, workdir, outcome, mode, int_input, budget=120):
    """Delete statements (a line and the block it opens) while the program keeps `outcome` in
    `mode`; returns the smallest program found."""
    src, ins = program.source.split("\n"), program.instrumented.split("\n")
    start = src.index("def prog(x, y):") + 1
    checks = 0
    changed = True
    while changed and checks < budget:
        changed = False
        i = len(src) - 1
        while i >= start and checks < budget:
            line = src[i]
            if not line.strip() or line.strip().startswith("return np.sum") and i == _last_code(src):
                i -= 1
                continue
            indent = len(line) - len(line.lstrip())
            j = i + 1
            while j < len(src) and src[j].strip() and len(src[j]) - len(src[j].lstrip()) > indent:
                j += 1
            cand_s, cand_i = src[:i] + src[j:], ins[:i] + ins[j:]
            try:
                compile("\n".join(cand_s), "<candidate>", "exec")
            except SyntaxError:
                i -= 1
                continue
            cand = Program("\n".join(cand_s), "\n".join(cand_i), program.features)
            checks += 1
            try:
                r = timed(30, check_program, cand, seed, workdir, int_input=int_input)
            except (Exception, _Timeout):      # noqa: BLE001
                r = None
            if r is not None and _same(r, outcome, mode):
                src, ins = cand_s, cand_i
                changed = True
            i -= 1
    return Program("\n".join(src), "\n".join(ins), program.features)


def _last_code(lines):
    for k in range(len(lines) - 1, -1, -1):
        if lines[k].strip():
            return k
    return 0


def write_repro(out_dir, tag, program, seed, result):
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = fuzzgen.find_inputs(program, seed)
    x, y = (inputs[0], inputs[1]) if inputs else (None, None)
    body = program.source.split("\ndef prog(x, y):\n", 1)[1]
    text = (f'"""fuzz repro {tag}: {result.outcome} in {result.mode} mode\n\n{result.detail}\n"""\n'
            + program.source + "\n\nif __name__ == '__main__':\n"
            + (f"    x = np.array({x.tolist()!r})\n    y = np.array({y.tolist()!r})\n" if x is not None else "")
            + "    print(srcad.grad(prog, wrt=(0, 1))(x, y))\n")
    path = out_dir / f"{tag}.py"
    path.write_text(text)
    return path, body


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="comma-separated constructs (default: all): " + ", ".join(KINDS))
    ap.add_argument("--out", default="fuzz-repros")
    ap.add_argument("--no-autograd", action="store_true")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--minimize-per-kind", type=int, default=2,
                    help="minimize at most this many repros per (outcome, mode, construct); write the rest as drawn")
    ap.add_argument("--minimize-max", type=int, default=30, help="minimize at most this many repros in all")
    ap.add_argument("--json", default=None, help="write the counts here")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)}; choose from {KINDS}")
    out_dir = pathlib.Path(args.out)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="srcad_fuzz_"))
    counts = collections.Counter()
    by_feature = collections.defaultdict(collections.Counter)
    by_mode = collections.Counter()
    autograd = collections.Counter()
    reasons = collections.Counter()
    minimized = collections.Counter()
    repros = []
    t0 = time.time()
    done = 0
    signal.signal(signal.SIGTERM, _interrupt)     # kill <pid>: stop and print the counts so far
    try:
        for i in range(args.n):
            program = program_for(args.seed, i, kinds)
            pseed = args.seed * 1_000_003 + i
            int_input = "int_input" in kinds and i % 5 == 0
            sparse_arg = "sparse_input" in kinds and i % 6 == 5
            try:
                if sparse_arg:        # a sparse argument, non-canonical, maybe refilled in place
                    r = fuzzgen.check_sparse_input(random.Random(pseed), pseed, workdir,
                                                   mutate="sparse_input_mutated" in kinds)
                    program = Program("", "", r.features)
                else:
                    r = timed(300, check_program, program, pseed, workdir, use_autograd=not args.no_autograd,
                              int_input=int_input)
            except _Timeout:
                r = fuzzgen.Result("crash", "timeout", "no result in 300 s (a loop that does not end?)", program.features)
            except Exception as exc:       # noqa: BLE001 - the harness itself: count it, keep going
                r = fuzzgen.Result("crash", "harness", f"{type(exc).__name__}: {exc}", program.features)
            counts[r.outcome] += 1
            autograd[r.autograd.split(":")[0]] += 1
            feats = set(program.features) | ({"int_input"} if int_input else set())
            for f in feats:
                by_feature[f][r.outcome] += 1
            if r.outcome in ("wrong", "crash", "refused"):
                by_mode[f"{r.outcome}:{r.mode}"] += 1
            if r.outcome == "refused":
                reasons[_reason(r.detail)] += 1
            if r.outcome in ("wrong", "crash") and sparse_arg:
                path = out_dir / f"{r.outcome}-sparse_input-s{args.seed}-{i}.txt"
                out_dir.mkdir(parents=True, exist_ok=True)
                path.write_text(f"{r.outcome} in {r.mode} mode\n{r.detail}\n")
                repros.append(str(path))
                print(f"[{i}] {r.outcome} ({r.mode}) -> {path}", flush=True)
            elif r.outcome in ("wrong", "crash"):
                sig = (r.outcome, r.mode, min(sorted(set(program.features) & HUNT_FEATURES) or [""]))
                minimized[sig] += 1
                todo = not args.no_minimize and minimized[sig] <= args.minimize_per_kind and \
                    sum(1 for k, c in minimized.items() for _ in range(min(c, args.minimize_per_kind))) <= args.minimize_max
                small = minimize(program, pseed, workdir, r.outcome, r.mode, int_input, budget=60) if todo else program
                path, _ = write_repro(out_dir, f"{r.outcome}-{r.mode}-s{args.seed}-{i}", small, pseed, r)
                repros.append(str(path))
                print(f"[{i}] {r.outcome} ({r.mode}) -> {path}", flush=True)
            if (i + 1) % 100 == 0:
                print(f"... {i + 1} programs, {dict(counts)}, {time.time() - t0:.0f}s", flush=True)
            done = i + 1
    except KeyboardInterrupt:
        print(f"\ninterrupted after {done} programs", flush=True)
    summary = {"n": done, "seed": args.seed, "kinds": kinds, "counts": dict(counts),
               "by_mode": dict(by_mode), "autograd": dict(autograd),
               "by_feature": {f: dict(c) for f, c in sorted(by_feature.items())},
               "refusals": dict(reasons.most_common(30)), "repros": repros, "seconds": round(time.time() - t0, 1)}
    print("\ncounts:", " / ".join(f"{k} {counts.get(k, 0)}" for k in ("ok", "wrong", "crash", "refused", "skipped")))
    print("where:", dict(by_mode))
    print("autograd:", dict(autograd))
    print("refusals:")
    for why, c in reasons.most_common(12):
        print(f"  {c:5d}  {why}")
    print("per construct (ok / wrong / crash / refused / skipped):")
    for f, c in sorted(by_feature.items()):
        print(f"  {f:22s} " + " / ".join(str(c.get(k, 0)) for k in ("ok", "wrong", "crash", "refused", "skipped")))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1)
    return summary


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    with np.errstate(all="ignore"):
        main()
