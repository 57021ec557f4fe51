"""LeRobot policies (``lerobot:REPO_ID_OR_DIR``), acting as in LeRobot's own evaluation.

A backbone the checkpoint names (SmolVLA's VLM) is resolved like the checkpoint (see
``backbone``) and joins its identity.

Each step runs LeRobot's own code path, as ``lerobot-eval`` does: ``preprocess_observation``
(images HWC uint8 to CHW float32 in [0, 1], the state as float32), the task strings, the
checkpoint's pre-processor (normalisation, device), ``select_action``, then the post-processor
(unnormalisation) on the action.

LeRobot keeps one episode state (action and observation queues, a temporal ensembler) for the
whole batch and resets it as a whole. The harness starts episodes slot by slot, so this adapter
keeps that state per slot, with a torch RNG per slot seeded from the episode's seed, and steps
each slot's observation through the policy as a batch of one. A slot's actions then depend on
its own episode only: the same whatever the batch size, worker count or the other slots, and the
same as ``lerobot-eval`` at batch size 1. With ``--benchmark-batched-inference`` slots at the
same phase share one call (``slot_batch``), each keeping its own state and noise; the records
may then differ by float rounding, so the option is part of a snapshot's settings.

``lerobot-eval`` hands actions to the env unclipped, and the simulators clip them to the action
space first thing (Meta-World's ``step``, robosuite's controllers); the harness refuses actions
outside the action space, so the adapter clips them as the env would, which leaves the env's
trajectory unchanged. LeRobot's env processors are not run: the env's own processors already
give LeRobot's layouts (``LiberoProcessorStep``'s result for LIBERO), as the parity tests check.
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.features import IMAGE_PREFIX, Feature, action_mismatch, check_features
from pytest_benchmarks.core.policy import BACKBONE
from pytest_benchmarks.core.policy_spec import Loading
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.policies import backbone, slot_batch
from pytest_benchmarks.policies.lerobot_observation import (
    SINGLE_IMAGE,
    observation,
)

#: The pre-processor step that renames observation features (LeRobot's registry name).
RENAME_STEP = "rename_observations_processor"


class LeRobotLoadError(ValueError):
    """A LeRobot checkpoint that cannot be loaded or does not fit the env; one line."""


def is_image(name: str) -> bool:
    return name == SINGLE_IMAGE or name.startswith(IMAGE_PREFIX)


def versions(folder: Path) -> str:
    """The LeRobot installed, and the one that saved the checkpoint where it says so: the
    model card LeRobot writes on a push (``| LeRobot version | 0.6.1 |`` in its README.md)."""
    from importlib import metadata

    installed = f"installed: LeRobot {metadata.version('lerobot')}"
    try:
        card = (folder / "README.md").read_text(errors="replace")
    except OSError:
        card = ""
    saved = re.search(r"^\|\s*LeRobot version\s*\|\s*([^|\s]+)\s*\|", card, re.MULTILINE)
    if saved:
        return f"saved with LeRobot {saved.group(1)}, {installed}"
    return f"{installed}; the checkpoint does not say which LeRobot saved it"


def policy_view(features: dict[str, Feature]) -> dict[str, Feature]:
    """The env's features as a LeRobot policy sees them: images channel first."""
    return {
        name: Feature((f.shape[2], f.shape[0], f.shape[1]), "float32") if is_image(name) else f
        for name, f in features.items()
    }


def episode_state_names(policy: Any) -> list[str]:
    """The attributes holding a LeRobot policy's per-episode state, as ``reset()`` leaves them.

    What ``reset()`` assigns, whatever its value (TD-MPC's ``_prev_mean = None``), and queues
    (``_queues``, ``_action_queue``: deques or dicts of deques) and ensemblers.
    """
    assigned = _assigned_by(policy, policy.reset)
    names = []
    for name, value in vars(policy).items():
        if name in ("_parameters", "_buffers", "_modules"):
            continue
        queue_like = isinstance(value, deque) or (
            isinstance(value, dict) and any(isinstance(v, deque) for v in value.values())
        )
        if name in assigned or queue_like or type(value).__name__.endswith("Ensembler"):
            names.append(name)
    return names


