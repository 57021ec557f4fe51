"""Coarser meshes for the fast render mode: what a CPU renderer spends a LIBERO frame on.

A CPU renderer (llvmpipe) transforms and sets up every triangle of every drawn mesh, so a frame's
cost follows the scene's triangle count (benchmarks/perf/render_profile.py): LIBERO's scenes hold
about 300,000 (a bowl alone 42,000), most far smaller than a pixel at policy image sizes.
``coarsen`` merges each mesh's vertices that share a cell of a grid (vertex clustering) and drops
the triangles that collapse; every remaining corner keeps its own normal and texture coordinate,
so shading and textures stay as they were. Only the renderer's copy changes: the meshes are
written into the model just long enough to upload them to the render context, then put back, so
physics never sees them.

mujoco is imported inside the functions: the GL backend must be chosen before its import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Grid cell (metres) the fast mode's meshes are clustered on: finer than a pixel of a 128x128
#: LIBERO camera at the objects it looks at (agentview 6.7 mm, eye-in-hand 5.2 mm at the bowls).
CELL = 0.004


@dataclass(frozen=True)
class Coarse:
    """One mesh clustered on a grid: its vertices (merged ones at their cell's mean) and the
    faces left, with each corner's normal and texture coordinate indices."""

    vert: np.ndarray
    face: np.ndarray
    facenormal: np.ndarray
    facetexcoord: np.ndarray | None


def coarsen(
    vert: np.ndarray, face: np.ndarray, cell: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertices merged per grid cell (each cell's first vertex moved to the cell's mean) and the
    faces' corners pointing at them; also returns which faces keep three distinct corners."""
    keys = np.floor(vert / cell).astype(np.int64)
    keys -= keys.min(axis=0)
    span = keys.max(axis=0) + 1
    flat = (keys[:, 0] * span[1] + keys[:, 1]) * span[2] + keys[:, 2]
    _, first, cluster = np.unique(flat, return_index=True, return_inverse=True)
    counts = np.bincount(cluster)
    merged = vert.copy()
    for axis in range(3):
        merged[first, axis] = np.bincount(cluster, weights=vert[:, axis]) / counts
    corners = first[cluster][face]
    kept = (
        (corners[:, 0] != corners[:, 1])
        & (corners[:, 1] != corners[:, 2])
        & (corners[:, 0] != corners[:, 2])
    )
    return merged, corners, kept


def coarse_meshes(model: Any, cell: float = CELL) -> dict[int, Coarse]:
    """Every mesh of the model that clustering makes smaller, by mesh id."""
    meshes = {}
    for mesh in range(model.nmesh):
        vert = _rows(model.mesh_vert, model.mesh_vertadr[mesh], model.mesh_vertnum[mesh])
        faces = slice(model.mesh_faceadr[mesh], model.mesh_faceadr[mesh] + model.mesh_facenum[mesh])
        merged, corners, kept = coarsen(vert, model.mesh_face[faces], cell)
        if kept.all():
            continue
        textured = model.mesh_texcoordnum[mesh] > 0
        meshes[mesh] = Coarse(
            vert=merged.astype(model.mesh_vert.dtype),
            face=corners[kept].astype(model.mesh_face.dtype),
            facenormal=model.mesh_facenormal[faces][kept],
            facetexcoord=model.mesh_facetexcoord[faces][kept] if textured else None,
        )
    return meshes


def upload(model: Any, context: Any, meshes: dict[int, Coarse]) -> None:
    """Upload the coarse meshes to a render context (an ``MjrContext``) in place of the model's,
    which are written back at once."""
    import mujoco

    for mesh, coarse in meshes.items():
        vert = _rows(model.mesh_vert, model.mesh_vertadr[mesh], model.mesh_vertnum[mesh])
        start, count = int(model.mesh_faceadr[mesh]), len(coarse.face)
        faces = slice(start, start + int(model.mesh_facenum[mesh]))
        arrays = [(vert, coarse.vert), (model.mesh_face[faces][:count], coarse.face)]
        arrays.append((model.mesh_facenormal[faces][:count], coarse.facenormal))
        if coarse.facetexcoord is not None:
            arrays.append((model.mesh_facetexcoord[faces][:count], coarse.facetexcoord))
        saved = [original.copy() for original, _ in arrays]
        facenum = int(model.mesh_facenum[mesh])
        try:
            for original, replacement in arrays:
                original[:] = replacement
            model.mesh_facenum[mesh] = count
            mujoco.mjr_uploadMesh(model, context, mesh)
        finally:
            model.mesh_facenum[mesh] = facenum
            for (original, _), copy in zip(arrays, saved, strict=True):
                original[:] = copy


def _rows(array: np.ndarray, start: int, count: int) -> np.ndarray:
    return array[int(start) : int(start) + int(count)]
