"""Geoms wholly outside a camera's view left out of its frame, for the fast render mode.

MuJoCo draws every visible geom for every camera, and a CPU renderer pays for each triangle
whether or not it lands in the image: LIBERO's eye-in-hand camera sees a few objects and the
gripper, yet draws the arm, the pedestal and the far side of the scene. Without shadows and
reflections (the fast mode) a geom whose bounding sphere lies outside the view frustum adds no
pixel, so hiding it for that frame leaves the image the same bit for bit (tested). The geoms are
hidden by moving them, for the one render, to a geom group the scene does not show; their groups
are put back before anything else runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Added to every bounding radius: a millimetre of slack for rounding, nothing in view is lost.
MARGIN = 0.001


def outside(model: Any, data: Any, camera: int, aspect: float) -> np.ndarray:
    """Per geom, whether its bounding sphere lies wholly outside the fixed camera's frustum, as
    MuJoCo's renderer projects it (``fovy``, ``znear``/``zfar`` times the model's extent, the
    width from the image's aspect ratio). Planes (no bounding radius) are never outside, and a
    camera given by its sensor size (whose frustum is not this one) culls nothing."""
    if model.cam_sensorsize[camera].any():
        return np.zeros(model.ngeom, dtype=bool)
    frame = data.cam_xmat[camera].reshape(3, 3)  # columns: right, up, backward
    offset = data.geom_xpos - data.cam_xpos[camera]
    x, y, depth = offset @ frame[:, 0], offset @ frame[:, 1], -(offset @ frame[:, 2])
    extent = model.stat.extent
    near, far = model.vis.map.znear * extent, model.vis.map.zfar * extent
    top = near * np.tan(np.deg2rad(model.cam_fovy[camera]) / 2)
    side = aspect * top
    radius = model.geom_rbound + MARGIN
    out = (depth + radius < near) | (depth - radius > far)
    for across, edge in ((x, side), (-x, side), (y, top), (-y, top)):
        out |= (across * near - edge * depth) > radius * np.hypot(near, edge)
    return out & (model.geom_rbound > 0)


@contextmanager
def hidden_outside(model: Any, data: Any, camera: int, aspect: float, shown: Any) -> Iterator[None]:
    """Within the block, the geoms outside the camera's view sit in a geom group that ``shown``
    (the scene's ``mjvOption.geomgroup``) hides; nothing is hidden when every group is shown."""
    hidden_groups = np.flatnonzero(np.asarray(shown) == 0)
    if len(hidden_groups) == 0:
        yield
        return
    culled = np.flatnonzero(outside(model, data, camera, aspect))
    groups = model.geom_group[culled].copy()
    model.geom_group[culled] = hidden_groups[-1]
    try:
        yield
    finally:
        model.geom_group[culled] = groups
