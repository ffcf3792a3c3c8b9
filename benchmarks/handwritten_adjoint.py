"""srcad's emitted adjoint against the adjoint a careful person writes by hand, on the two
functions the README shows first: the quickstart's logistic loss with an L2 term
(examples/quickstart.py) and the README's first-look loss (the same loss without it).

Each hand-written adjoint is checked against central finite differences first, and srcad's
gradient against it. Times: the adjoint that `srcad.emit` prints, run as a plain function (the
generated code alone), and `srcad.grad` (the generated code plus the call's dispatch), each
timed in turn with the hand-written adjoint within one run, so machine load moves both alike;
the reported number is the median of the per-round ratios srcad / hand (rounds of 10 calls,
short, so that a round rarely straddles a change of load).

    python -m benchmarks.handwritten_adjoint [--rounds 301]

Measured on the 2-core session machine under load (median same-run ratios, emitted / hand):
quickstart 1.95-2.01 before shapes were first-class in the adjoint (issue 27), 1.19-1.20 after;
first-look 2.06-2.08 -> 1.23 (bit-identical gradients). Cleanup's negation rewrites
(srcad/transform/cleanup/negs.py: the -(-g) along `1 / (1 + exp(-z))` cancelled, `p_bar = -a` then
`rt.add(p_bar, b)` written `b - a`): emitted / hand 1.13 -> 1.05 (quickstart), 1.15 -> 1.05
(first-look), same bytes, load 3.6. What is left: two rt.unbroadcast calls (the kinds do not know
that y and X @ w have one shape), and srcad.grad's dispatch (grad / hand about 3-4x here).
"""
import sys
import timeit

import numpy as np

import srcad


# ---- the user functions (as in examples/quickstart.py and the README) -------------------------
def quickstart_loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    return nll + 0.01 * np.sum(w ** 2)


def first_look_loss(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


# ---- their adjoints by hand -----------------------------------------------------------------
def quickstart_hand(w, X, y, g=1.0):
    z = X @ w
    e = np.exp(-z)
    s = 1.0 + e
    p = 1.0 / s
    c = -g / y.size
    p_bar = c * y / p - c * (1.0 - y) / (1.0 - p)
    z_bar = p_bar * p / s * e
    return X.T @ z_bar + (0.02 * g) * w


def first_look_hand(w, X, y, g=1.0):
    e = np.exp(-(X @ w))
    s = 1.0 + e
    p = 1.0 / s
    c = -g / y.size
    p_bar = c * y / p - c * (1.0 - y) / (1.0 - p)
    return X.T @ (p_bar * p / s * e)


def _fd(f, w, args, eps=1e-6):
    out = np.empty_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = eps
        out[i] = (f(w + e, *args) - f(w - e, *args)) / (2 * eps)
    return out


def problems():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + rng.normal(size=200) > 0).astype(float)
    w = rng.normal(size=5)
    X3, y3, w3 = rng.normal(size=(100, 3)), rng.random(100) > 0.5, 0.1 * rng.normal(size=3)
    return [("quickstart", quickstart_loss, quickstart_hand, (w, X, y)),
            ("first-look", first_look_loss, first_look_hand, (w3, X3, y3))]


def emitted(f, args):
    """The adjoint srcad.emit prints for these arguments, as a function."""
    ns = {}
    exec(compile(srcad.emit(f, args=args), f"<srcad {f.__name__}>", "exec"), ns)
    return ns[f.__name__ + "_vjp"]


def measure(rounds=301, number=10):
    rows = []
    for name, f, hand, args in problems():
        fd = _fd(f, args[0], args[1:])
        h = hand(*args)
        assert np.allclose(h, fd, rtol=1e-6, atol=1e-8), (name, "hand-written adjoint vs finite differences")
        gen, grad = emitted(f, args), srcad.grad(f)
        assert np.allclose(gen(*args), h, rtol=1e-12, atol=1e-14), (name, "emitted adjoint vs hand")
        assert np.allclose(grad(*args), h, rtol=1e-12, atol=1e-14), (name, "srcad.grad vs hand")
        times = {k: [] for k in ("hand", "emitted", "grad")}
        for _ in range(rounds):
            for k, fn in (("hand", hand), ("emitted", gen), ("grad", grad)):
                times[k].append(timeit.timeit(lambda: fn(*args), number=number) / number)
        med = {k: float(np.median(v)) for k, v in times.items()}
        ratio = {k: float(np.median(np.array(times[k]) / np.array(times["hand"]))) for k in ("emitted", "grad")}
        rows.append((name, med, ratio))
    return rows


def main(argv=()):
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 301
    print(f"{'function':12s} {'hand µs':>9s} {'emitted µs':>11s} {'grad µs':>9s} {'emitted/hand':>13s} {'grad/hand':>10s}")
    for name, med, ratio in measure(rounds):
        print(f"{name:12s} {med['hand'] * 1e6:9.1f} {med['emitted'] * 1e6:11.1f} {med['grad'] * 1e6:9.1f} "
              f"{ratio['emitted']:13.2f} {ratio['grad']:10.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
