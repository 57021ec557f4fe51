"""A scripted pull that swings a LIBERO door open by its handle (the microwave's).

The microwave's handle is an upright bar a couple of centimetres off the door's face, at the
door's free edge: the part of the door farthest from its hinge. The hand, pointing down, turns
its finger line along the door (so neither finger pokes into it), comes down beside the face
with the bar between the open fingers, closes on it, and pulls it round the hinge, re-aimed every
step a little ahead along the arc and turning with the door, until LIBERO's ``Open`` predicate
holds or the door stops moving; then it lets go and rises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_benchmarks.envs.libero.expert.constants import (
    BELOW_TOP,
    CLEARANCE,
    DOOR_BUDGET,
    DOOR_LEAD,
    DOOR_PROGRESS,
    OFF_FACE,
    ON_LINE,
    REACHED,
    RELEASED_AFTER,
    SEATED,
    STALL_WINDOW,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    Box,
    FingerAxis,
    ahead_on_arc,
    geom_boxes,
    joint_goal,
    move,
)
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine


class DoorPullExpert(PhaseMachine[str]):
    """Swings one hinged door open by its handle; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("above", "descend", "close", "pull", "release", "retreat")
    BUDGET = DOOR_BUDGET

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj = goal
        self.joint_name, self.goal_qpos = joint_goal(env, self.obj, "default_open_ranges")

    def reset(self) -> None:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        self.joint = self.env.sim.model.joint_name2id(self.joint_name)
        self.body = int(model.jnt_bodyid[self.joint])
        self.sign = 1.0 if self.goal_qpos > self._qpos() else -1.0
        handle, panel = self._parts(model, data)
        # Outward from the door's face: the way the handle stands off the panel.
        radial = self._radial(handle.centre)
        outward = np.array([-radial[1], radial[0], 0.0])
        if outward @ (handle.centre - panel.centre) < 0:
            outward = -outward
        point = handle.centre + OFF_FACE * outward
        point[2] = handle.high[2] - BELOW_TOP
        rotation = data.xmat[self.body].reshape(3, 3)
        self.local = rotation.T @ (point - data.xpos[self.body])
        self.fingers = FingerAxis(self.env)
        self.enter()
        self.progress = self._qpos()

    def _qpos(self) -> float:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        return float(data.qpos[model.jnt_qposadr[self.joint]])

    def _parts(self, model: Any, data: Any) -> tuple[Box, Box]:
        """The door's collision geom farthest from its hinge (the handle at its free edge), and
        its largest (the panel)."""
        anchor = np.array(data.xanchor[self.joint])
        boxes = geom_boxes(model, data, {self.body}, affinity=True)
        if not boxes:
            raise ValueError(f"{self.obj}: the door has no collision geoms to pull by")
        handle = max(boxes, key=lambda b: float(np.linalg.norm((b.centre - anchor)[:2])))
        return handle, max(boxes, key=lambda b: float(np.prod(b.size)))

    def _radial(self, point: np.ndarray) -> np.ndarray:
        """The horizontal unit vector from the hinge out to ``point``: the door's line there."""
        radial = point - np.array(self.env.sim.data._data.xanchor[self.joint])
        radial[2] = 0.0
        return radial / max(float(np.linalg.norm(radial)), 1e-9)

    def _point(self) -> np.ndarray:
        data = self.env.sim.data._data
        return data.xpos[self.body] + data.xmat[self.body].reshape(3, 3) @ self.local

    def _aim(self) -> np.ndarray:
        """The grasped point turned ahead round the hinge, toward the goal."""
        return ahead_on_arc(
            self.env.sim.data._data, self.joint, self._point(), self.sign * DOOR_LEAD
        )

    @property
    def released(self) -> bool:
        """The door was let go and the hand has risen for a few steps."""
        return self.finishing(RELEASED_AFTER)

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj]))

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.phase
        point = self._point()
        if phase == "above":
            goal = point + np.array([0.0, 0.0, CLEARANCE])
        elif phase in ("descend", "close"):
            goal = point
        elif phase == "pull":
            goal = self._aim()
        elif phase == "release":
            goal = eef
        else:
            goal = np.array([eef[0], eef[1], point[2] + CLEARANCE])
        error = goal - eef
        yaw = self.fingers.yaw_to(self._radial(point)) if phase != "retreat" else 0.0
        self.tick()
        if phase == "above":
            reached = np.linalg.norm(error) < REACHED and abs(yaw) < ON_LINE
        elif phase == "descend":
            reached = np.linalg.norm(error) < SEATED
        else:
            reached = phase == "pull" and (self.holds() or self._stalled())
        self.advance(reached)
        grip = 1.0 if phase in ("close", "pull") else -1.0
        return move(error, grip, yaw)

    def _stalled(self) -> bool:
        """No progress of the hinge over the last ``STALL_WINDOW`` steps."""
        if self.count % STALL_WINDOW:
            return False
        qpos = self._qpos()
        moved, self.progress = self.sign * (qpos - self.progress), qpos
        return moved < DOOR_PROGRESS
