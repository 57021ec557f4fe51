"""The rim grasp's geometry: oriented boxes and the way round a rim hemmed in by a wall, on
boxes made here (the real drawer is ``test_libero_offline``'s)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pytest_benchmarks.envs.libero.expert.constants import FINGER, RIM_IN
from pytest_benchmarks.envs.libero.expert.rim import (
    Scene,
    fingers_meet,
    gripper_meets,
    round_the_rim,
    site_frame,
)

UNIT = np.full(3, 0.5)


def one_box(centre: list[float], axes: np.ndarray, half: np.ndarray) -> Scene:
    return Scene(np.array([centre]), np.array([axes]), np.array([half]))


@pytest.mark.parametrize(("offset", "meets"), [(1.2, False), (0.8, True)])
def test_boxes_meet_as_turned_not_as_their_bounding_boxes(offset, meets):
    """A cube turned 45 degrees, its corner region inside the other's bounding box at both
    offsets: only the nearer one reaches the cube at the origin."""
    turned = Rotation.from_euler("z", 45, degrees=True).as_matrix()
    scene = one_box([offset, offset, 0.0], turned, UNIT)
    reach = UNIT @ np.abs(turned.T)  # the turned cube's bounding box
    assert offset - reach[0] < UNIT[0]  # the bounding boxes overlap either way
    assert scene.meets(np.zeros(3), np.eye(3), UNIT) is meets


def test_an_empty_scene_meets_nothing():
    empty = Scene(np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3)))
    assert not empty.meets(np.zeros(3), np.eye(3), UNIT)


def test_the_site_frame_points_down_with_the_finger_line_along_the_line():
    frame = site_frame(np.array([0.6, 0.8, 0.0]))
    assert np.allclose(frame[:, 0], [0.6, 0.8, 0.0])
    assert np.allclose(frame[:, 2], [0.0, 0.0, -1.0])
    assert np.linalg.det(frame) == pytest.approx(1.0)


def test_the_open_fingers_and_the_hand_above_them_meet_what_they_reach():
    """A wall standing 5 cm out along the finger line meets the outer finger; 9 cm out, the
    fingers are clear but the hand, 10.4 cm either side, still meets a wall as tall as it."""
    grasp, line = np.zeros(3), np.array([1.0, 0.0, 0.0])
    low = one_box([0.05, 0.0, 0.0], np.eye(3), np.array([0.003, 0.2, 0.03]))
    assert fingers_meet(low, grasp, line)
    far_tall = one_box([0.09, 0.0, 0.1], np.eye(3), np.array([0.003, 0.2, 0.2]))
    assert not fingers_meet(far_tall, grasp, line)
    assert gripper_meets(far_tall, grasp, line)
    assert FINGER[0][0] + FINGER[1][0] < 0.09  # the finger's outer face, in from the wall


def test_a_rim_beside_a_wall_is_taken_where_the_gripper_fits():
    """A bowl 5.35 cm in radius, a wall (below the hand) 7 cm from its centre along +y: the
    usual grasp, on the far rim along y, puts the outer finger on it; the grasp goes round, a
    turn of 60 degrees (150, tried before 30), on the same rim and height."""
    wall = one_box([0.0, 0.075, -0.015], np.eye(3), np.array([0.3, 0.005, 0.035]))
    radius, height, usual = 0.0535, 0.0, np.array([0.0, 1.0, 0.0])
    line, grasp = round_the_rim(wall, np.zeros(3), radius, height, usual)
    assert np.degrees(np.arctan2(line[1], line[0])) == pytest.approx(150.0)
    assert np.linalg.norm(grasp[:2]) == pytest.approx(radius - RIM_IN)
    assert grasp[2] == height
    assert not gripper_meets(wall, grasp, line)
    # Nothing in the way: the usual grasp stands.
    away = one_box([0.0, 0.5, 0.0], np.eye(3), np.array([0.3, 0.005, 0.035]))
    assert round_the_rim(away, np.zeros(3), radius, height, usual) is None
