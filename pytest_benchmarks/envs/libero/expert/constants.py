"""Every measure LIBERO's scripted experts act by, named, with its unit: lengths in metres,
angles in radians, durations in env steps (LIBERO's control runs at 20 Hz). Grouped by what
uses them: the motion all experts share, the Panda hand, then each step expert; a phase's step
budget is in the expert's ``*_BUDGET`` table (``phases``)."""

import numpy as np

# --- Motion, shared by every expert (``motion``, ``phases``) ---------------------------------
GAIN = 15.0  # action units per metre of position error (1.0 = 0.05 m per step)
YAW_GAIN = 2.0  # action units per radian of yaw error (OSC_POSE: 1.0 = 0.5 rad per step)
CLEARANCE = 0.10  # metres above objects while moving
ON_LINE = 0.05  # radians off a wanted finger line (or yaw) that still count as on it
TURNED = 0.05  # radians of orientation error that still count as turned (pulls, drags)
#: Metres from a goal within which the hand counts as there: a move's goal (``REACHED``), a
#: point the fingers close on or push from (``SEATED``), a way point passed on the way
#: (``ROUGHLY``).
REACHED, SEATED, ROUGHLY = 0.01, 0.006, 0.02
RELEASED_AFTER = 5  # steps the hand moves off after letting go before a step counts as released
SLIDE_JOINT = 2  # mujoco.mjtJoint.mjJNT_SLIDE: a drawer's joint (a door's is a hinge)

# --- The Panda hand (``rim``, ``pick_scene``, ``pick_plan``) -------------------------------
GRIPPER_SPAN = 0.075  # metres: the widest object the open fingers take across their line
#: The hand's footprint about the grasp point: about 20 cm long along the finger line, 9 cm
#: across; and how far above the fingertips the hand and wrist reach (metres).
HAND_HALF_LENGTH, HAND_HALF_WIDTH, HAND_HEIGHT = 0.10, 0.045, 0.25
#: The hand itself (not the wrist): how far it reaches across the finger line (its 7 cm, and
#: half a centimetre to spare) and above the fingertips' centre; how far inside an object's ends
#: the fingers (1.7 cm wide) close on it (metres).
HAND_SIDE, HAND_BOTTOM, HAND_TOP, FINGER_END = 0.04, 0.024, 0.126, 0.012
#: Metres: how far the open fingers reach from the hand's centre; how far above a body they pass.
OPEN_REACH, OVER = 0.05, 0.03
#: The open fingers, each a box (centre, half-size, metres) in the grip site's frame, mirrored
#: in x: from 3.2 to 6.8 cm out along the finger line, 4.9 cm above to 1.2 cm below the site.
FINGER = (np.array([0.05, 0.0, -0.0185]), np.array([0.018, 0.011, 0.0305]))
#: The hand and, above it, the wrist's reach (metres): 2.6 to 25 cm above the site, 20.8 cm
#: along the finger line and 6.4 cm across it.
HAND = (np.array([0.0, 0.0, -0.138]), np.array([0.104, 0.032, 0.112]))
FINGERTIPS_BELOW = 0.012  # metres the closed fingertips reach below the grip site

# --- Pick-and-place (``pick``, ``aside``) -------------------------------------------------
PICK_BUDGET = {"above": 60, "descend": 40, "close": 12, "lift": 40, "carry": 80, "lower": 30,
               "release": 10}  # fmt: skip
STILL = 0.001  # metres per step under which the hand counts as at rest
#: Metres within which the hand taken tilted from under an overhang passes its way points (not
#: the grasp), and radians off its tilt at which it counts as turned, to go down its way in.
PASS, TILT_TURNED = 0.03, 0.1
#: The hand taken tilted turns to its tilt only within ``TILT_NEAR`` metres of its way in
#: (turned all the way over, the arm straight at full reach stalls).
TILT_NEAR = 0.12
#: A hand held up more than ``STALLED`` metres short of the grasp when its descent times out, an
#: arm link touching something, rises and comes down again once, tilted ``LEAN`` radians about
#: its finger line with its fingertips toward what the arm touched, the wrist leaning away.
STALLED, LEAN = 0.02, 0.25
#: Metres: how far above the place's top an object's bottom is let go (and above a
#: compartment's floor); how much higher than that it is carried; how much higher than the
#: grasp's clearance the hand retreats.
PLACE_ABOVE, CARRY_ABOVE, RETREAT_ABOVE = 0.02, 0.05, 0.1
ASIDE_GAP = 0.03  # metres an object moved aside is left clear of the opened drawer
#: Metres an object moved aside may also step across the way it clears the drawer (0 first).
ASIDE_ACROSS = (0.0, *(k * s * 0.02 for k in range(1, 7) for s in (1.0, -1.0)))

