"""A layer whose weight is a sparse matrix, trained on the gradient of its stored values.

The weight W is a scipy.sparse CSR matrix with a fixed pattern (0.1% of a 20,000 x 20,000
matrix); its stored values are a trainable vector. The loss builds W from that vector inside the
differentiated function, so srcad's gradient is one number per stored entry, a vector as long as
the values: the dense 20,000 x 20,000 weight gradient (3 GiB) never exists. Adam, written in
NumPy, fits the layer to a teacher with the same pattern. The loss curve is saved as a PNG when
matplotlib is installed.

    python examples/sparse_linear_layer.py           # 20,000 x 20,000, 400,000 weights, 150 steps
    python examples/sparse_linear_layer.py --quick   # 2,000 x 2,000, 60 steps

The tests check the gradient against one written by hand (the transposed product with X).
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp

import srcad


def loss(values, b, indices, indptr, shape, X, T):
    W = sp.csr_array((values, indices, indptr), shape=shape)
    H = W @ X + b[:, None]
    return np.mean((np.tanh(H) - T) ** 2)


def adam(grad_fn, params, steps, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, say=print):
    """Adam on a tuple of arrays, in NumPy; grad_fn(params, step) -> (loss, gradients)."""
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    losses = []
    t0 = time.perf_counter()
    for k in range(1, steps + 1):
        value, grads = grad_fn(params, k)
        losses.append(float(value))
        for p, g, m_p, v_p in zip(params, grads, m, v):
            m_p *= beta1
            m_p += (1 - beta1) * g
            v_p *= beta2
            v_p += (1 - beta2) * g * g
            p -= lr * (m_p / (1 - beta1 ** k)) / (np.sqrt(v_p / (1 - beta2 ** k)) + eps)
        if k % 20 == 0 or k == steps:
            say(f"\r  step {k}/{steps}, loss {value:.2e}, {time.perf_counter() - t0:.1f} s", end="", flush=True)
    say("")
    return losses


def save_curve(losses, path, say=print):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib is not installed: no plot (pip install matplotlib to get one)")
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.semilogy(np.arange(1, len(losses) + 1), losses)
    ax.set_xlabel("Adam step")
    ax.set_ylabel("mean squared error")
    ax.set_title("sparse linear layer, trained on its stored values")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    say(f"loss curve saved to {path}")
    return path


def _size(nbytes):
    """A byte count in the largest binary unit that keeps it at least 1 (2.0 GiB, 30.5 MiB)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def main(n=20_000, density=0.001, batch=64, steps=150, plot="sparse_linear_layer_loss.png", say=print):
    rng = np.random.default_rng(0)
    teacher = sp.random_array((n, n), density=density, format="csr", rng=rng)
    teacher.data = rng.normal(size=teacher.nnz) * np.sqrt(1.0 / (density * n))
    b_true = 0.1 * rng.normal(size=n)
    indices, indptr, shape = teacher.indices, teacher.indptr, teacher.shape
    values = 0.01 * rng.normal(size=teacher.nnz)          # the same pattern, untrained values
    b = np.zeros(n)
    say(f"W: {n:,} x {n:,} CSR with {teacher.nnz:,} stored values (a dense weight would be "
        f"{_size(n * n * 8)}); batches of {batch} inputs")
    vg = srcad.value_and_grad(loss, wrt=(0, 1))

    def grad_fn(params, step):
        X = np.random.default_rng(step).normal(size=(n, batch))
        T = np.tanh(teacher @ X + b_true[:, None])
        return vg(params[0], params[1], indices, indptr, shape, X, T)

    losses = adam(grad_fn, (values, b), steps, say=say)
    say(f"loss {losses[0]:.2e} -> {losses[-1]:.2e} after {steps} Adam steps; "
        f"|values - teacher| / |teacher| = {np.linalg.norm(values - teacher.data) / np.linalg.norm(teacher.data):.3f}")
    if plot:
        save_curve(losses, plot, say)
    return {"losses": losses, "values": values, "b": b, "teacher": teacher}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,000 x 2,000, 60 steps")
    ap.add_argument("--plot", default="sparse_linear_layer_loss.png", help="where to save the loss curve")
    args = ap.parse_args()
    if args.quick:
        main(n=2000, density=0.01, steps=60, plot=args.plot)
    else:
        main(plot=args.plot)
