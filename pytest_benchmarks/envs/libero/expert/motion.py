"""What LIBERO's scripted experts share: world boxes of bodies, and position steps as actions.

The experts act in LIBERO's own action space (OSC_POSE deltas scaled to [-1, 1], gripper -1 open
/ +1 closed), moving the end effector toward a goal position with a proportional gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import GAIN, YAW_GAIN


def joint_goal(env: Any, obj: str, ranges: str) -> tuple[str, float]:
    """The joint an articulated object (or an object's region) moves by, and the middle of the
    range its object class declares under ``ranges`` (``default_open_ranges``, ...)."""
    holder = env.object_sites_dict.get(obj) or env.get_object(obj)
    parent = getattr(holder, "parent_name", None) or obj
    span = env.get_object(parent).object_properties["articulation"][ranges]
    return next(iter(holder.joints)), float(np.mean(span))


def move(error: np.ndarray, grip: float, yaw: float = 0.0) -> np.ndarray:
    """The 7-D action that moves the end effector by ``error`` (metres) and turns it by ``yaw``
    (radians, about the world z axis), gripper ``grip``."""
    action = np.zeros(7)
    action[:3] = np.clip(error * GAIN, -1.0, 1.0)
    action[5] = np.clip(yaw * YAW_GAIN, -1.0, 1.0)
    action[6] = grip
    return action


def turn_action(turn: np.ndarray) -> np.ndarray:
    """The OSC_POSE rotation action (3-D, in [-1, 1]) toward a turn given as a world rotation
    vector (``GripSite.turn_to``), at ``YAW_GAIN``."""
    return np.clip(turn * YAW_GAIN, -1.0, 1.0)


class FingerAxis:
    """The horizontal line the fingers close along: the world axis of the gripper's finger
    slide, read from the simulator each time (no assumption about the hand's current yaw)."""

    def __init__(self, env: Any) -> None:
        gripper = env.robots[0].gripper
        self._data = env.sim.data._data
        self._joint = env.sim.model.joint_name2id(gripper.joints[0])

    def direction(self) -> np.ndarray:
        """The finger line now, as a world vector with a sense."""
        return np.array(self._data.xaxis[self._joint])

    def yaw_to(self, axis: np.ndarray, directed: bool = False) -> float:
        """Radians about world z that bring the finger line onto ``axis``: the nearer sense of
        the line, or (``directed``) ``axis``'s own sense, which turns a hand back the way it
        came where the line is a quarter turn off and either sense would do."""
        now = self._data.xaxis[self._joint]
        angle = float(np.arctan2(now[0] * axis[1] - now[1] * axis[0], now[:2] @ axis[:2]))
        return angle if directed else (angle + np.pi / 2) % np.pi - np.pi / 2


class GripSite:
    """The gripper's grip site, between the fingertips (where ``robot0_eef_pos`` is read): its
    position and orientation read from the simulator each time, and the turn from it to another
    orientation."""

    def __init__(self, env: Any) -> None:
        self._data = env.sim.data._data
        self.id = env.sim.model.site_name2id(env.robots[0].gripper.important_sites["grip_site"])

    def position(self) -> np.ndarray:
        return np.array(self._data.site_xpos[self.id])

    def orientation(self) -> Rotation:
        return Rotation.from_matrix(self._data.site_xmat[self.id].reshape(3, 3))

    def turn_to(self, orientation: Rotation) -> np.ndarray:
        """The rotation vector (world frame, as OSC_POSE takes it) from the hand to there."""
        return (orientation * self.orientation().inv()).as_rotvec()


def region_extent(env: Any, region: str) -> tuple[np.ndarray, np.ndarray]:
    """A region's centre and half-size as LIBERO's ``SiteObject.in_box`` sizes it (what its
    ``In`` and ``On`` of a region read): the site's size turned by its orientation."""
    sim = env.sim
    site = sim.model.site_name2id(region)
    rotation = sim.data.site_xmat[site].reshape(3, 3)
    return np.array(sim.data.site_xpos[site]), np.abs(rotation @ sim.model._model.site_size[site])


def region_box(env: Any, region: str) -> Box:
    """A region's box, as ``region_extent``."""
    centre, half = region_extent(env, region)
    return Box(centre - half, centre + half)


@dataclass
class Box:
    """An axis-aligned world bounding box."""

    low: np.ndarray
    high: np.ndarray

    @property
    def centre(self) -> np.ndarray:
        return (self.low + self.high) / 2

    @property
    def size(self) -> np.ndarray:
        return self.high - self.low


def collides(model: Any, geom: int, affinity: bool = False) -> bool:
    """Whether a geom has a collision type (or, with ``affinity``, collides by affinity only,
    as the articulated objects' collision meshes do); visual geoms have neither."""
    return bool(model.geom_contype[geom]) or (affinity and bool(model.geom_conaffinity[geom]))


def geom_box(model: Any, data: Any, geom: int) -> Box:
    """The world AABB of one geom."""
    rotation = data.geom_xmat[geom].reshape(3, 3)
    centre = data.geom_xpos[geom] + rotation @ model.geom_aabb[geom][:3]
    half = np.abs(rotation) @ model.geom_aabb[geom][3:]
    return Box(centre - half, centre + half)


def geom_boxes(model: Any, data: Any, bodies: set[int], affinity: bool = False) -> list[Box]:
    """The world AABBs of the collision geoms of ``bodies`` (``affinity`` as in ``collides``)."""
    return [
        geom_box(model, data, g)
        for g in range(model.ngeom)
        if model.geom_bodyid[g] in bodies and collides(model, g, affinity)
    ]


def ahead_on_arc(data: Any, joint: int, point: np.ndarray, lead: float) -> np.ndarray:
    """``point`` turned ``lead`` metres along its arc about a hinge (negative: the other way),
    by Rodrigues' rotation about the joint's world axis."""
    anchor, axis = np.array(data.xanchor[joint]), np.array(data.xaxis[joint])
    offset = point - anchor
    radius = float(np.linalg.norm(offset - (offset @ axis) * axis))
    angle = np.sign(lead) * min(abs(lead) / max(radius, 1e-3), 1.0)
    rotated = (offset * np.cos(angle) + np.cross(axis, offset) * np.sin(angle)
               + axis * (axis @ offset) * (1 - np.cos(angle)))  # fmt: skip
    return anchor + rotated


def body_box(sim: Any, body_id: int, affinity: bool = False) -> Box:
    """The world AABB of a body's collision geoms (and its children's); ``affinity`` as in
    ``collides``."""
    model, data = sim.model._model, sim.data._data
    boxes = geom_boxes(model, data, body_tree(model, body_id), affinity)
    if not boxes:
        position = np.array(data.xpos[body_id])
        return Box(position - 0.02, position + 0.02)
    return Box(np.min([b.low for b in boxes], axis=0), np.max([b.high for b in boxes], axis=0))


def local_box(model: Any, data: Any, body_id: int) -> Box:
    """The box of a body's collision geoms (and its children's) in the body's own frame: its
    extents along its own axes, which an axis-aligned world box overstates for a turned body (a
    book standing at a slant)."""
    rotation, origin = data.xmat[body_id].reshape(3, 3), data.xpos[body_id]
    bodies, corners = body_tree(model, body_id), []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] in bodies and collides(model, g, True):
            centre, half = model.geom_aabb[g][:3], model.geom_aabb[g][3:]
            signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
            world = data.geom_xpos[g] + (centre + signs * half) @ data.geom_xmat[g].reshape(3, 3).T
            corners.append((world - origin) @ rotation)
    if not corners:
        return Box(np.full(3, -0.02), np.full(3, 0.02))
    points = np.concatenate(corners)
    return Box(points.min(axis=0), points.max(axis=0))


def body_tree(model: Any, body_id: int) -> set[int]:
    """A body and every body below it."""
    return {body_id} | {b for b in range(model.nbody) if _ancestor(model, b, body_id)}


def _ancestor(model: Any, body: int, ancestor: int) -> bool:
    while body > 0:
        body = model.body_parentid[body]
        if body == ancestor:
            return True
    return False
