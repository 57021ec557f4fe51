"""The pick-and-place step of LIBERO's scripted expert: ``(On OBJECT TARGET)`` and ``(In OBJECT
REGION)``. The plan (``pick_plan``) is made at each reset from privileged state; the executor
here steps through its phases, each ending at its goal or after its step budget, and gives the
next action in LIBERO's own action space (``motion``)."""

from __future__ import annotations

from enum import IntEnum
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    CARRY_ABOVE,
    CLEARANCE,
    HAND_HALF_LENGTH,
    LEAN,
    ON_LINE,
    PASS,
    PICK_BUDGET,
    PLACE_ABOVE,
    REACHED,
    RELEASED_AFTER,
    RETREAT_ABOVE,
    SEATED,
    STALLED,
    STILL,
    TILT_NEAR,
    TILT_TURNED,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    Box,
    body_box,
    body_tree,
    move,
    region_box,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine
from pytest_benchmarks.envs.libero.expert.pick_plan import PickPlanner
from pytest_benchmarks.envs.libero.expert.rim import site_frame
from pytest_benchmarks.envs.libero.expert.slide import SlideIn
from pytest_benchmarks.envs.libero.expert.tip import TipIn

ASIDE = "aside"  # a planned step, no BDDL predicate: an object moved out of a drawer's way
ARM_LINKS = "robot0_link"


class Phase(IntEnum):
    """The phases of a pick-and-place step, in order."""

    ABOVE = 0
    DESCEND = 1
    CLOSE = 2
    LIFT = 3
    CARRY = 4
    LOWER = 5
    RELEASE = 6
    RETREAT = 7


#: The phases in which the fingers are closed.
GRIPPING = (Phase.CLOSE, Phase.LIFT, Phase.CARRY, Phase.LOWER)


