"""ba: bundle adjustment residuals, the sparse Jacobian with respect to every camera, point and
weight (GradBench evals/ba, after ADBench). A camera is 11 numbers: rotation (angle-axis, 3), centre
(3), focal length, principal point (2), radial distortion (2). Observation i sees point i % m from
camera i % n (ADBench's generator replicates one camera, point, weight and feature; here each is
perturbed so the entries differ). Residuals: 2 per observation (weighted reprojection error) and
1 - w_i^2 per weight."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_jacobian_columns, jax_module, torch_module

SIZES = {"tiny": (3, 5, 8), "quick": [(10, 200, 800)], "full": [(49, 7776, 31843)]}
N_CAM = 11


def label(p):
    return "n={},m={:,},p={:,}".format(*p)


def data(p):
    n, m, nobs = p
    rng = np.random.default_rng(31337)
    cams = np.empty((n, N_CAM))
    cams[:, 0:3] = 0.1 * rng.normal(size=(n, 3))          # rotation
    cams[:, 3:6] = rng.normal(size=(n, 3))                # centre
    cams[:, 6] = 1.0 + 0.1 * rng.random(n)                # focal length
    cams[:, 7:9] = 0.1 * rng.normal(size=(n, 2))          # principal point
    cams[:, 9:11] = 0.01 * rng.normal(size=(n, 2))        # distortion
    X = rng.normal(size=(m, 3)) + np.array([0.0, 0.0, 10.0])
    w = 1.0 + 0.1 * rng.normal(size=nobs)
    obs = np.stack([np.arange(nobs) % n, np.arange(nobs) % m], axis=1)
    feats = rng.normal(size=(nobs, 2))
    params = np.concatenate([cams.ravel(), X.ravel(), w])
    return params, n, m, obs, feats


def rodrigues(rot, X):
    """Rotate each row of X by the matching angle-axis row of rot (first order for tiny angles)."""
    sqtheta = np.sum(rot * rot, axis=1, keepdims=True)
    small = sqtheta < 1e-30
    theta = np.sqrt(np.where(small, 1.0, sqtheta))
    axis = rot / theta
    cos, sin = np.cos(theta), np.sin(theta)
    w_cross_X = np.cross(axis, X)
    rotated = X * cos + w_cross_X * sin + axis * (np.sum(axis * X, axis=1, keepdims=True) * (1.0 - cos))
    return np.where(small, X + np.cross(rot, X), rotated)


def primal(params, n, m, obs, feats):
    cams = params[:n * N_CAM].reshape(n, N_CAM)
    X = params[n * N_CAM:n * N_CAM + 3 * m].reshape(m, 3)
    w = params[n * N_CAM + 3 * m:]
    cam = cams[obs[:, 0]]
    Xcam = rodrigues(cam[:, 0:3], X[obs[:, 1]] - cam[:, 3:6])
    p = Xcam[:, :2] / Xcam[:, 2:3]
    rsq = np.sum(p * p, axis=1, keepdims=True)
    distortion = 1.0 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq
    proj = p * distortion * cam[:, 6:7] + cam[:, 7:9]
    reproj = w[:, None] * (proj - feats)
    return np.concatenate([reproj.ravel(), 1.0 - w * w])


def srcad_derivative():
    return srcad.jacobian(primal, sparsity="auto")


def autograd_derivative():
    return None       # dense Jacobians only: (2p + p) x (11 n + 3 m + p) entries, not a sparse one


def torch_derivative():
    return None       # likewise (torch.func.jacrev is dense)


def ba_pattern(n, m, obs):
    """CSR structure of the Jacobian: observation i's two rows hold its camera's 11 columns, its
    point's 3 and its weight's 1 (in increasing column order); weight row i holds column w_i."""
    nobs = obs.shape[0]
    cols = np.concatenate([N_CAM * obs[:, :1] + np.arange(N_CAM), N_CAM * n + 3 * obs[:, 1:2] + np.arange(3),
                           N_CAM * n + 3 * m + np.arange(nobs)[:, None]], axis=1)         # (nobs, 15)
    indices = np.concatenate([np.repeat(cols, 2, axis=0).ravel(), N_CAM * n + 3 * m + np.arange(nobs)])
    indptr = np.concatenate([np.arange(2 * nobs + 1) * 15, 30 * nobs + 1 + np.arange(nobs)])
    return indices.astype(np.int32), indptr.astype(np.int32), (3 * nobs, N_CAM * n + 3 * m + nobs)


def jax_derivative():
    """The Jacobian's blocks by jax.vmap of jax.jacfwd of one observation's residual (2 outputs of
    its camera's 11 numbers, its point's 3 and its weight: 15 forward directions), the weight rows'
    -2 w analytically from the same trace (jax.grad of 1 - w^2), all under one jax.jit; the blocks
    are written into a scipy CSR matrix whose structure (`ba_pattern`, known from `obs`) is built
    once per shape outside the timed loop -- JAX has no sparsity detection; srcad finds the
    pattern itself (colouring) and its first call includes that."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy
    import scipy.sparse as sp

    def jcross(a, b):
        return jnp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

    def residual(cam, X, w, feat):
        """One observation: cam (11,), X (3,), w scalar, feat (2,) -> the weighted reprojection error (2,)."""
        rot = cam[0:3]
        Xc = X - cam[3:6]
        sqtheta = jnp.sum(rot * rot)
        small = sqtheta < 1e-30
        theta = jnp.sqrt(jnp.where(small, 1.0, sqtheta))
        axis = rot / theta
        cos, sin = jnp.cos(theta), jnp.sin(theta)
        rotated = Xc * cos + jcross(axis, Xc) * sin + axis * (jnp.sum(axis * Xc) * (1.0 - cos))
        Xcam = jnp.where(small, Xc + jcross(rot, Xc), rotated)
        p = Xcam[:2] / Xcam[2]
        rsq = jnp.sum(p * p)
        proj = p * (1.0 + cam[9] * rsq + cam[10] * rsq * rsq) * cam[6] + cam[7:9]
        return w * (proj - feat)

    block = jax.vmap(jax.jacfwd(residual, argnums=(0, 1, 2)), in_axes=(0, 0, 0, 0))
    dweight = jax.vmap(jax.grad(lambda w: 1.0 - w * w))

    def values(params, obs, feats, n, m):
        cams = params[:n * N_CAM].reshape(n, N_CAM)
        X = params[n * N_CAM:n * N_CAM + 3 * m].reshape(m, 3)
        w = params[n * N_CAM + 3 * m:]
        Jc, JX, Jw = block(cams[obs[:, 0]], X[obs[:, 1]], w, feats)          # (p,2,11) (p,2,3) (p,2)
        return jnp.concatenate([jnp.concatenate([Jc, JX, Jw[:, :, None]], axis=2).ravel(), dweight(w)])

    values = jax.jit(values, static_argnums=(3, 4))        # n, m fix the shapes
    pattern = []                                            # (obs, n, m, the CSR structure) last used

    def d(params, n, m, obs, feats):
        if not pattern or pattern[0] is not obs or pattern[1:3] != [n, m]:
            pattern[:] = [obs, n, m, ba_pattern(n, m, obs)]
        indices, indptr, shape = pattern[3]
        return sp.csr_array((np.asarray(values(params, obs, feats, n, m)), indices, indptr), shape=shape)
    return d


def fd_check(args, J):
    params = args[0]
    f = lambda v: primal(v, *args[1:])                     # noqa: E731
    rng = np.random.default_rng(1)
    cols = sorted(set(rng.integers(0, params.size, 12).tolist()) | {0, params.size - 1})
    return fd_jacobian_columns(f, params, J, cols)
