"""A literal, loop-by-loop transcription of the measures as the original code computes them
(KL, d_LLV with its pivot and leave-out search, m_SVD of f and g): the tests' oracle, and what
benchmarks/measures.py times against for scale. Deliberately slow and plain."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from sklearn.cross_decomposition import PLSSVD


def loglik_kn(f, g):
    """K x N log-likelihoods, class by class (as the original loops over classes), in float64."""
    k = g.shape[0]
    logits = np.stack([f @ g[c] for c in range(k)])
    m = logits.max(axis=0)
    return logits - (m + np.log(np.exp(logits - m).sum(axis=0)))


def kl(f1, g1, f2, g2):
    l1, l2 = loglik_kn(f1, g1), loglik_kn(f2, g2)
    total = 0.0
    for i in range(l1.shape[1]):
        total += np.sum(np.exp(l1[:, i]) * (l1[:, i] - l2[:, i]))
    return total / l1.shape[1]


def sd(x):
    return np.std(x, ddof=1)


def d_llv(f1, g1, f2, g2, candidates, lam=1e-5, dist_type="max", sum_or_max="max"):
    l1, l2 = loglik_kn(f1, g1), loglik_kn(f2, g2)
    k = l1.shape[0]
    agg = max if dist_type == "max" else (lambda v: float(np.mean(v)))
    best = None
    for a in range(k):
        for pos in range(k - 1):
            b = pos if pos < a else pos + 1
            vals, cs = [], []
            for y in range(k):
                if y in (a, b):
                    continue
                s1, s2 = sd(l1[y] - l1[a]), sd(l2[y] - l2[a])
                vals.append(sd(l1[y] / s1 - l2[y] / s2))
                vals.append(sd(l1[a] / s1 - l2[a] / s2))
                cs.append(abs(s1 - s2))
            t = agg(vals)
            if best is None or t < best[0]:
                best = (t, a, b, agg(cs))
    t1, a, b, t3 = best
    threshold, chosen = 1.0, 0
    row_terms = []
    for r, row in enumerate(candidates):
        x0, rest = row[0], row[1:]
        scores, cs = [], []
        for xj in rest:
            tau1, tau2 = sd(l1[:, xj] - l1[:, x0]), sd(l2[:, xj] - l2[:, x0])
            scores.append(max(sd(l1[:, xj] / tau1 - l2[:, xj] / tau2),
                              sd(l1[:, x0] / tau1 - l2[:, x0] / tau2)))
            cs.append(abs(tau1 - tau2))
        row_terms.append((max(scores), agg(cs)))
        if max(scores) < threshold:
            chosen, threshold = r, max(scores)
    t2, t4 = row_terms[chosen]
    terms = [t1, t2, lam * t3, lam * t4]
    dist = max(terms) if sum_or_max == "max" else sum(terms)
    return {"d_llv": dist, "t1": t1, "t2": t2, "t3": t3, "t4": t4, "y_pivot": a,
            "y_leave_out": b, "input_set": list(candidates[chosen])}


def plssvd_mean_cov(z1, z2, m):
    z1 = (z1 - z1.mean(0)) / z1.std(0, ddof=1)
    z2 = (z2 - z2.mean(0)) / z2.std(0, ddof=1)
    pls = PLSSVD(n_components=m).fit(z1, z2)
    s1, s2 = pls.transform(z1, z2)
    return float(np.mean([np.cov(s1[:, j], s2[:, j])[0, 1] for j in range(m)]))


def m_svd_f(f1, g1, f2, g2, a, b):
    k, m = g1.shape
    rest = [y for y in range(k) if y not in (a, b)]
    out = []
    for combo in combinations(range(k - 2), m):
        labels = [rest[c] for c in combo]
        z1 = f1 @ (g1[labels] - g1[a]).T
        z2 = f2 @ (g2[labels] - g2[a]).T
        out.append(plssvd_mean_cov(z1, z2, m))
    return out


def m_svd_g(f1, g1, f2, g2, input_set):
    x0, rest = input_set[0], list(input_set[1:])
    w1 = g1 @ (f1[rest] - f1[x0]).T
    w2 = g2 @ (f2[rest] - f2[x0]).T
    return plssvd_mean_cov(w1, w2, g1.shape[1])
