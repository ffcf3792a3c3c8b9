"""check_grad's second opinion: where srcad's gradient and the central difference (step eps)
disagree on a dense argument, the entry's derivative is estimated again with
`scipy.differentiate.derivative` (SciPy >= 1.15): high-order central formulas over shrinking
steps, starting large, with an error estimate. A central difference with a tiny step is at the
mercy of rounding when f's value is large next to its change (f = 1e8 + sin(x): the difference
of two values 2e-6 apart keeps 2 digits) or when the argument is float32 (a step of 1e-6 is a
few ulps); such false alarms go away, while a wrong gradient still disagrees with the better
estimate too. Only the disagreeing entries pay for it (about 20 evaluations of f each): a
check that passes costs what it did."""
import numpy as np


def second_opinion(f, args, k, x, have, fd, bad, atol, rtol):
    """(fd, err, bad) with the entries `bad` of argument k's flat derivative estimated again; an
    entry stays bad only when it also disagrees with the new estimate by more than the tolerance
    plus twice that estimate's own error. An entry whose estimate fails (f not finite at the
    probed points, e.g. outside its domain) keeps the central difference's verdict."""
    from scipy.differentiate import derivative
    entries = np.flatnonzero(bad)
    base = np.array(x, dtype=np.float64).reshape(-1)
    dtype = np.result_type(x, np.float32)

    def h(t, j):
        t, j = np.broadcast_arrays(t, j)
        out = np.empty(t.shape)
        for idx in np.ndindex(t.shape):
            v = base.copy()
            v[j[idx]] += t[idx]
            a = list(args)
            a[k] = float(v[0]) if isinstance(x, float) else v.reshape(np.shape(x)).astype(dtype)
            out[idx] = float(np.sum(f(*a)))
        return out

    scale = np.maximum(np.abs(base[entries]), 1.0)
    try:
        with np.errstate(all="ignore"):
            res = derivative(h, np.zeros(entries.size), args=(entries,), initial_step=0.5 * scale)
    except (ArithmeticError, ValueError):    # f raised at a probed point (math.log(-0.3), 1/0: outside
        # its domain): the central difference's verdict stands
        return fd, np.abs(have - fd), bad
    fd, bad = fd.copy(), bad.copy()
    for m, i in enumerate(entries):
        est, e = float(res.df[m]), float(res.error[m])
        if not (np.isfinite(est) and np.isfinite(e)):
            continue
        fd[i] = est
        bad[i] = abs(have[i] - est) > atol + rtol * abs(est) + 2.0 * e
    return fd, np.abs(have - fd), bad
