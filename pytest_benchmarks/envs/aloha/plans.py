"""ALOHA's two plans, as keyframes of each arm's fingers' centre from the objects' privileged
poses: the right arm hands the cube to the left; each arm picks a part and the peg goes into
the socket. Where the objects' poses after a grasp matter, a replan reads them then."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pytest_benchmarks.envs.aloha.poses import (
    CLOSED,
    OPEN,
    Keyframe,
    quat_multiply,
    rotate,
    rotation,
    xyz,
)

#: The grippers at the robots' start pose: level, their fingers pointing at the middle.
LEVEL_LEFT = np.array([1.0, 0.0, 0.0, 0.0])
LEVEL_RIGHT = np.array([0.0, 0.0, 0.0, 1.0])  # turned half a turn about z
#: How far a picking gripper is pitched down, in degrees.
PITCH = 60.0
#: The arms' bases: x of the left and right one, and their y.
BASE_LEFT, BASE_RIGHT, BASE_Y = -0.469, 0.469, 0.5
#: The height of a resting cube's centre, and how far above it the fingers' centre grasps.
CUBE_REST = 0.02
GRASP_HEIGHT = 0.02
#: Transfer: when the left hand goes for the cube the right one holds in the middle; how far
#: short of it the left fingers wait, and how deep they take it.
HANDOVER = 240
REACH, TAKE_DEPTH = 0.06, 0.0
#: Insertion: the resting heights of the peg's and the socket's centres; when the right arm
#: lines the peg up; where the peg's centre is from the socket's as it lines up and as it meets
#: the pin; the peg's half length.
PEG_REST, SOCKET_REST = 0.01, 0.022
ALIGN = 220
APPROACH, INSERTED = 0.13, 0.07
PEG_HALF = 0.06

Pose = tuple[np.ndarray, np.ndarray]  # the fingers' centre, the gripper's orientation


@dataclass(frozen=True)
class Replan:
    """From ``step`` on, arm ``arm`` (0 left, 1 right) follows the keyframes ``keyframes`` makes
    from the objects' poses (qpos) and the arm's pose at that step."""

    step: int
    arm: int
    keyframes: Callable[[np.ndarray, Pose], list[Keyframe]]


@dataclass(frozen=True)
class Plan:
    left: list[Keyframe]
    right: list[Keyframe]
    replans: list[Replan]


def pick_quat(level: np.ndarray, degrees: float, base: float = 0.0,
              at: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """A level gripper pitched down by ``degrees`` about the world's y axis (its sign follows
    the side the gripper points to) and, given the arm's base x and a point, turned about z to
    face the point from the base."""
    quat = quat_multiply(rotation((0, 1, 0), degrees), level)
    if at is None:
        return quat
    yaw = np.degrees(np.arctan2(at[1] - BASE_Y, abs(at[0] - base)))
    return quat_multiply(rotation((0, 0, 1), yaw if base < 0 else -yaw), quat)


def transfer_cube_plan(cube: np.ndarray, left0: Pose, right0: Pose,
                       grasp: float = GRASP_HEIGHT) -> Plan:  # fmt: skip
    """The right arm picks the cube and carries it to the middle; the left arm, turned so that
    its fingers close from above and below, takes it there; the right arm lets go."""
    pick = pick_quat(LEVEL_RIGHT, -PITCH, BASE_RIGHT, cube)
    carry = pick_quat(LEVEL_RIGHT, -PITCH)
    receive = quat_multiply(LEVEL_LEFT, rotation((1, 0, 0), 90))
    meet = np.array([0.0, 0.5, 0.25])
    at = np.array([cube[0], cube[1], CUBE_REST])
    held = meet - xyz(0, 0, grasp)  # where the cube hangs in the right hand
    right = [
        Keyframe(0, *right0, CLOSED),
        Keyframe(90, at + xyz(0, 0, 0.10), pick, OPEN),  # above the cube
        Keyframe(130, at + xyz(0, 0, grasp), pick, OPEN),  # down around it
        Keyframe(160, at + xyz(0, 0, grasp), pick, CLOSED),  # grasp
        Keyframe(200, meet + xyz(0.05, 0, 0), carry, CLOSED),  # lift towards the middle
        Keyframe(220, meet, carry, CLOSED),
        Keyframe(HANDOVER + 75, meet, carry, CLOSED),
        Keyframe(HANDOVER + 90, meet, carry, OPEN),  # let go once the left hand holds it
        Keyframe(HANDOVER + 130, meet + xyz(0.1, 0, 0.05), carry, OPEN),  # out of the way
    ]
    left = [
        Keyframe(0, *left0, CLOSED),
        Keyframe(100, held + xyz(-0.12, 0, 0), receive, OPEN),
        Keyframe(HANDOVER, held + xyz(-0.12, 0, 0), receive, OPEN),
    ]

    def approach(now: np.ndarray, start: Pose) -> list[Keyframe]:
        """Level with the cube where it hangs now, a little short of it."""
        return [
            Keyframe(HANDOVER, *start, OPEN),
            Keyframe(HANDOVER + 30, now[:3] + xyz(-REACH, 0, 0), receive, OPEN),
        ]

    def take(now: np.ndarray, start: Pose) -> list[Keyframe]:
        """Where the cube hangs now: the left fingers close around it, and carry it away."""
        at = now[:3] + xyz(TAKE_DEPTH, 0, 0)
        return [
            Keyframe(HANDOVER + 30, *start, OPEN),
            Keyframe(HANDOVER + 50, at, receive, OPEN),
            Keyframe(HANDOVER + 70, at, receive, CLOSED),
            Keyframe(HANDOVER + 90, at, receive, CLOSED),
            Keyframe(HANDOVER + 130, at + xyz(-0.1, 0, 0), receive, CLOSED),
        ]

    return Plan(left, right, [Replan(HANDOVER, 0, approach), Replan(HANDOVER + 30, 0, take)])


def insertion_plan(peg: np.ndarray, socket: np.ndarray, left0: Pose,
                   right0: Pose) -> Plan:  # fmt: skip
    """Each arm picks one part (left the socket, right the peg) and brings it to the middle;
    there the right arm lines the peg up with the socket's opening, where the parts hang now,
    and pushes it in until it meets the pin."""
    meet = np.array([0.0, 0.5, 0.15])
    left_pick = pick_quat(LEVEL_LEFT, PITCH)
    right_pick = pick_quat(LEVEL_RIGHT, -PITCH)

    def arm(start: Pose, part: np.ndarray, quat: np.ndarray, rest: float,
            side: float) -> list[Keyframe]:  # fmt: skip
        at = np.array([part[0], part[1], rest])
        return [
            Keyframe(0, *start, CLOSED),
            Keyframe(90, at + xyz(0, 0, 0.10), quat, OPEN),  # above the part
            Keyframe(120, at + xyz(0, 0, GRASP_HEIGHT), quat, OPEN),  # down around it
            Keyframe(145, at + xyz(0, 0, GRASP_HEIGHT), quat, CLOSED),  # grasp
            Keyframe(210, meet + xyz(side * 0.08, 0, 0), quat, CLOSED),  # to the middle
        ]

    def line_up(step: int, depths: tuple[tuple[float, int], ...]) -> Replan:
        """From ``step``, shift the right hand so that the peg's leading end, where it hangs
        now, lies on the socket's axis at each depth in turn (the peg's centre that far from the
        socket's, reached so many steps later). The peg hangs free to pivot between the
        fingers: once its end is in, the socket's walls turn it into line."""

        def keyframes(now: np.ndarray, start: Pose) -> list[Keyframe]:
            peg_at, peg_quat, socket_at, socket_quat = now[:3], now[3:7], now[7:10], now[10:14]
            axis = rotate(socket_quat, np.array([1.0, 0.0, 0.0]))
            end = peg_at - PEG_HALF * rotate(peg_quat, np.array([1.0, 0.0, 0.0]))
            held = end - start[0]  # the peg's leading end from the fingers' centre
            frames = [Keyframe(step, *start, CLOSED)]
            for depth, after in depths:
                at = socket_at + (depth - PEG_HALF) * axis - held
                frames.append(Keyframe(step + after, at, start[1], CLOSED))
            return frames

        return Replan(step, 1, keyframes)

    return Plan(
        arm(left0, socket, left_pick, SOCKET_REST, -1.0),
        arm(right0, peg, right_pick, PEG_REST, 1.0),
        [line_up(ALIGN, ((APPROACH, 40),)), line_up(ALIGN + 50, ((APPROACH, 20), (INSERTED, 100)))],
    )


def plan(task: str, objects: np.ndarray, left0: Pose,
         right0: Pose) -> Plan:  # fmt: skip
    """The keyframes of both arms for ``task`` (``transfer_cube`` or ``insertion``), from the
    objects' poses as the env's qpos holds them (7 per object: position, quaternion) and the
    grippers' start poses."""
    if task == "transfer_cube":
        return transfer_cube_plan(objects[:7], left0, right0)
    return insertion_plan(objects[:7], objects[7:14], left0, right0)
