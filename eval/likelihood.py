"""Likelihood ratios ``f_A(x) / f_H(x)`` estimated from labelled scores, for Neyman-Pearson audits.

The Neyman-Pearson lemma says the best audit rule at a given benign audit rate flags
the observations with the highest likelihood ratio between failures ``A`` and benign
runs ``H``. Scores are not likelihood ratios: LLM suspicion scales, for one, get *less*
indicative of failure at their very top (Hua et al. 2025). These estimators turn
one score (the program's) or a pair (program, judge) into a log likelihood ratio:

- ``isotonic``: the ratio is taken to rise with the score. Pool-adjacent-violators
  on the class-balanced labels gives ``p(x)``, the posterior under equal priors, and
  ``LR = p / (1 - p)``: the slopes of the ROC convex hull, the best a monotone rule
  can do. For a pair, a class-balanced logistic regression finds the direction that
  separates the classes and the same isotonic fit runs along it (monotone in the
  combined score). Robust with few failures; the default.
- ``kde``: the ratio of Gaussian kernel density estimates of ``f_A`` and ``f_H``,
  the estimator Hua et al. use (here with a diagonal bandwidth: Silverman's or
  Scott's rule on each coordinate's spread, or a fixed bandwidth in score units).
  Follows non-monotone ratios, and needs more failures to do so reliably.

Each estimator is fitted once (on ``val``) and then applied to any new scores:
``log_ratio(x)`` with ``x`` of shape ``(n,)`` for one score, ``(n, 2)`` for a pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike

LrMethod = Literal["isotonic", "kde"]
LR_METHODS: tuple[str, ...] = ("isotonic", "kde")

# Posteriors are clipped to [_P_CLIP, 1 - _P_CLIP]: a block with no benign runs
# gets a large finite ratio (about 1e6) instead of infinity, so ratios from the
# one-score and the two-score regions stay comparable on one threshold.
_P_CLIP = 1e-6
# KDE evaluation works in row chunks to bound memory (chunk x n_train x d floats).
_KDE_CHUNK = 2048


class LikelihoodRatio(Protocol):
    """A fitted estimator: the log likelihood ratio of new observations."""

    def log_ratio(self, x: ArrayLike) -> np.ndarray: ...


def _design(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"expected scores of shape (n,) or (n, d), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("scores must be finite to estimate a likelihood ratio")
    return a


def _labels(y: ArrayLike, n: int) -> np.ndarray:
    lab = np.asarray(y).astype(bool)
    if lab.shape != (n,):
        raise ValueError(f"is_failure must have shape ({n},), got {lab.shape}")
    if lab.all() or not lab.any():
        raise ValueError("a likelihood ratio needs both failures and benign runs")
    return lab


def _balanced_weights(y: np.ndarray) -> np.ndarray:
    # Each class carries total weight 1, so a fitted posterior is under equal priors
    # and its odds are the likelihood ratio.
    return np.where(y, 1.0 / y.sum(), 1.0 / (~y).sum())


@dataclass(frozen=True)
class IsotonicLR:
    """Monotone likelihood ratio along one coordinate ``z = x @ direction`` (see module doc)."""

    direction: np.ndarray  # (d,) weights on the standardised coordinates
    center: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)
    knots: np.ndarray  # z at the fitted steps (ascending)
    log_lr: np.ndarray  # log likelihood ratio at each knot

    def project(self, x: ArrayLike) -> np.ndarray:
        a = _design(x)
        return ((a - self.center) / self.scale) @ self.direction

    def log_ratio(self, x: ArrayLike) -> np.ndarray:
        # Linear between knots, flat beyond them (sklearn's isotonic predict does the same).
        return np.interp(self.project(x), self.knots, self.log_lr)


def _pav(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted isotonic (non-decreasing) regression of ``y`` on ``x`` by pool-adjacent-violators.

    Returns the distinct ``x`` (ascending) and the fitted value at each; equal ``x``
    are pooled first, so they always get one value.
    """
    knots, inverse = np.unique(x, return_inverse=True)
    wsum = np.bincount(inverse, weights=w, minlength=knots.size)
    ysum = np.bincount(inverse, weights=w * y, minlength=knots.size)
    # A stack of blocks (weight, weighted sum, number of knots); merge while decreasing.
    bw: list[float] = []
    bs: list[float] = []
    bn: list[int] = []
    for wi, si in zip(wsum.tolist(), ysum.tolist(), strict=True):
        bw.append(wi)
        bs.append(si)
        bn.append(1)
        while len(bw) > 1 and bs[-2] * bw[-1] >= bs[-1] * bw[-2]:
            wi, si, ni = bw.pop(), bs.pop(), bn.pop()
            bw[-1] += wi
            bs[-1] += si
            bn[-1] += ni
    fitted = np.repeat(np.divide(bs, bw), bn)
    return knots, fitted


