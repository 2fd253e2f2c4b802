"""A low-rank deflation metric REBUILT every r steps along the trajectory (thermostat A, 8 trajectories batched).
usage: run_rebuild.py NAME k r f [niter] [vmode] [taufac]
  k      deflated directions; m = k+1 vectors are tracked, the (k+1)-th Ritz value is the estimate of lambda_{k+1}
  r      steps between rebuilds
  f      h = f * 2/sqrt(lambda_max(P0 H0 P0)) at the start (P0 from setup.npz's exact eigenvectors; run.py uses f=0.2)
  niter  block subspace iterations per rebuild (default 1)
  vmode  map: v_new = P_new^-1 P_old v_old (physical velocity kept); refresh: v_new ~ N(0, T); keep: v_new = v_old
         (the q-space velocity kept, physical velocity jumps) (default map)
env: NSTEP (default 3000), WIN (default 2000) steps, or G and GW: a budget of gradient evaluations per trajectory
     and its window's share (steps = budget / gradients per step, in whole records); REC = 20 steps between records; DIAG = every DIAG-th rebuild,
     lambda_max(P H P) by 20 power iterations just before (old metric) and just after (new metric) the rebuild.
Rebuild (one subspace iteration): Y = H V (V: n x m orthonormal, m HVPs by central differences, 2m gradients),
Rayleigh-Ritz of H on span(V): eigh(sym(V^T Y)) -> Ritz values th_1 >= ... >= th_m, vectors W = V S (exact
Rayleigh quotients at the current point); metric from (W_1..k, th_1..k), lambda_{k+1} := max(th_m, lambda_{k+1} at the
start) (th_m, the smallest Ritz value, is often negative: the block iteration also picks up negative-curvature directions);
next V = QR(Y S) (the power-iterated subspace). With niter = 2 the first iteration only advances V.
Cost per trajectory: 1 gradient per step + 2 m niter per rebuild."""
import sys, os, time, zlib
import numpy as np
from bnn import *

