"""srcad.distributed.value_and_grad against a real LocalCluster of worker processes.

Every value and gradient is checked against a hand-written gradient summed over the shards in
this process (the independent reference), and against srcad.value_and_grad's single-process sum.
"""
import importlib
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scipy.sparse as sp

import srcad

distributed = pytest.importorskip("distributed", reason="pip install \"srcad[distributed]\" runs these")
import srcad.distributed as sd  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def least_squares(w, X, y):
    r = X @ w - y
    return np.sum(r ** 2)


def least_squares_grad(w, X, y):        # by hand: 2 X^T (X w - y)
    return 2.0 * X.T @ (X @ w - y)


def embedding_loss(E, idx, t):
    rows = E[idx]
    return np.sum((np.sum(rows, axis=1) - t) ** 2)


def embedding_grad(E, idx, t):          # by hand: row idx[k] gets 2 (sum E[idx[k]] - t[k]) in every column
    g = np.zeros_like(E)
    for k, i in enumerate(idx):
        g[i] += 2.0 * (E[i].sum() - t[k])
    return g


def sparse_loss(A, x, y):
    return np.sum((A @ x - y) ** 2)


def sparse_grad_data(A, x, y):          # by hand: entry (i, j) gets 2 (A x - y)_i x_j
    A = A.tocoo()
    r = A @ x - y
    return 2.0 * r[A.row] * x[A.col]


def _shards(rng, n, rows=6, cols=3):
    return [(rng.normal(size=(rows, cols)), rng.normal(size=rows)) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 3, 4])
def test_dense_sum_over_shards(client, n):
    rng = np.random.default_rng(n)
    w = rng.normal(size=3)
    shards = _shards(rng, n)
    value, g = sd.value_and_grad(least_squares, client=client)(w, shards=shards)
    np.testing.assert_allclose(value, sum(least_squares(w, *s) for s in shards), rtol=1e-12)
    np.testing.assert_allclose(g, sum(least_squares_grad(w, *s) for s in shards), rtol=1e-12)
    local = [srcad.value_and_grad(least_squares)(w, *s) for s in shards]
    np.testing.assert_allclose(g, sum(v[1] for v in local), rtol=1e-12)


def test_mean_and_futures_as_shards(client):
    rng = np.random.default_rng(7)
    w = rng.normal(size=3)
    shards = _shards(rng, 3)
    futures = client.scatter(shards, hash=False)       # the data is sent once and stays on its worker
    vg = sd.value_and_grad(least_squares, client=client, reduce="mean")
    for _ in range(2):
        value, g = vg(w, shards=futures)
        np.testing.assert_allclose(value, np.mean([least_squares(w, *s) for s in shards]), rtol=1e-12)
        np.testing.assert_allclose(g, np.mean([least_squares_grad(w, *s) for s in shards], axis=0), rtol=1e-12)
    assert vg.last_stats["shards"] == 3


def test_same_sums_every_run(client):
    # the tree of sums is fixed; a shard's own BLAS products may differ in the last bit between
    # worker processes (alignment of the received arrays), so equality is to a few ulps
    rng = np.random.default_rng(3)
    w = rng.normal(size=3)
    shards = _shards(rng, 5)
    vg = sd.value_and_grad(least_squares, client=client)
    first = vg(w, shards=shards)
    again = vg(w, shards=shards)
    np.testing.assert_allclose(again[0], first[0], rtol=1e-14)
    np.testing.assert_allclose(again[1], first[1], rtol=1e-14)


def test_row_sparse_gradients_stay_sparse(client):
    rng = np.random.default_rng(1)
    E = rng.normal(size=(1000, 4))
    shards = [(rng.integers(0, 1000, size=8), rng.normal(size=8)) for _ in range(3)]
    shards[1] = (np.array([5, 5, 17, 5, 900, 3, 3, 42]), shards[1][1])      # repeated rows within a shard
    vg = sd.value_and_grad(embedding_loss, client=client, row_sparse=True)
    value, g = vg(E, shards=shards)
    assert isinstance(g, srcad.RowSparse)
    touched = np.unique(np.concatenate([s[0] for s in shards]))
    np.testing.assert_array_equal(g.indices, touched)          # merged: each row once, sorted
    np.testing.assert_allclose(g.todense(), sum(embedding_grad(E, *s) for s in shards), rtol=1e-12)
    np.testing.assert_allclose(value, sum(embedding_loss(E, *s) for s in shards), rtol=1e-12)
    # what moves is the gradient's stored rows, never the table
    assert vg.last_stats["gradient_bytes"] < E.nbytes / 10
    assert vg.last_stats["result_bytes"] == g.indices.nbytes + g.values.nbytes


