"""The aside step of LIBERO's scripted expert: an object moved out from under where a drawer
will stand once pulled open, before it is pulled (``(aside OBJECT DRAWER_REGION)``, planned,
never in a BDDL goal)."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from pytest_benchmarks.envs.libero.expert.constants import (
    ASIDE_ACROSS,
    ASIDE_GAP,
    FAR_REACH,
    RELEASED_AFTER,
)
from pytest_benchmarks.envs.libero.expert.motion import Box, body_box, joint_goal
from pytest_benchmarks.envs.libero.expert.pick import Phase, PickPlaceExpert
from pytest_benchmarks.envs.libero.expert.pull import opened_box


class AsideExpert(PickPlaceExpert):
    """Moves an object out from under where a drawer will stand once pulled open, before it is
    pulled (``(aside OBJECT DRAWER_REGION)``, planned, never in a goal), unless the hand, tilted,
    will take it from under the opened drawer (done at once then): along the world axis
    that clears it with the shortest move to a place no other body stands in (the shortest of
    all, should none be free), ``ASIDE_GAP`` beyond the opened drawer."""

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        super().__init__(env, goal)
        self.spot = Box(np.zeros(3), np.zeros(3))

    def _plan(self) -> None:
        if self._taken_from_under():  # nothing to move: done at once
            self.enter(Phase.RETREAT, RELEASED_AFTER + 1)
            return
        self.spot = self._spot()  # clear of the other bodies, then the move to it planned
        super()._plan()

    def _taken_from_under(self) -> bool:
        """Whether, the drawer pulled open, the object will be taken from under it (``_under``),
        wherever in its open range the pull leaves it: planned with the drawer's joint set to
        each end of the range for the moment (kinematics only, then set back), so it is not
        moved aside at all. (libero_90/8: planned at the range's middle only, the drawer left a
        few millimetres off it put 4 of 14 such grasps in the hand's way.)"""
        sim = self.env.sim
        model, data = sim.model._model, sim.data._data
        name, _ = joint_goal(self.env, self.target, "default_open_ranges")
        parent = self.env.object_sites_dict[self.target].parent_name
        span = self.env.get_object(parent).object_properties["articulation"]["default_open_ranges"]
        address = model.jnt_qposadr[sim.model.joint_name2id(name)]
        closed = float(data.qpos[address])
        try:
            for opened in span:
                data.qpos[address] = opened
                mujoco.mj_kinematics(model, data)
                step = PickPlaceExpert(self.env, ("in", self.obj, self.target))
                step.excluded = self.excluded
                step._plan()
                if step.under is None:
                    return False
            return True
        finally:
            data.qpos[address] = closed
            mujoco.mj_kinematics(model, data)

    def holds(self) -> bool:
        return True  # done once let go; the step after it checks its own predicate

    def _target(self) -> tuple[Box, Box | None]:
        return self.spot, None

    def _spot(self) -> Box:
        """Where the object's centre goes, as a flat box at the height of its bottom: the
        shortest move (in world-axis steps) that clears the opened drawer to a place no other
        body stands in and the arm reaches (within ``FAR_REACH`` of its base, where it lifts
        what it holds); a move along one axis first, then one that also steps across it
        (libero_goal/3: a wine bottle beside the bowl, a plate and cream cheese about it)."""
        drawer, _ = opened_box(self.env, self.target)
        box = body_box(self.env.sim, self.env.obj_body_id[self.obj])
        others = [
            part
            for parts in self._bodies().values()
            for part in parts
            if np.all(part.size[:2] < 10.0)  # not the floor, which is everywhere
        ]
        shifts = []
        for axis in (0, 1):
            for sense in (-1.0, 1.0):
                edge = (
                    drawer.low[axis] - box.high[axis]
                    if sense < 0
                    else drawer.high[axis] - box.low[axis]
                )
                for across in ASIDE_ACROSS:
                    shift = np.zeros(3)
                    shift[axis] = edge + sense * ASIDE_GAP
                    shift[1 - axis] = across
                    shifts.append(shift)
        shifts.sort(key=lambda m: float(np.abs(m).sum()))
        base = self._base()

        def free(shift: np.ndarray) -> bool:
            return not any(
                np.all(o.low < box.high + shift)
                and np.all(o.high > box.low + shift + [0, 0, 0.005])
                for o in others
            )

        def reached(shift: np.ndarray) -> bool:
            return float(np.linalg.norm(box.centre[:2] + shift[:2] - base)) <= FAR_REACH

        clear = [s for s in shifts if free(s)]
        centre = box.centre + ([s for s in clear if reached(s)] or clear or shifts)[0]
        return Box(np.array([*centre[:2], box.low[2]]), np.array([*centre[:2], box.low[2]]))
