"""Into a space covered from above and open on one side only (a shelf's upper space, a microwave
through its open door): the pick-and-place step's way to let go there.

Traced (libero_90/86, /88): the wooden two-layer shelf's upper space is 13.5 cm tall, under the
shelf's top, open only toward the robot's side. Lowered from above, a book meets the top. Held
with the hand pointing through the opening and its finger line upright, the book lies flat,
ahead of the fingertips: it is carried before the opening, at the height that keeps its lowest
point just above the space's floor, and pushed straight in until LIBERO's ``In`` (the object's
origin inside the region's box) holds, then let go, and the hand backs out the way it came.

Traced (libero_90/40, /42: a frying pan onto the shelf's upper floor, under its middle board):
held by its handle and turned so, the pan stands on its edge, catches on the shelf and tips
(0/3). An object held by its handle, its origin ahead of the fingertips along the way in, goes
in as it hangs instead: the hand pointing down stays before the opening, the handle in the
fingers, the body ahead of them and its lowest point just above the floor.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    COVER,
    ON_LINE,
    REACHED,
    SLIDE_BUDGET,
    SLIDE_GAP,
    SLIDE_LIFT,
    WALL_REACH,
)
from pytest_benchmarks.envs.libero.expert.motion import Box, GripSite
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine

#: The ways in to look for: the four horizontal world axes.
WAYS = tuple(sense * axis for axis in np.eye(3)[:2] for sense in (1.0, -1.0))


def opening(region: Box, parts: list[Box]) -> tuple[np.ndarray, float] | None:
    """The way into a region that is covered (a part lies above its centre, within ``COVER`` of
    the floor under it: nothing goes in from above) and open along one horizontal axis (no part
    on that side of the centre across the space's height, among the parts within ``WALL_REACH``
    of it), as that axis pointing in, and the floor's height; None where the region is uncovered
    or closed all round."""
    centre = region.centre
    under = [p for p in parts if _over(p, centre) and p.high[2] <= centre[2]]
    above = [p for p in parts if _over(p, centre) and p.low[2] >= centre[2]]
    if not under or not above:
        return None
    floor, ceiling = max(p.high[2] for p in under), min(p.low[2] for p in above)
    if ceiling > floor + COVER:
        return None
    near = [
        p
        for p in parts
        if np.all(p.low[:2] < region.high[:2] + WALL_REACH)
        and np.all(p.high[:2] > region.low[:2] - WALL_REACH)
    ]
    for way in WAYS:
        axis = int(np.argmax(np.abs(way)))
        across = 1 - axis
        blocked = any(
            (p.centre[axis] - centre[axis]) * way[axis] < 0  # on the side the object comes from
            and p.low[across] <= centre[across] <= p.high[across]
            and p.low[2] < ceiling
            and p.high[2] > floor
            for p in near
        )
        if not blocked:
            return way, floor
    return None


def _over(part: Box, point: np.ndarray) -> bool:
    return bool(np.all(part.low[:2] <= point[:2]) and np.all(part.high[:2] >= point[:2]))


class SlideIn(PhaseMachine[str]):
    """The held object's way in, planned once it is held (the hand's hold on it is then known):
    turn, before the opening, in, open, out."""

    PHASES = ("turn", "front", "in", "open", "out")
    BUDGET = SLIDE_BUDGET

    def __init__(
        self,
        grip: GripSite,
        line: np.ndarray,
        opened: tuple[np.ndarray, float],
        region: Box,
        box: Box,
        origin: np.ndarray,
        as_held: bool = False,
    ) -> None:
        """``line``: the finger line now; ``opened``: ``opening``'s way in and floor; ``box``
        and ``origin``: the held object's world box and origin now; ``as_held``: the object goes
        in as the hand holds it now, unturned (one held by its handle, its body ahead)."""
        now = grip.orientation()
        pointing = now.apply([0.0, 0.0, 1.0])
        way, floor = opened
        turns = [
            Rotation.align_vectors([way, [0.0, 0.0, sense]], [pointing, line])[0]
            for sense in (1.0, -1.0)
        ]
        turn = Rotation.identity() if as_held else min(turns, key=lambda r: r.magnitude())
        self.orientation = turn * now
        held = grip.position()
        corners = np.array(np.meshgrid(*zip(box.low, box.high, strict=True))).reshape(3, -1).T
        ahead = turn.apply(corners - held)  # the object's corners from the fingertips, turned
        from_origin = turn.apply(origin - held)
        height = floor + SLIDE_LIFT - ahead[:, 2].min()
        self.inside = region.centre - from_origin
        self.inside[2] = height
        axis = int(np.argmax(np.abs(way)))
        entrance = region.low[axis] if way[axis] > 0 else region.high[axis]
        depth = float((ahead @ way).max())
        self.front = self.inside.copy()
        self.front[axis] = entrance - way[axis] * (SLIDE_GAP + depth)
        self.enter()

    def goal(self, eef: np.ndarray, turn_left: float, clearance: float) -> tuple[np.ndarray, float]:
        """The fingertips' goal and the gripper (1 closed, -1 open) this step; advances the
        phase. ``turn_left`` is how far (radians) the hand is from ``orientation``."""
        self.tick()
        goal, grip, reached = eef, 1.0, False
        high = self.front[2] + clearance
        if self.phase == "turn":  # turned where it was lifted, at least ``clearance`` high
            goal = np.array([eef[0], eef[1], max(eef[2], high)])
            reached = turn_left < ON_LINE
        elif self.phase in ("front", "in"):
            goal = self.front if self.phase == "front" else self.inside
            reached = bool(np.linalg.norm(goal - eef) < REACHED)
        elif self.phase == "open":
            grip = -1.0
        else:  # out the way it came, open
            goal, grip = self.front, -1.0
        self.advance(reached)
        return goal, grip