@pytest.mark.parametrize("cls", [sp.csr_array, sp.csr_matrix, sp.coo_array])
def test_scipy_sparse_gradients_add_by_pattern(client, cls):
    rng = np.random.default_rng(2)
    A = cls(sp.random(6, 5, density=0.4, random_state=4))
    shards = [(rng.normal(size=5), rng.normal(size=6)) for _ in range(3)]
    value, g = sd.value_and_grad(sparse_loss, client=client)(A, shards=shards)
    assert type(g) is type(A)
    ref = sum(sparse_grad_data(A, *s) for s in shards)
    np.testing.assert_allclose(g.tocoo().data, ref, rtol=1e-12)      # A is canonical: the same order
    np.testing.assert_allclose(value, sum(sparse_loss(A, *s) for s in shards), rtol=1e-12)


def test_loss_from_a_file_the_workers_cannot_read(client, tmp_path):
    src = textwrap.dedent("""
        import numpy as np
        SCALE = np.array([1.0, 2.0, 3.0])

        def scaled_loss(w, X, y):
            r = X @ (w * SCALE) - y
            return np.sum(r ** 2)
    """)
    (tmp_path / "private_model_x7.py").write_text(src)
    sys.path.insert(0, str(tmp_path))         # the client only: worker processes never see this path
    try:
        mod = importlib.import_module("private_model_x7")
    finally:
        sys.path.remove(str(tmp_path))
    rng = np.random.default_rng(5)
    w = rng.normal(size=3)
    shards = _shards(rng, 2)
    assert not any(client.run(lambda: "private_model_x7" in sys.modules).values())
    value, g = sd.value_and_grad(mod.scaled_loss, client=client)(w, shards=shards)
    scale = np.array([1.0, 2.0, 3.0])
    ref = sum(scale * least_squares_grad(w * scale, *s) for s in shards)
    np.testing.assert_allclose(g, ref, rtol=1e-12)
    np.testing.assert_allclose(value, sum(least_squares(w * scale, *s) for s in shards), rtol=1e-12)


def fails_on_a_bad_shard(w, X, y):
    L = np.linalg.cholesky(X)
    return np.sum(L @ w - y)


def test_a_worker_error_names_the_shard_and_the_line(client):
    rng = np.random.default_rng(6)
    good = np.eye(3) * 2.0
    shards = [(good, rng.normal(size=3)), (-good, rng.normal(size=3))]     # shard 1 is not positive definite
    vg = sd.value_and_grad(fails_on_a_bad_shard, client=client)
    with pytest.raises(sd.ShardError) as err:
        vg(rng.normal(size=3), shards=shards)
    msg = str(err.value)
    assert "shard 1" in msg
    assert "LinAlgError" in msg
    assert "L = np.linalg.cholesky(X)" in msg and "test_distributed.py" in msg
    assert isinstance(err.value, srcad.SrcadError)


def test_bad_arguments_are_clear_errors(client):
    with pytest.raises(srcad.SrcadError, match="reduce must be 'sum' or 'mean'"):
        sd.value_and_grad(least_squares, client=client, reduce="max")
    with pytest.raises(srcad.SrcadError, match="does not take"):
        sd.value_and_grad(least_squares, client=client, shards=3)
    with pytest.raises(srcad.SrcadError, match="at least one shard"):
        sd.value_and_grad(least_squares, client=client)(np.ones(3), shards=[])


