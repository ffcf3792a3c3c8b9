"""lstm: the loss of a stacked LSTM predicting a character sequence, gradient with respect to the
main and extra parameters (GradBench evals/lstm, after ADBench: l in {2, 4} layers, c in
{1024, 4096} characters, b = 14 bits per character)."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": (1, 4, 3), "quick": [(2, 64, 14)], "full": [(2, 1024, 14), (4, 1024, 14)]}


def label(p):
    return "l={},c={:,},b={}".format(*p)


def data(p):
    layers, c, b = p
    rng = np.random.default_rng(31337)
    return (rng.normal(size=(2 * layers, 4, b)), rng.normal(size=(3, b)), rng.normal(size=(2 * layers, b)),
            rng.random((c, b)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_cell(weight, bias, hidden, cell, inp):
    forget = sigmoid(inp * weight[0] + bias[0])
    ingate = sigmoid(hidden * weight[1] + bias[1])
    outgate = sigmoid(inp * weight[2] + bias[2])
    change = np.tanh(hidden * weight[3] + bias[3])
    cell = cell * forget + ingate * change
    hidden = outgate * np.tanh(cell)
    return hidden, cell


def predict(main, extra, state, x):
    inp = x * extra[0]
    new_state = []
    for layer in range(main.shape[0] // 2):
        hidden, cell = lstm_cell(main[2 * layer], main[2 * layer + 1], state[2 * layer], state[2 * layer + 1], inp)
        new_state.append(hidden)
        new_state.append(cell)
        inp = hidden
    return inp * extra[1] + extra[2], np.stack(new_state)


def primal(main, extra, state, seq):
    total = 0.0
    for t in range(seq.shape[0] - 1):
        ypred, state = predict(main, extra, state, seq[t])
        ynorm = ypred - np.log(np.sum(np.exp(ypred)) + 2.0)
        total = total + np.sum(seq[t + 1] * ynorm)
    return -total / ((seq.shape[0] - 1) * seq.shape[1])


def srcad_derivative():
    return srcad.grad(primal, wrt=(0, 1))


def autograd_derivative():
    if autograd is None:
        return None

    def sig(x):
        return 1.0 / (1.0 + anp.exp(-x))

    def f(params, state, seq):
        main, extra = params
        total = 0.0
        for t in range(seq.shape[0] - 1):
            inp = seq[t] * extra[0]
            new = []
            for layer in range(main.shape[0] // 2):
                w, bb = main[2 * layer], main[2 * layer + 1]
                hidden, cell = state[2 * layer], state[2 * layer + 1]
                cell = cell * sig(inp * w[0] + bb[0]) + sig(hidden * w[1] + bb[1]) * anp.tanh(hidden * w[3] + bb[3])
                hidden = sig(inp * w[2] + bb[2]) * anp.tanh(cell)
                new += [hidden, cell]
                inp = hidden
            state = new
            ypred = inp * extra[1] + extra[2]
            total = total + anp.sum(seq[t + 1] * (ypred - anp.log(anp.sum(anp.exp(ypred)) + 2.0)))
        return -total / ((seq.shape[0] - 1) * seq.shape[1])
    g = autograd.grad(f)

    def d(main, extra, state, seq):
        return tuple(g((main, extra), state, seq))
    return d


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def d(main, extra, state, seq):
        M, E = torch.from_numpy(main).requires_grad_(), torch.from_numpy(extra).requires_grad_()
        S = list(torch.from_numpy(state))
        Q = torch.from_numpy(seq)
        total = 0.0
        for t in range(seq.shape[0] - 1):
            inp = Q[t] * E[0]
            for layer in range(main.shape[0] // 2):
                w, bb = M[2 * layer], M[2 * layer + 1]
                hidden, cell = S[2 * layer], S[2 * layer + 1]
                cell = cell * torch.sigmoid(inp * w[0] + bb[0]) + torch.sigmoid(hidden * w[1] + bb[1]) * torch.tanh(hidden * w[3] + bb[3])
                hidden = torch.sigmoid(inp * w[2] + bb[2]) * torch.tanh(cell)
                S[2 * layer], S[2 * layer + 1] = hidden, cell
                inp = hidden
            ypred = inp * E[1] + E[2]
            total = total + torch.sum(Q[t + 1] * (ypred - torch.log(torch.sum(torch.exp(ypred)) + 2.0)))
        (-total / ((seq.shape[0] - 1) * seq.shape[1])).backward()
        return M.grad.numpy(), E.grad.numpy()
    return d


def jax_derivative():
    """The characters by jax.lax.scan (a Python loop over 1,023 characters would trace, and compile,
    each step separately); the layers unrolled in the step."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def sig(x):
        return 1.0 / (1.0 + jnp.exp(-x))

    def f(main, extra, state, seq):
        def step(state, xy):
            x, y = xy
            inp = x * extra[0]
            new = []
            for layer in range(main.shape[0] // 2):
                w, bb = main[2 * layer], main[2 * layer + 1]
                hidden, cell = state[2 * layer], state[2 * layer + 1]
                cell = cell * sig(inp * w[0] + bb[0]) + sig(hidden * w[1] + bb[1]) * jnp.tanh(hidden * w[3] + bb[3])
                hidden = sig(inp * w[2] + bb[2]) * jnp.tanh(cell)
                new += [hidden, cell]
                inp = hidden
            ypred = inp * extra[1] + extra[2]
            return jnp.stack(new), jnp.sum(y * (ypred - jnp.log(jnp.sum(jnp.exp(ypred)) + 2.0)))
        _, terms = jax.lax.scan(step, state, (seq[:-1], seq[1:]))
        return -jnp.sum(terms) / ((seq.shape[0] - 1) * seq.shape[1])
    g = jax.jit(jax.grad(f, argnums=(0, 1)))
    return lambda main, extra, state, seq: to_numpy(tuple(g(main, extra, state, seq)))


def fd_check(args, g):
    worst = 0.0
    for i in range(2):
        def f(v, i=i):
            a = list(args)
            a[i] = v
            return primal(*a)
        worst = max(worst, fd_directional(f, args[i], g[i]))
    return worst
