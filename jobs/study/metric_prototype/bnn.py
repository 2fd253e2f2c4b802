"""Sine-retrofit BNN posterior in numpy (float64), batched over trajectories.
Layout of theta (481): W1(20x1) b1(20) W2(20x20) b2(20) W3(1x20) b3(1)."""
import numpy as np

H1 = H2 = 20
NP = H1 + H1 + H2 * H1 + H2 + H2 + 1  # 481
T = 0.02
SIG_NOISE = 0.1


def data(seed=0):
    x = np.linspace(-1, 1, 101)
    rng = np.random.default_rng(seed)
    y = np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(101)
    perm = rng.permutation(101)
    tr, te = np.sort(perm[:65]), np.sort(perm[65:])
    return x[tr], y[tr], x[te], y[te]


XTR, YTR, XTE, YTE = data(0)

# prior variances
_sig2 = np.concatenate([np.ones(H1), np.ones(H1), np.full(H2 * H1, 1 / 20), np.ones(H2),
                        np.full(H2, 1 / 20), np.ones(1)])
PRIOR_PREC = 1.0 / _sig2  # 1 or 20


def unpack(th):
    B = th.shape[0]
    i = 0
    W1 = th[:, i:i + H1]; i += H1
    b1 = th[:, i:i + H1]; i += H1
    W2 = th[:, i:i + H2 * H1].reshape(B, H2, H1); i += H2 * H1
    b2 = th[:, i:i + H2]; i += H2
    W3 = th[:, i:i + H2]; i += H2
    b3 = th[:, i]
    return W1, b1, W2, b2, W3, b3


def forward(th, x):
    W1, b1, W2, b2, W3, b3 = unpack(th)
    a1 = np.tanh(x[None, :, None] * W1[:, None, :] + b1[:, None, :])  # B,N,H1
    a2 = np.tanh(np.matmul(a1, W2.transpose(0, 2, 1)) + b2[:, None, :])  # B,N,H2
    out = np.matmul(a2, W3[:, :, None])[:, :, 0] + b3[:, None]  # B,N
    return a1, a2, out


def loss(th):
    out = forward(th, XTR)[2]
    return ((out - YTR[None]) ** 2).sum(1)


def U(th):
    return loss(th) + T * 0.5 * (th * th * PRIOR_PREC).sum(1)


def grad(th):
    """returns (gradU (B,NP), loss (B,))"""
    B = th.shape[0]
    W1, b1, W2, b2, W3, b3 = unpack(th)
    x = XTR
    a1, a2, out = forward(th, x)
    r = out - YTR[None]
    L = (r * r).sum(1)
    d_out = 2 * r  # B,N
    g = np.empty_like(th)
    i = 0
    d_a2 = d_out[:, :, None] * W3[:, None, :]  # B,N,H2
    d_z2 = d_a2 * (1 - a2 * a2)
    d_a1 = np.matmul(d_z2, W2)  # B,N,H1
    d_z1 = d_a1 * (1 - a1 * a1)
    g[:, 0:H1] = (d_z1 * x[None, :, None]).sum(1)
    g[:, H1:2 * H1] = d_z1.sum(1)
    i = 2 * H1
    g[:, i:i + H2 * H1] = np.matmul(d_z2.transpose(0, 2, 1), a1).reshape(B, -1); i += H2 * H1
    g[:, i:i + H2] = d_z2.sum(1); i += H2
    g[:, i:i + H2] = (d_out[:, :, None] * a2).sum(1); i += H2
    g[:, i] = d_out.sum(1)
    g += T * th * PRIOR_PREC
    return g, L


def hessian_fd(th1, eps=1e-5):
    """Hessian of U at a single point by central differences of the analytic gradient."""
    E = np.eye(NP) * eps
    gp = grad(th1[None] + E)[0]
    gm = grad(th1[None] - E)[0]
    Hm = (gp - gm) / (2 * eps)
    return 0.5 * (Hm + Hm.T)


def init_params(rng, B):
    th = np.zeros((B, NP))
    th[:, 0:H1] = rng.standard_normal((B, H1))  # fan_in 1
    i = 2 * H1
    th[:, i:i + H2 * H1] = rng.standard_normal((B, H2 * H1)) / np.sqrt(20); i += H2 * H1 + H2
    th[:, i:i + H2] = rng.standard_normal((B, H2)) / np.sqrt(20)
    return th


def adam(th, epochs=2000, lr=1e-3, b1=0.9, b2=0.999, e=1e-8):
    m = np.zeros_like(th); v = np.zeros_like(th)
    for t in range(1, epochs + 1):
        g, _ = grad(th)
        m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g
        th = th - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + e)
    return th


def nhl_step(q, v, xi, h, tau, P, rng):
    """One step of thermostat A (simmer's massive Nose-Hoover-Langevin splitting) in q = P^-1 theta,
    in place on q and v; returns the new xi (its Ornstein-Uhlenbeck part draws one normal per entry)."""
    def half(v, xi):
        xi += (h / 4) * (v * v / T - 1) / tau ** 2
        v *= np.exp(-xi * h / 2)
        xi += (h / 4) * (v * v / T - 1) / tau ** 2

    q += 0.5 * h * v
    half(v, xi)
    g, _ = grad(P(q))
    v -= h * P(g)
    half(v, xi)
    q += 0.5 * h * v
    c = np.exp(-h / tau)
    return c * xi + np.sqrt(1 - c ** 2) / tau * rng.standard_normal(xi.shape)


def record(rec, ri, th, rng, eps=1e-5):
    """The per-record statistics at theta into rec[...][ri]: loss, rms, |grad U|^2 and one Hutchinson
    probe z^T H z (T_conf = mean |grad U|^2 / mean z^T H z), U. Returns (grad U, z) for extra statistics."""
    gt, L = grad(th)
    z = rng.choice([-1.0, 1.0], size=th.shape)
    rec["loss"][ri] = L
    rec["rms"][ri] = np.sqrt((th * th).mean(1))
    rec["g2"][ri] = (gt * gt).sum(1)
    rec["zHz"][ri] = ((grad(th + eps * z)[0] - grad(th - eps * z)[0]) * z).sum(1) / (2 * eps)
    rec["U"][ri] = U(th)
    return gt, z


def bounded(th):
    """Per trajectory: theta finite and within 1e3 (a diverged trajectory is not)."""
    return np.all(np.isfinite(th), 1) & (np.abs(th).max(1) <= 1e3)


def mark_diverged(th, alive, name, step):
    """Marks (in alive, in place, and on stdout) the trajectories whose theta is not finite or beyond 1e3;
    returns the dead ones."""
    bad = ~bounded(th)
    for b in np.where(bad & alive)[0]:
        print(name, "traj", b, "DIVERGED at step", step, flush=True)
    alive &= ~bad
    return ~alive
