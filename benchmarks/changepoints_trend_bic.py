"""Why the trend's BIC drops the real-shaped series' true shifts (ninth round of
``docs/changepoints-history.md``).

``benchmarks/changepoints.py``'s real-shaped series with two shifts (10⁵ and 10⁶ readings) are
cut at both true shifts by every search, but ``trend._prune_with_trend`` (BIC, "segment means +
common slopes") drops one or both for a steeper slope. For each subset of the true cuts, with the
slope refitted as the pruning refits it (``trend._significant_slopes``), this prints:

* ``bic n``: the shipped criterion, n ln(RSS/n) + k ln n;
* ``bic ν``: the same with the level test's effective count ν (``level._independent`` on the
  fit's own residuals' long-run noise) in place of n, as the ninth round's rejected change
  (which held one ν, that of the fit the pruning starts from, for all the fits it compared);
* ``bic n, 5σ``: n ln(RSS/n) + k ln n with every residual clipped at 5 robust σ;
* ``top 0.2%``: the share of the RSS in the 0.2% largest squared residuals (the spikes).

Run: ``.venv/bin/python benchmarks/changepoints_trend_bic.py`` (seeded; about 10 s).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from changepoints import real_shaped
from perfsleuth.changepoints.kernels import search, trend
from perfsleuth.changepoints.kernels.level import _independent
from perfsleuth.stats import robust


def residuals(y: np.ndarray, slope: np.ndarray, cuts: list[int]) -> np.ndarray:
    """The series less ``slope`` and its segment means (one column)."""
    level = y[:, 0] - np.arange(len(y)) * slope[0]
    bounds = [0, *cuts, len(y)]
    return np.concatenate([level[a:b] - level[a:b].mean() for a, b in itertools.pairwise(bounds)])


def criteria(r: np.ndarray, params: int) -> tuple[float, float, float, float]:
    n = len(r)
    noise = [robust.long_run_noise(r)]
    nu = _independent(n, noise, robust.memory_cap(n), robust.longest_block(n))
    rss = float((r * r).sum())
    spread = robust.robust_scale(r)
    clipped = np.clip(r, -5 * spread, 5 * spread)
    top = np.sort(r * r)[::-1][: n // 500].sum() / rss
    return (
        n * math.log(rss / n) + params * math.log(n),
        nu * math.log(rss / n) + params * math.log(nu),
        n * math.log(float((clipped * clipped).sum()) / n) + params * math.log(n),
        float(top),
    )


def main() -> None:
    print("| n | cuts kept | slope | bic n | bic ν | bic n, 5σ | top 0.2% |")
    print("|---|---|---|---|---|---|---|")
    for n in (10**5, 10**6):
        x, truth = real_shaped(n, 2, seed=n + 2)
        y, _, _ = search._without_cycle(x[:, None], search._auto_min_size(n))
        for cuts in ([*truth], [truth[1]], [truth[0]], []):
            slope = trend._significant_slopes(y, cuts)
            params = 2 * len(cuts) + int(np.count_nonzero(slope))
            bic_n, bic_nu, bic_clipped, top = criteria(residuals(y, slope, cuts), params)
            print(
                f"| {n:.0e} | {cuts} | {slope[0]:.3g} | {bic_n:.1f} | {bic_nu:.1f} "
                f"| {bic_clipped:.1f} | {top:.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
