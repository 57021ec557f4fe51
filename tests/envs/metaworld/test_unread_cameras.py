"""Cameras no policy input reads are rendered black, and the cameras it reads are unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_benchmarks.core import catalog, rendering
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv

rendering.choose_backend()

AGENTVIEW = "observation.images.agentview_image"
WRIST = "observation.images.robot0_eye_in_hand_image"
SIZE = (96, 128)


@pytest.mark.parametrize(
    ("obs", "video", "reads", "unread"),
    [
        ("pixels", "none", {AGENTVIEW, "observation.state"}, ("robot0_eye_in_hand_image",)),
        ("pixels", "none", {WRIST}, ("agentview_image",)),
        ("pixels", "all", {WRIST}, ()),  # the videos show agentview
        ("pixels", "none", {AGENTVIEW, WRIST}, ()),
        ("lerobot", "none", {"observation.images.image"}, ("robot0_eye_in_hand_image",)),
        ("state", "none", {"observation.state"}, ()),
    ],
)
def test_libero_names_the_cameras_no_input_reads(
    obs: str, video: str, reads: set[str], unread: tuple[str, ...]
):
    libero = catalog.get("libero")
    config = EnvConfig(libero.select(["libero_spatial/0"])[0], 10, 0, obs=obs, video=video)
    assert libero.unread_cameras(config, reads) == unread


class Reader:
    """Holds still and keeps the images it is given; reads the cameras it declares."""

    def __init__(self, cameras: list[str]) -> None:
        self.input_features = {name: (*SIZE, 3) for name in cameras}
        self.input_features["observation.state"] = (8,)
        self.seen: list[dict[str, np.ndarray]] = []

    def reset(self, slots: Any, seeds: Any) -> None:
        pass

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        self.seen.append({k: batch[k].copy() for k in (AGENTVIEW, WRIST)})
        return np.array([[0.1, 0.0, -0.1, 0.0, 0.0, 0.0, -1.0]], np.float32)

    def identity(self) -> dict[str, str | None]:
        return {"source": "test", "id": "reader", "revision": None}


def frames(policy: Reader) -> tuple[LazyVectorEnv, Reader]:
    libero = catalog.get("libero")
    config = EnvConfig(libero.select(["libero_spatial/0"])[0], 4, 0, obs="pixels",
                       image_size=SIZE)  # fmt: skip
    env = LazyVectorEnv(libero, config, 1, sync=True)
    results: list[TaskResult] = []
    evaluate_task(env, policy, processors=libero.processors(config), seed=0, episodes=range(1),
                  record=results.append)  # fmt: skip
    assert results[0].error is None and len(policy.seen) == 4
    return env, policy


def test_a_camera_no_input_reads_renders_black_and_the_read_one_is_unchanged():
    env, one = frames(Reader([AGENTVIEW]))
    assert env.config.blank_cameras == ("robot0_eye_in_hand_image",)
    _, both = frames(Reader([AGENTVIEW, WRIST]))
    for step, (seen, full) in enumerate(zip(one.seen, both.seen, strict=True)):
        assert not seen[WRIST].any(), step  # nothing rendered
        assert full[WRIST].std() > 5, step
        assert np.array_equal(seen[AGENTVIEW], full[AGENTVIEW]), step


def test_a_lerobot_checkpoint_of_one_camera_leaves_the_other_unrendered(tmp_path):
    pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
    import lerobot_models

    from pytest_benchmarks.policies import make_policy

    libero = catalog.get("libero")
    config = EnvConfig(libero.select(["libero_spatial/0"])[0], 4, 0, obs="lerobot",
                       image_size=(32, 32))  # fmt: skip
    inputs = {"observation.state": (8,), "observation.images.image": (3, 32, 32)}
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=7)
    policy = make_policy(f"lerobot:{folder}", libero, config, 1, "cpu", libero.features(config))
    assert set(policy.input_features) == set(inputs)  # type: ignore[attr-defined]
    env = LazyVectorEnv(libero, config, 1, sync=True)
    env.skip_unread_cameras(policy)
    assert env.config.blank_cameras == ("robot0_eye_in_hand_image",)
