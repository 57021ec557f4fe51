"""Grasps hemmed in. A rim grasp hemmed in by walls (a bowl standing in an open drawer): where
the open fingers of the usual rim grasp would meet a wall, the grasp goes round the rim to the
nearest place where the open gripper, its finger line through the rim's centre, meets nothing.
A handle hemmed in by what stands beside it (``along_the_handle``): the grasp slides along it;
so does a grasp across a narrow object (a flat box beside a tall carton).

Traced (libero_spatial/4): the black bowl stands in the wooden cabinet's top drawer, which is
turned 24 degrees off the world's axes, 2 cm from the drawer's front and 5-6 cm from its sides.
The usual grasp (finger line along world y, on the rim's far side) puts the outer finger on the
drawer's front, and the hand stops 1.5-3 cm above the rim; along the drawer's own cross axis the
fingers come down beside the bowl with room to spare.

The gripper is modelled as oriented boxes in its grip site's frame (x: the finger line, z: down
toward the fingertips), measured from the Panda's collision geoms with the fingers open; every
other body's collision geoms as their own oriented boxes. Overlap is the separating-axis test.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    FINGER,
    HAND,
    HANDLE_STEP,
    HANDLE_TURNS,
    REACH_IN,
    RIM_IN,
    RIM_RISE,
    RIM_STEP,
    UNDER_TILTS,
)
from pytest_benchmarks.envs.libero.expert.motion import collides


class Scene:
    """Oriented boxes: centres (n, 3), axes (n, 3, 3; a box's axes are its matrix's columns) and
    half-sizes (n, 3)."""

    def __init__(self, centres: np.ndarray, axes: np.ndarray, halves: np.ndarray) -> None:
        self.centres, self.axes, self.halves = centres, axes, halves

    @classmethod
    def of(cls, model: Any, data: Any, excluded: Collection[int]) -> Scene:
        """Every collision geom but the excluded bodies', as its own box (``geom_aabb``)."""
        geoms = [
            g
            for g in range(model.ngeom)
            if model.geom_bodyid[g] not in excluded and collides(model, g, affinity=True)
        ]
        axes = np.array([data.geom_xmat[g].reshape(3, 3) for g in geoms]).reshape(-1, 3, 3)
        local = np.array([model.geom_aabb[g] for g in geoms]).reshape(-1, 6)
        origins = np.array([data.geom_xpos[g] for g in geoms]).reshape(-1, 3)
        return cls(origins + np.einsum("gij,gj->gi", axes, local[:, :3]), axes, local[:, 3:])

    def above(self, height: float) -> Scene:
        """The boxes that reach above ``height`` (not the table an object stands on)."""
        tops = self.centres[:, 2] + np.einsum("gk,gk->g", np.abs(self.axes[:, 2, :]), self.halves)
        keep = tops > height
        return Scene(self.centres[keep], self.axes[keep], self.halves[keep])

    def meets(self, centre: np.ndarray, axes: np.ndarray, half: np.ndarray) -> bool:
        """Whether a box (centre, axes as columns, half-sizes) overlaps any of them."""
        if not len(self.halves):
            return False
        count = len(self.halves)
        mine = np.broadcast_to(axes.T, (count, 3, 3))  # rows: the box's axes
        theirs = np.swapaxes(self.axes, 1, 2)  # rows: each geom's axes
        crossed = np.cross(mine[:, :, None, :], theirs[:, None, :, :]).reshape(count, 9, 3)
        lines = np.concatenate([mine, theirs, crossed], axis=1)  # the 15 separating axes
        reach_mine = np.abs(lines @ axes) @ half
        reach_theirs = np.einsum("glk,gk->gl", np.abs(lines @ self.axes), self.halves)
        apart = np.abs(np.einsum("gld,gd->gl", lines, self.centres - centre))
        return bool((~np.any(apart > reach_mine + reach_theirs + 1e-9, axis=1)).any())


def site_frame(line: np.ndarray) -> np.ndarray:
    """The grip site's axes (columns) with the hand pointing straight down and its finger line
    along the horizontal ``line``."""
    x = np.array([line[0], line[1], 0.0]) / np.linalg.norm(line[:2])
    z = np.array([0.0, 0.0, -1.0])
    return np.stack([x, np.cross(z, x), z], axis=1)


def fingers_meet(
    scene: Scene, grasp: np.ndarray, line: np.ndarray, tilt: np.ndarray | None = None
) -> bool:
    """Whether the open fingers, about ``grasp`` along ``line``, meet a geom; ``tilt`` (a world
    rotation matrix) turns the hand from pointing straight down."""
    frame = site_frame(line) if tilt is None else tilt @ site_frame(line)
    centre, half = FINGER
    return any(
        scene.meets(grasp + frame @ (centre * [side, 1.0, 1.0]), frame, half) for side in (1, -1)
    )


