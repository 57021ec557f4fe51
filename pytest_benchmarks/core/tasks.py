"""The shared types: a task, the config its env is built from, and a bad selection.

Small, frozen and picklable: they travel to vector-env workers and xdist workers.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class SelectionError(ValueError):
    """A benchmark, task or group name that does not exist; the message lists the valid ones."""

    #: The option the error blames.
    option = "--benchmark-task"


class EnvArgsError(SelectionError):
    """The tasks cannot be made with ``--benchmark-env-arg``'s fields (they can without)."""

    option = "--benchmark-env-arg"


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean push-v3?)`` for a near miss among ``candidates``, else ``""``."""
    close = difflib.get_close_matches(word, list(candidates), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


@dataclass(frozen=True, order=True)
class TaskRef:
    """One task of one benchmark: the unit a test is parametrized over."""

    env: str
    suite: str
    task: str
    task_id: int
    description: str
    #: Short name within the benchmark when the task name is unwieldy (``libero_spatial/0``).
    key: str = ""

    @property
    def name(self) -> str:
        """The task's name within its benchmark, as ``--benchmark-task`` accepts it."""
        return self.key or self.task

    @property
    def id(self) -> str:
        """Stable identifier used in test ids, snapshots and the metrics JSON."""
        return f"{self.env}/{self.name}"


#: Camera images' height and width when a run does not say.
DEFAULT_IMAGE_SIZE = (128, 128)


@dataclass(frozen=True)
class EnvConfig:
    """What a worker process needs to build one task's environment; small and picklable."""

    task: TaskRef
    max_steps: int
    #: The run's base seed; a benchmark may derive its set of initial states from it.
    seed: int
    #: ``state`` (no rendering) or ``pixels`` (camera images too).
    obs: str = "state"
    #: Camera image height and width.
    image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE
    #: ``faithful`` (the model's own lighting and antialiasing) or ``fast`` (no multisampling,
    #: shadows or reflections: several times quicker on a CPU renderer, other pixels).
    render: str = "faithful"
    #: No-op steps after each reset, before the episode's first step; None: the benchmark's own.
    settle_steps: int | None = None
    #: Renames of camera observation keys: (env key, policy feature suffix) pairs.
    camera_map: tuple[tuple[str, str], ...] = ()
    #: The env also computes its scripted expert's next action from privileged state (for
    #: policies built on the expert), where the benchmark's expert needs the simulator.
    privileged: bool = False
    #: Episode videos: none, failures or all; written under video_dir.
    video: str = "none"
    video_dir: str | None = None
    #: Env camera keys no input of the policy reads: the env renders them black, not the scene.
    blank_cameras: tuple[str, ...] = ()
    #: Fields of a LeRobot env config (``lerobot:TYPE``), as ``lerobot-eval --env.FIELD=VALUE``.
    env_args: tuple[tuple[str, str], ...] = ()

    # What a policy factory (``module:pkg.mod:factory``) may read about the env without building
    # a simulator, as the benchmark declares it (``Benchmark.describe`` fills them in).
    #: One env's observation space (gymnasium).
    observation_space: Any = field(default=None, compare=False, repr=False)
    #: One env's action space (gymnasium ``Box``): the actions ``act`` returns per slot.
    action_space: Any = field(default=None, compare=False, repr=False)
    #: The policy batch's features (key -> shape and dtype), as the processors give them.
    features: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
