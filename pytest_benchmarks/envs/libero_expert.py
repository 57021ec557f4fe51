"""A scripted pick-and-place expert for LIBERO, planned from the task's BDDL goal.

A pick-and-place goal is one or more predicates ``(On OBJECT TARGET)`` or
``(In OBJECT REGION)``; it is read from the task's BDDL file (``goal_of`` needs no LIBERO
import, so collection can tell which tasks are covered). Several predicates are done one after
another (``plan_order``: an object another step places something on is placed first), each
step ending when LIBERO's own predicate holds after the release. The expert itself runs beside the
simulator, in the process that steps the env, because it reads privileged state: the object's
and the target's poses and extents from MuJoCo, never pixels. Each step it computes the next
action in LIBERO's own action space (OSC_POSE deltas scaled to [-1, 1], gripper -1 open / +1
closed): approach above the object, descend, close, lift, carry above the target, lower, open.

The Panda's fingers close along the world y axis with the default (downward) orientation, so a
narrow object is grasped across y at its centre, and an object wider than the open gripper (a
bowl) by its rim, offset along y.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GOAL = re.compile(r"\(:goal(.*)", re.S | re.I)
PREDICATE = re.compile(r"\((\w+)((?:\s+\w+)+)\s*\)")
PICK_PLACE = ("on", "in")

GAIN = 15.0  # action units per metre of position error (1.0 = 0.05 m per step)
GRIPPER_SPAN = 0.075  # widest object the open fingers take across y, in metres
CLEARANCE = 0.10  # height above objects while moving, in metres


def goal_of(bddl: Path) -> list[tuple[str, ...]]:
    """The goal predicates of a BDDL file, lower-cased: [("on", "bowl_1", "plate_1")]."""
    match = GOAL.search(bddl.read_text())
    if match is None:
        return []
    return [
        (m.group(1).lower(), *m.group(2).lower().split())
        for m in PREDICATE.finditer(match.group(1))
    ]


#: Pick-and-place tasks the expert plans but fails (0 of 5 episodes measured), and why: left
#: out like the tasks it cannot plan, so no test of them stands in for a check that cannot pass.
CANNOT: dict[tuple[str, int], str] = {
    ("libero_spatial", 4): "the bowl sits in the top drawer, under the cabinet's top: the "
    "straight-down approach cannot reach its rim (0/5 measured)",
    ("libero_object", 1): "the cream cheese box lies flat across the grasp (8/50 measured: "
    "too few successes for the regression gate to be able to fail it)",
    ("libero_goal", 3): "the drawer must be opened first; the goal names only the bowl in it "
    "(0/5 measured)",
    ("libero_10", 5): "the book must stand upright in a narrow compartment of the caddy "
    "(0/5 measured)",
    ("libero_10", 1): "the cream cheese box, the first of two objects for the basket, lies flat "
    "across the grasp as in libero_object/1 (0/5 measured)",
}


def unsupported(goal: list[tuple[str, ...]]) -> str | None:
    """Why the expert cannot do a task with this goal, or None."""
    if not goal:
        return "the BDDL file states no goal"
    for predicate in goal:
        if predicate[0] not in PICK_PLACE or len(predicate) != 3:
            which = "the goal is" if len(goal) == 1 else f"of {len(goal)} goal predicates, one is"
            return f"{which} ({' '.join(predicate)}), not a pick-and-place (On/In)"
    return None


def plan_order(goal: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The goal's pick-and-place steps in an order that never moves what is already placed on:
    a step whose object is another step's target goes first (BDDL order otherwise)."""
    left, ordered = list(goal), []
    while left:
        ready = next(
            (s for s in left if not any(o is not s and o[1] == s[2] for o in left)), left[0]
        )
        ordered.append(ready)
        left.remove(ready)
    return ordered


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


def body_box(sim: Any, body_id: int) -> Box:
    """The world AABB of a body's collision geoms (and its children's)."""
    model, data = sim.model._model, sim.data._data
    bodies = {body_id} | {b for b in range(model.nbody) if _ancestor(model, b, body_id)}
    lows, highs = [], []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] not in bodies or model.geom_contype[g] == 0:
            continue
        centre, half = model.geom_aabb[g][:3], model.geom_aabb[g][3:]
        rotation = data.geom_xmat[g].reshape(3, 3)
        world_centre = data.geom_xpos[g] + rotation @ centre
        world_half = np.abs(rotation) @ half
        lows.append(world_centre - world_half)
        highs.append(world_centre + world_half)
    if not lows:
        position = np.array(data.xpos[body_id])
        return Box(position - 0.02, position + 0.02)
    return Box(np.min(lows, axis=0), np.max(highs, axis=0))


