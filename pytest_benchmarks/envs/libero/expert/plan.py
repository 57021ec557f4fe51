"""A scripted expert for LIBERO, planned from the task's BDDL goal.

A goal is one or more predicates: pick-and-place ``(On OBJECT TARGET)`` or ``(In OBJECT
REGION)``; a push of an articulated object, ``(Close DRAWER_REGION)``, ``(Close microwave_1)``,
``(TurnOn flat_stove_1)``, ``(TurnOff flat_stove_1)`` (``joint``); or a pull by a
handle, a drawer's, ``(Open DRAWER_REGION)`` (``pull``; dragged by its top where it
stands too low for the upright hand, ``drag``), or the microwave's door's,
``(Open microwave_1)`` (``door``). It is read from the task's BDDL file
(``goal_of`` needs no LIBERO import, so collection can tell which tasks are covered). Several
predicates are done one after another (``plan_order``: an object another step places something on
is placed first, a drawer is opened before it is filled and filled before it is closed; an ``In``
of a drawer's region is preceded by pulling the drawer open where it is not, and by moving the
object out of the way where the drawer, pulled open, would stand over it, unless the hand,
tilted, can take it from under the drawer), each step ending
when LIBERO's own predicate holds after it lets go. The expert runs beside the simulator, in the
process that steps the env, because it reads privileged state: poses, extents and joints from
MuJoCo, never pixels. Each step computes the next action in LIBERO's own action space
(``motion``); a pick-and-place is ``pick``'s (its scene in ``pick_scene``, its plan in
``pick_plan``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.envs.libero.expert.aside import AsideExpert
from pytest_benchmarks.envs.libero.expert.constants import SLIDE_JOINT
from pytest_benchmarks.envs.libero.expert.door import DoorPullExpert
from pytest_benchmarks.envs.libero.expert.drag import HandleDragExpert, handle_too_low
from pytest_benchmarks.envs.libero.expert.joint import PUSHES, JointPushExpert
from pytest_benchmarks.envs.libero.expert.motion import body_box
from pytest_benchmarks.envs.libero.expert.pick import ASIDE, PickPlaceExpert
from pytest_benchmarks.envs.libero.expert.pull import HandlePullExpert, opened_box

GOAL = re.compile(r"\(:goal(.*)", re.S | re.I)
PREDICATE = re.compile(r"\((\w+)((?:\s+\w+)+)\s*\)")
PICK_PLACE = ("on", "in")
DRAWER = "_region"  # an Open of a cabinet's region is its drawer's; of an object, its door


def goal_of(bddl: Path) -> list[tuple[str, ...]]:
    """The goal predicates of a BDDL file, lower-cased: [("on", "bowl_1", "plate_1")]."""
    match = GOAL.search(bddl.read_text())
    if match is None:
        return []
    return [
        (m.group(1).lower(), *m.group(2).lower().split())
        for m in PREDICATE.finditer(match.group(1))
    ]


#: Tasks the expert plans but fails (the episodes measured), and why: left out like the tasks
#: it cannot plan, so no test of them stands in for a check that cannot pass.
CANNOT: dict[tuple[str, int], str] = {}


def unsupported(goal: list[tuple[str, ...]]) -> str | None:
    """Why the expert cannot do a task with this goal, or None."""
    if not goal:
        return "the BDDL file states no goal"
    for predicate in goal:
        kind, arity = predicate[0], len(predicate)
        if (kind in PICK_PLACE and arity == 3) or (kind in PUSHES and arity == 2):
            continue
        if kind == "open" and arity == 2:
            continue
        which = "the goal is" if len(goal) == 1 else f"of {len(goal)} goal predicates, one is"
        what = " ".join(predicate)
        return (
            f"{which} ({what}), not a pick-and-place (On/In), a push (Close/TurnOn/TurnOff) or "
            "a pull (Open)"
        )
    return None


def _waits_for(step: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Whether ``other`` must be done before ``step``."""
    if step[0] in PICK_PLACE and other[0] in PICK_PLACE:
        return other[1] == step[2]  # other moves the object step places something on
    if step[0] in PICK_PLACE and other[0] == "open":  # open a drawer, then fill it
        return other[1] == step[2]
    if step[0] == "open" and other[0] == ASIDE:  # clear the drawer's way, then pull it
        return other[2] == step[1]
    if step[0] == "close" and other[0] in PICK_PLACE:  # fill a drawer or an oven, then close it
        return other[2] == step[1] or other[2].startswith(step[1] + "_")
    return False


