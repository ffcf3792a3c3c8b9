"""binomial: binomial checkpointing (Griewank and Walther) for the adjoint of a loop.

The generated code of `grad(f, checkpoint=k)` runs a `for i in range(n)` loop as calls of a step
function `state = step(i, *state)` that keeps no tape, and reverses it with `revolve`, which holds
at most k snapshots of the loop-carried state (the one at the loop's entry included) and re-runs
the steps between them. `step_vjp(i, *state, *bars)` re-runs step i with a tape and returns the
cotangents after its adjoint.

With s snapshots, n steps are reversed with r = min{r : C(s + r, s) >= n} re-runs of the most
re-run step, and `recomputations(n, s) = r*n - C(s + r, s + 1)` step calls in all, the
fewest any schedule with s snapshots needs (Griewank 1992). Each split below is chosen to reach
that count: the total cost is convex in the split point, so a bisection finds the best one.
"""
from math import comb

import numpy as np

# the schedule of the last reversal in this process: steps, snapshots, step calls made, and the
# most snapshots held at once (tests and benchmarks read it)
last_schedule = {}


def _reps(n, s):
    r = 0
    while comb(s + r, s) < n:
        r += 1
    return r


def recomputations(n, s):
    """Step calls (beyond the adjoint step calls themselves) to reverse n steps with s snapshots."""
    if n <= 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    r = _reps(n, s)
    return r * n - comb(s + r, s + 1) if r >= 1 else 0


def _split(n, s):
    """Steps to advance before storing the next snapshot (1 <= m < n), at the fewest step calls."""
    def cost(m):
        return m + recomputations(n - m, s - 1) + recomputations(m, s)
    lo, hi = 1, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cost(mid + 1) >= cost(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _copy(state):
    """A snapshot that later steps cannot change: arrays, lists and dicts are copied (steps may
    write into them in place); other values are immutable. Two names holding one object (`z = y`)
    hold one copy, so a write through one is seen through the other as in the loop itself."""
    memo = {}

    def one(v):
        if isinstance(v, (np.ndarray, list, dict)):
            if id(v) not in memo:
                memo[id(v)] = np.copy(v) if isinstance(v, np.ndarray) else list(v) if isinstance(v, list) \
                    else dict(v)
            return memo[id(v)]
        return v
    return tuple(one(v) for v in state)


class _Entry(tuple):
    """The state on entry to a checkpointed loop (copies), and the objects it was copied from."""
    originals = ()


def entry_state(state):
    """The loop-carried state on entry to a checkpointed loop (a copy: the loop may write into it),
    which also remembers the objects themselves for `exit_state`."""
    out = _Entry(_copy(state))
    out.originals = tuple(state)
    return out


def exit_state(entry, written):
    """The state on entry again, for the adjoint of the code before the loop: the objects the loop
    started from, those it wrote into in place (`written`, one flag per state value) given back
    their entry contents in place, as the tape's restores do with checkpoint=None, so that every
    other name or view holding them (`a = y[0]` of a 2-d y, read before the loop) sees the values
    it had before the loop too."""
    for orig, saved, w in zip(entry.originals, entry, written):
        if not w or orig is saved:
            continue
        if isinstance(orig, np.ndarray) and isinstance(saved, np.ndarray) and orig.shape == saved.shape:
            if orig.flags.writeable:
                orig[...] = saved
        elif isinstance(orig, list) and isinstance(saved, list):
            orig[:] = saved
        elif isinstance(orig, dict) and isinstance(saved, dict):
            orig.clear()
            orig.update(saved)
    return entry.originals


def revolve(step, step_vjp, steps, start, bars, snapshots):
    """Reverse the loop `for i in steps: state = step(i, *state)` from its entry state `start`,
    holding at most `snapshots` states; returns the cotangents after the adjoint of every step."""
    steps = list(steps)
    n, s0 = len(steps), max(1, int(snapshots))
    bars = tuple(bars)
    calls = [0]
    held = [1, 1]          # snapshots held now, and the most held at once

    def advance(state, lo, hi):
        state = _copy(state)
        for j in range(lo, hi):
            state = tuple(step(steps[j], *state))
            calls[0] += 1
        return state

    # pending reversals (lo, hi, state at lo, free snapshots), the last one first
    pending = [(0, n, start, s0)] if n else []
    while pending:
        lo, hi, state, s = pending.pop()
        if hi - lo > 1 and s >= 2:
            m = lo + _split(hi - lo, s)
            mid = advance(state, lo, m)
            pending.append((lo, m, state, s))
            pending.append((m, hi, mid, s - 1))
            held[0] += 1
            held[1] = max(held[1], held[0])
            continue
        for j in range(hi - 1, lo - 1, -1):        # one snapshot: re-run from it for every step
            bars = tuple(step_vjp(steps[j], *advance(state, lo, j), *bars))
        held[0] -= 1
    last_schedule.clear()
    last_schedule.update(steps=n, snapshots=s0, recomputations=calls[0], most_held=held[1])
    return bars
