"""Scripted pushes that move LIBERO's articulated objects: drawers, a microwave door, a stove knob.

A goal predicate ``(Close wooden_cabinet_1_top_region)``, ``(Close microwave_1)``,
``(TurnOn flat_stove_1)`` or ``(TurnOff flat_stove_1)`` names an object (or an object's region)
whose joints LIBERO checks against the ranges its object class declares. The expert reads the joint
from the simulator (slide or hinge, its world axis and anchor, the moving body's collision geoms)
and picks the point to push: a drawer's front, or near the far end of a hinged part's tallest
geom (the knob's raised pointer, the door's frame). A drawer is pushed by the closed fingers, the
hand turned so that its thin side leads; a hinged part between the open fingers, turned along its
arc, by the trailing finger's inner face. Above the start point, down beside it, then a push
re-aimed every step from where that point is now (along the slide, or around the hinge) until
LIBERO's own predicate holds or the joint stops moving; then back out and up. A part the push
did not finish (a door nearly shut, where the leading finger has no room) is pushed once more,
by the closed fingers; a drawer, with the hand leaned forward into the push (``PUSH_LEAN``), its
wrist and forearm back and down from a cabinet's top that overhangs the drawer (the white
cabinet's bottom drawer, where the upright arm's forearm meets the top's edge).

Opening is a pull by the handle: a drawer's (``pull``), the microwave's door's
(``door``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    CLEARANCE,
    FINGER_HALF_SPAN,
    ON_LINE,
    PUSH_AGAIN_AFTER,
    PUSH_BACK_OFF,
    PUSH_BELOW_TOP,
    PUSH_BUDGET,
    PUSH_FINGER_IN,
    PUSH_LEAD,
    PUSH_LEAN,
    PUSH_OUT_ALONG,
    PUSH_PROGRESS,
    PUSH_STANDOFF,
    REACHED,
    RELEASED_AFTER,
    SEATED,
    SLIDE_JOINT,
    STALL_WINDOW,
    TURN_BACK_STEPS,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    FingerAxis,
    GripSite,
    ahead_on_arc,
    body_box,
    collides,
    joint_goal,
    move,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.phases import PhaseMachine

#: The predicates these pushes make true, and which end of the object's range each aims for.
PUSHES = {"close": "default_close_ranges", "turnon": "default_turnon_ranges",
          "turnoff": "default_turnoff_ranges"}  # fmt: skip


class JointPushExpert(PhaseMachine[str]):
    """Pushes one articulated object until its goal predicate holds; ``act(eef_pos)`` gives the
    next 7-D action."""

    PHASES = ("above", "descend", "push", "back", "retreat")
    BUDGET = PUSH_BUDGET

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj = goal
        self.joint_name, self.goal_qpos = joint_goal(env, self.obj, PUSHES[self.kind])

    def reset(self) -> None:
        model = self.env.sim.model._model
        self.joint = self.env.sim.model.joint_name2id(self.joint_name)
        self.body = int(model.jnt_bodyid[self.joint])
        self.slide = int(model.jnt_type[self.joint]) == SLIDE_JOINT
        self.fingers = FingerAxis(self.env)
        self.home = self.fingers.direction()  # turned back to this after the push
        # A hinge's part (a knob's pointer, a door's edge) is first pushed between the open
        # fingers, turned to the way it moves, by the trailing finger's flat inner face; a
        # drawer, and a hinge's part on the second try (a door nearly shut, where the leading
        # finger has no room), by the closed fingers' front.
        self.attempts = 0
        self.grip = GripSite(self.env)
        self.upright = self.grip.orientation()  # as the step began
        self._plan(straddle=not self.slide)

    def _qpos(self) -> float:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        return float(data.qpos[model.jnt_qposadr[self.joint]])

    def _plan(self, straddle: bool) -> None:
        model, data = self.env.sim.model._model, self.env.sim.data._data
        qpos = self._qpos()
        self.sign = 1.0 if self.goal_qpos > qpos else -1.0
        point = self._contact_point(model, data)
        # The pushed point, kept in the moving body's frame so it follows the part.
        rotation = data.xmat[self.body].reshape(3, 3)
        self.local = rotation.T @ (point - data.xpos[self.body])
        direction = self._direction(point)
        self.open = straddle
        # The trailing finger about a centimetre behind the pushed part.
        thickness = float(np.abs(direction) @ self.half_thickness) if straddle else 0.0
        self.ahead = FINGER_HALF_SPAN - thickness - PUSH_FINGER_IN if straddle else -PUSH_STANDOFF
        self.start = point + self.ahead * direction
        # The closed fingers push across the hand's thin side: the hand is about 20 cm long
        # along the finger line, and would meet a cabinet before its drawer closes.
        across = np.array([-direction[1], direction[0], 0.0])
        self.push_line = direction if straddle else across
        self.pushed_from = self.start
        self.enter()
        self.progress = qpos
        self.attempts += 1
        self.leaned: Rotation | None = None
        if self.slide and self.attempts > 1:
            # The fingers' line onto the push's, then tilted toward the push from where they are.
            now = self.grip.orientation()
            tilt = np.cross([0.0, 0.0, -1.0], direction)
            self.leaned = (
                Rotation.from_rotvec(tilt / np.linalg.norm(tilt) * PUSH_LEAN)
                * Rotation.from_rotvec([0.0, 0.0, self.fingers.yaw_to(self.push_line)])
                * now
            )

    def _contact_point(self, model: Any, data: Any) -> np.ndarray:
        box = body_box(self.env.sim, self.body, affinity=True)
        self.half_thickness = np.zeros(3)  # the pushed geom's half extents (hinges)
        axis = np.array(data.xaxis[self.joint])
        if self.slide:
            # The face that leads the motion's opposite side: push the drawer's front in.
            push = self.sign * axis
            point = box.centre - push * (np.abs(push) @ box.size) / 2
            return point
        # A hinge: the tallest collision geom (a knob's pointer, a door's frame), near its end
        # farthest from the axis, a little below its top so the fingers meet its side.
        anchor = np.array(data.xanchor[self.joint])
        best, best_top = box.centre, -np.inf
        for geom in range(model.ngeom):
            if model.geom_bodyid[geom] != self.body or not collides(model, geom, affinity=True):
                continue
            rotation = data.geom_xmat[geom].reshape(3, 3)
            centre = data.geom_xpos[geom] + rotation @ model.geom_aabb[geom][:3]
            half = np.abs(rotation) @ model.geom_aabb[geom][3:]
            if centre[2] + half[2] <= best_top:
                continue
            radial = centre - anchor
            radial -= (radial @ axis) * axis
            outward = radial / max(float(np.linalg.norm(radial)), 1e-9)
            best = centre + outward * (np.abs(outward) @ half) * PUSH_OUT_ALONG
            best[2] = centre[2] + half[2] - PUSH_BELOW_TOP
            best_top = centre[2] + half[2]
            self.half_thickness = half
        return best

    def _direction(self, point: np.ndarray) -> np.ndarray:
        """Unit direction the pushed point moves as the joint goes toward its goal."""
        data = self.env.sim.data._data
        axis = np.array(data.xaxis[self.joint])
        if self.slide:
            return self.sign * axis
        tangent = np.cross(axis, point - np.array(data.xanchor[self.joint]))
        tangent[2] = 0.0
        return self.sign * tangent / max(float(np.linalg.norm(tangent)), 1e-9)

    def _point(self) -> np.ndarray:
        data = self.env.sim.data._data
        return data.xpos[self.body] + data.xmat[self.body].reshape(3, 3) @ self.local

    def _aim(self) -> np.ndarray:
        point = self._point()
        if self.slide:
            return point + (PUSH_LEAD + self.ahead) * self._direction(point)
        ahead = ahead_on_arc(self.env.sim.data._data, self.joint, point, self.sign * PUSH_LEAD)
        return ahead + self.ahead * self._direction(point)

    @property
    def released(self) -> bool:
        """The push is over, and the gripper has moved back up and turned back to the yaw it had
        when the step began (after a leaned push, the whole orientation), or has tried to for 30
        steps."""
        if not self.finishing(RELEASED_AFTER):
            return False
        if self.leaned is not None:
            off = float(np.linalg.norm(self.grip.turn_to(self.upright)))
        else:
            off = abs(self.fingers.yaw_to(self.home, directed=True))
        return off < ON_LINE or self.count > TURN_BACK_STEPS

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj]))

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.phase
        if phase == "above":
            goal = self.start + np.array([0.0, 0.0, CLEARANCE])
        elif phase == "descend":
            goal = self.start
        elif phase == "push":
            goal = self._aim()
        elif phase == "back":
            goal = self.pushed_from
        else:
            goal = np.array([eef[0], eef[1], self.pushed_from[2] + CLEARANCE])
        error = goal - eef
        if phase == "retreat":
            yaw = self.fingers.yaw_to(self.home, directed=True)
        else:
            yaw = self.fingers.yaw_to(self.push_line)
        turn = None
        if self.leaned is not None:  # leaned into the push, then back as the step began
            turn = self.grip.turn_to(self.leaned if phase != "retreat" else self.upright)
            yaw = float(np.linalg.norm(turn))  # how far off: what the phases' checks read
        self.tick()
        if phase in ("above", "back"):
            reached = np.linalg.norm(error) < REACHED and (phase == "back" or abs(yaw) < ON_LINE)
        elif phase == "descend":
            reached = np.linalg.norm(error) < SEATED
        else:
            reached = phase == "push" and (self.holds() or self._stalled())
        unfinished = phase == "retreat" and self.count > PUSH_AGAIN_AFTER and not self.holds()
        if unfinished and self.attempts < 2:
            self._plan(straddle=False)  # once more, from where the part is now
        elif self.advance(reached) and phase == "push":
            # A drawer: back off the way the fingers came; straddling fingers go straight up
            # (moving back would pull the part with the leading finger).
            back = 0.0 if self.open else PUSH_BACK_OFF
            self.pushed_from = eef - back * self._direction(self._point())
        action = move(error, -1.0 if self.open else 1.0, yaw)
        if turn is not None:
            action[3:6] = turn_action(turn)
        return action

    def _stalled(self) -> bool:
        """No progress of the joint over the last ``STALL_WINDOW`` steps."""
        if self.count % STALL_WINDOW:
            return False
        qpos = self._qpos()
        moved, self.progress = self.sign * (qpos - self.progress), qpos
        return moved < PUSH_PROGRESS