def plan_order(goal: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The goal's steps in an order that never moves what is already placed on, nor closes a
    region before it is filled: a step another waits for goes first (BDDL order otherwise)."""
    left, ordered = list(goal), []
    while left:
        ready = next(
            (s for s in left if not any(o is not s and _waits_for(s, o) for o in left)), left[0]
        )
        ordered.append(ready)
        left.remove(ready)
    return ordered


def _step(env: Any, predicate: tuple[str, ...]) -> Any:
    if predicate[0] in PUSHES:
        return JointPushExpert(env, predicate)
    if predicate[0] == "open" and predicate[1].endswith(DRAWER):
        if handle_too_low(env, predicate[1]):
            return HandleDragExpert(env, predicate)
        return HandlePullExpert(env, predicate)
    if predicate[0] == "open":
        return DoorPullExpert(env, predicate)
    if predicate[0] == ASIDE:
        return AsideExpert(env, predicate)
    return PickPlaceExpert(env, predicate)


def _with_drawers_opened(env: Any, goal: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The goal with an ``Open`` before each ``In`` of a drawer's region it does not open itself
    (libero_goal/3 names only the bowl in the drawer); a drawer already open is not pulled."""
    opened = {p[1] for p in goal if p[0] == "open"}
    added = []
    for kind, *args in goal:
        target = args[-1]
        site = env.object_sites_dict.get(target) if kind == "in" else None
        if (
            target.endswith(DRAWER)
            and site is not None
            and getattr(site, "joints", None)
            and target not in opened
        ):
            joint = env.sim.model.joint_name2id(next(iter(site.joints)))
            if int(env.sim.model._model.jnt_type[joint]) == SLIDE_JOINT:
                added.append(("open", target))
                opened.add(target)
    aside = [
        (ASIDE, args[0], args[1])
        for kind, *args in goal
        if kind == "in" and args[1] in opened and _overhung(env, args[0], args[1])
    ]
    return aside + added + goal


def _overhung(env: Any, obj: str, region: str) -> bool:
    """Whether the drawer of ``region``, once pulled open, will stand over (or against) the
    object: the hand coming down to it would meet the drawer (libero_90/8's bowl)."""
    site = env.object_sites_dict.get(region)
    joint = env.sim.model.joint_name2id(next(iter(site.joints)))
    if int(env.sim.model._model.jnt_type[joint]) != SLIDE_JOINT or env._eval_predicate(
        ["open", region]
    ):
        return False  # a door, or a drawer already open (not pulled: it stands where it will)
    drawer, _ = opened_box(env, region)
    box = body_box(env.sim, env.obj_body_id[obj])
    return bool(np.all(drawer.low[:2] < box.high[:2]) and np.all(drawer.high[:2] > box.low[:2]))


class PlanExpert:
    """The goal's steps in ``plan_order``; ``act(eef_pos)`` gives the next 7-D action. A step is
    done once it let go and LIBERO's predicate holds; with the last step the expert keeps
    retreating (the episode ends on LIBERO's success check)."""

    def __init__(self, env: Any, goal: list[tuple[str, ...]]) -> None:
        self.env = env
        self.steps = [_step(env, p) for p in plan_order(_with_drawers_opened(env, goal))]
        for before, step in zip(self.steps, self.steps[1:], strict=False):
            if isinstance(before, PickPlaceExpert) and isinstance(step, PickPlaceExpert):
                step.after = before.target  # it starts over what the step before placed on
        self.index = 0

    def reset(self) -> None:
        self.index = 0
        self.steps[0].reset()

    def act(self, eef: np.ndarray) -> np.ndarray:
        step = self.steps[self.index]
        if self.index + 1 < len(self.steps) and step.released and step.holds():
            self.index += 1
            step = self.steps[self.index]
            step.reset()  # planned from where the objects are now
        return step.act(eef)