# --- The pick-and-place plan (``pick_plan``, ``pick_scene``) -------------------------------
#: Metres below an object's top the fingertips close: across a narrow object (``GRASP_BELOW``,
#: but no lower than ``GRASP_ABOVE`` over its bottom, or its middle if it is lower), on a wide
#: one's rim (``RIM_BELOW``, ``RIM_IN`` inside its edge).
GRASP_BELOW, GRASP_ABOVE, RIM_BELOW = 0.035, 0.015, 0.015
SLOT_MARGIN = 0.005  # least metres kept between an object and a compartment's walls
SLOT_TURN = np.pi / 12  # radians: the steps in which an object may turn to fit a compartment
UPRIGHT = 0.95  # the cosine of the largest tilt at which an object counts as standing upright
SUPPORT = 0.005  # metres above an object's bottom below which a geom is what it stands on
#: At the arm's full reach a hand pointing straight down grasps with the arm straight, its elbow
#: at the joint's limit, and LIBERO's operational-space controller, asked to draw it back, only
#: swings it about the shoulder. A grasp beyond ``FAR_REACH`` (metres from the base,
#: horizontally) whose place lies more than ``FAR_BACK`` (metres) back toward the base is taken
#: with the hand tilted ``REACH_TILT`` radians, fingertips away from the base: the wrist stays
#: back and the elbow bent.
FAR_REACH, FAR_BACK, REACH_TILT = 0.75, 0.09, 0.3
#: LIBERO's ``In`` of a drawer reads the object's origin, which a bottle standing in the drawer
#: holds above the region's top. An object that cannot stand in a drawer with its origin inside
#: the region is laid down: tilted ``LAY_TILT`` radians about the finger line once lifted.
LAY_TILT = 1.1
#: Metres: a handle (of ``pick_scene.BY_HANDLE``'s objects) is at most this wide across the
#: fingers, and stands this far beyond the body.
HANDLE_WIDTH, HANDLE_OUT = 0.03, 0.03
#: Metres kept between objects the goal puts on one region, and between an object's origin (what
#: LIBERO's ``On`` of a region reads) and the region's edge.
SHARED_GAP, REGION_MARGIN = 0.01, 0.015
#: The hand comes in over what stands within ``BESIDE_REACH`` (metres, horizontally) of the
#: grasp, over its top by ``OVER``, where that is higher than its usual approach.
BESIDE_REACH = 0.07

# --- Grasps round a rim, along a handle, from under an overhang (``rim``) -------------------
RIM_IN = 0.012  # metres inside the object's edge the fingers close on the rim
#: Metres higher on the rim than the usual grasp the fingers may close, round it, where nowhere
#: at the usual height is clear: the hand's bottom then clears a cabinet's top just above a
#: drawer's walls (libero_spatial/4, by 0.5 mm). Only then: so high, the fingers hold less of
#: the rim.
RIM_RISE = 0.005
RIM_STEP = np.pi / 12  # radians: the steps in which the grasp goes round the rim
#: Traced (libero_90/18: the moka pot stands 0.7-3 cm beside the frying pan's handle, a bar 13 cm
#: long): square across the handle at its middle, the 20 cm hand comes down on the pot. The grasp
#: slides along the handle in ``HANDLE_STEP`` metres (its fingers kept on it), square first, then
#: with the finger line turned off square by ``HANDLE_TURNS`` (radians): at 30 degrees the
#: fingers still close across the 2.5 cm bar, and the pan hangs on.
HANDLE_STEP = 0.005
HANDLE_TURNS = np.radians([0.0, 15.0, -15.0, 30.0, -30.0])
#: Traced (libero_goal/3: the top drawer, pulled open, stands 10 cm over half the bowl): pointing
#: straight down, the hand (25 cm tall with the wrist) meets the drawer wherever round the rim it
#: closes; tilted 20-30 degrees, its wrist leaning back out from under, it does not. The tilts
#: tried (radians), and how far back along its own axis (metres) the tilted hand comes in from.
UNDER_TILTS = np.radians([15.0, 20.0, 25.0, 30.0, 35.0])
REACH_IN = 0.10

