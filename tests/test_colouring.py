"""Column colouring for sparse Jacobians (srcad/sparsity.py): the same greedy colouring as the
plain definition, computed from the column-intersection graph."""
import numpy as np

from srcad.sparsity import color_columns


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
