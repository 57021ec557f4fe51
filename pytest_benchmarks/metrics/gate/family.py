"""The family of a session's tasks: which tasks can fail (Tarone's rule) and which of them
failed (Holm's step-down), on arrays so that a session (one row) and many simulated sessions
(``gate.power``) are judged by the same code.

Tarone's rule leaves out the tasks whose test cannot reach its level whatever happens: the
smallest K with at most K tasks whose smallest reachable p-value is below ``alpha / K``. It
reads only the baselines and the plan, never the new outcomes, so Holm over the chosen tasks
keeps the session's level.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def tarone_mask(min_p: ArrayLike, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``min_p`` (sessions x tasks): the tasks Tarone's rule lets fail, and K."""
    p = np.atleast_2d(np.asarray(min_p, dtype=float))
    n = p.shape[-1]
    ks = np.arange(1, n + 1)
    # able[s, k-1]: how many tasks of row s can reach alpha / k
    able = (p[:, None, :] < alpha / ks[None, :, None]).sum(axis=-1)
    fits = able <= ks[None, :]
    k = np.where(fits.any(axis=1), ks[np.argmax(fits, axis=1)], 1)
    chosen = p < alpha / k[:, None]
    chosen &= fits.any(axis=1)[:, None]
    return chosen, k


def holm_reject(p: ArrayLike, able: ArrayLike, alpha: float, family: ArrayLike) -> np.ndarray:
    """Holm's step-down per row: the i-th smallest p-value among the ``able`` tasks is judged at
    ``alpha / (family - i)`` while every smaller one was rejected; from the first that is not,
    none is. ``family``: the family's size per row (it may count tasks with no p-value, which
    then hold p = 1). The rejected tasks, as a mask."""
    values = np.atleast_2d(np.where(able, np.asarray(p, dtype=float), np.inf))
    m = np.broadcast_to(np.asarray(family, dtype=float), values.shape[:1])[:, None]
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    steps = np.arange(values.shape[1])[None, :]
    with np.errstate(divide="ignore"):
        levels = alpha / np.maximum(m - steps, 1)
    passed = np.cumprod(ranked < levels, axis=1).astype(bool)
    reject = np.zeros_like(passed)
    np.put_along_axis(reject, order, passed, axis=1)
    return reject
