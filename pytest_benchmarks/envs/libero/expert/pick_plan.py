"""The plan of a pick-and-place step of LIBERO's scripted expert, made at each reset from where
the objects are: the grasp (across a narrow object's centre, on a bowl's rim, by a handle, across
a slanted book, round a hemmed-in rim, tilted from under an overhang), the finger lines to take
and carry it on, its place (beside what stands there, out along a drawer, into a compartment),
the heights that clear what stands on the way, and the hand's tilt where it must lean. The
executor (``pick``) follows it; docs/benchmarks/libero-expert.md says where each rule came
from."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import (
    FAR_BACK,
    FAR_REACH,
    GRASP_BELOW,
    GRIPPER_SPAN,
    LAY_TILT,
    ON_LINE,
    OVER,
    REACH_IN,
    REACH_TILT,
    SLOT_MARGIN,
    SLOT_TURN,
    SUPPORT,
    UPRIGHT,
)
from pytest_benchmarks.envs.libero.expert.motion import (
    Box,
    FingerAxis,
    GripSite,
    body_box,
    local_box,
    region_box,
    region_extent,
)
from pytest_benchmarks.envs.libero.expert.pick_scene import BY_HANDLE, PickScene, _overlap
from pytest_benchmarks.envs.libero.expert.rim import (
    along_the_handle,
    gripper_meets,
    round_the_rim,
    site_frame,
    under_the_rim,
)
from pytest_benchmarks.envs.libero.expert.slide import SlideIn, opening
from pytest_benchmarks.envs.libero.expert.tip import TipIn

ALONG_X, ALONG_Y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])


class PickPlanner(PickScene):
    """Plans a pick-and-place step from the scene (``_plan``, at each reset)."""

    upright: Rotation  # the hand's orientation as the step began
    line: np.ndarray  # the finger line the object is taken on
    turned: bool
    steer: bool

    def _plan(self) -> None:
        """The step planned from where the objects are now (``excluded`` worked out): the
        finger line, the grasp, the place and the hand's way, in that order, each part reading
        what the ones before it set."""
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
        bodies = self._bodies()
        overhead = self._overhead(box, bodies)
        out = self._plan_line(box, bodies, overhead)
        self._plan_grasp(box, own, bodies, overhead)
        self.below_grasp = self.grasp[2] - box.low[2]  # object bottom under the fingers
        self.over_beside = self._over_beside(bodies, overhead)
        self.leaving = self._leaving(bodies)
        self._plan_place(box, own, out)
        self._plan_carry(box, bodies)

    def _plan_line(
        self, box: Box, bodies: dict[int, list[Box]], overhead: list[Box]
    ) -> list[np.ndarray]:
        """The finger line the object is taken on (``turned``, ``line``, ``steer``,
        ``quarter``), and per line (along x, along y) the shift of the place out along a
        drawer. Fingers along y, unless something overhead (a cabinet's top) stands in the
        long hand's way there and not with the hand turned a quarter, fingers along x."""
        # Into a drawer, the same at the place (the hand as it will hold the object there), the
        # place moved out along the drawer as far as its region allows, should that clear it.
        hits = [self._hits(overhead, self._grasp_point(box, a), a) for a in (0, 1)]
        out = [np.zeros(2), np.zeros(2)]
        #: Where the hand turns a quarter on its way, to fingers along x at the place: the shift
        #: of the place out along the drawer; None where it does not.
        self.quarter: np.ndarray | None = None
        if getattr(self.env.object_sites_dict.get(self.target), "joints", None):
            places = [self._drawer_place(box, bodies, a) for a in (0, 1)]
            hits = [hit or places[a] is None for a, hit in enumerate(hits)]
            out = [np.zeros(2) if shift is None else shift for shift in places]
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
        return out

    def _plan_grasp(
        self, box: Box, own: Box, bodies: dict[int, list[Box]], overhead: list[Box]
    ) -> None:
        """The grasp point (``grasp``), across the object's centre where the fingers span it,
        else the first way that takes it: by its handle, across a slanted object's own thin
        axis, round a hemmed-in rim, tilted from under an overhang. Each may turn the finger
        line ``_plan_line`` chose."""
        across = 0 if self.turned else 1
        self.grasp = self._grasp_point(box, across)
        if box.size[across] <= GRIPPER_SPAN:  # across its centre: it may slide along its length
            parts = [part for parts in bodies.values() for part in parts]
            self.grasp, slid = self._slid_clear(box, self.grasp, across, parts)
            if not slid:
                # Nowhere clear square across it (libero_10/1: wherever the hand is square
                # across the cream cheese, its palm reaches over the milk carton beside it):
                # along it and turned off square, the gripper modelled closely, the surface the
                # object stands on left out.
                scene = self.scene().above(box.low[2] + SUPPORT)
                half = box.size[1 - across] / 2
                centre = self._grasp_point(box, across)
                if (turned := along_the_handle(scene, centre, half, self.line)) is not None:
                    self.line, self.grasp = turned
                    self.steer = True
        elif any(kind in self.obj for kind in BY_HANDLE) and (handle := self._handle()):
            # Too wide to take either way, no rim to take: by the handle that stands out.
            across = int(np.argmin(handle.size[:2]))
            self.turned, self.steer, self.by_handle = across == 0, True, True
            self.line = ALONG_X if self.turned else ALONG_Y
            self.grasp = handle.centre.copy()
            half = handle.size[1 - across] / 2  # along the handle
            if (along := along_the_handle(self.scene(), self.grasp, half, self.line)) is not None:
                self.line, self.grasp = along  # the hand clear of what stands beside the handle
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

    def _leaving(self, bodies: dict[int, list[Box]]) -> list[list[Box]]:
        """The parts near the hand of the body the step before placed its object on or in (the
        basket it has just filled), which the hand starts over, to keep above."""
        start = self.grip.position()
        before = self._body_of(self.after) if self.after else None
        return [
            parts
            for body, parts in bodies.items()
            if body == before and any(self._near(part, start) for part in parts)
        ]

    def _plan_place(self, box: Box, own: Box, out: list[np.ndarray]) -> None:
        """Where the object goes: the line it is carried on, its slot in a compartment, its
        shift off its usual place, and the goal of its origin where it swings in the fingers.
        ``out`` is ``_plan_line``'s shift out along a drawer, per line."""
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

    def _plan_carry(self, box: Box, bodies: dict[int, list[Box]]) -> None:
        """How the hand holds the object on its way (steered onto the place's line, tilted,
        laid down) and the way it takes (into a covered space, over what stands between), with
        the executor's state as the step begins."""
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

    def _under(
        self, box: Box, across: int, overhead: list[Box]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Box]] | None:
        """``rim.under_the_rim`` where something overhead stands over the object and the
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
        """``slide.opening`` of an ``In`` of a region that is no drawer's: the way in
        from the open side and the floor; None otherwise."""
        site = self.env.object_sites_dict.get(self.target)
        if self.kind != "in" or site is None or getattr(site, "joints", None):
            return None
        parts = [part for parts in bodies.values() for part in parts]
        return opening(region_box(self.env, self.target), parts)

    def _rim(self, box: Box, across: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``rim.round_the_rim`` from the usual rim grasp closing along ``across``."""
        out = ALONG_Y if across else -ALONG_X  # the rim on the far side along y, near side along x
        return round_the_rim(self.scene(), box.centre, box.size[across] / 2, self.grasp[2], out)

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
        grasp[2] = box.high[2] - GRASP_BELOW
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
        offsets: np.ndarray = grid.reshape(-1, 2)
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