# --- Into a covered space (``slide``, ``tip``) ----------------------------------------------
SLIDE_BUDGET = {"turn": 60, "front": 80, "in": 60, "open": 10}
#: Metres: how far before the opening the object stops before it goes in; how far above the
#: floor its lowest point is carried in.
SLIDE_GAP, SLIDE_LIFT = 0.03, 0.012
#: Metres around a region within which a part can close it (its walls); metres above its floor
#: within which a part covers it (the hand and its load need about this much from above).
WALL_REACH, COVER = 0.03, 0.3
TIP_BUDGET = {"tilt": 60, "set": 80, "open": 10, "up": 40, "behind": 60, "down": 60, "push": 60}
#: Radians the hand tilts toward the opening before the object's far edge is set down; metres
#: the far edge stops before the region, and above the floor when let go.
TIP_TILT, TIP_GAP, TIP_ABOVE = np.radians(30.0), 0.03, 0.004
#: Metres: the fingertips behind the object's near edge, and above the floor, as they push; how
#: far before the region's entrance they stop (the hand, 4 cm ahead of them across its finger
#: line, stays out of the space); how high the hand rises once it has let go; how much higher
#: than the push it goes behind the object; how far it backs out, and up, once it has pushed.
BEHIND, PUSH_HEIGHT, PUSH_STOP, RISE, BEHIND_ABOVE, TIP_OUT = 0.02, 0.02, 0.045, 0.06, 0.08, 0.05
#: Metres within which the hand counts as behind the tipped object, and down behind it (and at
#: the push's end).
TIP_BEHIND, TIP_DOWN = 0.015, 0.008

# --- Pushes of articulated objects (``joint``) ---------------------------------------------
PUSH_BUDGET = {"above": 60, "descend": 40, "push": 150, "back": 20}
PUSH_STANDOFF = 0.035  # metres behind the pushed point where the closed fingers come down
#: Open, the fingers stand this far (metres) either side of the gripper's centre along y; a
#: knob's pointer is pushed by the inner face of the trailing finger, the pointer between the
#: fingers, ``PUSH_FINGER_IN`` metres inside that face.
FINGER_HALF_SPAN, PUSH_FINGER_IN = 0.04, 0.012
PUSH_LEAD = 0.045  # metres the push aims ahead of the pushed point (along the arc for hinges)
PUSH_BACK_OFF = 0.06  # metres back from the pushed point after the push
#: A hinged part is pushed at its tallest geom, this far out from its middle toward its far end
#: (a fraction of its half-length) and ``PUSH_BELOW_TOP`` metres below its top.
PUSH_OUT_ALONG, PUSH_BELOW_TOP = 0.7, 0.02
#: Radians a drawer's second push tilts the fingers toward the push, beyond where the first
#: left them (libero_90/22: about 57 degrees from straight down, the first push about 12).
PUSH_LEAN = np.pi / 4
#: A push stalls when the joint moved less than ``PUSH_PROGRESS`` (metres or radians) over the
#: last ``STALL_WINDOW`` steps.
PUSH_PROGRESS, STALL_WINDOW = 0.005, 25
#: Steps into the retreat after which a push that did not finish is tried once more; steps the
#: retreat may take to turn the hand back.
PUSH_AGAIN_AFTER, TURN_BACK_STEPS = 10, 30

# --- Pulls by a handle (``pull``, ``door``, ``drag``) -------------------------------------
PULL_BUDGET = {"rise": 40, "over": 60, "line_up": 80, "reach": 40, "close": 12, "pull": 80,
               "release": 10, "back": 30}  # fmt: skip
PULL_STANDOFF = 0.10  # metres out from the handle where the turned hand lines up with it
PULL_BACK_OFF = 0.08  # metres the hand backs off along the slide after letting go
PULL_BEYOND = 0.02  # metres the pull aims past the drawer's full travel
TURN_HOME_STEPS = 40  # steps a pull's or drag's retreat may take to turn the hand back
DOOR_BUDGET = {"above": 60, "descend": 40, "close": 12, "pull": 200, "release": 10}
DOOR_LEAD = 0.04  # metres along the arc the pull aims ahead of the handle
OFF_FACE = 0.008  # metres the fingers' line stands outward of the handle's centre
BELOW_TOP = 0.035  # metres below the handle's top where the fingers close
DOOR_PROGRESS = 0.02  # radians the hinge must move over ``STALL_WINDOW`` steps of pulling
DRAG_BUDGET = {"rise": 40, "front": 60, "down": 40, "in": 40, "press": 15, "drag": 100}
DRAG_TILT = np.radians(40.0)  # the hand's tilt from pointing straight down, fingertips inward
DRAG_FRONT = 0.08  # metres out from the bar where the hand comes down to its height
DRAG_ABOVE = 0.01  # metres over the bar's top the fingertips go in
DRAG_PRESS = 0.02  # metres below the bar's top the pressing hand aims
DRAG_LEAD = 0.05  # metres ahead of the bar along the slide the drag aims
