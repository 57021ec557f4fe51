"""The e-values of the sequential gate: nonnegative supermartingales under their nulls, so by
Ville's inequality the chance that one *ever* crosses ``1/level`` is at most the level, however
often it is looked at and whenever the run stops (Ramdas, Grünwald, Vovk and Shafer,
"Game-theoretic statistics and safe anytime-valid inference", Statistical Science 2023).

Both work on paired episodes, ``D_i = baseline_i - new_i``: 1 lost, -1 gained, 0 unchanged, and
on arrays (one task, or many simulated ones at once: ``gate.power`` uses the same code).

- ``regression_e`` (null: no drop, ``P(lost) <= P(gained)``): a mixture sequential probability
  ratio test on the discordant pairs (Robbins 1970). Given a discordant pair, lost has
  probability ``theta``, at most 1/2 under the null; the likelihood ratio
  ``(2 theta')^L (2 (1 - theta'))^G`` against ``theta = 1/2``, mixed over ``theta'`` uniform on
  ``[1/2, 1]``, in closed form.
- ``HoldProcess`` (null: the drop is at least ``delta``): a betting e-process on
  ``Y_i = delta - D_i`` (Waudby-Smith and Ramdas, "Estimating means of bounded random
  variables by betting", JRSS-B 2024), ``K_t = prod (1 + lambda_i Y_i)`` with each bet chosen
  from the pairs before *i* (aGRAPA, their eq. 26), clipped so no factor can reach 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: The largest bet, as a fraction of the one at which a lost pair's factor reaches 0.
MAX_BET = 0.9


def regression_e(lost: ArrayLike, gained: ArrayLike) -> np.ndarray:
    """The mixture e-value for a drop after ``lost`` and ``gained`` discordant pairs,
    ``2 * int_{1/2}^{1} (2 theta)^L (2 (1 - theta))^G dtheta``, elementwise over arrays."""
    from scipy.special import betainc, betaln  # here: the plugin loads without scipy's 0.3 s

    a, b = np.asarray(lost, dtype=float) + 1, np.asarray(gained, dtype=float) + 1
    upper = 1.0 - betainc(a, b, 0.5)  # the Beta(a, b) mass above 1/2
    with np.errstate(divide="ignore"):
        value: np.ndarray = np.exp((a + b - 1) * np.log(2.0) + betaln(a, b) + np.log(upper))
    return value


class HoldProcess:
    """Betting e-processes against "the drop is at least ``delta``", one per element of the
    arrays fed to ``update``, fed pair by pair."""

    def __init__(self, size: int, delta: ArrayLike) -> None:
        self.delta: np.ndarray = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
        self.value: np.ndarray = np.ones(size)
        self.n: np.ndarray = np.zeros(size)
        self.total: np.ndarray = np.zeros(size)
        self.squares: np.ndarray = np.zeros(size)

    def bet(self) -> np.ndarray:
        """aGRAPA: the growth-optimal bet for the pairs so far, ``mean / second moment`` of
        ``Y`` (shrunk toward "no drop" by one pseudo-pair), clipped to
        ``[0, MAX_BET / (1 - delta)]`` so a lost pair's factor stays above 0."""
        mean = (self.total + self.delta) / (self.n + 1)
        second = (self.squares + self.delta**2) / (self.n + 1)
        bet: np.ndarray = np.clip(mean / second, 0.0, MAX_BET / (1.0 - self.delta))
        return bet

    def update(self, diff: ArrayLike, where: ArrayLike = True) -> np.ndarray:
        """One more pair for each element where ``where`` holds (``diff`` = baseline - new);
        the e-values after it."""
        mask = np.broadcast_to(np.asarray(where, dtype=bool), self.value.shape)
        y = np.where(mask, self.delta - np.asarray(diff, dtype=float), 0.0)
        self.value = np.where(mask, self.value * (1.0 + self.bet() * y), self.value)
        self.n = self.n + mask
        self.total = self.total + y
        self.squares = self.squares + y * y
        return self.value
