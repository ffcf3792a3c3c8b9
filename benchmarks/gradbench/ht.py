"""ht: hand tracking (ADBench's "simple" case, GradBench evals/ht with an empty `us`): the residuals
between observed points and the skinned vertices of a hand model posed by 26 parameters theta
(global rotation, translation, 4 per finger), Jacobian with respect to theta.

ADBench ships its hand model as data files; nothing is downloaded here, so a model with the same
structure is generated in-process: 22 bones (root, wrist, 5 fingers of 4 bones), 544 vertices,
skinning weights over the bones, and points = the model posed by a random theta plus noise."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_jacobian_columns, jax_module, to_numpy, torch_module

SIZES = {"tiny": 10, "quick": [100], "full": [1600, 12800]}
N_BONES, N_VERTS = 22, 544
PARENTS = np.array([-1, 0] + [p for f in range(5) for p in (1, 2 + 4 * f, 3 + 4 * f, 4 + 4 * f)])


def label(npts):
    return f"bones={N_BONES},verts={N_VERTS},points={npts:,}"


def _rigid(rng, scale):
    a = scale * rng.normal(size=3)
    T = np.eye(4)
    T[:3, :3] = angle_axis_to_rotation_matrix(a)
    T[:3, 3] = rng.normal(size=3)
    return T


def model(seed=31337):
    rng = np.random.default_rng(seed)
    base_relatives = np.stack([_rigid(rng, 0.3) for _ in range(N_BONES)])
    absolutes = []
    for i in range(N_BONES):
        absolutes.append(base_relatives[i] if PARENTS[i] < 0 else absolutes[PARENTS[i]] @ base_relatives[i])
    inverse_base_absolutes = np.stack([np.linalg.inv(a) for a in absolutes])
    base_positions = np.vstack([rng.normal(size=(3, N_VERTS)), np.ones((1, N_VERTS))])
    weights = rng.random((N_BONES, N_VERTS)) * (rng.random((N_BONES, N_VERTS)) < 0.2)
    weights[0] += 1e-3
    weights /= weights.sum(axis=0, keepdims=True)
    return base_relatives, inverse_base_absolutes, base_positions, weights


def data(npts):
    rng = np.random.default_rng(7)
    base_relatives, inverse_base_absolutes, base_positions, weights = model()
    correspondences = rng.integers(0, N_VERTS, npts)
    true_theta = 0.2 * rng.normal(size=26)
    points = np.zeros((3, npts))
    points = -primal(true_theta, base_relatives, inverse_base_absolutes, base_positions, weights,
                     correspondences, points).reshape(3, npts) + 0.01 * rng.normal(size=(3, npts))
    theta = 0.2 * rng.normal(size=26)
    return theta, base_relatives, inverse_base_absolutes, base_positions, weights, correspondences, points


def angle_axis_to_rotation_matrix(aa):
    n = np.sqrt(np.sum(aa * aa))
    if n < 1e-4:
        return np.eye(3)
    x, y, z = aa[0] / n, aa[1] / n, aa[2] / n
    s, c = np.sin(n), np.cos(n)
    return np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                     [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])


def euler_to_rotation_matrix(a):
    tx, ty, tz = a[0], a[2], a[1]
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(tx), -np.sin(tx)], [0.0, np.sin(tx), np.cos(tx)]])
    Ry = np.array([[np.cos(ty), 0.0, np.sin(ty)], [0.0, 1.0, 0.0], [-np.sin(ty), 0.0, np.cos(ty)]])
    Rz = np.array([[np.cos(tz), -np.sin(tz), 0.0], [np.sin(tz), np.cos(tz), 0.0], [0.0, 0.0, 1.0]])
    return Rz @ Ry @ Rx


def pose_params(theta):
    """One row of 3 angles per bone, after the global rotation, scale and translation rows."""
    pose = np.zeros((N_BONES + 3, 3))
    pose[0] = theta[0:3]
    pose[1] = np.ones(3)
    pose[2] = theta[3:6]
    i_theta, i_pose = 6, 5
    for finger in range(5):
        for joint in range(3):
            pose[i_pose, 0] = theta[i_theta]
            i_theta += 1
            if joint == 0:
                pose[i_pose, 1] = theta[i_theta]
                i_theta += 1
            i_pose += 1
        i_pose += 1
    return pose


def primal(theta, base_relatives, inverse_base_absolutes, base_positions, weights, correspondences, points):
    pose = pose_params(theta)
    absolutes = []
    for i in range(N_BONES):
        T = np.vstack([np.hstack([euler_to_rotation_matrix(pose[i + 3]), np.zeros((3, 1))]),
                       np.array([[0.0, 0.0, 0.0, 1.0]])])
        relative = base_relatives[i] @ T
        if PARENTS[i] < 0:
            absolutes.append(relative)
        else:
            absolutes.append(absolutes[PARENTS[i]] @ relative)
    transforms = np.stack(absolutes) @ inverse_base_absolutes                  # (bones, 4, 4)
    moved = transforms @ base_positions                                          # (bones, 4, verts)
    positions = np.sum(moved[:, :3, :] * weights[:, None, :], axis=0)           # (3, verts)
    R = angle_axis_to_rotation_matrix(pose[0]) * pose[1][None, :]
    vertices = R @ positions + pose[2][:, None]
    return (points - vertices[:, correspondences]).ravel()


def srcad_derivative():
    return srcad.jacobian(primal)


def autograd_derivative():
    return None      # ADBench's autograd hand needs a spelling without item writes: not written here


def torch_derivative():
    """PyTorch eager: the same model written with torch ops, the Jacobian by
    torch.autograd.functional.jacobian in forward mode (vectorize=True: one batched sweep of the 26
    directions, as srcad does). Reverse mode batches one backward per residual: 38,400 rows at
    12,800 points needed 23 GB and was killed by the OOM killer."""
    torch = torch_module()
    if torch is None:
        return None

    def euler(a):
        tx, ty, tz = a[0], a[2], a[1]
        one, zero = torch.ones(()), torch.zeros(())
        Rx = torch.stack([torch.stack([one, zero, zero]), torch.stack([zero, torch.cos(tx), -torch.sin(tx)]),
                          torch.stack([zero, torch.sin(tx), torch.cos(tx)])])
        Ry = torch.stack([torch.stack([torch.cos(ty), zero, torch.sin(ty)]), torch.stack([zero, one, zero]),
                          torch.stack([-torch.sin(ty), zero, torch.cos(ty)])])
        Rz = torch.stack([torch.stack([torch.cos(tz), -torch.sin(tz), zero]),
                          torch.stack([torch.sin(tz), torch.cos(tz), zero]), torch.stack([zero, zero, one])])
        return Rz @ Ry @ Rx

    def angle_axis(aa):
        n = torch.sqrt(torch.sum(aa * aa))
        if n < 1e-4:
            return torch.eye(3)
        x, y, z = aa[0] / n, aa[1] / n, aa[2] / n
        s, c = torch.sin(n), torch.cos(n)
        return torch.stack([torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
                            torch.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
                            torch.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])

    def d(theta, base_relatives, inverse_base_absolutes, base_positions, weights, correspondences, points):
        br, iba = torch.from_numpy(base_relatives), torch.from_numpy(inverse_base_absolutes)
        bp, w, pts = torch.from_numpy(base_positions), torch.from_numpy(weights), torch.from_numpy(points)
        corr = torch.from_numpy(correspondences)
        last = torch.tensor([[0.0, 0.0, 0.0, 1.0]])

        def f(th):
            pose = torch.zeros((N_BONES + 3, 3))
            pose[0] = th[0:3]
            pose[1] = torch.ones(3)
            pose[2] = th[3:6]
            i_theta, i_pose = 6, 5
            for finger in range(5):
                for joint in range(3):
                    pose[i_pose, 0] = th[i_theta]
                    i_theta += 1
                    if joint == 0:
                        pose[i_pose, 1] = th[i_theta]
                        i_theta += 1
                    i_pose += 1
                i_pose += 1
            absolutes = []
            for i in range(N_BONES):
                T = torch.cat([torch.cat([euler(pose[i + 3]), torch.zeros((3, 1))], dim=1), last])
                relative = br[i] @ T
                absolutes.append(relative if PARENTS[i] < 0 else absolutes[PARENTS[i]] @ relative)
            moved = (torch.stack(absolutes) @ iba) @ bp
            positions = torch.sum(moved[:, :3, :] * w[:, None, :], dim=0)
            R = angle_axis(pose[0]) * pose[1][None, :]
            vertices = R @ positions + pose[2][:, None]
            return (pts - vertices[:, corr]).reshape(-1)
        return torch.autograd.functional.jacobian(f, torch.from_numpy(theta), vectorize=True,
                                                  strategy="forward-mode").numpy()
    return d


def jax_derivative():
    """The same model in jax.numpy, the Jacobian by jax.jacfwd (26 forward directions, the mode srcad
    and the PyTorch peer use) under jax.jit. The angle-axis rotation's `if n < 1e-4` is a
    jnp.where on a guarded norm (a traced value cannot steer Python's `if`)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def euler(a):
        tx, ty, tz = a[0], a[2], a[1]
        one, zero = jnp.ones(()), jnp.zeros(())
        Rx = jnp.stack([jnp.stack([one, zero, zero]), jnp.stack([zero, jnp.cos(tx), -jnp.sin(tx)]),
                        jnp.stack([zero, jnp.sin(tx), jnp.cos(tx)])])
        Ry = jnp.stack([jnp.stack([jnp.cos(ty), zero, jnp.sin(ty)]), jnp.stack([zero, one, zero]),
                        jnp.stack([-jnp.sin(ty), zero, jnp.cos(ty)])])
        Rz = jnp.stack([jnp.stack([jnp.cos(tz), -jnp.sin(tz), zero]), jnp.stack([jnp.sin(tz), jnp.cos(tz), zero]),
                        jnp.stack([zero, zero, one])])
        return Rz @ Ry @ Rx

    def angle_axis(aa):
        n2 = jnp.sum(aa * aa)
        tiny = n2 < 1e-8
        n = jnp.sqrt(jnp.where(tiny, 1.0, n2))
        x, y, z = aa[0] / n, aa[1] / n, aa[2] / n
        s, c = jnp.sin(n), jnp.cos(n)
        R = jnp.stack([jnp.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
                       jnp.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
                       jnp.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])
        return jnp.where(tiny, jnp.eye(3), R)

    def f(theta, base_relatives, inverse_base_absolutes, base_positions, weights, correspondences, points):
        pose = jnp.zeros((N_BONES + 3, 3))
        pose = pose.at[0].set(theta[0:3]).at[1].set(jnp.ones(3)).at[2].set(theta[3:6])
        i_theta, i_pose = 6, 5
        for finger in range(5):
            for joint in range(3):
                pose = pose.at[i_pose, 0].set(theta[i_theta])
                i_theta += 1
                if joint == 0:
                    pose = pose.at[i_pose, 1].set(theta[i_theta])
                    i_theta += 1
                i_pose += 1
            i_pose += 1
        last = jnp.array([[0.0, 0.0, 0.0, 1.0]])
        absolutes = []
        for i in range(N_BONES):
            T = jnp.concatenate([jnp.concatenate([euler(pose[i + 3]), jnp.zeros((3, 1))], axis=1), last])
            relative = base_relatives[i] @ T
            absolutes.append(relative if PARENTS[i] < 0 else absolutes[PARENTS[i]] @ relative)
        moved = (jnp.stack(absolutes) @ inverse_base_absolutes) @ base_positions
        positions = jnp.sum(moved[:, :3, :] * weights[:, None, :], axis=0)
        R = angle_axis(pose[0]) * pose[1][None, :]
        vertices = R @ positions + pose[2][:, None]
        return (points - vertices[:, correspondences]).ravel()
    jac = jax.jit(jax.jacfwd(f))
    return lambda *args: to_numpy(jac(*args))


def fd_check(args, J):
    theta = args[0]
    return fd_jacobian_columns(lambda t: primal(t, *args[1:]), theta, J, range(theta.size))