def test_the_core_never_imports_dask(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["dask"] = None          # importing dask now fails
        sys.modules["distributed"] = None
        import numpy as np
        import srcad, srcad.distributed
        def f(x):
            return np.sum(x ** 2)
        assert np.allclose(srcad.grad(f)(np.arange(3.0)), [0.0, 2.0, 4.0])
        try:
            srcad.distributed.value_and_grad(f)
        except srcad.SrcadError as e:
            assert "pip install" in str(e), e
            print("ok")
    """)
    (tmp_path / "nodask.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(srcad.__file__))))
    out = subprocess.run([sys.executable, "nodask.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_distributed_training_example(client):
    """examples/distributed_training.py at a reduced size: the first step's gradients against a
    hand-written one (averaged over the shards), and the loss going down."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                        "distributed_training.py")
    spec = importlib.util.spec_from_file_location("distributed_training_example", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    rng = np.random.default_rng(0)
    shards = ex.make_data(rng, 300, 40, 4, 3, 50)
    items_table, users_table = rng.normal(0, 0.1, (300, 4)), rng.normal(0, 0.1, (40, 4))
    vg = sd.value_and_grad(ex.loss, wrt=(0, 1), row_sparse=True, client=client, reduce="mean")
    value, (gi, gu) = vg(items_table, users_table, shards=shards)
    ref_i, ref_u = np.zeros_like(items_table), np.zeros_like(users_table)
    for items, users, ratings in shards:
        r = np.sum(items_table[items] * users_table[users], axis=1) - ratings
        np.add.at(ref_i, items, 2.0 * r[:, None] * users_table[users] / len(shards))
        np.add.at(ref_u, users, 2.0 * r[:, None] * items_table[items] / len(shards))
    np.testing.assert_allclose(gi.todense(), ref_i, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gu.todense(), ref_u, rtol=1e-10, atol=1e-14)
    history, _, _ = ex.main(n_items=300, n_users=40, dim=4, n_shards=3, per_shard=50, steps=5, lr=0.2,
                            client=client, verbose=False)
    losses = [v for v, _ in history]
    assert losses[-1] < losses[0]
    # what moves is at most the rows each shard touched (index + 4 values, in both tables), never a table
    assert all(0 < s["gradient_bytes"] <= 3 * 50 * 2 * (8 + 4 * 8) for _, s in history)


def test_no_client_given_uses_the_current_one(client):
    rng = np.random.default_rng(8)
    w = rng.normal(size=3)
    shards = _shards(rng, 2)
    with client.as_current():
        value, g = sd.value_and_grad(least_squares)(w, shards=shards)
    np.testing.assert_allclose(g, sum(least_squares_grad(w, *s) for s in shards), rtol=1e-12)
    assert not sd._driver._LOCAL          # srcad started no cluster of its own


# ---- what the generated code closes over travels with it ------------------------------------------------
def _weighted(c):
    def weighted_loss(w, X, y):
        r = X @ w - y
        return np.sum(c * r ** 2)
    return weighted_loss


def _weighted_grad(c, w, X, y):          # by hand: 2 X^T (c * (X w - y))
    return 2.0 * X.T @ (c * (X @ w - y))


WEIGHTS = np.ones(6)


def global_weighted_loss(w, X, y):
    r = X @ w - y
    return np.sum(WEIGHTS * r ** 2)


def test_closures_with_the_same_code_and_other_values(client):
    rng = np.random.default_rng(11)
    w = rng.normal(size=3)
    shards = _shards(rng, 2)
    for c in (np.full(6, 1.0), np.full(6, 3.0), np.arange(6.0)):
        value, g = sd.value_and_grad(_weighted(c), client=client)(w, shards=shards)
        np.testing.assert_allclose(g, sum(_weighted_grad(c, w, *s) for s in shards), rtol=1e-12)
        np.testing.assert_allclose(value, sum(np.sum(c * (s[0] @ w - s[1]) ** 2) for s in shards), rtol=1e-12)


def test_a_rebound_or_modified_global_is_seen(client):
    global WEIGHTS
    rng = np.random.default_rng(12)
    w = rng.normal(size=3)
    shards = _shards(rng, 2)
    vg = sd.value_and_grad(global_weighted_loss, client=client)
    saved = WEIGHTS
    try:
        for new in (np.full(6, 2.0), np.arange(6.0) + 1.0):
            WEIGHTS = new                      # rebound between two calls of the same vg
            _, g = vg(w, shards=shards)
            np.testing.assert_allclose(g, sum(_weighted_grad(new, w, *s) for s in shards), rtol=1e-12)
        WEIGHTS[:] = 7.0                       # changed in place
        _, g = vg(w, shards=shards)
        np.testing.assert_allclose(g, sum(_weighted_grad(np.full(6, 7.0), w, *s) for s in shards), rtol=1e-12)
    finally:
        WEIGHTS = saved


def test_a_killed_worker_is_a_shard_error_naming_the_shard(client):
    """Runs last in this file: it kills a worker of the module's cluster (whose nanny starts another),
    rather than starting a cluster of its own (two more processes importing srcad)."""
    import signal
    c = client
    rng = np.random.default_rng(13)
    w = rng.normal(size=3)
    workers = sorted(c.scheduler_info()["workers"])
    held = _shards(rng, 1)[0]
    on_victim = c.scatter([held], workers=[workers[0]], hash=False)[0]
    plain = _shards(rng, 1)[0]
    vg = sd.value_and_grad(least_squares, client=c)
    _, g = vg(w, shards=[plain, on_victim])
    np.testing.assert_allclose(g, least_squares_grad(w, *plain) + least_squares_grad(w, *held), rtol=1e-12)
    pid = c.run(os.getpid, workers=[workers[0]])[workers[0]]
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 30                 # until the scheduler has seen it go
    while workers[0] in c.scheduler_info()["workers"] and time.time() < deadline:
        time.sleep(0.05)
    # Dask may lose the shard's data with the worker (a named ShardError) or, where it kept or
    # recomputed it, answer: then the answer is right. Never a raw Dask error, never a wrong number.
    try:
        _, g2 = vg(w, shards=[plain, on_victim])
    except sd.ShardError as err:
        assert isinstance(err, srcad.SrcadError)
        assert re.match(r"^.*shard 1: Dask lost the task or its data", str(err), re.S)
        assert "scatter it again" in str(err)
    else:
        np.testing.assert_allclose(g2, least_squares_grad(w, *plain) + least_squares_grad(w, *held), rtol=1e-12)