def _logistic_direction(z: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Coefficients of a weighted logistic regression on standardised ``z`` (Newton steps).

    A faint ridge penalty keeps the coefficients finite when the classes separate.
    """
    n, d = z.shape
    a = np.column_stack((np.ones(n), z))
    beta = np.zeros(d + 1)
    ridge = 1e-6 * np.eye(d + 1)
    ridge[0, 0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ beta, -30, 30)))
        grad = a.T @ (w * (p - y)) + ridge @ beta
        hess = (a * (w * p * (1 - p))[:, None]).T @ a + ridge + 1e-12 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta[1:]


def fit_isotonic_lr(x: ArrayLike, is_failure: ArrayLike) -> IsotonicLR:
    """Fit :class:`IsotonicLR` on one score (``(n,)``) or a pair of scores (``(n, 2)``)."""
    a = _design(x)
    y = _labels(is_failure, a.shape[0])
    w = _balanced_weights(y)
    center = a.mean(axis=0)
    scale = a.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (a - center) / scale
    direction = np.ones(1) if a.shape[1] == 1 else _logistic_direction(z, y.astype(float), w)
    if not np.any(direction):
        direction = np.ones(a.shape[1])
    knots, p = _pav(z @ direction, y.astype(float), w)
    p = np.clip(p, _P_CLIP, 1.0 - _P_CLIP)
    return IsotonicLR(direction, center, scale, knots, np.log(p) - np.log1p(-p))


def _bandwidth(a: np.ndarray, rule: str | float) -> np.ndarray:
    n, d = a.shape
    if not isinstance(rule, str):
        if not rule > 0:
            raise ValueError(f"bandwidth must be positive, got {rule}")
        return np.full(d, float(rule))
    if rule == "scott":
        factor = n ** (-1.0 / (d + 4))
    elif rule == "silverman":
        factor = (n * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    else:
        raise ValueError(f"bandwidth must be 'scott', 'silverman' or a number, got {rule!r}")
    spread = a.std(axis=0, ddof=1) if n > 1 else np.ones(d)
    return factor * np.where(spread > 0, spread, 1.0)


def _kde_log_density(train: np.ndarray, h: np.ndarray, x: np.ndarray) -> np.ndarray:
    norm = (
        math.log(train.shape[0])
        + float(np.sum(np.log(h)))
        + 0.5 * train.shape[1] * math.log(2 * math.pi)
    )
    out = np.empty(x.shape[0])
    for start in range(0, x.shape[0], _KDE_CHUNK):
        diff = (x[start : start + _KDE_CHUNK, None, :] - train[None, :, :]) / h
        e = -0.5 * np.sum(diff * diff, axis=2)
        peak = e.max(axis=1)
        out[start : start + _KDE_CHUNK] = peak + np.log(np.exp(e - peak[:, None]).sum(axis=1))
    return out - norm


@dataclass(frozen=True)
class KdeLR:
    """Ratio of two Gaussian kernel density estimates (diagonal bandwidths)."""

    failures: np.ndarray  # (n_A, d)
    benign: np.ndarray  # (n_H, d)
    h_failures: np.ndarray  # (d,)
    h_benign: np.ndarray  # (d,)

    def log_ratio(self, x: ArrayLike) -> np.ndarray:
        a = _design(x)
        return _kde_log_density(self.failures, self.h_failures, a) - _kde_log_density(
            self.benign, self.h_benign, a
        )


def fit_kde_lr(x: ArrayLike, is_failure: ArrayLike, bandwidth: str | float = "silverman") -> KdeLR:
    """Fit :class:`KdeLR`; ``bandwidth`` is ``"scott"``, ``"silverman"`` or a number."""
    a = _design(x)
    y = _labels(is_failure, a.shape[0])
    return KdeLR(a[y], a[~y], _bandwidth(a[y], bandwidth), _bandwidth(a[~y], bandwidth))


def fit_lr(x: ArrayLike, is_failure: ArrayLike, method: LrMethod = "isotonic") -> LikelihoodRatio:
    """Fit the estimator named by ``method`` (``"isotonic"`` or ``"kde"``)."""
    if method == "isotonic":
        return fit_isotonic_lr(x, is_failure)
    if method == "kde":
        return fit_kde_lr(x, is_failure)
    raise ValueError(f"likelihood-ratio method must be one of {LR_METHODS}, got {method!r}")
