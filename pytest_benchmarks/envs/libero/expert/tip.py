"""Into a covered space too low for the hand to slide an object in (a shelf's lower space, its
floor the table): the pick-and-place step's way to let go there.

Traced (libero_90/89: a book under the wooden two-layer shelf, whose lower space is 6.9 cm tall
and open only toward the robot): a book goes in lying flat, and ``slide``'s hand, pointing
in with its finger line upright, reaches 10 cm below the fingertips, into the table (0/6).
Dropped flat from where that hand clears the table, the book, held by its top edge, lands on its
far edge and stays standing. Tilted instead a little toward the opening, its far edge set down on
the table just before it and let go, it falls back flat, its length along the way in; the hand,
turned back to point down with its finger line across the way, comes down behind it and pushes it
in by its near edge, the fingertips low, until LIBERO's ``In`` holds (10/10).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    BEHIND,
    BEHIND_ABOVE,
    ON_LINE,
    PUSH_HEIGHT,
    PUSH_STOP,
    REACHED,
    RISE,
    ROUGHLY,
    TIP_ABOVE,
    TIP_BEHIND,
    TIP_BUDGET,
    TIP_DOWN,
    TIP_GAP,
    TIP_OUT,
    TIP_TILT,
)
from pytest_benchmarks.envs.libero.expert.motion import Box, GripSite
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine


class TipIn(PhaseMachine[str]):
    """The held object's way in, planned once it is held: tilt, set down, open, up, behind,
    down, push, out."""

    PHASES = ("tilt", "set", "open", "up", "behind", "down", "push", "out")
    BUDGET = TIP_BUDGET

    def __init__(
        self, grip: GripSite, opened: tuple[np.ndarray, float], region: Box, lift: float
    ) -> None:
        """``opened``: ``slide.opening``'s way in and floor; ``lift``: the fingertips'
        height to tilt at (at least)."""
        now = grip.orientation()
        self.way, self.floor = opened
        pointing = now.apply([0.0, 0.0, 1.0])
        axis = np.cross(pointing, self.way)
        self.tilted = Rotation.from_rotvec(axis / np.linalg.norm(axis) * TIP_TILT) * now
        self.upright = now
        # Pointing down, turned a quarter about the vertical: the finger line across the way.
        self.across = Rotation.from_rotvec([0.0, 0.0, np.pi / 2]) * now
        self.axis = int(np.argmax(np.abs(self.way)))
        sense = float(np.sign(self.way[self.axis]))
        self.entrance = region.low[self.axis] if sense > 0 else region.high[self.axis]
        self.side = region.centre  # the place across the way
        self.lift, self.let_go = lift, np.zeros(3)
        self.enter()

    def goal(
        self,
        eef: np.ndarray,
        box: Box,
        turn: Callable[[Rotation], float],
        holds: Callable[[], bool],
    ) -> tuple[np.ndarray, float, Rotation]:
        """The fingertips' goal, the gripper (1 closed, -1 open) and the hand's orientation this
        step, from the object's box now; advances the phase. ``turn(orientation)`` is how far
        (radians) the hand is from there; ``holds()``: whether LIBERO's ``In`` holds now (asked
        only while pushing)."""
        self.tick()
        a, sense = self.axis, float(np.sign(self.way[self.axis]))
        goal, grip, orientation, reached = eef.copy(), 1.0, self.tilted, False
        if self.phase == "tilt":
            goal[2] = max(eef[2], self.lift)
            reached = turn(orientation) < ON_LINE
        elif self.phase == "set":  # the far edge just before the region, just above the floor
            far = max(float((box.high - eef) @ self.way), float((box.low - eef) @ self.way))
            goal[a] = self.entrance - sense * (TIP_GAP + far)
            goal[1 - a] = self.side[1 - a]
            goal[2] = self.floor + TIP_ABOVE + float(eef[2] - box.low[2])
            reached = bool(np.linalg.norm(goal - eef) < REACHED)
        elif self.phase == "open":
            grip = -1.0
            self.let_go = eef.copy()
        elif self.phase == "up":
            goal, grip, orientation = self.let_go + np.array([0.0, 0.0, RISE]), -1.0, self.across
            reached = bool(np.linalg.norm(goal - eef) < ROUGHLY) and turn(orientation) < 2 * ON_LINE
        elif self.phase in ("behind", "down"):
            near = box.low[a] if sense > 0 else box.high[a]
            goal = box.centre.copy()
            goal[a] = near - sense * BEHIND
            goal[2] = self.floor + PUSH_HEIGHT + (BEHIND_ABOVE if self.phase == "behind" else 0.0)
            orientation = self.across
            close = TIP_BEHIND if self.phase == "behind" else TIP_DOWN
            reached = bool(np.linalg.norm(goal - eef) < close)
        elif self.phase == "push":
            goal[a] = self.entrance - sense * PUSH_STOP
            goal[2] = self.floor + PUSH_HEIGHT
            orientation = self.across
            reached = abs(goal[a] - eef[a]) < TIP_DOWN or holds()
        else:  # back out the way it came, and up
            goal = eef - self.way * TIP_OUT + [0.0, 0.0, TIP_OUT]
            orientation = self.upright
        self.advance(reached)
        return goal, grip, orientation
