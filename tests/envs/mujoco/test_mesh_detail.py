"""The fast mode's coarse meshes: fewer triangles, each corner's normal and texture coordinate
kept, drawn only by the render context, never seen by the physics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import SHORT, pixel_episodes

from pytest_benchmarks.core import rendering
from pytest_benchmarks.envs.mujoco import mesh_detail

rendering.choose_backend()


def sphere(rings: int = 60, segments: int = 80, radius: float = 0.05) -> tuple[np.ndarray, ...]:
    """A dense UV sphere without its poles (no two vertices at one place): vertices and
    triangles."""
    theta = np.linspace(0.1, np.pi - 0.1, rings)[:, None]
    phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)[None, :]
    vert = radius * np.stack(
        [np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta) + 0 * phi], -1
    ).reshape(-1, 3)
    faces = []
    for r in range(rings - 1):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            c, d = a + segments, b + segments
            faces += [(a, c, b), (b, c, d)]
    return vert, np.array(faces)


def test_clustering_merges_vertices_within_a_cell_and_drops_collapsed_triangles():
    vert, face = sphere()
    cell = 0.01
    merged, corners, kept = mesh_detail.coarsen(vert, face, cell)
    assert 0 < kept.sum() < len(face) / 4  # the rings and segments finer than a cell collapse
    left = corners[kept]
    assert (left[:, 0] != left[:, 1]).all() and (left[:, 1] != left[:, 2]).all()
    assert (left[:, 0] != left[:, 2]).all()
    # Every corner moved to its cell's mean, so by less than the cell's diagonal.
    moved = np.linalg.norm(merged[corners] - vert[face], axis=-1)
    assert moved.max() <= cell * np.sqrt(3)
    # A cell smaller than the spacing of the vertices changes nothing.
    merged, corners, kept = mesh_detail.coarsen(vert, face, 1e-5)
    assert kept.all() and np.array_equal(corners, face) and np.allclose(merged, vert)


def mesh_model() -> Any:
    import mujoco

    vert, face = sphere()
    xml = f"""
    <mujoco>
      <visual><global offwidth="64" offheight="64"/><quality offsamples="0"/></visual>
      <asset>
        <mesh name="ball" vertex="{" ".join(map(str, vert.ravel()))}"
              face="{" ".join(map(str, face.ravel()))}"/>
      </asset>
      <worldbody>
        <light pos="0 0 1"/>
        <camera name="eye" pos="0 -0.2 0" xyaxes="1 0 0 0 0 1"/>
        <body><freejoint/><geom type="mesh" mesh="ball" rgba="0.8 0.3 0.3 1"/></body>
      </worldbody>
    </mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def test_the_render_context_draws_the_coarse_mesh_and_the_model_keeps_its_own():
    import mujoco

    model = mesh_model()
    arrays = ("mesh_vert", "mesh_face", "mesh_facenormal", "mesh_facenum", "mesh_vertnum")
    before = {name: getattr(model, name).copy() for name in arrays}
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = mujoco.Renderer(model, 64, 64)
    try:
        renderer.update_scene(data, camera="eye")
        full = renderer.render().copy()
        meshes = mesh_detail.coarse_meshes(model, 0.01)
        assert list(meshes) == [0] and len(meshes[0].face) < model.mesh_facenum[0] / 4
        renderer._gl_context.make_current()
        mesh_detail.upload(model, renderer._mjr_context, meshes)
        for name, value in before.items():
            assert np.array_equal(getattr(model, name), value), name
        coarse = renderer.render()
    finally:
        renderer.close()
    difference = np.abs(coarse.astype(np.int16) - full).mean()
    assert not np.array_equal(coarse, full)  # the coarse mesh is what was drawn
    assert difference < 3, difference  # the same ball
    assert (full.max(-1) > 0).mean() > 0.2  # and the ball fills the view


def test_libero_fast_frames_draw_coarse_meshes_in_every_episode(monkeypatch: pytest.MonkeyPatch):
    """Two episodes (the second reset keeps the render context): the fast frames differ a little
    from the full meshes' and the states are the same step for step; the sim's meshes are the
    compiled ones throughout."""
    compiled: dict[str, np.ndarray] = {}

    def unchanged(env: Any) -> None:
        model = env._env.env.sim.model._model
        for name in ("mesh_face", "mesh_vert", "mesh_facenum"):
            if name in compiled:
                assert np.array_equal(getattr(model, name), compiled[name]), name
            compiled[name] = getattr(model, name).copy()

    coarse = pixel_episodes("libero", "libero_object/0", "fast", (64, 64), **SHORT, check=unchanged)
    monkeypatch.setattr(mesh_detail, "coarse_meshes", lambda model, cell=0.0: {})
    full = pixel_episodes("libero", "libero_object/0", "fast", (64, 64), **SHORT, check=unchanged)
    for step, (c, f) in enumerate(zip(coarse, full, strict=True)):
        for key in c:
            if key.endswith("_image"):
                difference = np.abs(c[key].astype(np.int16) - f[key]).mean()
                assert not np.array_equal(c[key], f[key]), (step, key)
                assert difference < 5, (step, key, difference)
            else:
                assert np.array_equal(c[key], f[key]), (step, key)
