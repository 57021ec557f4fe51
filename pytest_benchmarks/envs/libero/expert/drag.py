"""A scripted drag that opens a LIBERO drawer whose handle stands too low to be taken.

libero_90/6's bottom drawer: its handle, a bar 1.6 cm square standing 1.6 cm off the drawer's
front, is 4.6 cm above the table and 5.3 cm below the middle drawer's. The hand turned upright to
straddle it (``libero_pull_expert``) reaches 10 cm below its finger line's centre, into the
table; a fingertip (1.4 cm thick along the finger line at its last centimetre, 2.1 cm across it)
does not go into the 1.6 cm gap behind the bar. So the closed fingers press down on the bar's top
and drag it out by friction. The finger line lies along the bar, the hand tilted so that the
fingertips point into the drawer and the wrist leans out: straight down, the fingers' roots would
meet the handle above. The hand comes down in front of the drawer to the bar's height, goes in
over the bar, presses, and aims ahead of the bar along the slide (re-aimed every step from where
the bar is) until LIBERO's ``Open`` predicate holds; then it rises and turns back.

Traced (libero_90/6, episode 0): pressed 5 cm below the bar's top and aimed 1-2 cm ahead, the
fingers hold still on the bar and the drawer does not move; pressed 2 cm and aimed 5-6 cm ahead,
the drawer is open (14 cm) 25 steps after the drag starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.hand import HAND
from pytest_benchmarks.envs.libero.expert.motion import (
    CLEARANCE,
    FingerAxis,
    GripSite,
    body_box,
    joint_goal,
    move,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.pull import handle_box, opening

TILT = np.radians(40.0)  # the hand's tilt from pointing straight down, fingertips inward
FRONT = 0.08  # metres out from the bar where the hand comes down to its height
TIP = 0.012  # metres the closed fingertips reach below the grip site
ABOVE = 0.01  # metres over the bar's top the fingertips go in
PRESS = 0.02  # metres below the bar's top the pressing hand aims
LEAD = 0.05  # metres ahead of the bar along the slide the drag aims
TURNED = 0.05  # radians of orientation error that still count as turned


def handle_too_low(env: Any, region: str) -> bool:
    """Whether the hand turned upright about a drawer's handle would reach below what its
    cabinet stands on: half the hand's length along its finger line below the handle's centre."""
    model, data = env.sim.model._model, env.sim.data._data
    joint, out, _ = opening(env, region)
    body = int(model.jnt_bodyid[joint])
    handle = handle_box(model, data, body, out)
    cabinet = body_box(env.sim, int(model.body_rootid[body]), affinity=True)
    return bool(handle.centre[2] - HAND[1][0] < cabinet.low[2])


class HandleDragExpert:
    """Drags one drawer open by its handle's top; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("rise", "front", "down", "in", "press", "drag", "retreat")

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj = goal
        joint_goal(env, self.obj, "default_open_ranges")  # a region with no joint fails here

    def reset(self) -> None:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        joint, self.out, _ = opening(self.env, self.obj)
        self.body = int(model.jnt_bodyid[joint])
        handle = handle_box(model, data, self.body, self.out)
        top = np.array([*handle.centre[:2], handle.high[2]])
        rotation = data.xmat[self.body].reshape(3, 3)
        self.local = rotation.T @ (top - data.xpos[self.body])
        self.grip = GripSite(self.env)
        self.home = self.grip.orientation()
        along = np.cross([0.0, 0.0, 1.0], self.out)  # the bar's own line
        along /= np.linalg.norm(along)
        yaw = FingerAxis(self.env).yaw_to(along)
        self.turned = (
            Rotation.from_rotvec(along * TILT) * Rotation.from_rotvec([0.0, 0.0, yaw]) * self.home
        )
        self.phase, self.count = 0, 0
        if self.holds():  # already open: nothing to drag
            self.phase, self.count = len(self.PHASES) - 1, 41

    def _top(self) -> np.ndarray:
        """The middle of the bar's top, where the drawer is now."""
        data = self.env.sim.data._data
        return data.xpos[self.body] + data.xmat[self.body].reshape(3, 3) @ self.local

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj]))

    @property
    def released(self) -> bool:
        """The hand has risen off the bar and turned back to where it pointed before (or has
        tried to for 40 steps)."""
        if self.PHASES[min(self.phase, len(self.PHASES) - 1)] != "retreat" or self.count <= 5:
            return False
        return float(np.linalg.norm(self.grip.turn_to(self.home))) < TURNED or self.count > 40

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.PHASES[min(self.phase, len(self.PHASES) - 1)]
        top = self._top()
        level = np.array([0.0, 0.0, TIP + ABOVE])
        front = top + FRONT * self.out
        orientation = self.turned
        goal = {
            "rise": np.array([eef[0], eef[1], max(eef[2], top[2] + CLEARANCE)]),
            "front": front + np.array([0.0, 0.0, CLEARANCE]),
            "down": front + level,
            "in": top + level,
            "press": top + np.array([0.0, 0.0, TIP - PRESS]),
            "drag": top + LEAD * self.out + np.array([0.0, 0.0, TIP - PRESS]),
            "retreat": np.array([eef[0], eef[1], top[2] + CLEARANCE]),
        }[phase]
        if phase == "retreat":
            orientation = self.home
        error = goal - eef
        turn = self.grip.turn_to(orientation)
        self.count += 1
        turned = float(np.linalg.norm(turn)) < TURNED
        done = {
            "rise": (abs(error[2]) < 0.02 and turned) or self.count > 40,
            "front": (np.linalg.norm(error) < 0.02 and turned) or self.count > 60,
            "down": np.linalg.norm(error) < 0.01 or self.count > 40,
            "in": np.linalg.norm(error) < 0.01 or self.count > 40,
            "press": self.count > 15,
            "drag": self.holds() or self.count > 100,
            "retreat": False,
        }[phase]
        if done:
            self.phase, self.count = self.phase + 1, 0
        action = move(error, 1.0 if phase != "retreat" else -1.0)
        action[3:6] = turn_action(turn)
        return action
