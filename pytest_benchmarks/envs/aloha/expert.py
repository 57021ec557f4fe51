"""ALOHA's scripted experts, made as the ACT paper made its simulated demonstrations: a plan
from the objects' privileged poses (``plans``), run in the mocap (``*_end_effector``) version
of the scene, whose joint positions are then replayed as the joint-space env's actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_benchmarks.envs.aloha.plans import Pose, plan
from pytest_benchmarks.envs.aloha.poses import interpolate, rotate

#: The centre between the two fingers, in the gripper link's frame.
FINGERS = np.array([0.1023, 0.0, 0.0087])
#: Robot joints (two arms of six joints and two fingers each) lead qpos, then the objects.
ROBOT_QPOS = 16
#: A weld's data: anchor (3), relative position (3), relative orientation (4), torque scale;
#: and the welds' stiffness here (the model's own lets a carried arm lag centimetres behind).
WELD_RELPOS, WELD_RELQUAT = slice(3, 6), slice(6, 10)
WELD_SOLIMP = (0.9, 0.95, 0.001)


def gripper_poses(track: np.ndarray) -> np.ndarray:
    """An arm's interpolated plan (fingers' centre, orientation, gripper) as the gripper link's
    pose, which its mocap body holds."""
    out = track.copy()
    quats = track[:, 3:7] / np.linalg.norm(track[:, 3:7], axis=1, keepdims=True)
    out[:, 3:7] = quats
    out[:, :3] = track[:, :3] - np.stack([rotate(q, FINGERS) for q in quats])
    return out


class EndEffectorScene:
    """The task's mocap scene (gym-aloha's ``*_end_effector`` model), where each gripper link
    is welded to a mocap body; it turns a plan into joint positions.

    The model's welds name no relative pose, so MuJoCo 3 takes it from qpos0, where the arms
    stand straight up: 13.5 cm and a half turn off the grippers' start poses. Here each weld
    holds its gripper link exactly at its mocap body, and the mocap bodies start at the grippers.
    """

    def __init__(self, task: str) -> None:
        from dm_control import mujoco
        from dm_control.rl import control
        from gym_aloha.constants import ASSETS_DIR, DT
        from gym_aloha.tasks.sim_end_effector import BimanualViperXEndEffectorTask

        class Placed(BimanualViperXEndEffectorTask):
            """Robots at their start pose, the mocap bodies at their grippers and the objects
            where the joint-space env put them."""

            objects: np.ndarray = np.zeros(0)

            def initialize_episode(self, physics: Any) -> None:
                self.initialize_robots(physics)
                physics.data.qpos[ROBOT_QPOS:] = self.objects
                physics.forward()
                for mocap, side in enumerate(("left", "right")):
                    gripper = f"vx300s_{side}/gripper_link"
                    physics.data.mocap_pos[mocap] = physics.named.data.xpos[gripper]
                    physics.data.mocap_quat[mocap] = physics.named.data.xquat[gripper]

            def get_observation(self, physics: Any) -> dict[str, np.ndarray]:
                return {"qpos": self.get_qpos(physics)}

            def get_reward(self, physics: Any) -> float:
                return 0.0

        path = ASSETS_DIR / f"bimanual_viperx_end_effector_{task}.xml"
        self._task = Placed()
        physics = mujoco.Physics.from_xml_path(str(path))
        physics.model.eq_data[:, WELD_RELPOS] = 0.0
        physics.model.eq_data[:, WELD_RELQUAT] = (1.0, 0.0, 0.0, 0.0)
        physics.model.eq_solimp[:, :3] = WELD_SOLIMP
        self._env = control.Environment(
            physics,
            self._task,
            float("inf"),
            control_timestep=DT,
            n_sub_steps=None,
            flat_observation=False,
        )
        self._name = task

    def _pose(self, side: str) -> Pose:
        """A gripper's pose now, as plans give poses: its fingers' centre, orientation."""
        data = self._env.physics.named.data
        gripper = f"vx300s_{side}/gripper_link"
        quat = np.array(data.xquat[gripper])
        return np.array(data.xpos[gripper]) + rotate(quat, FINGERS), quat

    def start(self, objects: np.ndarray, steps: int) -> None:
        """Reset to the joint-space env's scene and plan an episode of ``steps`` steps."""
        self._task.objects = np.asarray(objects, dtype=np.float64)
        self._env.reset()
        made = plan(self._name, self._task.objects, self._pose("left"), self._pose("right"))
        self._tracks = [gripper_poses(interpolate(made.left, steps)),
                        gripper_poses(interpolate(made.right, steps))]  # fmt: skip
        self._replans = {r.step: r for r in made.replans}
        self._steps, self.t = steps, 0

    @property
    def replan_steps(self) -> list[int]:
        """The steps where the plan looks at the scene again, in order."""
        return sorted(self._replans)

    def sync(self, physics: Any) -> None:
        """Take the joint-space env's state (the robots' and the objects' joints, which both
        models lay out alike), so that the next replan sees the scene as it is there."""
        data = self._env.physics.data
        data.qpos[:] = physics.data.qpos
        data.qvel[:] = physics.data.qvel
        self._env.physics.forward()

    def actions_until(self, end: int) -> np.ndarray:
        """The joint-space actions of the steps from ``t`` to ``end``: the arm joints the mocap
        scene reaches after each step of the plan, and the plan's gripper commands."""
        actions = np.empty((max(end - self.t, 0), 14))
        for row, t in enumerate(range(self.t, end)):
            if t in self._replans:
                replan = self._replans[t]
                now = np.array(self._env.physics.data.qpos[ROBOT_QPOS:])
                frames = replan.keyframes(now, self._pose(("left", "right")[replan.arm]))
                self._tracks[replan.arm][t:] = gripper_poses(interpolate(frames, self._steps))[t:]
            pose = np.concatenate([self._tracks[0][t], self._tracks[1][t]])
            actions[row] = self._env.step(pose).observation["qpos"]
            actions[row, 6], actions[row, 13] = pose[7], pose[15]
        self.t = max(self.t, end)
        return actions

    def joint_plan(self, objects: np.ndarray, steps: int) -> np.ndarray:
        """A whole episode's actions, planned open loop in the mocap scene alone."""
        self.start(objects, steps)
        return self.actions_until(steps)

    def close(self) -> None:
        self._env.physics.free()


