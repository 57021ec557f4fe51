"""A scripted pull that opens a LIBERO cabinet drawer by its handle.

A drawer's handle is a bar across its front, standing about 2 cm off it: too close for a finger
to pass behind it from above. So the hand is turned to point horizontally into the drawer, its
finger line vertical (first turned about z so that the fingers close along the slide, then a
quarter about the horizontal axis across it), the open fingers straddle the bar above and below,
close on it, and pull along the slide until LIBERO's ``Open`` predicate holds; then the hand lets
go, backs off, rises and turns back to where it pointed before. The handle is the moving body's
collision geom that stands farthest out along the opening direction; the pulled point follows
the drawer as it slides. A hinged door (the microwave's) is swung open by ``door``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    CLEARANCE,
    GAIN,
    PULL_BACK_OFF,
    PULL_BEYOND,
    PULL_BUDGET,
    PULL_STANDOFF,
    REACHED,
    RELEASED_AFTER,
    ROUGHLY,
    SEATED,
    SLIDE_JOINT,
    TURN_HOME_STEPS,
    TURNED,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    Box,
    FingerAxis,
    GripSite,
    body_box,
    geom_boxes,
    joint_goal,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine


def opening(env: Any, region: str) -> tuple[int, np.ndarray, float]:
    """A drawer's slide joint, the direction its front moves in as it opens (a world unit
    vector), and how far it moves to the middle of its open range (metres)."""
    sim = env.sim
    model, data = sim.model._model, sim.data._data
    name, goal = joint_goal(env, region, "default_open_ranges")
    joint = sim.model.joint_name2id(name)
    qpos = float(data.qpos[model.jnt_qposadr[joint]])
    sign = 1.0 if goal > qpos else -1.0
    return joint, sign * np.array(data.xaxis[joint]), abs(goal - qpos)


def handle_box(model: Any, data: Any, body: int, out: np.ndarray) -> Box:
    """A drawer's handle: its collision geom that stands farthest out along ``out``."""
    boxes = geom_boxes(model, data, {body}, affinity=True)
    if not boxes:
        raise ValueError(f"{model.body(body).name}: the drawer has no collision geoms to take")
    reach = [float(np.maximum(b.low * out, b.high * out).sum()) for b in boxes]
    return boxes[int(np.argmax(reach))]


def opened_box(env: Any, region: str) -> tuple[Box, np.ndarray]:
    """Where a drawer's box will stand once pulled open to the middle of its open range, and
    the direction it opens in (a world unit vector)."""
    joint, out, travel = opening(env, region)
    box = body_box(env.sim, int(env.sim.model._model.jnt_bodyid[joint]), affinity=True)
    return Box(box.low + travel * out, box.high + travel * out), out


class HandlePullExpert(PhaseMachine[str]):
    """Pulls one drawer open by its handle; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("rise", "over", "line_up", "reach", "close", "pull", "release", "back", "retreat")
    BUDGET = PULL_BUDGET

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj = goal
        joint_goal(env, self.obj, "default_open_ranges")  # a region with no joint fails here

    def reset(self) -> None:
        sim = self.env.sim
        model, data = sim.model._model, sim.data._data
        self.joint, self.out, self.travel = opening(self.env, self.obj)
        if int(model.jnt_type[self.joint]) != SLIDE_JOINT:
            raise ValueError(f"{self.obj}: only drawers (slide joints) are pulled open")
        self.body = int(model.jnt_bodyid[self.joint])
        handle = handle_box(model, data, self.body, self.out).centre
        rotation = data.xmat[self.body].reshape(3, 3)
        self.local = rotation.T @ (handle - data.xpos[self.body])
        # Fingers closing along the slide, then the hand pitched a quarter about the line across
        # it: it points into the drawer and the finger line stands vertical.
        self.grip = GripSite(self.env)
        self.home = self.grip.orientation()
        yaw = FingerAxis(self.env).yaw_to(self.out)
        across = np.cross([0.0, 0.0, 1.0], self.out)
        self.turned = (
            Rotation.from_rotvec(across / np.linalg.norm(across) * np.pi / 2)
            * Rotation.from_rotvec([0.0, 0.0, yaw])
            * self.home
        )
        self.pulled_from = handle
        self.enter()
        if self.holds():  # already open: nothing to pull, released at once
            self.enter("retreat", TURN_HOME_STEPS + 1)

    def _point(self) -> np.ndarray:
        data = self.env.sim.data._data
        return data.xpos[self.body] + data.xmat[self.body].reshape(3, 3) @ self.local

    def _qpos(self) -> float:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        return float(data.qpos[model.jnt_qposadr[self.joint]])

    @property
    def released(self) -> bool:
        """The drawer was let go, and the hand has risen and turned back to where it pointed
        before (or has tried to for 40 steps)."""
        if not self.finishing(RELEASED_AFTER):
            return False
        return self._off(self.home) < TURNED or self.count > TURN_HOME_STEPS

    def _off(self, orientation: Rotation) -> float:
        return float(np.linalg.norm(self.grip.turn_to(orientation)))

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj]))

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.phase
        handle = self._point()
        line_up = handle + PULL_STANDOFF * self.out
        orientation = self.home
        grip = 1.0 if phase in ("close", "pull") else -1.0
        above = line_up + np.array([0.0, 0.0, CLEARANCE])
        if phase == "rise":
            goal = np.array([eef[0], eef[1], max(eef[2], above[2])])
            orientation = self.turned
        elif phase == "over":  # the turned hand reaches half its length below its centre
            goal, orientation = above, self.turned
        elif phase == "line_up":
            goal, orientation = line_up, self.turned
        elif phase in ("reach", "close"):
            goal, orientation = handle, self.turned
        elif phase == "pull":
            goal, orientation = (
                self.pulled_from + (self.travel + PULL_BEYOND) * self.out,
                self.turned,
            )
        elif phase == "release":
            goal, orientation = eef, self.turned
        elif phase == "back":
            goal, orientation = self.pulled_from + PULL_BACK_OFF * self.out, self.turned
        else:
            goal = np.array([eef[0], eef[1], self.pulled_from[2] + CLEARANCE])
        error = goal - eef
        turn = self.grip.turn_to(orientation)
        self.tick()
        turned = float(np.linalg.norm(turn)) < TURNED
        reached = {
            "rise": abs(error[2]) < ROUGHLY and turned,
            "over": np.linalg.norm(error) < ROUGHLY and turned,
            "line_up": np.linalg.norm(error) < REACHED and turned,
            "reach": np.linalg.norm(error) < SEATED,
            "pull": self.holds(),
            "back": np.linalg.norm(error) < REACHED,
        }.get(phase, False)
        if self.advance(reached) and phase in ("close", "release"):
            self.pulled_from = handle if phase == "close" else eef.copy()
        action = np.zeros(7)
        action[:3] = np.clip(error * GAIN, -1.0, 1.0)
        action[3:6] = turn_action(turn)
        action[6] = grip
        return action