def _assigned_by(target: Any, call: Callable[[], Any]) -> set[str]:
    """The attribute names ``call`` assigns on ``target`` (its class's ``__setattr__`` watched)."""
    cls: Any = type(target)
    own = cls.__dict__.get("__setattr__")
    inherited = cls.__setattr__
    assigned: set[str] = set()

    def watched(self: Any, name: str, value: Any) -> None:
        if self is target:
            assigned.add(name)
        inherited(self, name, value)

    cls.__setattr__ = watched
    try:
        call()
    finally:
        if own is None:
            del cls.__setattr__
        else:
            cls.__setattr__ = own
    return assigned


@dataclass(frozen=True)
class Checkpoint:
    """A LeRobot checkpoint's config read (no weights): what a worker needs to fit it to an
    env, and what a policy server needs to load it."""

    folder: Path
    identity: dict[str, str | None]
    config: Any
    vlm: Any
    renames: dict[str, str]

    @classmethod
    def read(cls, folder: Path, identity: dict[str, str | None], loading: Loading) -> Checkpoint:
        """The checkpoint's config and backbone; LeRobotLoadError."""
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies import factory

        del factory  # imported for its side effect: every policy type's config registered

        name = f"lerobot:{identity['id']}"
        try:
            policy_config = PreTrainedConfig.from_pretrained(folder)
            policy_config.device = loading.device
        except Exception as exc:
            raise LeRobotLoadError(
                f"{name}: not a LeRobot checkpoint, or one this LeRobot cannot read: "
                f"{folder / 'config.json'} ({one_line(exc)}); {versions(folder)}"
            ) from None
        try:
            vlm = backbone.resolve(policy_config, name)
        except backbone.BackboneError as exc:
            raise LeRobotLoadError(str(exc)) from None
        if vlm is not None:
            identity = {**identity, BACKBONE: vlm.label}
        return cls(folder, identity, policy_config, vlm, dict(loading.rename_map))

    @property
    def name(self) -> str:
        return f"lerobot:{self.identity['id']}"

    @property
    def device(self) -> str:
        return str(self.config.device)

    def fit(self, env: EnvConfig, features: dict[str, Feature]) -> list[tuple[str, tuple]]:
        """Check the env's features against the checkpoint's inputs (one line on a mismatch);
        the inputs to pad with zeros."""
        wanted = {k: tuple(f.shape) for k, f in self.config.input_features.items()}
        given = policy_view(features)
        unknown = [k for k in self.renames if k not in given]
        if unknown:
            raise LeRobotLoadError(
                f"{self.name}: --benchmark-rename-map renames {unknown[0]!r}, which "
                f"{env.task.id} does not give; it gives {', '.join(sorted(given))}"
            )
        seen = {self.renames.get(k, k): f for k, f in given.items()}
        # SmolVLA and the pi0 family fill the cameras the batch lacks themselves (up to
        # ``empty_cameras``), as in LeRobot's evaluation: nothing is padded for them, and one
        # camera of the env's is enough (with none, the feature diff says so).
        fills_cameras = hasattr(self.config, "empty_cameras")
        if fills_cameras and any(is_image(k) and k in seen for k in wanted):
            wanted = {k: v for k, v in wanted.items() if not is_image(k) or k in seen}
        pad = check_features(self.name, env.task.id, wanted, seen, pad_cameras=not fills_cameras)
        action = (getattr(self.config, "output_features", None) or {}).get("action")
        if action is not None and env.action_space is not None:
            problem = action_mismatch(tuple(action.shape), env.action_space, env.task.id)
            if problem is not None:
                raise LeRobotLoadError(f"{self.name}: {problem}")
        return [(k, wanted[k]) for k in pad]

    @property
    def input_features(self) -> dict[str, tuple[int, ...]]:
        """The features the checkpoint was trained on: what it reads, by the names the env
        gives them (before the rename map), so the env renders every camera it reads."""
        env_name = {new: old for old, new in self.renames.items()}
        return {env_name.get(k, k): tuple(f.shape) for k, f in self.config.input_features.items()}

    def load(self) -> tuple[Any, tuple[Any, Any]]:
        """The policy on its device, in eval mode, and its pre- and post-processor."""
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        folder, device = self.folder, self.device
        try:
            policy = get_policy_class(self.config.type).from_pretrained(folder, config=self.config)
            policy.to(device).eval()
        except Exception as exc:
            raise LeRobotLoadError(f"{self.name}: cannot load ({one_line(exc)})") from None
        try:
            pre, post = make_pre_post_processors(
                self.config,
                pretrained_path=str(folder),
                preprocessor_overrides={
                    "device_processor": {"device": device},
                    **backbone.tokenizer_override(folder, self.vlm),
                    # lerobot-eval's --rename_map: the pre-processor's first step renames.
                    **({RENAME_STEP: {"rename_map": self.renames}} if self.renames else {}),
                },
            )
        except Exception as exc:
            files = ", ".join(str(folder / f"policy_{p}processor.json") for p in ("pre", "post"))
            raise LeRobotLoadError(
                f"{self.name}: processors this LeRobot cannot read: {files} ({one_line(exc)}); "
                f"{versions(folder)}"
            ) from None
        return policy, (pre, post)