class ExpertTrack:
    """The expert inside the joint-space env. At each reset it plans the episode in the mocap
    scene from the objects' poses; at each of the plan's replan steps the mocap scene first
    takes the joint-space env's state, so the replan sees the parts where they hang there, not
    where the mocap scene put them. It hands out one joint-space action per step (holding the
    last one past the plan's end)."""

    def __init__(self, task: str, steps: int) -> None:
        self._scene = EndEffectorScene(task)
        self._steps = max(steps, 1)
        self._actions = np.zeros((0, 14))
        self._t = 0

    def start(self, objects: np.ndarray) -> None:
        self._scene.start(objects, self._steps)
        self._t = 0
        self._plan_on()

    def _plan_on(self) -> None:
        """The actions up to the next replan step (or the episode's end)."""
        end = min(next((s for s in self._scene.replan_steps if s > self._t), self._steps),
                  self._steps)  # fmt: skip
        # A roll joint may turn past pi in the mocap scene; the joint-space actuators stop
        # within [-pi, pi] (the action space): the same targets, clipped.
        self._actions = np.clip(self._scene.actions_until(end), -np.pi, np.pi)
        self._first = self._t

    def next(self, physics: Any) -> np.ndarray:
        """The action for the env's next step; ``physics`` is the env's, as it stands now."""
        if self._t in self._scene.replan_steps and self._scene.t == self._t:
            self._scene.sync(physics)
            self._plan_on()
        index = min(self._t - self._first, len(self._actions) - 1)
        self._t += 1
        return self._actions[index]

    def close(self) -> None:
        self._scene.close()
