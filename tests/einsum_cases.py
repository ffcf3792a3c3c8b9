"""User functions with np.einsum (for test_einsum.py)."""
import numpy as np
def f1(A, B):
    return np.sum(np.sin(np.einsum("ij,jk->ik", A, B)))
def f2(A, x):
    return np.sum(np.einsum("ij,j->i", A, x) ** 2)
def f3(A, B):
    return np.einsum("ij,jk", A, B).sum() + np.sum(np.einsum("ij->j", A) ** 2)
def f4(A):
    return np.sum(np.einsum("ij,ij->i", A, A))
def f5(x, A):
    return np.einsum("i,ij,j", x, A.T @ A, x) + np.sum(np.einsum("j,ij->i", x, A) ** 3)


def with_ellipsis(A):
    return np.sum(np.einsum("...j->...", A))
