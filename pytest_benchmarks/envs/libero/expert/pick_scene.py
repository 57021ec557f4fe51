"""What stands where around a pick-and-place step of LIBERO's scripted expert, read from the
simulator: the other bodies as boxes, what stands over or beside the object and along its way,
the target's box and region, the place beside what already stands on it."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_benchmarks.envs.libero.expert.constants import (
    BESIDE_REACH,
    CLEARANCE,
    FINGER_END,
    GRASP_ABOVE,
    GRASP_BELOW,
    GRIPPER_SPAN,
    HAND_BOTTOM,
    HAND_HALF_LENGTH,
    HAND_HALF_WIDTH,
    HAND_HEIGHT,
    HAND_SIDE,
    HAND_TOP,
    HANDLE_OUT,
    HANDLE_WIDTH,
    OPEN_REACH,
    OVER,
    REGION_MARGIN,
    RIM_BELOW,
    RIM_IN,
    SHARED_GAP,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    Box,
    body_box,
    body_tree,
    collides,
    geom_box,
    geom_boxes,
    region_extent,
)
from pytest_benchmarks.envs.libero.expert.rim import Scene

CONTAIN = "_contain_region"  # a region objects are put into (a basket's, a caddy slot's)
#: Objects taken by their handle: wider than the open fingers every way, and with no rim to
#: take (the moka pot's lid is shut; the pan's rim is as low as its handle, a long lever away).
#: A mug's rim is taken as a bowl's. A handle is at most this wide across
#: the fingers, and stands this far beyond the body.
BY_HANDLE = ("moka_pot", "frypan")
ROBOT_PARTS = ("robot0_", "gripper0_", "mount0_")


def _overlap(part: Box, box: Box, margin: float = 0.0) -> bool:
    """Whether two boxes overlap horizontally, with ``margin`` to spare."""
    return bool(
        np.all(part.low[:2] < box.high[:2] + margin)
        and np.all(part.high[:2] > box.low[:2] - margin)
    )


class PickScene:
    """The scene queries of a pick-and-place step; ``PickPlanner`` and the executor build on it.

    The step's state that the queries read, set by the executor and the plan:
    """

    env: Any  # LIBERO's problem env (ControlEnv.env)
    kind: str  # "on" or "in"
    obj: str
    target: str
    by_handle: bool
    compartment: bool
    excluded: set[int]  # the robot's and the object's bodies
    grasp: np.ndarray
    shift: np.ndarray
    below_grasp: float
    base: np.ndarray  # the object's bottom face's centre, in its frame
    leaving: list[list[Box]]
    after: str | None  # the target of the step before, in a plan

    @staticmethod
    def _grasp_point(box: Box, across: int) -> np.ndarray:
        """Where the fingertips close on the object, closing along axis ``across`` (0: x, 1: y):
        across its centre, or on its rim (one finger inside, one outside) when it is wider
        than the open fingers."""
        grasp = box.centre.copy()
        if box.size[across] > GRIPPER_SPAN:
            # The rim on the far side along y (as always); along x the side nearer the robot.
            grasp[across] = box.high[1] - RIM_IN if across else box.low[0] + RIM_IN
            grasp[2] = box.high[2] - RIM_BELOW
        else:
            grasp[2] = max(
                box.high[2] - GRASP_BELOW, box.low[2] + min(GRASP_ABOVE, box.size[2] / 2)
            )
        return grasp

    def scene(self) -> Scene:
        """Every body but the robot and the object, as oriented boxes."""
        sim = self.env.sim
        return Scene.of(sim.model._model, sim.data._data, self.excluded)

    def _robot(self) -> set[int]:
        """The robot's bodies (arm, hand, mount), worked out once per reset."""
        sim = self.env.sim
        return {
            body
            for body in range(sim.model._model.nbody)
            if (sim.model.body_id2name(body) or "").startswith(ROBOT_PARTS)
        }

    def _from_base(self) -> np.ndarray:
        """The horizontal vector from the arm's base to the grasp."""
        return np.array(self.grasp[:2] - self._base())

    def _base(self) -> np.ndarray:
        """Where the arm's base stands, horizontally."""
        sim = self.env.sim
        root = sim.model.body_name2id(self.env.robots[0].robot_model.root_body)
        return np.array(sim.data.body_xpos[root][:2])

    def _bodies(self) -> dict[int, list[Box]]:
        """The world boxes of the collision geoms of every body but the robot and the object."""
        sim = self.env.sim
        model, data = sim.model._model, sim.data._data
        excluded = self.excluded
        bodies: dict[int, list[Box]] = {}
        for geom in range(model.ngeom):
            body = int(model.geom_bodyid[geom])
            if body not in excluded and collides(model, geom, affinity=True):
                bodies.setdefault(body, []).append(geom_box(model, data, geom))
        return bodies

    def _handle(self) -> Box | None:
        """The object's handle: its part that stands out farthest from its centre of mass, thin
        across one horizontal axis (the fingers close across it) and at least 1.5 cm tall, and
        at least 3 cm farther out than any of its thick parts (its body); None where no thin
        part stands out so. (A bowl's rim segments pass this too: which objects are taken by
        the handle is ``BY_HANDLE``'s choice, not this test's.)"""
        sim = self.env.sim
        model, data = sim.model._model, sim.data._data
        body = self.env.obj_body_id[self.obj]
        centre = np.array(data.xipos[body][:2])
        parts = geom_boxes(model, data, body_tree(model, body), affinity=True)
        thin = [p for p in parts if min(p.size[:2]) <= HANDLE_WIDTH and p.size[2] >= 0.015]
        thick = [p for p in parts if min(p.size[:2]) > HANDLE_WIDTH]
        if not thin or not thick:
            return None
        out = {id(p): float(np.linalg.norm(p.centre[:2] - centre)) for p in parts}
        handle = max(thin, key=lambda p: out[id(p)])
        body_reach = max(out[id(p)] for p in thick)
        return handle if out[id(handle)] > body_reach + HANDLE_OUT else None

    def _drawer_place(
        self, box: Box, bodies: dict[int, list[Box]], across: int, taken: int | None = None
    ) -> np.ndarray | None:
        """How far out along the drawer (toward its open end) the object goes so that the hand,
        holding it as it takes it closing along ``across``, meets no body standing above it once
        lowered in (the white cabinet's face and the handle above its open bottom drawer): none
        where its usual place is clear, the least that clears it while the object's origin stays
        ``REGION_MARGIN`` inside the drawer's region; None where nothing does. ``taken``: the
        axis it was taken closing along, where the hand turns a quarter on its way (the grasp
        point is that axis's)."""
        sim = self.env.sim
        data = sim.data._data
        target, _ = self._target()
        half = box.size[:2] / 2
        low = np.array([*(target.centre[:2] - half), target.high[2]])
        standing = Box(low, low + box.size)
        overhead = self._overhead(standing, bodies)
        at = target.centre + self._grasp_point(box, across if taken is None else taken) - box.centre
        site = self.env.object_sites_dict[self.target]
        joint = sim.model.joint_name2id(next(iter(site.joints)))
        axis = np.array(data.xaxis[joint][:2])
        parent = data.xpos[self.env.obj_body_id[site.parent_name]][:2]
        out = axis * np.sign(axis @ (target.centre[:2] - parent))  # away from the cabinet
        centre, half = region_extent(self.env, self.target)
        room = half[:2] - REGION_MARGIN
        origin = data.xpos[self.env.obj_body_id[self.obj]][:2] - box.centre[:2] + target.centre[:2]
        for step in np.arange(0.0, 2 * float(np.abs(room).max()), 0.005):
            shift = step * out
            if np.any(np.abs(origin + shift - centre[:2]) > room) and step:
                return None
            if not self._hits(overhead, at + np.array([*shift, 0.0]), across):
                return shift
        return None

    @staticmethod
    def _overhead(box: Box, bodies: dict[int, list[Box]]) -> list[Box]:
        """The parts of bodies that stand wholly above the object's top, within the hand's
        height (a cabinet's top; not the upper part of a tall object beside it)."""
        return [
            part
            for parts in bodies.values()
            if box.high[2] < min(p.low[2] for p in parts) < box.high[2] + HAND_HEIGHT
            for part in parts
        ]

    def _over_beside(self, bodies: dict[int, list[Box]], overhead: list[Box]) -> float:
        """The height the hand comes in at over what stands up beside the grasp (a tall carton
        beside a flat box): the highest top within ``BESIDE_REACH`` of it plus ``OVER``, of the
        bodies standing there from below the grasp, counting their parts below anything overhead
        (a cabinet's walls under its top do not raise it); -inf where there are none."""
        ceiling = min((part.low[2] for part in overhead), default=np.inf)
        low, high = self.grasp[:2] - BESIDE_REACH, self.grasp[:2] + BESIDE_REACH
        tops = []
        for parts in bodies.values():
            near = [
                part
                for part in parts
                if part.high[2] < ceiling
                and np.all(part.low[:2] < high)
                and np.all(part.high[:2] > low)
            ]
            if near and min(p.low[2] for p in near) < self.grasp[2]:
                tops.append(max(p.high[2] for p in near) + OVER)
        return max(tops, default=-np.inf)

    def _over_way(self, box: Box, bodies: dict[int, list[Box]]) -> float:
        """The height the hand carries at so that the object held clears what stands on its
        way (a caddy's corner beside the straight line to the place): the highest top, plus
        ``OVER``, of the parts that stand from below the object's usual carrying height into
        it, met by the object's footprint as it goes from where it stands to its place, the
        target's own body left out; -inf where none is met."""
        target, _ = self._target()
        place = target.centre[:2] + self.shift  # the object's centre there
        high = max(self.grasp[2], 0.0) + CLEARANCE
        bottom = max(high, target.high[2] + self.below_grasp + 0.07) - self.below_grasp
        into = self._body_of(self.target)
        mine = body_tree(self.env.sim.model._model, into) if into is not None else set()
        tops: list[float] = []
        for f in np.linspace(0.0, 1.0, 21):
            shift = np.array([*(f * (place - box.centre[:2])), 0.0])
            moved = Box(box.low + shift, box.high + shift)
            for body, parts in bodies.items():
                if body in mine:
                    continue
                tops.extend(
                    part.high[2]
                    for part in parts
                    if part.low[2] < bottom < part.high[2] and _overlap(part, moved)
                )
        return max(tops, default=-np.inf) + OVER + self.below_grasp

    @classmethod
    def _slid_clear(
        cls, box: Box, grasp: np.ndarray, across: int, parts: list[Box]
    ) -> tuple[np.ndarray, bool]:
        """A grasp across the object's centre slid along its length (the fingers kept inside its
        ends) to the nearest place where the hand meets nothing standing beside it as high as the
        hand (a bottle beside a flat box), and whether it found one; where it meets nothing there,
        or nowhere is clear, the grasp is left as it is."""
        rising = cls._rising(parts, grasp)
        if not cls._hits(rising, grasp, across, HAND_SIDE):
            return grasp, True
        along = 1 - across
        reach = box.size[along] / 2 - FINGER_END
        for offset in sorted(np.arange(-reach, reach + 1e-9, 0.005), key=abs):
            slid = grasp.copy()
            slid[along] += offset
            if not cls._hits(rising, slid, across, HAND_SIDE):
                return slid, True
        return grasp, False

    @staticmethod
    def _rising(parts: list[Box], grasp: np.ndarray) -> list[Box]:
        """The parts that stand as high as the hand over ``grasp`` (a bottle beside a flat box)."""
        return [
            p
            for p in parts
            if p.high[2] > grasp[2] + HAND_BOTTOM and p.low[2] < grasp[2] + HAND_TOP
        ]

    @staticmethod
    def _hits(
        overhead: list[Box], grasp: np.ndarray, across: int, side: float = HAND_HALF_WIDTH
    ) -> bool:
        """Whether the hand over ``grasp``, its fingers closing along ``across`` and reaching
        ``side`` across them, meets one."""
        half = np.full(2, side)
        half[across] = HAND_HALF_LENGTH
        low, high = grasp[:2] - half, grasp[:2] + half
        return any(bool(np.all(o.low[:2] < high) & np.all(o.high[:2] > low)) for o in overhead)

    def _over(self, eef: np.ndarray) -> float:
        """The least height at which the fingertips, on their way to the object, pass over the
        body the step before placed its object on or in, which they start over (the basket just
        filled, whose rim the hand would catch and drag off): its top plus ``OVER`` while they
        are within ``OPEN_REACH`` of it; nothing (-inf) elsewhere, and within ``OPEN_REACH`` of
        the grasp, where the fingers come down as they always have."""
        if np.linalg.norm(eef[:2] - self.grasp[:2]) < OPEN_REACH:
            return -np.inf
        tops = [
            max(part.high[2] for part in parts) + OVER
            for parts in self.leaving
            if any(self._near(part, eef) for part in parts)
        ]
        return max(tops, default=-np.inf)

    def _body_of(self, target: str) -> int | None:
        """The body a target names: an object, or the parent of a region (a basket's)."""
        if target in self.env.obj_body_id:
            return int(self.env.obj_body_id[target])
        parent = getattr(self.env.object_sites_dict.get(target), "parent_name", None)
        return int(self.env.obj_body_id[parent]) if parent in self.env.obj_body_id else None

    @staticmethod
    def _near(part: Box, point: np.ndarray) -> bool:
        """Whether a point lies over a part, or within ``OPEN_REACH`` of it, horizontally."""
        return bool(
            np.all(part.low[:2] - OPEN_REACH < point[:2])
            and np.all(part.high[:2] + OPEN_REACH > point[:2])
        )

    def _target(self) -> tuple[Box, Box | None]:
        """The box to place over (the target object, the drawer, the region's parent), and the
        region's own box where it is a compartment, one of several regions its parent contains
        things in (a caddy's slots; not a basket's one inside, nor a stove's cook region), to be
        placed into; else None."""
        sim = self.env.sim
        if self.target in self.env.obj_body_id:
            return body_box(sim, self.env.obj_body_id[self.target]), None
        site = self.env.object_sites_dict.get(self.target)
        if getattr(site, "joints", None):  # a drawer's region: the drawer, wherever it slid
            joint = sim.model.joint_name2id(next(iter(site.joints)))
            return body_box(sim, int(sim.model._model.jnt_bodyid[joint])), None
        position, half = region_extent(self.env, self.target)
        if site is not None and self.target.endswith("_region") and hasattr(site, "parent_name"):
            parent = site.parent_name
            if parent in self.env.obj_body_id:
                over = body_box(sim, self.env.obj_body_id[parent])
                return over, Box(position - half, position + half) if self.compartment else None
        margin = np.array([0.02, 0.02, 0.0])
        return Box(position - margin, position + margin), None

    def _beside(self, box: Box) -> np.ndarray:
        """How far off its usual place the object goes, so as to stand clear of the objects
        already on the same region (the second moka pot onto the one stove of libero_10/8):
        nowhere where that place is clear or the target is no parent's region; else the nearest
        place clear of them by ``SHARED_GAP`` that keeps the object's origin inside the region.
        An object taken by its handle has its origin kept inside the region even where nothing
        stands there (its box's centre, handle and all, put the frying pan's beyond the stove's
        in libero_90/18)."""
        shift: np.ndarray = np.zeros(2)
        site = self.env.object_sites_dict.get(self.target)
        parent = getattr(site, "parent_name", None)
        if self.kind != "on" or parent not in self.env.obj_body_id or getattr(site, "joints", None):
            return shift
        sim = self.env.sim
        there = [
            body_box(sim, self.env.obj_body_id[other])
            for other in self.env.objects_dict
            if other != self.obj and self.env._eval_predicate(["on", other, self.target])
        ]
        centre = self._target()[0].centre[:2]  # where the object's box centre goes
        middle, half = region_extent(self.env, self.target)
        room = half[:2] - REGION_MARGIN
        region = middle[:2] - self._lands(box)  # its centre, as a shift
        if self.by_handle:  # its origin off its box's centre, by the handle: kept inside
            shift = np.clip(shift, region - room, region + room)
        if not there:
            return shift
        half_box = box.size[:2] / 2 + SHARED_GAP
        grid = np.stack(np.meshgrid(*(np.arange(-r, r + 1e-9, 0.0025) for r in room)), -1)
        shifts = np.concatenate([shift[None], region + grid.reshape(-1, 2)])
        shifts = shifts[np.argsort(np.hypot(*shifts.T), kind="stable")]
        for candidate in shifts:
            low, high = centre + candidate - half_box, centre + candidate + half_box
            if not any(np.all(o.low[:2] < high) and np.all(o.high[:2] > low) for o in there):
                return candidate
        return shift

    def _lands(self, box: Box) -> np.ndarray:
        """Where the object's origin (what LIBERO's checks of a region read) lands, horizontally,
        with its box's centre over the target's: off it by as much as the origin is off the box's
        centre (a handle's length, for a pan)."""
        origin = self.env.sim.data.body_xpos[self.env.obj_body_id[self.obj]][:2]
        return self._target()[0].centre[:2] + origin - box.centre[:2]

    def _compartment(self) -> bool:
        """Whether the target is one of several regions its parent contains things in."""
        parent = getattr(self.env.object_sites_dict.get(self.target), "parent_name", None)
        slots = [
            name
            for name, site in self.env.object_sites_dict.items()
            if name.endswith(CONTAIN) and getattr(site, "parent_name", None) == parent
        ]
        return parent is not None and self.target in slots and len(slots) > 1

    def _bottom(self) -> np.ndarray:
        """The world centre of the object's own bottom face, as it stands or hangs now."""
        data = self.env.sim.data._data
        body = self.env.obj_body_id[self.obj]
        return data.xpos[body] + data.xmat[body].reshape(3, 3) @ self.base

    def _walls(self, inside: Box) -> tuple[np.ndarray, np.ndarray]:
        """The horizontal extents (low and high corners, shaped to broadcast against a list
        of places) of the compartment's parent's parts that rise above its floor."""
        model, data = self.env.sim.model._model, self.env.sim.data._data
        parent = self.env.obj_body_id[self.env.object_sites_dict[self.target].parent_name]
        walls = [
            wall
            for wall in geom_boxes(model, data, body_tree(model, parent), affinity=True)
            if wall.high[2] > inside.low[2] + 0.02
        ]
        low = np.array([w.low[:2] for w in walls]).reshape(-1, 1, 2)
        return low, np.array([w.high[:2] for w in walls]).reshape(-1, 1, 2)