#: The RNG key of draws a merged call makes that are no slot's own.
SHARED = ("shared",)


class LeRobotPolicy:
    """A LeRobot ``PreTrainedPolicy`` with its processors, acting slot by slot.

    Each slot's episode state and RNG are kept under a key: the slot's index in this process,
    or (client, slot) in a policy server (``serving.server``), which acts for many workers'
    slots with one model."""

    def __init__(
        self,
        policy: Any,
        processors: tuple[Any, Any],
        identity: dict[str, str | None],
        device: str,
        num_envs: int,
        pad: Sequence[tuple[str, tuple[int, ...]]] = (),
        bounds: tuple[np.ndarray, np.ndarray] | None = None,
        renames: dict[str, str] | None = None,
        batched: bool = False,
    ) -> None:
        self.policy, self._identity, self.device = policy, identity, device
        #: Slots at the same phase share one ``select_action`` (``_act_together``).
        self.batched = batched
        self.bounds = bounds
        self.num_envs = num_envs
        #: The rename map the pre-processor applies (env name -> the checkpoint's name).
        self.renames = dict(renames or {})
        self.preprocessor, self.postprocessor = processors
        self.pad = list(pad)
        self.state_names = episode_state_names(policy)
        self._fresh = {n: copy.deepcopy(getattr(policy, n)) for n in self.state_names}
        self._cuda = device.startswith("cuda")
        self._states: dict[Hashable, dict[str, Any]] = {}
        #: Each slot's torch RNG state, and under SHARED the one a merged call draws from.
        self._rng: dict[Hashable, tuple[torch.Tensor, torch.Tensor | None]] = {
            SHARED: self._seeded(0)
        }
        self.add_slots(range(num_envs))

    @classmethod
    def load(
        cls,
        folder: Path,
        identity: dict[str, str | None],
        config: EnvConfig,
        features: dict[str, Feature],
        num_envs: int,
        loading: Loading,
    ) -> LeRobotPolicy:
        """Policy, processors and feature check from a checkpoint folder; LeRobotLoadError."""
        checkpoint = Checkpoint.read(folder, identity, loading)
        return cls.fitted(checkpoint, config, features, num_envs, loading)

    @classmethod
    def fitted(
        cls,
        checkpoint: Checkpoint,
        config: EnvConfig,
        features: dict[str, Feature],
        num_envs: int,
        loading: Loading,
    ) -> LeRobotPolicy:
        """The checkpoint checked against the env's features, then loaded."""
        pad = checkpoint.fit(config, features)
        policy, processors = checkpoint.load()
        action_space = config.action_space
        return cls(
            policy, processors, checkpoint.identity, loading.device, num_envs, pad,
            (action_space.low, action_space.high), checkpoint.renames, loading.batched_inference,
        )  # fmt: skip

    @property
    def input_features(self) -> dict[str, tuple[int, ...]]:
        """The features the checkpoint was trained on: what it reads, by the names the env
        gives them (before the rename map), so the env renders every camera it reads."""
        env_name = {new: old for old, new in self.renames.items()}
        return {
            env_name.get(k, k): tuple(f.shape) for k, f in self.policy.config.input_features.items()
        }

    def _seeded(self, seed: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        with torch.random.fork_rng(devices=[self.device] if self._cuda else []):
            torch.manual_seed(seed)
            return torch.get_rng_state(), torch.cuda.get_rng_state() if self._cuda else None

    def add_slots(self, keys: Iterable[Hashable]) -> None:
        """Fresh episode state and RNG for new slot keys."""
        for key in keys:
            self._states[key] = copy.deepcopy(self._fresh)
            self._rng[key] = self._seeded(0)

    def drop_slots(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            self._states.pop(key, None)
            self._rng.pop(key, None)

    def reset(self, slots: Sequence[Hashable], seeds: Sequence[int]) -> None:
        for slot, seed in zip(slots, seeds, strict=True):
            self._states[slot] = copy.deepcopy(self._fresh)
            self._rng[slot] = self._seeded(seed)

    def observation(self, batch: dict[str, Any], slot: int) -> dict[str, Any]:
        """One slot's observation in LeRobot's format, through ``preprocess_observation``."""
        return observation(batch, slot, self.pad)

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        slots = range(self.num_envs)
        actions = self.act_on({slot: self.observation(batch, slot) for slot in slots})
        self.last_raw = np.stack([actions[slot] for slot in slots])
        if self.bounds is None:
            return self.last_raw
        return np.clip(self.last_raw, *self.bounds).astype(np.float32)

    def act_on(self, observations: dict[Hashable, dict[str, Any]]) -> dict[Hashable, np.ndarray]:
        """Each keyed slot's raw action (unclipped) for its observation; with ``batched``,
        slots at the same phase share one call."""
        keys = list(observations)
        if self.batched:
            phases = [slot_batch.phase(self._states[key]) for key in keys]
            groups = [[keys[i] for i in group] for group in slot_batch.groups(phases)]
        else:
            groups = [[key] for key in keys]
        actions: dict[Hashable, np.ndarray] = {}
        for group in groups:
            together = self._act_together(observations, group) if len(group) > 1 else None
            for i, key in enumerate(group):
                actions[key] = together[i] if together else self._act_alone(observations[key], key)
        return actions

    def _act_alone(self, raw: dict[str, Any], key: Hashable) -> np.ndarray:
        """One slot's step as a batch of one, with its own episode state and RNG."""
        observation = self.preprocessor(raw)
        self._set_state(self._states[key])
        with self._slot_rng(key), torch.inference_mode():
            action = self.policy.select_action(observation)
        self._states[key] = self._get_state()
        return self._postprocess(action)

    def _act_together(
        self, observations: dict[Hashable, dict[str, Any]], group: list[Hashable]
    ) -> list[np.ndarray] | None:
        """The group's step as one batch (``--benchmark-batched-inference``): their episode
        states and observations merged, one ``select_action``, the state split back. Noise a
        model draws with ``sample_noise`` (SmolVLA, pi0) comes from each slot's own RNG, as
        alone. None where the observations cannot share a batch (then each acts alone)."""
        try:
            observation = slot_batch.merge([self.preprocessor(observations[k]) for k in group])
            state = slot_batch.merge([self._states[key] for key in group])
        except slot_batch.Unmergeable:
            return None
        self._set_state(state)
        with self._slot_rng(SHARED), self._noise_per_slot(group), torch.inference_mode():
            action = self.policy.select_action(observation)
        states = slot_batch.split(self._get_state(), len(group))
        for key, slot_state in zip(group, states, strict=True):
            self._states[key] = slot_state
        return [self._postprocess(action[i : i + 1]) for i in range(len(group))]

    def _get_state(self) -> dict[str, Any]:
        return {name: getattr(self.policy, name) for name in self.state_names}

    def _set_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self.policy, name, value)

    def _postprocess(self, action: torch.Tensor) -> np.ndarray:
        return self.postprocessor(action).to("cpu", torch.float32).numpy()[0]

    @contextmanager
    def _slot_rng(self, key: Hashable) -> Iterator[None]:
        """Torch's RNG is the slot's own within; its state is kept for the slot's next call."""
        cpu, cuda = self._rng[key]
        with torch.random.fork_rng(devices=[self.device] if self._cuda else []):
            torch.set_rng_state(cpu)
            if cuda is not None:
                torch.cuda.set_rng_state(cuda)
            yield
            self._rng[key] = (
                torch.get_rng_state(), torch.cuda.get_rng_state() if self._cuda else None
            )  # fmt: skip

    @contextmanager
    def _noise_per_slot(self, group: list[Hashable]) -> Iterator[None]:
        """A model's ``sample_noise(shape, device)`` for the group: each slot's rows drawn from
        that slot's RNG, the draw it would make alone."""
        model: Any = getattr(self.policy, "model", None)
        sample = getattr(model, "sample_noise", None)
        if sample is None:
            yield
            return

        def per_slot(shape: Sequence[int], device: Any) -> torch.Tensor:
            rows = []
            for key in group:
                with self._slot_rng(key):
                    rows.append(sample((1, *shape[1:]), device))
            return torch.cat(rows)

        model.sample_noise = per_slot
        try:
            yield
        finally:
            del model.sample_noise

    def identity(self) -> dict[str, str | None]:
        return dict(self._identity)
