"""Column colouring for sparse Jacobians (srcad/sparsity.py): the same greedy colouring as the
plain definition, computed from the column-intersection graph."""
import numpy as np

from srcad.sparsity import color_columns  # (srcad/colouring.py, re-exported)


def test_colouring_is_the_greedy_one_and_proper():
    """color_columns (through P^T P) against a plain greedy colouring written here."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        m, n = rng.integers(1, 30, 2)
        k = int(rng.integers(0, m * n // 2 + 1))
        r, c = rng.integers(0, m, k), rng.integers(0, n, k)
        rows_of = [set(r[c == j]) for j in range(n)]
        want = []
        for j in range(n):
            taken = {want[i] for i in range(j) if rows_of[i] & rows_of[j]}
            want.append(min(set(range(n + 1)) - taken))
        got = color_columns(r, c, m, n)
        assert list(got) == want


def _greedy(r, c, n):
    rows_of = [set(r[c == j].tolist()) for j in range(n)]
    want = []
    for j in range(n):
        taken = {want[i] for i in range(j) if rows_of[i] & rows_of[j]}
        want.append(min(set(range(n + 1)) - taken))
    return want


def test_rounds_of_ready_columns_give_the_greedy_colours(monkeypatch):
    """Columns coloured in vectorised rounds (every column whose earlier neighbours are coloured)
    and then one by one: the same colours as the plain greedy, for every switch-over point, on
    patterns with repeated rows (dropped before the product) and unsorted duplicate entries."""
    import srcad.colouring as S
    rng = np.random.default_rng(11)
    for trial in range(6):
        m, n = int(rng.integers(20, 120)), int(rng.integers(20, 200))
        k = int(rng.integers(n, 4 * n))
        r, c = rng.integers(0, m, k), rng.integers(0, n, k)
        r = np.concatenate([2 * r, 2 * r + 1])  # each row twice, the copy right after it
        c = np.concatenate([c, c])
        order = np.lexsort((c, r)) if trial % 2 else rng.permutation(len(r))
        r, c = r[order], c[order]
        want = _greedy(r, c, n)
        for at_least, table in ((1, 0), (1, 1 << 24), (4, 0), (32, 1 << 24), (10**9, 0)):
            monkeypatch.setattr(S, "_ROUND_MIN", at_least)
            monkeypatch.setattr(S, "_TABLE_MAX", table)
            assert list(S.color_columns(r, c, 2 * m, n)) == want