def _ancestor(model: Any, body: int, ancestor: int) -> bool:
    while body > 0:
        body = model.body_parentid[body]
        if body == ancestor:
            return True
    return False


class PlanExpert:
    """The goal's pick-and-place steps in ``plan_order``; ``act(eef_pos)`` gives the next 7-D
    action. A step is done once its object is released and LIBERO's predicate holds; with the
    last step the expert keeps retreating (the episode ends on LIBERO's success check)."""

    def __init__(self, env: Any, goal: list[tuple[str, ...]]) -> None:
        self.env = env
        self.steps = [PickPlaceExpert(env, predicate) for predicate in plan_order(goal)]
        self.index = 0

    def reset(self) -> None:
        self.index = 0
        self.steps[0].reset()

    def act(self, eef: np.ndarray) -> np.ndarray:
        step = self.steps[self.index]
        if self.index + 1 < len(self.steps) and step.released and self._holds(step):
            self.index += 1
            step = self.steps[self.index]
            step.reset()  # planned from where the objects are now
        return step.act(eef)

    def _holds(self, step: PickPlaceExpert) -> bool:
        return bool(self.env._eval_predicate([step.kind, step.obj, step.target]))


class PickPlaceExpert:
    """The per-episode state machine; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("above", "descend", "close", "lift", "carry", "lower", "release", "retreat")

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj, self.target = goal

    def reset(self) -> None:
        sim = self.env.sim
        box = body_box(sim, self.env.obj_body_id[self.obj])
        wide = box.size[1] > GRIPPER_SPAN
        self.grasp = box.centre.copy()
        if wide:  # a rim: one finger inside, one outside
            self.grasp[1] = box.high[1] - 0.012
            self.grasp[2] = box.high[2] - 0.015
        else:
            self.grasp[2] = max(box.high[2] - 0.035, box.low[2] + min(0.015, box.size[2] / 2))
        self.below_grasp = self.grasp[2] - box.low[2]  # object bottom under the fingers
        self.offset_xy = self.grasp[:2] - box.centre[:2]
        self.phase, self.count = 0, 0

    @property
    def released(self) -> bool:
        """The object was let go and the gripper has moved up for a few steps."""
        return self.PHASES[min(self.phase, len(self.PHASES) - 1)] == "retreat" and self.count > 5

    def _target_box(self) -> Box:
        sim = self.env.sim
        if self.target in self.env.obj_body_id:
            return body_box(sim, self.env.obj_body_id[self.target])
        site = self.env.object_sites_dict.get(self.target)
        if site is not None and self.target.endswith("_region") and hasattr(site, "parent_name"):
            parent = site.parent_name
            if parent in self.env.obj_body_id:
                return body_box(sim, self.env.obj_body_id[parent])
        site_id = sim.model.site_name2id(self.target)
        position = np.array(sim.data.site_xpos[site_id])
        margin = np.array([0.02, 0.02, 0.0])
        return Box(position - margin, position + margin)

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.PHASES[min(self.phase, len(self.PHASES) - 1)]
        grip = 1.0 if phase in ("close", "lift", "carry", "lower") else -1.0
        goal = eef
        high = max(self.grasp[2], 0.0) + CLEARANCE
        if phase in ("above", "descend"):
            goal = self.grasp + np.array([0.0, 0.0, CLEARANCE if phase == "above" else 0.0])
        elif phase == "close":
            goal = self.grasp
        elif phase in ("lift", "carry", "lower", "release"):
            target = self._target_box()
            place = target.centre.copy()
            place[:2] += self.offset_xy
            place[2] = target.high[2] + self.below_grasp + 0.02
            lift = max(high, place[2] + 0.05)
            if phase == "lift":
                goal = np.array([eef[0], eef[1], lift])
            elif phase == "carry":
                goal = np.array([place[0], place[1], lift])
            else:
                goal = place
        elif phase == "retreat":
            goal = np.array([eef[0], eef[1], high + 0.1])
        error = goal - eef
        self.count += 1
        done = {
            "above": np.linalg.norm(error) < 0.01 or self.count > 60,
            "descend": np.linalg.norm(error) < 0.006 or self.count > 40,
            "close": self.count > 12,
            "lift": abs(error[2]) < 0.01 or self.count > 40,
            "carry": np.linalg.norm(error[:2]) < 0.01 or self.count > 80,
            "lower": np.linalg.norm(error) < 0.01 or self.count > 30,
            "release": self.count > 10,
            "retreat": False,
        }[phase]
        if done:
            self.phase, self.count = self.phase + 1, 0
        action = np.zeros(7)
        action[:3] = np.clip(error * GAIN, -1.0, 1.0)
        action[6] = grip
        return action