name, k, r, f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
niter = int(sys.argv[5]) if len(sys.argv) > 5 else 1
vmode = sys.argv[6] if len(sys.argv) > 6 else "map"
taufac = float(sys.argv[7]) if len(sys.argv) > 7 else 10.0
REC = 20
B = 8
m = k + 1
gps = 1 + 2 * m * niter / r  # gradient evaluations per step per trajectory
if "G" in os.environ:
    NSTEP, WIN = (int(int(os.environ[key]) / gps) // REC * REC for key in ("G", "GW"))
else:
    NSTEP, WIN = int(os.environ.get("NSTEP", 3000)), int(os.environ.get("WIN", 2000))
DIAG = int(os.environ.get("DIAG", 10))
S0 = np.load("setup.npz")
th_start, lam0, vec0 = S0["th"], S0["lam"], S0["vec"]
lk1_start = lam0[:, k].copy()  # floor of the lambda_{k+1} estimate (0.97-2.12 for k=20)
EPS = 1e-5


def hvp(th, V):
    """H(th) V for th (B,n), V (B,n,c) by central differences of grad; 2 gradient calls of batch B*c."""
    c = V.shape[2]
    X = th[:, None, :] + EPS * V.transpose(0, 2, 1)
    gp = grad(X.reshape(B * c, NP))[0]
    X = th[:, None, :] - EPS * V.transpose(0, 2, 1)
    gm = grad(X.reshape(B * c, NP))[0]
    return ((gp - gm) / (2 * EPS)).reshape(B, c, NP).transpose(0, 2, 1)


class Metric:
    def __init__(self, W, lam, lk1):
        self.W, self.lk1 = W, lk1
        self.lam = np.maximum(lam, lk1[:, None])  # guard: Ritz values below lambda_{k+1} -> no deflation
        self.D = np.sqrt(lk1[:, None] / self.lam) - 1.0
        self.Di = np.sqrt(self.lam / lk1[:, None]) - 1.0

    def _apply(self, x, d):  # x + W diag(d) W^T x
        return x + np.einsum("bnk,bk->bn", self.W, d * np.einsum("bnk,bn->bk", self.W, x))

    def P(self, x):
        return self._apply(x, self.D)

    def Pinv(self, x):
        return self._apply(x, self.Di)


def qr(Y):
    return np.linalg.qr(Y)[0]


def rebuild(th, V):
    """returns metric, next V, Ritz values (B,m)"""
    for it in range(niter):
        Y = hvp(th, V)
        Tm = np.einsum("bni,bnj->bij", V, Y); Tm = 0.5 * (Tm + Tm.transpose(0, 2, 1))
        w, S = np.linalg.eigh(Tm)
        w, S = w[:, ::-1], S[:, :, ::-1]
        Wv = np.matmul(V, S)
        Vn = qr(np.matmul(Y, S))
        if it < niter - 1:
            V = Vn
    lk1 = np.maximum(w[:, k], lk1_start)
    return Metric(Wv[:, :, :k], w[:, :k], lk1), Vn, w


def lmax_PHP(th, M, rng, nit=20):
    x = rng.standard_normal((B, NP)); x /= np.linalg.norm(x, axis=1, keepdims=True)
    for _ in range(nit):
        y = M.P(hvp(th, M.P(x)[:, :, None])[:, :, 0])
        ray = (x * y).sum(1)
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
    return ray


# ---- start: exact eigenpairs of setup.npz
M = Metric(vec0[:, :, :k].copy(), lam0[:, :k].copy(), lk1_start)
V = vec0[:, :, :m].copy()
lmax0 = lk1_start  # lambda_max(P0 H0 P0) = lambda_{k+1} with the exact eigenvectors
h = (f * 2 / np.sqrt(lmax0))[:, None]
tau = taufac * h
print(name, "k", k, "r", r, "f", f, "niter", niter, vmode, "h", h[:, 0].round(4), "grads/step %.2f" % gps, flush=True)

rng = np.random.default_rng(777 + zlib.crc32(name.encode()) % 1000)
q = M.Pinv(th_start)
q0 = q.copy()
v = np.sqrt(T) * rng.standard_normal((B, NP))
xi = np.zeros((B, NP))

nrec = NSTEP // REC
rec = {k_: np.zeros((nrec, B)) for k_ in ["loss", "rms", "g2", "zHz", "U"]}
win_theta = np.zeros((WIN // REC, B, NP))
alive = np.ones(B, bool)
nreb = NSTEP // r
ritz1 = np.full((nreb, B), np.nan); ritzm = np.full((nreb, B), np.nan)
diag_before, diag_after, diag_step = [], [], []


t_diag = 0.0
t0 = time.time()
ri = 0
rb = 0
for step in range(1, NSTEP + 1):
    xi = nhl_step(q, v, xi, h, tau, M.P, rng)
    if step % r == 0:
        th = M.P(q)
        ok = bounded(th)
        th[~ok] = th_start[~ok]
        dodiag = (rb % DIAG == 0)
        if dodiag:
            td = time.time(); diag_before.append(lmax_PHP(th, M, rng)); t_diag += time.time() - td
        Mn, V, w = rebuild(th, V)
        ritz1[rb], ritzm[rb] = w[:, 0], w[:, k]
        if vmode == "map":  # physical velocity P v kept
            v = Mn.Pinv(M.P(v))
        elif vmode == "refresh":
            v = np.sqrt(T) * rng.standard_normal((B, NP))
        elif vmode != "keep":  # keep: v unchanged in q-coordinates (its law N(0, T I) given theta is the same in any metric)
            raise SystemExit(vmode)
        M = Mn
        q = M.Pinv(th)
        if dodiag:
            td = time.time(); diag_after.append(lmax_PHP(th, M, rng)); diag_step.append(step); t_diag += time.time() - td
        rb += 1
    if step % REC == 0:
        td = time.time()
        th = M.P(q)
        dead = mark_diverged(th, alive, name, step)
        if dead.any():
            q[dead] = q0[dead]; v[dead] = 0; xi[dead] = 0
            th = M.P(q)
        if dead.all():
            print(name, "all trajectories diverged; stopping at step", step, flush=True)
            break
        record(rec, ri, th, rng, EPS)
        wi = ri - (nrec - WIN // REC)
        if wi >= 0:
            win_theta[wi] = th
        ri += 1
        t_diag += time.time() - td
    if step % 500 == 0 and rb > 0:
        print(name, step, "loss med %.3f rms med %.4f" % (np.median(rec["loss"][ri - 1]), np.median(rec["rms"][ri - 1])),
              "| lmax(PHP) before/after last diag rebuild: med %.3g / %.3g, max %.3g" % (
                  np.median(diag_before[-1]), np.median(diag_after[-1]), np.max(diag_before[-1])),
              "| ritz1 med %.0f, lk1 med %.2f" % (np.median(ritz1[rb - 1]), np.median(ritzm[rb - 1])),
              "elapsed %.1f" % (time.time() - t0), flush=True)
t_dyn = time.time() - t0 - t_diag
np.savez(f"res_{name}.npz", **rec, win_theta=win_theta, alive=alive, h=h[:, 0], lmax0=lmax0, k=k, r=r, f=f, niter=niter,
         vmode=vmode, gps=gps, WIN=WIN, NSTEP=NSTEP, REC=REC, steps_done=step, t_dyn=t_dyn, ritz1=ritz1, ritzm=ritzm,
         diag_before=np.array(diag_before), diag_after=np.array(diag_after), diag_step=np.array(diag_step))
print(name, "done t_dyn %.1f" % t_dyn, "alive", alive.sum(), flush=True)
