"""Summary of the rebuilt-metric runs against unit masses, per 1000 gradient evaluations, with the law check.
usage: summarize_rebuild.py [-v] NAME... (res_NAME.npz from run.py or run_rebuild.py; window = the stored window)"""
import sys, numpy as np
from bnn import T
from summarize import split_rhat, ess, test_nll


names = [a for a in sys.argv[1:] if not a.startswith("-")]
rows = []
for name in names:
    d = np.load(f"res_{name}.npz")
    alive = d["alive"]; B = len(alive); a = alive
    nwin = d["win_theta"].shape[0]
    nrec_done = int(d["steps_done"]) // 20
    sl = slice(nrec_done - nwin, nrec_done)  # window records (run stopped early -> shifted)
    L, R, G2, ZH = d["loss"][sl], d["rms"][sl], d["g2"][sl], d["zHz"][sl]
    gps = float(d["gps"]) if "gps" in d else 1.0
    wgrads = nwin * 20 * gps  # gradient evaluations per trajectory in the window
    rl = np.array([split_rhat(L[:, b]) for b in range(B)])
    rr = np.array([split_rhat(R[:, b]) for b in range(B)])
    el = np.array([ess(L[:, b]) for b in range(B)])
    er = np.array([ess(R[:, b]) for b in range(B)])
    tcb = G2.mean(0) / ZH.mean(0) / T
    tcp = G2[:, a].mean() / ZH[:, a].mean() / T
    nll = np.array([test_nll(d["win_theta"][:, b]) for b in range(B)])
    Lm, Rm = L.mean(0), R.mean(0)

    # pooled means with two error bars: ESS-based (within trajectories) and between-trajectory
    def pooled(x, e):
        m = x.mean(0)[a]; se_ess = np.sqrt((x.var(0, ddof=1)[a] / e[a]).sum()) / a.sum()
        se_btw = m.std(ddof=1) / np.sqrt(a.sum()) if a.sum() > 1 else np.nan
        return m.mean(), se_ess, se_btw

    row = dict(name=name, h=np.median(d["h"]), gps=gps, nwin=nwin, wgrads=wgrads,
               mixed=int(((rl < 1.1) & (rr < 1.1) & a).sum()), ndiv=int((~a).sum()),
               rr=np.median(rr[a]), rl=np.median(rl[a]),
               essl=np.median(el[a]) / wgrads * 1000, essr=np.median(er[a]) / wgrads * 1000,
               essl_raw=np.median(el[a]), essr_raw=np.median(er[a]),
               tcp=tcp, tc_btw=tcb[a].std(ddof=1) / np.sqrt(a.sum()),
               L=pooled(L, el), R=pooled(R, er), nll=(nll[a].mean(), nll[a].std(ddof=1) / np.sqrt(a.sum())),
               nllmed=np.median(nll[a]))
    if "diag_before" in d and len(d["diag_before"]):
        db, da = np.abs(d["diag_before"]), np.abs(d["diag_after"])
        rz = d["ritzm"][np.isfinite(d["ritzm"])]
        row.update(db_med=np.median(db), db_max=db.max(), da_med=np.median(da), da_max=da.max(),
                   ritz1=np.nanmedian(d["ritz1"]), lk1=np.nanmedian(d["ritzm"]), frac_neg=np.mean(rz < 0),
                   k=int(d["k"]), r=int(d["r"]), niter=int(d["niter"]), vmode=str(d["vmode"]))
    rows.append(row)
    if "-v" in sys.argv:
        print("##", name)
        for b in range(B):
            print(f"  traj {b}: alive={a[b]} Rhat loss {rl[b]:.2f} rms {rr[b]:.2f} | Tconf/T {tcb[b]:.2f} | ESS loss {el[b]:.1f} "
                  f"rms {er[b]:.1f} | NLL {nll[b]:.3f} | mean loss {Lm[b]:.3f} rms {Rm[b]:.4f}")

print("| variant | h | grads/step | window grads/traj (records) | mixed of 8 | split-R̂ rms (med) | ESS loss /1000 grads (med; raw) | "
      "ESS rms /1000 grads (med; raw) | T_conf/T pooled (± btw) | mean loss (± ESS, ± btw) | mean rms (± ESS, ± btw) | test NLL mean (± btw) | diverged |")
print("|" + "---|" * 13)
for r in rows:
    print(f"| {r['name']} | {r['h']:.4g} | {r['gps']:.2f} | {r['wgrads']:.0f} ({r['nwin']}) | {r['mixed']} | {r['rr']:.2f} | "
          f"{r['essl']:.3f} ({r['essl_raw']:.1f}) | {r['essr']:.3f} ({r['essr_raw']:.1f}) | {r['tcp']:.3f} ± {r['tc_btw']:.3f} | "
          f"{r['L'][0]:.4f} ± {r['L'][1]:.4f}, {r['L'][2]:.4f} | {r['R'][0]:.4f} ± {r['R'][1]:.4f}, {r['R'][2]:.4f} | "
          f"{r['nll'][0]:.4f} ± {r['nll'][1]:.4f} | {r['ndiv']} |")
print()
print("| variant | k | r | iters/rebuild | v at rebuild | λmax(P_old H P_old) just before a rebuild: median, max | "
      "λmax(P_new H P_new) just after: median, max | top Ritz value (med) | (k+1)-th Ritz value (med; fraction < 0) |")
print("|" + "---|" * 9)
for r in rows:
    if "db_med" in r:
        print(f"| {r['name']} | {r['k']} | {r['r']} | {r['niter']} | {r['vmode']} | {r['db_med']:.3g}, {r['db_max']:.3g} | "
              f"{r['da_med']:.3g}, {r['da_max']:.3g} | {r['ritz1']:.0f} | {r['lk1']:.2f}; {r['frac_neg']:.2f} |")
