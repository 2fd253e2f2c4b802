import sys, glob, numpy as np
from scipy.stats import norm, rankdata
from bnn import forward, XTE, YTE, T

NWIN = 150  # 3000 steps / 20


def split_rhat(x):
    n = len(x) // 2
    c = np.stack([x[:n], x[n:2 * n]])
    W = c.var(1, ddof=1).mean()
    Bv = n * c.mean(1).var(ddof=1)
    return np.sqrt(((n - 1) / n * W + Bv / n) / W)


def rank_split_rhat(x):
    z = norm.ppf((rankdata(x) - 0.375) / (len(x) + 0.25))
    return split_rhat(z)


def ess(x):
    x = x - x.mean(); n = len(x)
    f = np.fft.rfft(x, 2 * n)
    ac = np.fft.irfft(f * np.conj(f))[:n]
    if ac[0] <= 0:
        return np.nan
    rho = ac / ac[0]
    # Geyer initial monotone sequence
    s, prev = 0.0, np.inf
    for k in range(0, n - 1, 2):
        p = rho[k] + rho[k + 1]
        if p <= 0:
            break
        p = min(p, prev); prev = p
        s += p
    tau = max(-1 + 2 * s, 1.0 / np.log10(n))
    return n / tau


def test_nll(thetas):
    out = forward(thetas, XTE)[2]  # S,Ntest
    mu, var = out.mean(0), out.var(0) + 0.1 ** 2
    return np.mean(0.5 * np.log(2 * np.pi * var) + (YTE - mu) ** 2 / (2 * var))


def main():
    order = ["unit_A", "unit_A_tau100", "unit_A_tau1000", "unit_B", "lr20_A", "lr20_B", "lr60_A", "lr60_B", "dense_A", "dense_B"]
    rows = []
    detail = []
    for name in order:
        try:
            d = np.load(f"res_{name}.npz")
        except FileNotFoundError:
            continue
        alive = d["alive"]; B = len(alive)
        L, R = d["loss"][-NWIN:], d["rms"][-NWIN:]
        rl = np.array([split_rhat(L[:, b]) for b in range(B)])
        rr = np.array([split_rhat(R[:, b]) for b in range(B)])
        rrl = np.array([rank_split_rhat(L[:, b]) for b in range(B)])
        rrr = np.array([rank_split_rhat(R[:, b]) for b in range(B)])
        el = np.array([ess(L[:, b]) for b in range(B)])
        er = np.array([ess(R[:, b]) for b in range(B)])
        tc = d["g2"][-NWIN:].mean(0) / d["zHz"][-NWIN:].mean(0) / T
        tcq = d["gq2"][-NWIN:].mean(0) / d["zqHzq"][-NWIN:].mean(0) / T
        emin = np.minimum(el, er)
        grads = 10000 + float(d["setup_grads"])
        sec = float(d["t_dyn"]) / B + float(d["setup_time"])
        nll = np.array([test_nll(d["win_theta"][:, b]) for b in range(B)])
        mixed = ((rl < 1.1) & (rr < 1.1) & alive).sum()
        a = alive
        med = lambda x: np.nanmedian(np.where(a, x, np.nan)) if a.any() else np.nan
        rows.append(dict(name=name, h=np.median(d["h"]), lmax0=np.median(d["lmax0"]), mixed=mixed, nalive=a.sum(),
                         rr=med(rr), rl=med(rl), rrr=med(rrr), rrl=med(rrl), tc=med(tc), tcq=med(tcq),
                         essg=med(emin) / grads, esss=med(emin) / sec, ess=med(emin),
                         lr=np.nanmedian(np.where(a, d["lmaxE"] / d["lmax0"], np.nan)) if a.any() else np.nan,
                         ovl=med(d["ovl"]), kk=int(d["kk"]), nll=med(nll), Lm=med(L.mean(0)), Rm=med(R.mean(0)),
                         iat_l=med(20 * NWIN / el), iat_r=med(20 * NWIN / er), tdyn=float(d["t_dyn"]), gB=float(d["gammaB"])))
        detail.append((name, rl, rr, tc, tcq, el, er, nll, L.mean(0), R.mean(0), d["lmaxE"] / d["lmax0"], d["ovl"], alive))

    hdr = "| variant | h (median) | λmax(PHP) start | mixed /8 | med split-R̂ rms | med split-R̂ loss | med T_conf/T (θ) | med T_conf/T (q) | ESS/grad | ESS/s | λmax end/start | top-k overlap start→end (k) |"
    print(hdr); print("|" + "---|" * 12)
    for r in rows:
        print(f"| {r['name']} | {r['h']:.4g} | {r['lmax0']:.4g} | {r['mixed']} (alive {r['nalive']}) | {r['rr']:.2f} | {r['rl']:.2f} | {r['tc']:.2f} | {r['tcq']:.2f} | {r['essg']:.2e} | {r['esss']:.2f} | {r['lr']:.3g} | {r['ovl']:.2f} ({r['kk']}) |")
    print()
    print("| variant | med rank-norm split-R̂ rms | ... loss | med window ESS (min of loss,rms; of 150) | med IAT loss [steps] | med IAT rms [steps] | med window mean loss | med window mean rms | med test NLL | dyn wall s (8 traj batched) | γ (B) |")
    print("|" + "---|" * 11)
    for r in rows:
        print(f"| {r['name']} | {r['rrr']:.2f} | {r['rrl']:.2f} | {r['ess']:.1f} | {r['iat_l']:.0f} | {r['iat_r']:.0f} | {r['Lm']:.3f} | {r['Rm']:.4f} | {r['nll']:.3f} | {r['tdyn']:.1f} | {r['gB']:.3g} |")
    if "-v" in sys.argv:
        for (name, rl, rr, tc, tcq, el, er, nll, Lm, Rm, lr, ov, al) in detail:
            print("\n##", name)
            for b in range(len(rl)):
                print(f"  traj {b}: alive={al[b]} Rhat loss {rl[b]:.2f} rms {rr[b]:.2f} | Tconf/T th {tc[b]:.2f} q {tcq[b]:.2f} | ESS loss {el[b]:.1f} rms {er[b]:.1f} | NLL {nll[b]:.3f} | mean loss {Lm[b]:.3f} rms {Rm[b]:.4f} | lmaxE/0 {lr[b]:.3g} ovl {ov[b]:.2f}")


if __name__ == "__main__":
    main()
