"""How the benchmarks' MuJoCo cameras render: the render modes, and an offscreen buffer the size
of the image.

MuJoCo renders a camera into an offscreen framebuffer of the model's ``offwidth x offheight``
(640x480 in both benchmarks' models) whatever the image size. Sized to the image, the pixels are
the same (tested); the saving was a quarter of a LIBERO agentview frame without multisampling
and not measurable with it (benchmarks/perf/render_profile.py, render_speed.py). ``fast``
turns off what costs a CPU renderer most: the 4x multisampling, the shadow pass and the
reflection pass, and draws every mesh coarsened on a 4 mm grid (``mesh_detail``: a LIBERO
frame's cost follows its triangle count); LIBERO's cameras also leave out the geoms outside their
view (``view_cull``, the same pixels). Its images differ from ``faithful``'s;
docs/performance.md gives by how much.

mujoco is imported inside the functions: the GL backend must be chosen before its import.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from pytest_benchmarks.envs.mujoco import mesh_detail

FAST = "fast"


def configure_model(model: Any, size: tuple[int, int], mode: str) -> None:
    """Set the offscreen buffer to ``size`` (height, width) and, for ``fast``, no
    multisampling; before the model's rendering context is made, which reads both."""
    height, width = size
    model.vis.global_.offwidth, model.vis.global_.offheight = width, height
    if mode == FAST:
        model.vis.quality.offsamples = 0


def configure_scene(scene: Any, mode: str) -> None:
    """Turn off the shadow and reflection passes of a scene (``fast``); they persist across
    scene updates."""
    if mode != FAST:
        return
    import mujoco

    scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
    scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0


def configure_meshes(model: Any, context: Any, mode: str) -> None:
    """For ``fast``, replace the meshes of a render context (an ``MjrContext``, its GL context
    current) with the model's coarsened ones; once per context: it keeps them."""
    if mode == FAST:
        mesh_detail.upload(model, context, mesh_detail.coarse_meshes(model))


def configure_xml(xml: str, size: tuple[int, int], mode: str) -> str:
    """``configure_model`` on an MJCF document, for simulators that rebuild their model from
    XML on every reset (robosuite's hard reset)."""
    root = ET.fromstring(xml)
    visual = _child(root, "visual")
    glob, quality = _child(visual, "global"), _child(visual, "quality")
    height, width = size
    glob.set("offwidth", str(width))
    glob.set("offheight", str(height))
    if mode == FAST:
        quality.set("offsamples", "0")
    return ET.tostring(root, encoding="unicode")


def _child(parent: ET.Element, tag: str) -> ET.Element:
    """The element's child of that tag, made when absent (``find or`` would not do: an element
    without children is false)."""
    found = parent.find(tag)
    return ET.SubElement(parent, tag) if found is None else found
