"""The Panda gripper as the scripted expert models it, in two resolutions: a footprint and
heights about the grasp point, for the quick clearance checks of a pick-and-place plan, and
oriented boxes from the Panda's collision geoms (finger and hand), for the finer searches round a
rim or along a handle (``rim``). Lengths in metres."""

import numpy as np

GRIPPER_SPAN = 0.075  # widest object the open fingers take across their line, in metres
#: The hand's footprint about the grasp point: about 20 cm long along the finger line, 9 cm
#: across; and how far above the fingertips the hand and wrist reach.
HAND_HALF_LENGTH, HAND_HALF_WIDTH, HAND_HEIGHT = 0.10, 0.045, 0.25
#: The hand itself (not the wrist): how far it reaches across the finger line (its 7 cm, and
#: half a centimetre to spare) and above the fingertips' centre; how far inside an object's ends
#: the fingers (1.7 cm wide) close on it.
HAND_SIDE, HAND_BOTTOM, HAND_TOP, FINGER_END = 0.04, 0.024, 0.126, 0.012
#: How far the open fingers reach from the hand's centre; how far above a body they pass.
OPEN_REACH, OVER = 0.05, 0.03
#: The open fingers, each a box (centre, half-size) in the grip site's frame, mirrored in x:
#: from 3.2 to 6.8 cm out along the finger line, 4.9 cm above to 1.2 cm below the site.
FINGER = (np.array([0.05, 0.0, -0.0185]), np.array([0.018, 0.011, 0.0305]))
#: The hand and, above it, the wrist's reach: 2.6 to 25 cm above the site, 20.8 cm along the
#: finger line and 6.4 cm across it.
HAND = (np.array([0.0, 0.0, -0.138]), np.array([0.104, 0.032, 0.112]))