class PickPlaceExpert(PickPlanner, PhaseMachine[Phase]):
    """The per-episode executor of one pick-and-place step: ``reset`` plans it from where the
    objects are (``PickPlanner``), ``act(eef_pos)`` gives the next 7-D action of its phase."""

    PHASES = tuple(Phase)
    BUDGET = MappingProxyType(
        {p: PICK_BUDGET[p.name.lower()] for p in Phase if p.name.lower() in PICK_BUDGET}
    )

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj, self.target = goal
        #: The target of the pick-and-place step just before it in a plan, if any.
        self.after: str | None = None

    def reset(self) -> None:
        self.robot = self._robot()
        self.arm = {
            b for b in self.robot if self.env.sim.model.body_id2name(b).startswith(ARM_LINKS)
        }
        self.excluded = self.robot | body_tree(
            self.env.sim.model._model, self.env.obj_body_id[self.obj]
        )
        self.enter()
        self._plan()

    def _arm_touch(self) -> np.ndarray | None:
        """Where one of the arm's links (not the hand) touches something not the robot's."""
        model, data = self.env.sim.model._model, self.env.sim.data._data
        for contact in data.contact[: data.ncon]:
            pair = {int(model.geom_bodyid[contact.geom1]), int(model.geom_bodyid[contact.geom2])}
            if pair & self.arm and not pair <= self.robot:
                return np.array(contact.pos)
        return None

    def _lean(self, toward: np.ndarray) -> Rotation:
        """The hand pointing down with its finger line on ``line`` (the sense nearer the hand as
        it is), tilted ``LEAN`` about that line, its fingertips toward the point ``toward``
        (horizontally)."""
        frame = site_frame(self.line)
        now = self.grip.orientation()
        level = min(
            (Rotation.from_matrix(f) for f in (frame, frame * np.array([-1.0, -1.0, 1.0]))),
            key=lambda o: float(np.linalg.norm((o * now.inv()).as_rotvec())),
        )
        line = frame[:, 0]
        away = toward[:2] - self.grasp[:2]
        for sign in (1.0, -1.0):
            tilt = Rotation.from_rotvec(line * sign * LEAN)
            if tilt.apply([0.0, 0.0, -1.0])[:2] @ away > 0:
                return tilt * level
        return level

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj, self.target]))

    def _still(self, eef: np.ndarray) -> bool:
        """Whether the hand has come to rest (moved under ``STILL`` metres since the last step):
        an object hanging in it goes down into a slot without the arm's overshoot."""
        return float(np.linalg.norm(eef - self.last_eef)) < STILL

    @property
    def released(self) -> bool:
        """The object was let go and the gripper has moved up for a few steps."""
        return self.finishing(RELEASED_AFTER)

    def act(self, eef: np.ndarray) -> np.ndarray:
        """The next action of the current phase: a move toward its goal with the fingers
        turning onto their line and the hand held as planned; the phase moves on once its goal
        is reached or its budget spent."""
        phase = self.phase
        if self.way is not None and phase > Phase.LIFT:
            return self._slide_in(eef, self.way)
        grip = 1.0 if phase in GRIPPING else -1.0
        goal = self._goal(phase, eef)
        if self.way_in and phase in (Phase.ABOVE, Phase.DESCEND):  # tilted, in along its own axis
            goal = self._way_in_goal(phase, eef)
        leaving = bool(self.way_out) and phase == Phase.LIFT
        if leaving:  # out the way it came, then back from under, before it rises
            goal = self.way_out[0]
            if np.linalg.norm(goal - eef) < PASS:
                self.way_out.pop(0)
        still = self.slot is None or self._still(eef)
        if self.slot is not None:
            self.last_eef = eef.copy()
        error = goal - eef
        # Into a slot the object turns as it rises, before it is carried: turned while moving
        # across, a book swings in the fingers.
        grasping = (Phase.ABOVE, Phase.DESCEND, Phase.CLOSE) + (
            () if self.slot is not None else (Phase.LIFT,)
        )
        line = self.line if phase in grasping else self.place_line
        yaw = self.fingers.yaw_to(line) if self.steer else 0.0
        turning = line is not self.line
        self.tick()
        reached = self._reached(phase, error, yaw, turning, leaving, still)
        self._next_phase(phase, reached or self.spent(), error)
        action = move(error, grip, yaw)
        self._hold(action, phase, eef, grasping)
        return action

    def _goal(self, phase: Phase, eef: np.ndarray) -> np.ndarray:
        """The position the phase takes the hand to, unless a tilted grasp's way in or out
        (``way_in``, ``way_out``) leads it elsewhere first."""
        goal = eef
        high = max(self.grasp[2], 0.0) + CLEARANCE
        if phase in (Phase.ABOVE, Phase.DESCEND):
            goal = self.grasp + np.array([0.0, 0.0, CLEARANCE if phase == Phase.ABOVE else 0.0])
            if phase == Phase.ABOVE:  # over what stands on the way, not through it
                goal[2] = max(goal[2], self._over(eef), self.over_beside)
        elif phase == Phase.CLOSE:
            goal = self.grasp
        elif phase in (Phase.LIFT, Phase.CARRY, Phase.LOWER, Phase.RELEASE):
            goal = self._carry_goal(phase, eef, high)
        elif phase == Phase.RETREAT:
            goal = np.array([eef[0], eef[1], high + RETREAT_ABOVE])
        return goal

    def _carry_goal(self, phase: Phase, eef: np.ndarray, high: float) -> np.ndarray:
        """Where the hand goes with the object, from the lift to the release: up, over its
        place at a height that clears the way, down onto it. ``high`` is the height over the
        grasp that clears the object's own surroundings."""
        target, inside = self._target()
        place = target.centre.copy()
        place[:2] += self.offset_xy + self.shift
        if self.slot is not None:  # its bottom over the slot, however it hangs in the hand
            place[:2] = eef[:2] + self.slot - self._bottom()[:2]
        elif self.origin_goal is not None:  # its origin over its place, however it swings
            held = self.env.sim.data._data.xpos[self.env.obj_body_id[self.obj]][:2]
            place[:2] = eef[:2] + self.origin_goal - held
        place[2] = target.high[2] + self.below_grasp + PLACE_ABOVE
        lift = max(high, place[2] + CARRY_ABOVE, self.over_way)
        if inside is not None:  # down into the compartment, its floor 2 cm below
            place[2] = inside.low[2] + self.below_grasp + PLACE_ABOVE
        if phase == Phase.LIFT:
            return np.array([eef[0], eef[1], lift])
        if phase == Phase.CARRY:
            return np.array([place[0], place[1], lift])
        return place

    def _way_in_goal(self, phase: Phase, eef: np.ndarray) -> np.ndarray:
        """The goal of the way down to a grasp from under an overhang (``way_in``): over its
        entry, turned there before going down it, in along the hand's own axis to the grasp."""
        if phase == Phase.DESCEND and np.linalg.norm(self.way_in[-1] - eef) < PASS:
            self.way_in = self.way_in[:1]  # at the entry: on to the grasp
        goal = self.way_in[0] if phase == Phase.ABOVE else self.way_in[-1]
        if len(self.way_in) == 2 and self._turn_left(self.tilted) > TILT_TURNED:
            goal = self.way_in[0]  # turned over the way in before going down it
        if phase == Phase.DESCEND and len(self.way_in) == 1:
            goal = self.grasp
        return goal

    def _reached(
        self,
        phase: Phase,
        error: np.ndarray,
        yaw: float,
        turning: bool,
        leaving: bool,
        still: bool,
    ) -> bool | np.bool_:
        """Whether the phase has reached its goal, ``error`` away: near enough, on its finger
        line where it turns, and, carried into a slot or laid down, held as it is let go."""
        return {
            Phase.ABOVE: (
                np.linalg.norm(error) < (PASS if self.way_in else REACHED) and abs(yaw) < ON_LINE
            ),
            Phase.DESCEND: np.linalg.norm(error) < SEATED and len(self.way_in) != 2,
            Phase.CLOSE: False,
            Phase.LIFT: not leaving
            and abs(error[2]) < REACHED
            and (not turning or abs(yaw) < ON_LINE),
            Phase.CARRY: (
                np.linalg.norm(error[:2]) < REACHED
                and (not turning or abs(yaw) < ON_LINE)
                and still
                and self._laid_down()
            ),
            Phase.LOWER: np.linalg.norm(error) < REACHED,
            Phase.RELEASE: False,
            Phase.RETREAT: False,
        }[phase]

    def _next_phase(self, phase: Phase, done: bool | np.bool_, error: np.ndarray) -> None:
        """On to the next phase once ``done``; a descent held up short of the grasp by an arm
        link touching something leans the hand away from the touch and goes over it again."""
        if phase == Phase.DESCEND and self.tilted is None:
            self.touched = self._arm_touch() if self.touched is None else self.touched
        held_up = done and phase == Phase.DESCEND and np.linalg.norm(error) > STALLED
        if held_up and self.touched is not None and self.tilted is None:
            self.tilted = self._lean(self.touched)  # held up by the arm: lean away, down again
            self.enter(Phase.ABOVE)
        else:
            self.advance(done)

    def _hold(
        self, action: np.ndarray, phase: Phase, eef: np.ndarray, grasping: tuple[Phase, ...]
    ) -> None:
        """The turn of ``action`` that holds the hand tilted or the object laid down, where the
        step plans either; otherwise the turn ``move`` gave it stays."""
        far = (
            self.way_in
            and phase == Phase.ABOVE
            and np.linalg.norm(self.way_in[0] - eef) > TILT_NEAR
        )
        if self.tilted is not None and not far:
            # The step's whole way, the object held as it was taken; taken from under an
            # overhang, from near the way in.
            action[3:6] = turn_action(self.grip.turn_to(self.tilted))
        elif self.laid is not None and phase not in grasping:  # laid once lifted, then back
            orientation = self.upright if phase == Phase.RETREAT else self.laid
            action[3:6] = turn_action(self.grip.turn_to(orientation))

    def _slide_in(self, eef: np.ndarray, way: tuple[np.ndarray, float]) -> np.ndarray:
        """The step once lifted, into a covered space by ``way`` (``slide``); once let
        go, the step's retreat."""
        if self.slide is None:  # planned as the object is held
            sim = self.env.sim
            body = self.env.obj_body_id[self.obj]
            region = region_box(self.env, self.target)
            origin = np.array(sim.data.xpos[body])
            # By its handle, the body ahead along the way in: in as it hangs (slide).
            ahead = self.by_handle and float((origin - self.grip.position())[:2] @ way[0][:2]) > 0
            self.slide = SlideIn(
                self.grip,
                self.fingers.direction(),
                way,
                region,
                body_box(sim, body),
                origin,
                as_held=ahead,
            )
            if not ahead and self._floor_before(region, way[1], self.slide.front):
                self.tip = TipIn(self.grip, way, region, eef[2])
        if self.tip is not None:
            return self._tip_in(eef, self.tip)
        turn = self.grip.turn_to(self.slide.orientation)
        goal, grip = self.slide.goal(eef, float(np.linalg.norm(turn)), CLEARANCE)
        if self.slide.phase == "out":
            self.enter(Phase.RETREAT, self.count + 1)
        action = move(goal - eef, grip)
        action[3:6] = turn_action(turn)
        return action

    def _floor_before(self, region: Box, floor: float, front: np.ndarray) -> bool:
        """Whether the space's floor runs on under the hand before the opening (the table, under
        a shelf with no bottom board) and the hand, turned to slide the object in (its finger
        line upright), would reach below it there (``tip``). Where the floor is a board
        that ends at the opening, the hand reaches below it outside (libero_90/86, /88)."""
        return front[2] - HAND_HALF_LENGTH < floor and any(
            abs(part.high[2] - floor) < 0.001
            and np.all(part.low[:2] <= np.minimum(front[:2], region.centre[:2]))
            and np.all(part.high[:2] >= np.maximum(front[:2], region.centre[:2]))
            for parts in self._bodies().values()
            for part in parts
        )

    def _tip_in(self, eef: np.ndarray, tip: TipIn) -> np.ndarray:
        """The step once lifted, tipped over before a space too low for the hand and pushed in
        (``tip``); once it has pushed, the step's retreat."""
        box = body_box(self.env.sim, self.env.obj_body_id[self.obj])
        goal, grip, orientation = tip.goal(eef, box, self._turn_left, self.holds)
        if tip.phase == "out":
            self.enter(Phase.RETREAT, self.count + 1)
        action = move(goal - eef, grip)
        action[3:6] = turn_action(self.grip.turn_to(orientation))
        return action

    def _turn_left(self, orientation: Rotation) -> float:
        """Radians the hand is from ``orientation``."""
        return float(np.linalg.norm(self.grip.turn_to(orientation)))

    def _laid_down(self) -> bool:
        """Whether the hand holds the object as it is to be let go (always, unless laid)."""
        return self.laid is None or self._turn_left(self.laid) < ON_LINE
