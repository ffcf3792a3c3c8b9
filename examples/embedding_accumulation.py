"""Row-sparse gradients of a recommendation model with a 10^6-row embedding table.

A rating is predicted as the dot product of a user's and an item's embedding rows. Each
mini-batch touches a few thousand of the million user rows, so srcad returns the gradient of a
row gather `E[users]` as a `srcad.RowSparse` (the touched rows and their values) when asked
with `row_sparse=True`. The gradients of several mini-batches are accumulated in place with
`srcad.accumulate` and then applied to the tables in one scatter; the memory this takes grows
with the rows touched, never with the table (a dense gradient would be a copy of the table per
mini-batch).

    python examples/embedding_accumulation.py           # 1,000,000 users, 80 mini-batches of 4,096
    python examples/embedding_accumulation.py --quick   # 100,000 users

The tests check the updated tables against a gradient written by hand with np.add.at.
"""
import argparse
import time
import tracemalloc

import numpy as np

import srcad


def loss(U, V, users, items, ratings):
    score = np.sum(U[users] * V[items], axis=1)        # one dot product per (user, item) pair
    return np.mean((score - ratings) ** 2)


def make_data(n_users, n_items, dim, batch, n_batches, seed=0):
    """Tables and mini-batches; users follow a skewed (Zipf) popularity, as in real logs, and
    the ratings come from hidden embeddings of rank 4."""
    rng = np.random.default_rng(seed)
    U = (0.1 * rng.normal(size=(n_users, dim))).astype(np.float32)
    V = (0.1 * rng.normal(size=(n_items, dim))).astype(np.float32)
    hidden_U, hidden_V = rng.normal(size=(n_users, 4)), rng.normal(size=(n_items, 4))
    batches = []
    for _ in range(n_batches):
        users = np.minimum(rng.zipf(1.5, batch), n_users) - 1
        items = rng.integers(0, n_items, batch)
        ratings = np.sum(hidden_U[users] * hidden_V[items], axis=1) / 2
        batches.append((users, items, ratings.astype(np.float32)))
    return U, V, batches


def train(U, V, batches, lr=100.0, accumulate_every=8, say=print):
    """Updates U and V in place: the gradients of `accumulate_every` mini-batches are summed as
    row-sparse updates, then applied. Returns the losses and the peak memory of the gradients."""
    grad = srcad.value_and_grad(loss, wrt=(0, 1), row_sparse=True)

    def empty(table):
        return srcad.RowSparse(np.zeros(0, np.int64), np.zeros((0, table.shape[1]), table.dtype), table.shape)

    losses, peak = [], 0
    acc_U, acc_V = empty(U), empty(V)
    t0 = time.perf_counter()
    tracemalloc.start()
    for k, (users, items, ratings) in enumerate(batches, 1):
        value, (g_U, g_V) = grad(U, V, users, items, ratings)
        srcad.accumulate(acc_U, g_U)                  # appends the touched rows, in place
        srcad.accumulate(acc_V, g_V)
        losses.append(float(value))
        if k % accumulate_every == 0 or k == len(batches):
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            for table, acc in ((U, acc_U), (V, acc_V)):
                step = srcad.RowSparse(acc.indices, -lr / accumulate_every * acc.values, table.shape)
                srcad.accumulate(table, step)         # one scatter-add into the table
            acc_U, acc_V = empty(U), empty(V)
            tracemalloc.reset_peak()
            say(f"\r  mini-batch {k}/{len(batches)}, {time.perf_counter() - t0:.1f} s", end="", flush=True)
    tracemalloc.stop()
    say("")
    return losses, peak


def mean_loss(U, V, batches):
    return float(np.mean([loss(U, V, *b) for b in batches]))


def main(n_users=1_000_000, n_items=10_000, dim=32, batch=4096, n_batches=80, say=print):
    U, V, batches = make_data(n_users, n_items, dim, batch, n_batches)
    U0, V0 = U.copy(), V.copy()
    before = mean_loss(U, V, batches)
    say(f"user table {U.shape} {U.dtype} ({U.nbytes / 2**20:.0f} MiB), item table {V.shape}; "
        f"{n_batches} mini-batches of {batch}, gradients summed over 8 before each update")
    losses, peak = train(U, V, batches, say=say)
    touched = len(np.unique(np.concatenate([b[0] for b in batches])))
    # on the same mini-batches before and after training (consecutive mini-batches differ too
    # much for their own losses to show the progress of a few updates)
    say(f"mean loss over the {n_batches} mini-batches {before:.5f} -> {mean_loss(U, V, batches):.5f} "
        f"after training; {touched:,} user rows touched "
        f"({touched / n_users:.1%} of the table)")
    say(f"peak memory while 8 mini-batches are differentiated and their gradients summed: {peak / 2**20:.1f} MiB "
        f"({peak / U.nbytes:.1%} of the user table; one dense gradient of it is {U.nbytes / 2**20:.0f} MiB)")
    return {"U0": U0, "V0": V0, "U": U, "V": V, "batches": batches, "losses": losses, "peak": peak}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100,000 users, 16 mini-batches")
    if ap.parse_args().quick:
        main(n_users=100_000, n_batches=16)
    else:
        main()
