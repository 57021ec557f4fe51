"""The pick-and-place step of LIBERO's scripted expert: ``(On OBJECT TARGET)``, ``(In OBJECT
REGION)``, and an object moved out of a drawer's way (``AsideExpert``).

Each step it computes the next action in LIBERO's own action space (``libero_motion``) from
privileged state: approach above the object, descend, close, lift, carry above the target,
lower, open.

The Panda's fingers close along the world y axis with the default (downward) orientation, so a
narrow object is grasped across y at its centre, and an object wider than the open gripper (a
bowl) by its rim, offset along y. The hand is about 20 cm long along its finger line: where a
body standing wholly above the object (a cabinet's top) lies in that footprint and not in the
footprint turned a quarter, the hand turns so that its fingers close along x, and the grasp is
on the rim nearer the robot. Into a drawer the same holds at the place, with the hand as it will
hold the object there (the white cabinet's face above its open bottom drawer), each way's place
moved out along the drawer, as far as its region allows, until it is clear; an object the turned
hand cannot take, longer along x than the open fingers (a pudding box), is taken along y and
turned a quarter as it is carried, steered by its origin. Where something
standing beside a narrow object rises into the hand's footprint (a bottle beside a flat box),
the grasp slides along the object's length to the nearest place clear of it, and where no place
square across it is clear, to the nearest one turned off square (``libero_rim``); the hand comes
in over what stands taller than its approach within a few centimetres of the grasp. A moka pot or a
frying pan, wider than the open fingers every way and with no rim to take, is taken by its
handle: its thin part that stands out farthest from its centre of mass, the fingers closing
across it. An upright object too wide for the fingers along either world axis only because it
stands turned (a book at a slant) is taken across its own thin axis. Into a compartment, one of
several its parent holds things in (a caddy's slots, a few millimetres wider than a book), the
object turns as it rises, onto the line and to the place that keep it farthest from the walls,
and goes down once the hand is still, its bottom steered over that place however it hangs in the
fingers. Onto a region another object already stands on (the second of two moka pots onto one
stove), it goes to the nearest place beside it. A step after another pick-and-place keeps the
fingertips above the body that step placed on or in (a basket just filled) until they are clear
of it. An object at the arm's full reach, to be carried back toward the arm's base, is taken
with the hand tilted, fingertips away from the base, so the elbow never straightens. An object
that, standing in a drawer, would hold its origin (what LIBERO's ``In`` reads) above the drawer's
region, is laid down in it: turned about the finger line once lifted. A rim whose usual grasp
would put an open finger on a wall (a bowl in a drawer) is taken round the rim, where the open
gripper meets nothing (``libero_rim``). Into a space covered from above and open on one side, the
object goes in from that side (``libero_slide``), or, where the space is too low for the hand and
its floor is the table, is tipped over before it and pushed in (``libero_tip``). A hand held up
short of the grasp by the arm resting on something (a cabinet's top beside the object) rises and
comes down again leaning away from it.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.motion import (
    CLEARANCE,
    ON_LINE,
    Box,
    FingerAxis,
    GripSite,
    body_box,
    body_tree,
    collides,
    geom_box,
    geom_boxes,
    joint_goal,
    local_box,
    move,
    region_box,
    region_extent,
    turn_action,
)
from pytest_benchmarks.envs.libero.expert.pull import opened_box
from pytest_benchmarks.envs.libero.expert.rim import (
    REACH_IN,
    Scene,
    along_the_handle,
    gripper_meets,
    round_the_rim,
    site_frame,
    under_the_rim,
)
from pytest_benchmarks.envs.libero.expert.slide import SlideIn, opening
from pytest_benchmarks.envs.libero.expert.tip import TipIn

ASIDE = "aside"  # a planned step, no BDDL predicate: an object moved out of a drawer's way
CONTAIN = "_contain_region"  # a region objects are put into (a basket's, a caddy slot's)
GRIPPER_SPAN = 0.075  # widest object the open fingers take across their line, in metres
#: The hand's footprint about the grasp point: about 20 cm long along the finger line, 9 cm
#: across; and how far above the fingertips the hand and wrist reach.
HAND_HALF_LENGTH, HAND_HALF_WIDTH, HAND_HEIGHT = 0.10, 0.045, 0.25
#: The hand itself (not the wrist): how far it reaches across the finger line (its 7 cm, and
#: half a centimetre to spare) and above the fingertips' centre; how far inside an object's ends
#: the fingers (1.7 cm wide) close on it.
HAND_SIDE, HAND_BOTTOM, HAND_TOP, FINGER_END = 0.04, 0.024, 0.126, 0.012
#: Objects taken by their handle: wider than the open fingers every way, and with no rim to
#: take (the moka pot's lid is shut; the pan's rim is as low as its handle, a long lever away).
#: A mug's rim is taken as a bowl's (libero_10/4: 50/50). A handle is at most this wide across
#: the fingers, and stands this far beyond the body.
BY_HANDLE = ("moka_pot", "frypan")
HANDLE_WIDTH, HANDLE_OUT = 0.03, 0.03
ROBOT_PARTS = ("robot0_", "gripper0_", "mount0_")
ASIDE_GAP = 0.03  # metres an object moved aside is left clear of the opened drawer
#: Metres an object moved aside may also step across the way it clears the drawer (0 first).
ASIDE_ACROSS = (0.0, *(k * s * 0.02 for k in range(1, 7) for s in (1.0, -1.0)))
SLOT_MARGIN = 0.005  # least metres kept between an object and a compartment's walls
#: Metres kept between objects the goal puts on one region, and between an object's origin (what
#: LIBERO's ``On`` of a region reads) and the region's edge.
SHARED_GAP, REGION_MARGIN = 0.01, 0.015
SLOT_TURN = np.pi / 12  # the steps in which an object may turn to fit a compartment
UPRIGHT = 0.95  # the cosine of the largest tilt at which an object counts as standing upright
STILL = 0.001  # metres per step under which the hand counts as at rest
#: How far the open fingers reach from the hand's centre; how far above a body they pass.
OPEN_REACH, OVER = 0.05, 0.03
#: Traced (libero_10/1: the cream cheese, 1.8 cm tall, with the milk carton, 13 cm, standing
#: 3-4 cm beside it): the hand came in at 10 cm above the grasp, below the carton's top, and its
#: open finger struck the carton, moved it some centimetres and came to rest on its side and top.
#: The hand comes in over what stands within ``BESIDE_REACH`` (metres, horizontally) of the
#: grasp: over its top by ``OVER``, where that is higher.
BESIDE_REACH = 0.07
#: Metres within which the hand taken tilted from under an overhang passes its way points (not
#: the grasp: stopped at each within 1 cm, libero_goal/3 ran past its suite's 300 steps), and
#: radians off its tilt at which it counts as turned, to go down its way in.
PASS, TURNED = 0.03, 0.1
#: Traced (libero_goal/3): the tilted hand turned all its way over to the way in stalled where the
#: arm starts it straight (the drawer just pulled, 0.77 m out); let drift on the way, it came up
#: to 1.4 rad off and turning it there pushed it off the way. It turns within ``NEAR`` metres of
#: the way in.
NEAR = 0.12
SUPPORT = 0.005  # metres above an object's bottom below which a geom is what it stands on
#: Traced (libero_90/84: the mug 0.78 m from the arm's base, to go 0.39 m back toward it): a
#: hand pointing straight down grasps there with the arm straight, its elbow at the joint's
#: limit, and LIBERO's operational-space controller, asked to draw it straight back, only swings
#: it about the shoulder: the carry stalls. So it does in libero_90/13 and /16 (the bowl at the
#: front 0.76-0.80 m out, to go 10-16 cm back: 25/50 and 19/50), where only some arms bend as
#: they go; arms that carry sideways, or back by up to 9 cm, do (libero_spatial/6, /8). A grasp
#: beyond ``FAR_REACH`` (metres from the base, horizontally) whose place lies more than
#: ``FAR_BACK`` back toward the base is taken with the hand tilted ``REACH_TILT`` radians,
#: fingertips away from the base: the wrist stays back and the elbow bent.
FAR_REACH, FAR_BACK, REACH_TILT = 0.75, 0.09, 0.3
#: Traced (libero_90/30, episodes 2, 3, 6 and 8: the bowl 2-5 cm beside the white cabinet, whose
#: top stands 10-17 cm over its rim): the arm's forearm comes to rest on the cabinet's top with
#: the fingers 3-5 cm over the rim. Where the hand is held up so (more than ``STALLED`` metres
#: short of the grasp when its descent times out, an arm link touching something), it rises and
#: comes down again once, tilted ``LEAN`` radians about its finger line with its fingertips
#: toward what the arm touched, the wrist and forearm leaning away (0.25 and 0.4 alike).
STALLED, LEAN = 0.02, 0.25
ARM_LINKS = "robot0_link"
#: Traced (libero_90/32: the ketchup into the white cabinet's top drawer): LIBERO's ``In`` of a
#: drawer reads the object's origin, and a bottle standing in the drawer holds it 1.5 cm above
#: the region's top. An object that cannot stand in a drawer with its origin inside the region is
#: laid down: tilted ``LAY_TILT`` radians about the finger line once lifted, fingertips away from
#: the arm's base, and let go with its lowest point just above the drawer's walls.
LAY_TILT = 1.1
ALONG_X, ALONG_Y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])


def _overlap(part: Box, box: Box, margin: float = 0.0) -> bool:
    """Whether two boxes overlap horizontally, with ``margin`` to spare."""
    return bool(
        np.all(part.low[:2] < box.high[:2] + margin)
        and np.all(part.high[:2] > box.low[:2] - margin)
    )


class PickPlaceExpert:
    """The per-episode state machine; ``act(eef_pos)`` gives the next 7-D action."""

    PHASES = ("above", "descend", "close", "lift", "carry", "lower", "release", "retreat")

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
        self._plan()

    def _plan(self) -> None:
        """The step planned from where the objects are now (``excluded`` worked out)."""
        sim = self.env.sim
        self.grip = GripSite(self.env)
        self.upright = self.grip.orientation()  # as the step began
        box = body_box(sim, self.env.obj_body_id[self.obj])
        own = local_box(sim.model._model, sim.data._data, self.env.obj_body_id[self.obj])
        self.compartment = self._compartment()
        self.by_handle = False  # taken by its handle
        #: Taken tilted from under an overhang: the hand's orientation, the way points it passes
        #: on its way down to the grasp and up from it with the object (``_tilted_way``).
        self.under: Rotation | None = None
        self.way_in: list[np.ndarray] = []
        self.way_out: list[np.ndarray] = []
        # Fingers along y, unless something overhead (a cabinet's top) stands in the long
        # hand's way there and not with the hand turned a quarter, fingers along x.
        bodies = self._bodies()
        overhead = self._overhead(box, bodies)
        # Into a drawer, the same at the place (the hand as it will hold the object there), the
        # place moved out along the drawer as far as its region allows, should that clear it.
        hits = [self._hits(overhead, self._grasp_point(box, a), a) for a in (0, 1)]
        out = [np.zeros(2), np.zeros(2)]
        #: Where the hand turns a quarter on its way, to fingers along x at the place: the shift
        #: of the place out along the drawer; None where it does not.
        self.quarter: np.ndarray | None = None
        if getattr(self.env.object_sites_dict.get(self.target), "joints", None):
            clear = [self._drawer_place(box, bodies, a) for a in (0, 1)]
            hits = [hit or clear[a] is None for a, hit in enumerate(hits)]
            out = [np.zeros(2) if shift is None else shift for shift in clear]
            if hits[1] and not hits[0] and box.size[0] > GRIPPER_SPAN >= box.size[1]:
                # The hand would turn, and along x the object is too long to take (libero_90/5's
                # pudding, 8 cm): taken along y, turned a quarter as it is carried, the hand
                # over its centre at the place.
                self.quarter = self._drawer_place(box, bodies, 0, taken=1)
        self.turned = hits[1] and not hits[0] and self.quarter is None
        self.fingers = FingerAxis(self.env)
        self.line = ALONG_X if self.turned else ALONG_Y
        # Turn only when needed (a turned object, or a hand a step before left turned), so a
        # hand already along y gets exactly the actions it always had.
        self.steer = self.turned or abs(self.fingers.yaw_to(ALONG_Y)) > ON_LINE
        across = 0 if self.turned else 1
        self.grasp = self._grasp_point(box, across)
        if box.size[across] <= GRIPPER_SPAN:  # across its centre: it may slide along its length
            parts = [part for parts in bodies.values() for part in parts]
            self.grasp, clear = self._slid_clear(box, self.grasp, across, parts)
            if not clear:
                # Nowhere clear square across it (libero_10/1: wherever the hand is square
                # across the cream cheese, its palm reaches over the milk carton beside it):
                # along it and turned off square, the gripper modelled closely, the surface the
                # object stands on left out.
                scene = self.scene().above(box.low[2] + SUPPORT)
                half = box.size[1 - across] / 2
                centre = self._grasp_point(box, across)
                if (clear := along_the_handle(scene, centre, half, self.line)) is not None:
                    self.line, self.grasp = clear
                    self.steer = True
        elif any(kind in self.obj for kind in BY_HANDLE) and (handle := self._handle()):
            # Too wide to take either way, no rim to take: by the handle that stands out.
            across = int(np.argmin(handle.size[:2]))
            self.turned, self.steer, self.by_handle = across == 0, True, True
            self.line = ALONG_X if self.turned else ALONG_Y
            self.grasp = handle.centre.copy()
            half = handle.size[1 - across] / 2  # along the handle
            if (clear := along_the_handle(self.scene(), self.grasp, half, self.line)) is not None:
                self.line, self.grasp = clear  # the hand clear of what stands beside the handle
        elif not self.turned and (slanted := self._slanted(box, own)) is not None:
            # Too wide either way only because it stands at a slant (a book): across its own
            # thin axis, the finger line turned onto it.
            self.line, self.grasp = slanted
            self.turned, self.steer = False, True
        elif (rim := self._rim(box, across)) is not None:
            # A rim hemmed in by walls (a bowl in a drawer): round it to where the fingers fit.
            self.line, self.grasp = rim
            self.turned, self.steer = False, True
        elif (under := self._under(box, across, overhead)) is not None:
            # Under what overhangs it (a drawer pulled open over half a bowl): the hand tilted,
            # its wrist leaning out from under, in and out along its own axis.
            self.line, self.grasp, tilt, over = under
            self.turned, self.steer = False, True
            self._tilted_way(box, over, tilt)
        self.below_grasp = self.grasp[2] - box.low[2]  # object bottom under the fingers
        self.over_beside = self._over_beside(bodies, overhead)
        # The body the step before placed its object on or in (the basket it has just filled),
        # which the hand starts over, to keep above.
        start = self.grip.position()
        before = self._body_of(self.after) if self.after else None
        self.leaving = [
            parts
            for body, parts in bodies.items()
            if body == before and any(self._near(part, start) for part in parts)
        ]
        self.offset_xy = self.grasp[:2] - box.centre[:2]
        self.base = np.array([*own.centre[:2], own.low[2]])  # its bottom face's centre, its frame
        self.place_line, self.slot = self._slot(own)
        if self.quarter is not None:
            self.place_line = ALONG_X
        # How far off its usual place the object goes: beside what stands on the region,
        # out along a drawer.
        self.shift = self._beside(box) + (
            out[0 if self.turned else 1] if self.quarter is None else self.quarter
        )
        # Taken by its handle, the object swings in the fingers as it is carried, its origin (what
        # LIBERO's checks read) well off its box's centre: it is steered by its origin to where
        # the box's centre would put it, and no farther than the region allows (``_beside``).
        # So is an object turned a quarter on its way: its centre turns about the fingers.
        turns = self.by_handle or self.quarter is not None
        self.origin_goal = self._lands(box) + self.shift if turns else None
        self.last_eef = np.zeros(3)
        self.steer = self.steer or self.place_line is not self.line
        self.tilted = self.under
        if self.tilted is None and not self.steer:
            self.tilted = self._tilt()
        self.laid = None if self.steer else self._lay(box)
        self.way = self._way(bodies)
        self.over_way = self._over_way(box, bodies)
        self.slide: SlideIn | None = None
        self.tip: TipIn | None = None
        self.touched: np.ndarray | None = None  # where an arm link touched on the way down
        self.phase, self.count = 0, 0

    def _under(
        self, box: Box, across: int, overhead: list[Box]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Box]] | None:
        """``libero_rim.under_the_rim`` where something overhead stands over the object and the
        hand pointing straight down at the usual rim grasp meets the scene, with the parts that
        overhang it; None otherwise."""
        over = [p for p in overhead if _overlap(p, box)]
        if not over or box.size[across] <= GRIPPER_SPAN:
            return None
        scene = self.scene()
        if not gripper_meets(scene, self.grasp, self.line):
            return None
        away = self._from_base()
        top = max(p.high[2] for p in over) + OVER
        radius = box.size[across] / 2
        away = away / np.linalg.norm(away)
        found = under_the_rim(scene, box.centre, radius, self.grasp[2], self.line, away, top)
        return None if found is None else (*found, over)

    def _tilted_way(self, box: Box, over: list[Box], tilt: np.ndarray) -> None:
        """The tilted hand's orientation and way, for a grasp from ``_under``: down over the
        place ``REACH_IN`` back along its axis from the grasp (from the height that clears what
        overhangs), in along its axis; out with the object in one straight move, back along its
        axis and on toward the arm's base until the object clears what overhangs it, before it
        is lifted."""
        frame = tilt @ site_frame(self.line)
        pointing = frame[:, 2]
        # Of the two hands with this finger line, the one nearer the hand as it is.
        turned = frame * np.array([-1.0, -1.0, 1.0])
        now = self.grip.orientation()
        options = [Rotation.from_matrix(f) for f in (frame, turned)]
        self.under = min(options, key=lambda o: float(np.linalg.norm((o * now.inv()).as_rotvec())))
        entry = self.grasp - pointing * REACH_IN
        top = max(p.high[2] for p in over) + OVER
        self.way_in = [np.array([entry[0], entry[1], max(top, entry[2])]), entry]
        back = -pointing[:2] / np.linalg.norm(pointing[:2])
        shift = entry - self.grasp
        out = entry
        for d in np.arange(0.0, 0.3, 0.01):
            moved = Box(box.low + shift + [*(back * d), 0.0], box.high + shift + [*(back * d), 0.0])
            if not any(_overlap(p, moved, OVER) for p in over):
                out = entry + np.array([*(back * d), 0.0])
                break
        self.way_out = [out]

    def _way(self, bodies: dict[int, list[Box]]) -> tuple[np.ndarray, float] | None:
        """``libero_slide.opening`` of an ``In`` of a region that is no drawer's: the way in
        from the open side and the floor; None otherwise."""
        site = self.env.object_sites_dict.get(self.target)
        if self.kind != "in" or site is None or getattr(site, "joints", None):
            return None
        parts = [part for parts in bodies.values() for part in parts]
        return opening(region_box(self.env, self.target), parts)

    def _rim(self, box: Box, across: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``libero_rim.round_the_rim`` from the usual rim grasp closing along ``across``."""
        out = ALONG_Y if across else -ALONG_X  # the rim on the far side along y, near side along x
        return round_the_rim(self.scene(), box.centre, box.size[across] / 2, self.grasp[2], out)

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

    def _lay(self, box: Box) -> Rotation | None:
        """The hand's orientation that holds the object laid down, where it goes into a drawer
        whose region its origin, standing, would rise above; None otherwise. Where it is laid,
        the place is the drawer's centre under the laid object's centre, at the height that
        keeps its lowest point 2 cm above the drawer."""
        site = self.env.object_sites_dict.get(self.target)
        if self.kind != "in" or not getattr(site, "joints", None):
            return None
        centre, half = region_extent(self.env, self.target)
        top = centre[2] + half[2]
        rise = self.env.sim.data.xpos[self.env.obj_body_id[self.obj]][2] - box.low[2]
        if self._target()[0].low[2] + rise < top:
            return None
        away = np.cross([0.0, 0.0, -1.0], [*self._from_base(), 0.0]) @ self.line
        turn = Rotation.from_rotvec(self.line * LAY_TILT * (1.0 if away >= 0 else -1.0))
        corners = np.array(np.meshgrid(*zip(box.low, box.high, strict=True))).reshape(3, -1).T
        held = turn.apply(corners - self.grasp)  # from the fingertips, laid down
        self.below_grasp = -float(held[:, 2].min())
        self.offset_xy = -turn.apply(box.centre - self.grasp)[:2]
        return turn * self.upright

    def _tilt(self) -> Rotation | None:
        """The hand's orientation now, tilted ``REACH_TILT`` with its fingertips away from the
        arm's base, where the grasp lies beyond ``FAR_REACH`` and the place ``FAR_BACK`` back
        toward the base; None otherwise."""
        away = self._from_base()
        reach = float(np.linalg.norm(away))
        place = self._target()[0].centre[:2] + self.offset_xy + self.shift
        if reach <= FAR_REACH or (self.grasp[:2] - place) @ away / reach <= FAR_BACK:
            return None
        axis = np.cross([0.0, 0.0, -1.0], [*(away / reach), 0.0])  # turns down toward away
        return Rotation.from_rotvec(axis * REACH_TILT) * self.upright

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

    @staticmethod
    def _grasp_point(box: Box, across: int) -> np.ndarray:
        """Where the fingertips close on the object, closing along axis ``across`` (0: x, 1: y):
        across its centre, or on its rim (one finger inside, one outside) when it is wider
        than the open fingers."""
        grasp = box.centre.copy()
        if box.size[across] > GRIPPER_SPAN:
            # The rim on the far side along y (as always); along x the side nearer the robot.
            grasp[across] = box.high[1] - 0.012 if across else box.low[0] + 0.012
            grasp[2] = box.high[2] - 0.015
        else:
            grasp[2] = max(box.high[2] - 0.035, box.low[2] + min(0.015, box.size[2] / 2))
        return grasp

    def _slanted(self, box: Box, local: Box) -> tuple[np.ndarray, np.ndarray] | None:
        """The finger line and grasp point across an upright object's own thin horizontal axis,
        where that axis is thin enough to take (the object is too wide along both world axes
        only because it stands turned: a book at a slant); None otherwise. ``local`` is its box
        in its own frame."""
        data = self.env.sim.data._data
        body = self.env.obj_body_id[self.obj]
        rotation = data.xmat[body].reshape(3, 3)
        if rotation[2, 2] < UPRIGHT:
            return None
        thin = int(np.argmin(local.size[:2]))
        if local.size[thin] > GRIPPER_SPAN:
            return None
        line = rotation[:, thin] * np.array([1.0, 1.0, 0.0])
        grasp = data.xpos[body] + rotation @ local.centre
        grasp[2] = box.high[2] - 0.035
        return line / np.linalg.norm(line), grasp

    def _slot(self, local: Box) -> tuple[np.ndarray, np.ndarray | None]:
        """The finger line to carry the object in, and where in a compartment its centre goes
        (None where the target is not a compartment: the grasp's line, the target's centre).
        In a compartment (a caddy's slot, a few millimetres wider than a book), the object may
        turn with the hand onto a line at a multiple of ``SLOT_TURN`` from the world's x axis:
        the turn and place kept farthest from the parent's walls (then nearest the
        compartment's centre, then the least turn), with the object's centre inside the region
        (LIBERO's ``In`` checks its origin there: a book's is under its centre). ``local`` is
        the object's box in its own frame."""
        inside = self._target()[1]
        if inside is None:
            return self.line, None
        data = self.env.sim.data._data
        body = self.env.obj_body_id[self.obj]
        low, high = self._walls(inside)
        size = local.size[:2]
        axes = data.xmat[body].reshape(3, 3)
        yaw = float(np.arctan2(axes[1, 0], axes[0, 0]))
        line = float(np.arctan2(self.line[1], self.line[0]))
        if size.min() <= GRIPPER_SPAN:  # the closing fingers square its thin axis onto their line
            size, yaw = np.sort(size), line
        room = np.maximum(inside.size[:2] / 2 - SLOT_MARGIN, 0.0)
        grid = np.stack(np.meshgrid(*(np.arange(-r, r + 1e-9, 0.0025) for r in room)), -1)
        offsets = grid.reshape(-1, 2)
        offsets = offsets[np.argsort(np.hypot(*offsets.T), kind="stable")]
        centres = inside.centre[:2] + offsets
        # No turn, or onto a line at a multiple of SLOT_TURN from x (the world's axes among them).
        turns = [0.0, *((np.arange(0.0, np.pi, SLOT_TURN) - line) % np.pi)]
        turns.sort(key=lambda t: min(t, np.pi - t))
        for margin in (0.02, 0.015, 0.01, SLOT_MARGIN):
            fits = []
            for turn in turns:
                c, s = abs(np.cos(yaw + turn)), abs(np.sin(yaw + turn))
                half = np.array([c * size[0] + s * size[1], s * size[0] + c * size[1]]) / 2
                meets = np.all(low < centres + half + margin, -1) & np.all(
                    high > centres - half - margin, -1
                )
                clear = ~meets.any(axis=0)
                if clear.any():
                    first = int(clear.argmax())
                    fits.append((float(np.hypot(*offsets[first])), turn, first))
            if fits:
                _, turn, first = min(fits, key=lambda fit: fit[0])
                angle = line + turn
                return np.array([np.cos(angle), np.sin(angle), 0.0]), centres[first]
        return self.line, inside.centre[:2].copy()

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

    def _still(self, eef: np.ndarray) -> bool:
        """Whether the hand has come to rest (moved under ``STILL`` metres since the last step):
        an object hanging in it goes down into a slot without the arm's overshoot."""
        return float(np.linalg.norm(eef - self.last_eef)) < STILL

    def _bottom(self) -> np.ndarray:
        """The world centre of the object's own bottom face, as it stands or hangs now."""
        data = self.env.sim.data._data
        body = self.env.obj_body_id[self.obj]
        return data.xpos[body] + data.xmat[body].reshape(3, 3) @ self.base

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
        tops = []
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

    @property
    def released(self) -> bool:
        """The object was let go and the gripper has moved up for a few steps."""
        return self.PHASES[min(self.phase, len(self.PHASES) - 1)] == "retreat" and self.count > 5

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
        shift = np.zeros(2)
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

    def act(self, eef: np.ndarray) -> np.ndarray:
        phase = self.PHASES[min(self.phase, len(self.PHASES) - 1)]
        if self.way is not None and self.PHASES.index(phase) > self.PHASES.index("lift"):
            return self._slide_in(eef, self.way)
        grip = 1.0 if phase in ("close", "lift", "carry", "lower") else -1.0
        goal = eef
        high = max(self.grasp[2], 0.0) + CLEARANCE
        if phase in ("above", "descend"):
            goal = self.grasp + np.array([0.0, 0.0, CLEARANCE if phase == "above" else 0.0])
            if phase == "above":  # over what stands on the way, not through it
                goal[2] = max(goal[2], self._over(eef), self.over_beside)
        elif phase == "close":
            goal = self.grasp
        elif phase in ("lift", "carry", "lower", "release"):
            target, inside = self._target()
            place = target.centre.copy()
            place[:2] += self.offset_xy + self.shift
            if self.slot is not None:  # its bottom over the slot, however it hangs in the hand
                place[:2] = eef[:2] + self.slot - self._bottom()[:2]
            elif self.origin_goal is not None:  # its origin over its place, however it swings
                held = self.env.sim.data._data.xpos[self.env.obj_body_id[self.obj]][:2]
                place[:2] = eef[:2] + self.origin_goal - held
            place[2] = target.high[2] + self.below_grasp + 0.02
            lift = max(high, place[2] + 0.05, self.over_way)
            if inside is not None:  # down into the compartment, its floor 2 cm below
                place[2] = inside.low[2] + self.below_grasp + 0.02
            if phase == "lift":
                goal = np.array([eef[0], eef[1], lift])
            elif phase == "carry":
                goal = np.array([place[0], place[1], lift])
            else:
                goal = place
        elif phase == "retreat":
            goal = np.array([eef[0], eef[1], high + 0.1])
        if self.way_in and phase in ("above", "descend"):  # tilted, in along its own axis
            if phase == "descend" and np.linalg.norm(self.way_in[-1] - eef) < PASS:
                self.way_in = self.way_in[:1]  # at the entry: on to the grasp
            goal = self.way_in[0] if phase == "above" else self.way_in[-1]
            if len(self.way_in) == 2 and self._turn_left(self.tilted) > TURNED:
                goal = self.way_in[0]  # turned over the way in before going down it
            if phase == "descend" and len(self.way_in) == 1:
                goal = self.grasp
        leaving = bool(self.way_out) and phase == "lift"
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
        grasping = ("above", "descend", "close") + (() if self.slot is not None else ("lift",))
        line = self.line if phase in grasping else self.place_line
        yaw = self.fingers.yaw_to(line) if self.steer else 0.0
        turning = line is not self.line
        self.count += 1
        done = {
            "above": (
                np.linalg.norm(error) < (PASS if self.way_in else 0.01) and abs(yaw) < ON_LINE
            )
            or self.count > 60,
            "descend": (np.linalg.norm(error) < 0.006 and len(self.way_in) != 2) or self.count > 40,
            "close": self.count > 12,
            "lift": (not leaving and abs(error[2]) < 0.01 and (not turning or abs(yaw) < ON_LINE))
            or self.count > 40,
            "carry": (
                np.linalg.norm(error[:2]) < 0.01
                and (not turning or abs(yaw) < ON_LINE)
                and still
                and self._laid_down()
            )
            or self.count > 80,
            "lower": np.linalg.norm(error) < 0.01 or self.count > 30,
            "release": self.count > 10,
            "retreat": False,
        }[phase]
        if phase == "descend" and self.tilted is None:
            self.touched = self._arm_touch() if self.touched is None else self.touched
        held_up = done and phase == "descend" and np.linalg.norm(error) > STALLED
        if held_up and self.touched is not None and self.tilted is None:
            self.tilted = self._lean(self.touched)  # held up by the arm: lean away, down again
            self.phase, self.count = self.PHASES.index("above"), 0
        elif done:
            self.phase, self.count = self.phase + 1, 0
        action = move(error, grip, yaw)
        far = self.way_in and phase == "above" and np.linalg.norm(self.way_in[0] - eef) > NEAR
        if self.tilted is not None and not far:
            # The step's whole way, the object held as it was taken; taken from under an
            # overhang, from near the way in.
            action[3:6] = turn_action(self.grip.turn_to(self.tilted))
        elif self.laid is not None and phase not in grasping:  # laid once lifted, then back
            orientation = self.upright if phase == "retreat" else self.laid
            action[3:6] = turn_action(self.grip.turn_to(orientation))
        return action

    def _slide_in(self, eef: np.ndarray, way: tuple[np.ndarray, float]) -> np.ndarray:
        """The step once lifted, into a covered space by ``way`` (``libero_slide``); once let
        go, the step's retreat."""
        if self.slide is None:  # planned as the object is held
            sim = self.env.sim
            body = self.env.obj_body_id[self.obj]
            region = region_box(self.env, self.target)
            origin = np.array(sim.data.xpos[body])
            # By its handle, the body ahead along the way in: in as it hangs (libero_slide).
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
            self.phase = self.PHASES.index("retreat")
            self.count += 1
        action = move(goal - eef, grip)
        action[3:6] = turn_action(turn)
        return action

    def _floor_before(self, region: Box, floor: float, front: np.ndarray) -> bool:
        """Whether the space's floor runs on under the hand before the opening (the table, under
        a shelf with no bottom board) and the hand, turned to slide the object in (its finger
        line upright), would reach below it there (``libero_tip``). Where the floor is a board
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
        (``libero_tip``); once it has pushed, the step's retreat."""
        box = body_box(self.env.sim, self.env.obj_body_id[self.obj])
        goal, grip, orientation = tip.goal(eef, box, self._turn_left, self.holds)
        if tip.phase == "out":
            self.phase = self.PHASES.index("retreat")
            self.count += 1
        action = move(goal - eef, grip)
        action[3:6] = turn_action(self.grip.turn_to(orientation))
        return action

    def _turn_left(self, orientation: Rotation) -> float:
        """Radians the hand is from ``orientation``."""
        return float(np.linalg.norm(self.grip.turn_to(orientation)))

    def _laid_down(self) -> bool:
        """Whether the hand holds the object as it is to be let go (always, unless laid)."""
        return self.laid is None or self._turn_left(self.laid) < ON_LINE


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
            self.phase, self.count = self.PHASES.index("retreat"), 6
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
