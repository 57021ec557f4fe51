"""Poses for ALOHA's planned motions: (w, x, y, z) quaternions, keyframes of the fingers'
centre and their interpolation into one pose per control step."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPEN, CLOSED = 1.0, 0.0


def xyz(x: float, y: float, z: float) -> np.ndarray:
    """An offset in the world frame."""
    return np.array([x, y, z], dtype=np.float64)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product of (w, x, y, z) quaternions."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])  # fmt: skip


def rotation(axis: tuple[float, float, float], degrees: float) -> np.ndarray:
    """The (w, x, y, z) quaternion of a turn about ``axis``."""
    half = np.radians(degrees) / 2
    return np.concatenate([[np.cos(half)], np.sin(half) * np.asarray(axis, dtype=float)])


@dataclass(frozen=True)
class Keyframe:
    """Where an arm's fingers' centre is at ``step``, turned how, its gripper open (1) or
    closed (0)."""

    step: int
    xyz: np.ndarray
    quat: np.ndarray
    gripper: float


def interpolate(frames: list[Keyframe], steps: int) -> np.ndarray:
    """Per step, (x, y, z, qw, qx, qy, qz, gripper) interpolated between keyframes; held after
    the last one."""
    times = [f.step for f in frames]
    values = np.stack([np.concatenate([f.xyz, f.quat, [f.gripper]]) for f in frames])
    t = np.arange(steps)
    return np.stack([np.interp(t, times, values[:, k]) for k in range(values.shape[1])], axis=1)


def rotate(quat: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``vector`` turned by the (w, x, y, z) quaternion."""
    w, xyz = quat[0], quat[1:]
    t = 2 * np.cross(xyz, vector)
    return vector + w * t + np.cross(xyz, t)
