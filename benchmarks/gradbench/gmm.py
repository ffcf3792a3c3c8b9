"""gmm: negative log-likelihood of a Gaussian mixture with a Wishart prior, gradient with respect to
the weights, means and inverse-covariance factors (GradBench evals/gmm, after ADBench: d in 2..128,
k in 5..200, n = 1,000 or 10,000; wishart gamma = 1, m = 0).

The precision factor of component j is Q_j = diag(exp(icf[j, :d])) + strictly lower part L_j, whose
entries icf[j, d:] fill the lower triangle column by column."""
import numpy as np
from scipy.special import gammaln

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": (3, 4, 20), "quick": [(8, 10, 1000)], "full": [(16, 25, 1000), (64, 100, 1000)]}


def label(p):
    return "d={},k={},n={:,}".format(*p)


def data(p):
    d, k, n = p
    rng = np.random.default_rng(31337)
    return (rng.normal(size=k), rng.random((k, d)), rng.normal(size=(k, d + d * (d - 1) // 2)),
            rng.random((n, d)), 1.0, 0)


def lower_index(d):
    """Row and column of icf[:, d + e] in L: the strictly lower triangle, column by column."""
    cols, rows = np.triu_indices(d, 1)
    return rows, cols


def log_gamma_distrib(a, p):
    return 0.25 * p * (p - 1) * np.log(np.pi) + np.sum(gammaln(a + 0.5 * (1 - np.arange(1, p + 1))))


def logsumexp(v, axis=None):
    m = np.max(v, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(v - m), axis=axis))


def primal(alphas, means, icf, x, gamma, m):
    n, d = x.shape
    k = alphas.shape[0]
    log_diag = icf[:, :d]
    q_diag = np.exp(log_diag)
    sum_qs = np.sum(log_diag, axis=1)
    rows, cols = lower_index(d)
    L = np.zeros((k, d, d))
    L[:, rows, cols] = icf[:, d:]
    xc = x[None, :, :] - means[:, None, :]                        # (k, n, d)
    Lx = q_diag[:, None, :] * xc + xc @ np.transpose(L, (0, 2, 1))
    sqsum = np.sum(Lx * Lx, axis=2)                                # (k, n)
    inner = alphas[:, None] + sum_qs[:, None] - 0.5 * sqsum
    const = -n * d * 0.5 * np.log(2 * np.pi)
    value = const + np.sum(logsumexp(inner, axis=0)) - n * logsumexp(alphas)
    dof = d + m + 1
    prior = np.sum(0.5 * gamma * gamma * (np.sum(q_diag * q_diag, axis=1) + np.sum(icf[:, d:] ** 2, axis=1))
                   - m * sum_qs)
    prior_const = dof * d * (np.log(gamma) - 0.5 * np.log(2)) - log_gamma_distrib(0.5 * dof, d)
    return value + prior - k * prior_const


def srcad_derivative():
    return srcad.grad(primal, wrt=(0, 1, 2))


def autograd_derivative():
    if autograd is None:
        return None

    def alse(v, axis=None):
        mx = anp.max(v, axis=axis, keepdims=True)
        return anp.squeeze(mx, axis=axis) + anp.log(anp.sum(anp.exp(v - mx), axis=axis))

    def f(alphas, means, icf, x, gamma, m):
        n, d = x.shape
        k = alphas.shape[0]
        log_diag = icf[:, :d]
        q_diag = anp.exp(log_diag)
        sum_qs = anp.sum(log_diag, axis=1)
        rows, cols = lower_index(d)
        scatter = np.zeros((rows.size, d * d))              # icf[:, d:] @ scatter = L flattened
        scatter[np.arange(rows.size), rows * d + cols] = 1.0
        L = anp.reshape(anp.dot(icf[:, d:], scatter), (k, d, d))
        xc = x[None, :, :] - means[:, None, :]
        Lx = q_diag[:, None, :] * xc + anp.matmul(xc, anp.transpose(L, (0, 2, 1)))
        sqsum = anp.sum(Lx * Lx, axis=2)
        inner = alphas[:, None] + sum_qs[:, None] - 0.5 * sqsum
        value = -n * d * 0.5 * np.log(2 * np.pi) + anp.sum(alse(inner, axis=0)) - n * alse(alphas)
        dof = d + m + 1
        prior = anp.sum(0.5 * gamma * gamma * (anp.sum(q_diag * q_diag, axis=1) + anp.sum(icf[:, d:] ** 2, axis=1))
                        - m * sum_qs)
        prior_const = dof * d * (np.log(gamma) - 0.5 * np.log(2)) - log_gamma_distrib(0.5 * dof, d)
        return value + prior - k * prior_const
    g = autograd.grad(lambda params, *rest: f(*params, *rest))      # a tuple argument: one sweep

    def d(alphas, means, icf, *rest):
        return tuple(g((alphas, means, icf), *rest))
    return d


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def d(alphas, means, icf, x, gamma, m):
        a, mu, ic = (torch.from_numpy(v).requires_grad_() for v in (alphas, means, icf))
        X = torch.from_numpy(x)
        n, dd = x.shape
        k = alphas.shape[0]
        log_diag = ic[:, :dd]
        q_diag = torch.exp(log_diag)
        sum_qs = log_diag.sum(1)
        rows, cols = lower_index(dd)
        L = torch.zeros((k, dd, dd), dtype=torch.float64)
        L[:, rows, cols] = ic[:, dd:]
        xc = X[None] - mu[:, None, :]
        Lx = q_diag[:, None, :] * xc + xc @ L.transpose(1, 2)
        inner = a[:, None] + sum_qs[:, None] - 0.5 * (Lx * Lx).sum(2)
        value = torch.logsumexp(inner, 0).sum() - n * torch.logsumexp(a, 0)
        prior = (0.5 * gamma * gamma * ((q_diag * q_diag).sum(1) + (ic[:, dd:] ** 2).sum(1)) - m * sum_qs).sum()
        (value + prior).backward()
        return a.grad.numpy(), mu.grad.numpy(), ic.grad.numpy()
    return d


def jax_derivative():
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy
    from jax.scipy.special import gammaln as jgammaln

    def jlse(v, axis=None):
        mx = jnp.max(v, axis=axis, keepdims=True)
        return jnp.squeeze(mx, axis=axis) + jnp.log(jnp.sum(jnp.exp(v - mx), axis=axis))

    def f(alphas, means, icf, x, gamma, m):
        n, d = x.shape
        k = alphas.shape[0]
        log_diag = icf[:, :d]
        q_diag = jnp.exp(log_diag)
        sum_qs = jnp.sum(log_diag, axis=1)
        rows, cols = lower_index(d)
        L = jnp.zeros((k, d, d)).at[:, rows, cols].set(icf[:, d:])
        xc = x[None, :, :] - means[:, None, :]
        Lx = q_diag[:, None, :] * xc + xc @ jnp.transpose(L, (0, 2, 1))
        sqsum = jnp.sum(Lx * Lx, axis=2)
        inner = alphas[:, None] + sum_qs[:, None] - 0.5 * sqsum
        value = -n * d * 0.5 * np.log(2 * np.pi) + jnp.sum(jlse(inner, axis=0)) - n * jlse(alphas)
        dof = d + m + 1
        prior = jnp.sum(0.5 * gamma * gamma * (jnp.sum(q_diag * q_diag, axis=1) + jnp.sum(icf[:, d:] ** 2, axis=1))
                        - m * sum_qs)
        prior_const = (dof * d * (np.log(gamma) - 0.5 * np.log(2)) - 0.25 * d * (d - 1) * np.log(np.pi)
                       - jnp.sum(jgammaln(0.5 * dof + 0.5 * (1 - jnp.arange(1, d + 1)))))
        return value + prior - k * prior_const
    g = jax.jit(jax.grad(f, argnums=(0, 1, 2)), static_argnums=(4, 5))    # gamma, m: Python numbers

    def d(alphas, means, icf, x, gamma, m):
        return to_numpy(tuple(g(alphas, means, icf, x, gamma, m)))
    return d


def fd_check(args, g):
    worst = 0.0
    for i in range(3):
        def f(v, i=i):
            a = list(args)
            a[i] = v
            return primal(*a)
        worst = max(worst, fd_directional(f, args[i], g[i]))
    return worst
