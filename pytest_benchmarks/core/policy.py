"""The Policy protocol: what the rollout needs from a policy.

A policy acts on a whole batch: the rollout calls ``act`` once per vector-env step with the
processed observations of every slot, and ``reset`` for the slots whose episodes start, with
those episodes' seeds so stochastic policies are reproducible per episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pytest_benchmarks.core.errors import one_line, short


@runtime_checkable
class Policy(Protocol):
    """What the rollout needs from a policy."""

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        """Forget per-episode state of ``slots``; new episodes with ``seeds`` start there."""

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        """Actions for every slot, shape ``(num_envs, *action_shape)``."""

    def identity(self) -> dict[str, str | None]:
        """``source``, ``id`` and ``revision`` recorded in the metrics JSON."""


class PolicyError(Exception):
    """A policy that could not be built, or whose ``identity()`` the metrics JSON cannot hold."""


IDENTITY_KEYS = ("source", "id", "revision")
#: An optional identity key: the pretrained backbone a checkpoint loads by name (SmolVLA's
#: VLM), as ``REPO@COMMIT`` or ``PATH#HASH``; another backbone is another experiment.
BACKBONE = "backbone"


def checked_identity(policy: Policy) -> dict[str, str | None]:
    """``policy.identity()``, checked: a dict of strings or None with source, id and revision."""
    try:
        identity = policy.identity()
    except Exception as exc:
        raise PolicyError(f"{type(policy).__name__}.identity() raised {one_line(exc)}") from None
    if (
        not isinstance(identity, dict)
        or not all(isinstance(k, str) for k in identity)
        or not all(v is None or isinstance(v, str) for v in identity.values())
        or not set(IDENTITY_KEYS) <= set(identity)
    ):
        raise PolicyError(
            f"{type(policy).__name__}.identity() returned {short(identity)}; expected a dict "
            "with 'source', 'id' and 'revision', each a string or None"
        )
    return dict(identity)
