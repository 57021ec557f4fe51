"""Culling for the fast mode: geoms outside a camera's view are left out, and the frames are the
same bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import SHORT, pixel_episodes

from pytest_benchmarks.core import rendering
from pytest_benchmarks.envs.mujoco import view_cull

rendering.choose_backend()

#: Balls around a camera at the origin looking along +y (xyaxes: right +x, up +z), fovy 45.
BALLS = {
    "ahead": "0 1 0",  # in the middle of the view
    "edge": "0.6 1 0",  # its centre out of the view (29 degrees to the side), its edge in it
    "beside": "1 1 0",
    "behind": "0 -1 0",
    "above": "0 1 1",
    "beyond": "0 200 0",  # past zfar
}


def scene() -> Any:
    import mujoco

    balls = "".join(
        f'<geom name="{name}" type="sphere" size="0.1" pos="{pos}" rgba="0.9 0.2 0.2 1"/>'
        for name, pos in BALLS.items()
    )
    xml = f"""
    <mujoco>
      <statistic extent="2" center="0 1 0"/>
      <visual><global offwidth="64" offheight="48"/><quality offsamples="0"/></visual>
      <worldbody>
        <light pos="0 0 3"/>
        <camera name="eye" pos="0 0 0" xyaxes="1 0 0 0 0 1" fovy="45"/>
        <geom type="plane" size="5 5 0.1" pos="0 0 -0.5"/>
        {balls}
      </worldbody>
    </mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def test_only_geoms_wholly_outside_the_frustum_are_outside():
    import mujoco

    model = scene()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    out = view_cull.outside(model, data, 0, 64 / 48)
    named = {model.geom(i).name: bool(out[i]) for i in range(model.ngeom) if model.geom(i).name}
    assert named == {
        "ahead": False, "edge": False, "beside": True, "behind": True, "above": True,
        "beyond": True,
    }  # fmt: skip
    assert not out[0]  # the plane has no bounding radius: never culled
    # A wider image sees further to the side: the ball beside comes into a 4:1 view.
    assert not view_cull.outside(model, data, 0, 4.0)[model.geom("beside").id]


def test_a_frame_with_the_outside_hidden_is_the_same_and_groups_come_back():
    import mujoco

    model = scene()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    groups = model.geom_group.copy()
    renderer = mujoco.Renderer(model, 48, 64)
    try:
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        option = mujoco.MjvOption()
        renderer.update_scene(data, camera="eye", scene_option=option)
        full, drawn = renderer.render().copy(), renderer.scene.ngeom
        with view_cull.hidden_outside(model, data, 0, 64 / 48, option.geomgroup):
            renderer.update_scene(data, camera="eye", scene_option=option)
            culled, fewer = renderer.render(), renderer.scene.ngeom
        # Every group shown: nothing can be hidden, nothing is.
        with view_cull.hidden_outside(model, data, 0, 64 / 48, np.ones(6, np.uint8)):
            assert np.array_equal(model.geom_group, groups)
    finally:
        renderer.close()
    assert fewer == drawn - 4  # beside, behind, above, beyond
    assert np.array_equal(culled, full)
    assert np.array_equal(model.geom_group, groups)
    assert (full[..., 0] > 150).any()  # the balls in view are drawn
    rim = full[:, -2:].astype(int)
    assert (rim[..., 0] > rim[..., 1] + 10).any()  # the edge ball too, at the image's right edge


class Counted:
    """``view_cull.outside`` that counts the geoms it culls, or culls none."""

    def __init__(self, cull: bool) -> None:
        self.cull, self.culled = cull, 0
        self.real = view_cull.outside

    def __call__(self, *args: Any) -> np.ndarray:
        out = self.real(*args)
        self.culled += int(out.sum())
        return out if self.cull else np.zeros_like(out)


def test_libero_fast_frames_are_the_same_with_and_without_culling(
    monkeypatch: pytest.MonkeyPatch,
):
    """Two episodes (the second reset keeps the render context and makes new camera sensors).
    Meta-World's corner2 camera sees its whole scene: nothing to cull, so it is not culled."""

    def frames(counted: Counted) -> list[dict[str, np.ndarray]]:
        monkeypatch.setattr(view_cull, "outside", counted)
        seen = pixel_episodes("libero", "libero_spatial/0", "fast", (48, 64), **SHORT)
        return [{k: v for k, v in f.items() if k.endswith("_image")} for f in seen]

    culling, keeping = Counted(cull=True), Counted(cull=False)
    culled, kept = frames(culling), frames(keeping)
    assert culling.culled > 0  # something out of view was left out
    for step, (c, k) in enumerate(zip(culled, kept, strict=True)):
        for key in c:
            assert np.array_equal(c[key], k[key]), (step, key)
