"""What the study's scripts share: where a run's archive is, its /metrics attributes, whether it
finished, and the small statistics of the tables (median, mean ± sd, wins/ties/losses and the sign
test)."""
import math
import os

# mpirun's options for a one-rank job: `mpirun -n 1` pins its rank to core 0, so two such jobs run
# side by side (the study's --jobs 2, long_window.py's pairs) would share one core and take twice
# as long (measured 2026-11-30: 205 s of CPU in 418 s of wall). Jobs of two ranks keep mpirun's
# binding (a rank a core), which the test suite measured faster than none.
UNBOUND = ["--bind-to", "none"]

# The drift verdicts /metrics counts trajectories of (trajectories_<verdict>).
VERDICTS = ["stationary", "not_mixed", "drifting", "diverged", "no_members", "not_equilibrated"]


def archive_path(out_dir, case, variant, seed):
    return os.path.join(out_dir, f"{case}-{variant}-seed{seed}.h5")


def attrs(path):
    import h5py
    with h5py.File(path, "r") as f:
        out = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["metrics"].attrs.items()}
        for k in ("status", "wall_seconds"):
            v = f.attrs.get(k)
            out["@" + k] = v.decode() if isinstance(v, bytes) else v
        return out


def finished(path):
    log = path[:-3] + ".log"
    return os.path.exists(path) and os.path.exists(log) and "# exit 0" in open(log).read()


def median(values):
    v = sorted(x for x in values if math.isfinite(x))
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else float("nan")


def mean_sd(values):
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return float("nan"), float("nan")
    mu = sum(v) / len(v)
    return mu, (math.sqrt(sum((x - mu) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0)


def sign_test(wins, losses):
    """One-sided sign test: P(X >= wins) for X ~ Binomial(wins + losses, 1/2); ties dropped."""
    n = wins + losses
    if n == 0:
        return float("nan")
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n


def compare(ens, base, higher_better=True):
    """(wins, ties, losses) of the ensemble against the baseline, seed by seed."""
    w = t = l = 0
    for e, b in zip(ens, base):
        if not (math.isfinite(e) and math.isfinite(b)):
            l += 1 if math.isfinite(b) else 0  # no ensemble (every trajectory diverged): a loss
            continue
        if e == b:
            t += 1
        elif (e > b) == higher_better:
            w += 1
        else:
            l += 1
    return w, t, l


def seeds_on_disk(out_dir, name, variant):
    """The seeds of `name`'s `variant` whose archives are in `out_dir` (a study may have run some
    cases with fewer seeds than others)."""
    prefix, found = f"{name}-{variant}-seed", []
    for f in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
        if f.startswith(prefix) and f.endswith(".h5") and f[len(prefix):-3].isdigit():
            found.append(int(f[len(prefix):-3]))
    return sorted(found)


def fmt(mu, sd=None, digits=4):
    if not math.isfinite(mu):
        return "n/a"
    return f"{mu:.{digits}f}" if sd is None else f"{mu:.{digits}f} ± {sd:.{digits}f}"