def gripper_meets(
    scene: Scene, grasp: np.ndarray, line: np.ndarray, tilt: np.ndarray | None = None
) -> bool:
    """Whether the open gripper (fingers, hand, wrist) about ``grasp`` meets a geom; ``tilt``
    as in ``fingers_meet``."""
    frame = site_frame(line) if tilt is None else tilt @ site_frame(line)
    hand = scene.meets(grasp + frame @ HAND[0], frame, HAND[1])
    return hand or fingers_meet(scene, grasp, line, tilt)


def round_the_rim(
    scene: Scene, centre: np.ndarray, radius: float, height: float, line: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The finger line and grasp point on a rim (of ``radius`` about ``centre``, closed on at
    ``height``) nearest round from the one along ``line`` (pointing out from the centre) where
    the open gripper meets nothing, at ``height`` if anywhere, else ``RIM_RISE`` higher; None
    where the usual one's fingers are clear already, or no place is."""

    def at(angle: float, rise: float) -> tuple[np.ndarray, np.ndarray]:
        out = np.array([np.cos(angle), np.sin(angle), 0.0])
        point = np.array([*(centre[:2] + out[:2] * (radius - RIM_IN)), height + rise])
        return out, point

    start = float(np.arctan2(line[1], line[0]))
    if not fingers_meet(scene, at(start, 0.0)[1], line):
        return None
    steps = round(np.pi / RIM_STEP)
    turns = [sense * k * RIM_STEP for k in range(1, steps + 1) for sense in (1, -1)]
    for rise in (0.0, RIM_RISE):
        for turn in turns[:-1]:  # half a turn one way is half a turn the other
            out, point = at(start + turn, rise)
            if not gripper_meets(scene, point, out):
                return out, point
    return None


def along_the_handle(
    scene: Scene, centre: np.ndarray, half: float, line: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The finger line and grasp on a handle (a bar about ``centre``, reaching ``half`` metres
    either way across ``line``) nearest its middle where the open gripper meets nothing, square
    to it first, then turned by ``HANDLE_TURNS``; None where the gripper square at its middle
    meets nothing already, or no place is clear."""
    if not gripper_meets(scene, centre, line):
        return None
    along = np.array([-line[1], line[0], 0.0]) / np.linalg.norm(line[:2])
    steps = int((half - FINGER[1][1]) / HANDLE_STEP)
    offsets = sorted(range(-steps, steps + 1), key=abs)
    for turn in HANDLE_TURNS:
        c, s = np.cos(turn), np.sin(turn)
        turned = np.array([c * line[0] - s * line[1], s * line[0] + c * line[1], 0.0])
        for k in offsets:
            point = centre + along * k * HANDLE_STEP
            if not gripper_meets(scene, point, turned):
                return turned, point
    return None


def under_the_rim(
    scene: Scene,
    centre: np.ndarray,
    radius: float,
    height: float,
    line: np.ndarray,
    away: np.ndarray,
    over: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A rim grasp under what overhangs the object (a drawer pulled open over half a bowl):
    the hand tilted by one of ``UNDER_TILTS``, its fingertips toward ``away`` (a horizontal unit
    vector, from the arm's base) so that its wrist leans out from under, on the rim nearest
    round from the one along ``line``, where the open gripper meets nothing at the grasp, on
    its way in along its own axis from ``REACH_IN`` back, and straight above that up to
    ``over``. The finger line, the grasp and the tilt (a world rotation matrix); None where
    nothing is clear."""
    axis = np.cross([0.0, 0.0, -1.0], [away[0], away[1], 0.0])
    axis /= np.linalg.norm(axis)
    start = float(np.arctan2(line[1], line[0]))
    turns = [0.0] + [s * k * RIM_STEP for k in range(1, round(np.pi / RIM_STEP)) for s in (1, -1)]
    for angle in UNDER_TILTS:
        tilt = Rotation.from_rotvec(axis * angle).as_matrix()
        for turn in turns:
            out = np.array([np.cos(start + turn), np.sin(start + turn), 0.0])
            grasp = np.array([*(centre[:2] + out[:2] * (radius - RIM_IN)), height])
            pointing = (tilt @ site_frame(out))[:, 2]
            entry = grasp - pointing * REACH_IN
            way = [grasp - pointing * d for d in np.arange(0.0, REACH_IN + 1e-9, 0.01)]
            way += [entry + np.array([0.0, 0.0, h]) for h in np.arange(0.01, over - entry[2], 0.01)]
            if not any(gripper_meets(scene, point, out, tilt) for point in way):
                return out, grasp, tilt
    return None
