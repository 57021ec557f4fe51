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
by the closed fingers; a drawer, with the hand leaned forward into the push (``LEAN``), its wrist
and forearm back and down from a cabinet's top that overhangs the drawer (the white cabinet's
bottom drawer, where the upright arm's forearm meets the top's edge).

Opening is a pull by the handle: a drawer's (``libero_pull_expert``), the microwave's door's
(``libero_door_expert``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.motion import (
    CLEARANCE,
    ON_LINE,
    FingerAxis,
    GripSite,
    ahead_on_arc,
    body_box,
    collides,
    joint_goal,
    move,
    turn_action,
)

#: The predicates these pushes make true, and which end of the object's range each aims for.
PUSHES = {"close": "default_close_ranges", "turnon": "default_turnon_ranges",
          "turnoff": "default_turnoff_ranges"}  # fmt: skip

SLIDE = 2  # mujoco.mjtJoint.mjJNT_SLIDE
STANDOFF = 0.035  # metres behind the pushed point where the closed fingers come down
#: Open, the fingers stand this far either side of the gripper's centre along y; a knob's
#: pointer is pushed by the inner face of the trailing finger, the pointer between the fingers.
FINGER_HALF_SPAN = 0.04
LEAD = 0.045  # metres the push aims ahead of the pushed point (along the arc for hinges)
RETREAT = 0.06  # metres back from the pushed point after the push
#: Radians a drawer's second push tilts the fingers toward the push, beyond where the first
#: left them (libero_90/22: about 57 degrees from straight down, the first push about 12).
LEAN = np.pi / 4


class JointPushExpert:
    """Pushes one articulated object until its goal predicate holds; ``act(eef_pos)`` gives the
    next 7-D action."""

    PHASES = ("above", "descend", "push", "back", "retreat")

    def __init__(self, env: Any, goal: tuple[str, ...]) -> None:
        self.env = env  # LIBERO's problem env (ControlEnv.env)
        self.kind, self.obj = goal
        self.joint_name, self.goal_qpos = joint_goal(env, self.obj, PUSHES[self.kind])

    def reset(self) -> None:
        model = self.env.sim.model._model
        self.joint = self.env.sim.model.joint_name2id(self.joint_name)
        self.body = int(model.jnt_bodyid[self.joint])
        self.slide = int(model.jnt_type[self.joint]) == SLIDE
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
        self.ahead = FINGER_HALF_SPAN - thickness - 0.012 if straddle else -STANDOFF
        self.start = point + self.ahead * direction
        # The closed fingers push across the hand's thin side: the hand is about 20 cm long
        # along the finger line, and would meet a cabinet before its drawer closes.
        across = np.array([-direction[1], direction[0], 0.0])
        self.push_line = direction if straddle else across
        self.pushed_from = self.start
        self.phase, self.count, self.progress = 0, 0, qpos
        self.attempts += 1
        self.leaned: Rotation | None = None
        if self.slide and self.attempts > 1:
            # The fingers' line onto the push's, then tilted toward the push from where they are.
            now = self.grip.orientation()
            tilt = np.cross([0.0, 0.0, -1.0], direction)
            self.leaned = (
                Rotation.from_rotvec(tilt / np.linalg.norm(tilt) * LEAN)
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
            best = centre + outward * (np.abs(outward) @ half) * 0.7
            best[2] = centre[2] + half[2] - 0.02
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
            return point + (LEAD + self.ahead) * self._direction(point)
        ahead = ahead_on_arc(self.env.sim.data._data, self.joint, point, self.sign * LEAD)
        return ahead + self.ahead * self._direction(point)

    @property
    def released(self) -> bool:
        """The push is over, and the gripper has moved back up and turned back to the yaw it had
        when the step began (after a leaned push, the whole orientation), or has tried to for 30
        steps."""
        if self.PHASES[min(self.phase, len(self.PHASES) - 1)] != "retreat" or self.count <= 5:
            return False
        if self.leaned is not None:
            return (
                float(np.linalg.norm(self.grip.turn_to(self.upright))) < ON_LINE or self.count > 30
            )
        return abs(self.fingers.yaw_to(self.home, directed=True)) < ON_LINE or self.count > 30

    def holds(self) -> bool:
        return bool(self.env._eval_predicate([self.kind, self.obj]))

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.PHASES[min(self.phase, len(self.PHASES) - 1)]
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
        self.count += 1
        done = {
            "above": (np.linalg.norm(error) < 0.01 and abs(yaw) < ON_LINE) or self.count > 60,
            "descend": np.linalg.norm(error) < 0.006 or self.count > 40,
            "push": self.holds() or self._stalled(),
            "back": np.linalg.norm(error) < 0.01 or self.count > 20,
            "retreat": False,
        }[phase]
        if phase == "retreat" and self.count > 10 and not self.holds() and self.attempts < 2:
            self._plan(straddle=False)  # once more, from where the part is now
        elif done:
            if phase == "push":
                # A drawer: back off the way the fingers came; straddling fingers go straight
                # up (moving back would pull the part with the leading finger).
                back = 0.0 if self.open else RETREAT
                self.pushed_from = eef - back * self._direction(self._point())
            self.phase, self.count = self.phase + 1, 0
        action = move(error, -1.0 if self.open else 1.0, yaw)
        if turn is not None:
            action[3:6] = turn_action(turn)
        return action

    def _stalled(self) -> bool:
        """No progress of the joint over the last 25 steps, or 150 steps of pushing."""
        if self.count % 25:
            return self.count > 150
        qpos = self._qpos()
        moved, self.progress = self.sign * (qpos - self.progress), qpos
        return moved < 0.005 or self.count > 150
