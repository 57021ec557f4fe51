"""A scripted drag that opens a LIBERO drawer whose handle stands too low to be taken.

libero_90/6's bottom drawer: its handle, a bar 1.6 cm square standing 1.6 cm off the drawer's
front, is 4.6 cm above the table and 5.3 cm below the middle drawer's. The hand turned upright to
straddle it (``pull``) reaches 10 cm below its finger line's centre, into the
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

from pytest_benchmarks.envs.libero.expert.constants import (
    CLEARANCE,
    DRAG_ABOVE,
    DRAG_BUDGET,
    DRAG_FRONT,
    DRAG_LEAD,
    DRAG_PRESS,
    DRAG_TILT,
    FINGERTIPS_BELOW,
    HAND,
    REACHED,
    RELEASED_AFTER,
    ROUGHLY,
    TURN_HOME_STEPS,
    TURNED,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    FingerAxis,
    GripSite,
    body_box,
    joint_goal,
    move,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine
from pytest_benchmarks.envs.libero.expert.pull import handle_box, opening


def handle_too_low(env: Any, region: str) -> bool:
    """Whether the hand turned upright about a drawer's handle would reach below what its
    cabinet stands on: half the hand's length along its finger line below the handle's centre."""
    model, data = env.sim.model._model, env.sim.data._data
    joint, out, _ = opening(env, region)
    body = int(model.jnt_bodyid[joint])
    handle = handle_box(model, data, body, out)
    cabinet = body_box(env.sim, int(model.body_rootid[body]), affinity=True)
    return bool(handle.centre[2] - HAND[1][0] < cabinet.low[2])


class HandleDragExpert(PhaseMachine[str]):
    """Drags one drawer open by its handle's top; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("rise", "front", "down", "in", "press", "drag", "retreat")
    BUDGET = DRAG_BUDGET

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
            Rotation.from_rotvec(along * DRAG_TILT)
            * Rotation.from_rotvec([0.0, 0.0, yaw])
            * self.home
        )
        self.enter()
        if self.holds():  # already open: nothing to drag
            self.enter("retreat", TURN_HOME_STEPS + 1)

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
        if not self.finishing(RELEASED_AFTER):
            return False
        turned = float(np.linalg.norm(self.grip.turn_to(self.home))) < TURNED
        return turned or self.count > TURN_HOME_STEPS

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.phase
        top = self._top()
        level = np.array([0.0, 0.0, FINGERTIPS_BELOW + DRAG_ABOVE])
        front = top + DRAG_FRONT * self.out
        orientation = self.turned
        goal = {
            "rise": np.array([eef[0], eef[1], max(eef[2], top[2] + CLEARANCE)]),
            "front": front + np.array([0.0, 0.0, CLEARANCE]),
            "down": front + level,
            "in": top + level,
            "press": top + np.array([0.0, 0.0, FINGERTIPS_BELOW - DRAG_PRESS]),
            "drag": top
            + DRAG_LEAD * self.out
            + np.array([0.0, 0.0, FINGERTIPS_BELOW - DRAG_PRESS]),
            "retreat": np.array([eef[0], eef[1], top[2] + CLEARANCE]),
        }[phase]
        if phase == "retreat":
            orientation = self.home
        error = goal - eef
        turn = self.grip.turn_to(orientation)
        self.tick()
        turned = float(np.linalg.norm(turn)) < TURNED
        self.advance(
            {
                "rise": abs(error[2]) < ROUGHLY and turned,
                "front": np.linalg.norm(error) < ROUGHLY and turned,
                "down": np.linalg.norm(error) < REACHED,
                "in": np.linalg.norm(error) < REACHED,
                "press": False,
                "drag": self.holds(),
                "retreat": False,
            }[phase]
        )
        action = move(error, 1.0 if phase != "retreat" else -1.0)
        action[3:6] = turn_action(turn)
        return action
