#!/usr/bin/python3
"""A hand computation of WAIC and PSIS-LOO in numpy, transcribed from ArviZ's arviz/stats/stats.py
(waic, loo, psislw, _psislw, _gpdfit, _gpinv; ArviZ is not installable here), independent of
simmer's C++ (src/ensemble/model_comparison.cpp). Used by tests/analysis/test_netcdf.py (compare)
and, run by hand, prints the synthetic case whose numbers tests/ensemble/test_model_comparison.cpp
holds:  /usr/bin/python3 tests/analysis/loo_reference.py"""
import numpy as np


def logsumexp(x, axis=None):
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def gpdfit(ary):
    prior_bs, prior_k = 3, 10
    n = len(ary)
    m_est = 30 + int(n ** 0.5)
    b_ary = 1 - np.sqrt(m_est / (np.arange(1, m_est + 1, dtype=float) - 0.5))
    b_ary /= prior_bs * ary[int(n / 4 + 0.5) - 1]
    b_ary += 1 / ary[-1]
    k_ary = np.log1p(-b_ary[:, None] * ary).mean(axis=1)
    len_scale = n * (np.log(-(b_ary / k_ary)) - k_ary - 1)
    weights = 1 / np.exp(len_scale - len_scale[:, None]).sum(axis=1)
    real = weights >= 10 * np.finfo(float).eps
    weights, b_ary = weights[real], b_ary[real]
    weights /= weights.sum()
    b_post = np.sum(b_ary * weights)
    k_post = np.log1p(-b_post * ary).mean()
    sigma = -k_post / b_post
    k_post = (n * k_post + prior_k * 0.5) / (n + prior_k)
    return k_post, sigma


def gpinv(probs, kappa, sigma):
    if abs(kappa) < np.finfo(float).eps:
        return -np.log1p(-probs) * sigma
    return np.expm1(-kappa * np.log1p(-probs)) / kappa * sigma


def psislw(x, reff=1.0):
    x = np.array(x, dtype=float)
    n = len(x)
    cutoff_ind = -int(np.ceil(min(0.2 * n, 3 * np.sqrt(n / reff)))) - 1
    x -= np.max(x)
    xcutoff = max(x[np.argsort(x)[cutoff_ind]], np.log(np.finfo(float).tiny))
    expxcutoff = np.exp(xcutoff)
    (tailinds,) = np.where(x > xcutoff)
    x_tail = x[tailinds]
    k = np.inf
    if len(x_tail) > 4:
        si = np.argsort(x_tail)
        k, sigma = gpdfit(np.exp(x_tail[si]) - expxcutoff)
        if np.isfinite(k):
            sti = np.arange(0.5, len(x_tail)) / len(x_tail)
            x[tailinds[si]] = np.log(gpinv(sti, k, sigma) + expxcutoff)
            x[x > 0] = 0
    return x - logsumexp(x), k


def waic(ll):
    """ll: draws x observations. (elpd, se, p_waic, pointwise)."""
    s = ll.shape[0]
    lppd_i = logsumexp(ll, axis=0) - np.log(s)
    var_i = ll.var(axis=0)
    i = lppd_i - var_i
    return i.sum(), np.sqrt(len(i) * np.var(i)), var_i.sum(), i


def loo(ll, reff=1.0):
    """ll: draws x observations. (elpd, se, p_loo, pointwise, k)."""
    s = ll.shape[0]
    pointwise, ks = [], []
    for col in ll.T:
        lw, k = psislw(-col, reff)
        pointwise.append(logsumexp(lw + col))
        ks.append(k)
    i = np.array(pointwise)
    lppd = np.sum(logsumexp(ll, axis=0) - np.log(s))
    return i.sum(), np.sqrt(len(i) * np.var(i)), lppd - i.sum(), i, np.array(ks)


def stacking_weights(pointwise):
    """az.compare's `weight` (method "stacking"), transcribed from ArviZ's compare: the weights that
    maximise sum_i log sum_k w_k exp(elpd_ik) over the simplex, by scipy's SLSQP on the first K - 1
    weights (the last is 1 minus their sum), from equal weights. `pointwise`: one array of
    pointwise elpd per model."""
    from scipy.optimize import minimize
    exp_ic_i = np.exp(np.array(pointwise).T)  # rows x models
    rows, cols = exp_ic_i.shape
    km1 = cols - 1

    def w_fuller(weights):
        return np.concatenate((weights, [max(1.0 - np.sum(weights), 0.0)]))

    def log_score(weights):
        return -np.sum(np.log(exp_ic_i @ w_fuller(weights)))

    def gradient(weights):
        w_full = w_fuller(weights)
        return -np.array([np.sum((exp_ic_i[:, k] - exp_ic_i[:, km1]) / (exp_ic_i @ w_full)) for k in range(km1)])

    theta = np.full(km1, 1.0 / cols)
    constraints = [{"type": "ineq", "fun": lambda x: -np.sum(x) + 1.0}, {"type": "ineq", "fun": np.sum}]
    result = minimize(fun=log_score, x0=theta, jac=gradient, bounds=[(0.0, 1.0)] * km1, constraints=constraints)
    return w_fuller(result["x"])


def synthetic():
    """300 draws of a Gaussian mean, mu_s = 0.4 sin(0.7 s) + 0.2 cos(0.13 s) + 2 sin(0.05 s)^16 (a
    few draws far out), scored on six observations: k-hat from -0.28 to 1.07."""
    s = np.arange(300, dtype=float)
    mu = 0.4 * np.sin(0.7 * s) + 0.2 * np.cos(0.13 * s) + 2.0 * np.sin(0.05 * s) ** 16
    y = np.array([-2.0, -0.5, 0.0, 0.4, 1.5, 4.0])
    return -0.5 * np.log(2 * np.pi) - 0.5 * (y[None, :] - mu[:, None]) ** 2


if __name__ == "__main__":
    ll = synthetic()
    e, se, p, _ = waic(ll)
    print(f"waic elpd {e!r} se {se!r} p {p!r}")
    e, se, p, i, k = loo(ll)
    print(f"loo elpd {e!r} se {se!r} p {p!r}")
    print("loo pointwise", [repr(v) for v in i])
    print("k", [repr(v) for v in k])
