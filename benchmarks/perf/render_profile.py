"""Where a rendered step's time goes, per benchmark: physics, and per camera the scene update,
the render, the read-back and the flip, then the policy batch and what crossing a process costs.

Each camera is rendered with MuJoCo's own calls on the benchmark's model and data, under the
model's defaults and with one cost removed at a time (multisampling, shadows, reflections, the
offscreen buffer sized to the image, the fast mode's coarse meshes, its culling of the geoms
out of view), so the table says what each costs. Medians of ``--steps``
steps, milliseconds.

    python benchmarks/perf/render_profile.py [--size 128] [--steps 15] [--benchmark metaworld]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_benchmarks.core import rendering
from pytest_benchmarks.envs.mujoco import mesh_detail, view_cull

rendering.choose_backend()

import mujoco  # noqa: E402  (after the GL backend is chosen)

SCENES = {
    "metaworld": ("push-v3", ("corner2",)),
    "libero": ("libero_spatial/0", ("agentview", "robot0_eye_in_hand")),
}

VARIANTS = (
    "defaults",
    "no multisampling",
    "+ no shadows",
    "+ no reflections",
    "+ sized buffer",
    "+ coarse meshes",
    "+ culled",
)


def median_ms(function: Callable[[], Any], steps: int) -> float:
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return 1e3 * statistics.median(times)


def build(benchmark_name: str, obs: str, size: int) -> tuple[Any, Any, Any]:
    """The benchmark's env for its scene task, its MjModel and MjData."""
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.tasks import EnvConfig

    benchmark = catalog.get(benchmark_name)
    task = benchmark.select([SCENES[benchmark_name][0]])[0]
    env = benchmark.make_env(EnvConfig(task, 500, 1000, obs=obs, image_size=(size, size)))
    env.reset(seed=0, options={"init_state": 0})
    inner = env._env  # the simulator's own env (metaworld's, or LIBERO's ControlEnv)
    if benchmark_name == "metaworld":
        return env, inner.model, inner.data
    sim = inner.env.sim
    return env, sim.model._model, sim.data._data


def time_camera(
    renderer: Any, data: Any, camera: str, size: int, steps: int, cull: bool = False
) -> list[float]:
    """Median ms of the scene update (with the geoms out of view hidden, if ``cull``), the
    render, the read-back and the flip of one camera."""
    from OpenGL import GL

    out = np.empty((size, size, 3), dtype=np.uint8)
    context, rect = renderer._mjr_context, renderer._rect
    flags = renderer.scene.flags.copy()
    model = renderer.model
    camera_id = model.camera(camera).id
    option = mujoco.MjvOption()

    def update() -> None:
        if cull:
            with view_cull.hidden_outside(model, data, camera_id, 1.0, option.geomgroup):
                renderer.update_scene(data, camera=camera, scene_option=option)
        else:
            renderer.update_scene(data, camera=camera, scene_option=option)
        renderer.scene.flags[:] = flags

    def draw() -> None:
        renderer._gl_context.make_current()
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, context)
        mujoco.mjr_render(rect, renderer.scene, context)
        GL.glFinish()  # the software renderer may defer work to the read-back otherwise

    def read() -> None:
        mujoco.mjr_readPixels(out, None, rect, context)

    def flip() -> None:
        np.ascontiguousarray(out[::-1, ::-1])

    update()
    draw()  # the first frame: context and shader set-up
    return [median_ms(f, steps) for f in (update, draw, read, flip)]


def camera_rows(model: Any, data: Any, camera: str, size: int, steps: int) -> list[str]:
    """One row per variant: scene update, render, read-back, flip (ms)."""
    rows = []
    coarse = mesh_detail.coarse_meshes(model)
    quality = model.vis.quality
    defaults = (quality.offsamples, model.vis.global_.offwidth, model.vis.global_.offheight)
    for variant in VARIANTS:
        if variant == "defaults":
            quality.offsamples = defaults[0]
        elif variant == "no multisampling":
            quality.offsamples = 0
        elif variant == "+ sized buffer":
            model.vis.global_.offwidth, model.vis.global_.offheight = size, size
        renderer = mujoco.Renderer(model, size, size)
        so_far = VARIANTS[: VARIANTS.index(variant) + 1]
        if "+ no shadows" in so_far:
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        if "+ no reflections" in so_far:
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        if "+ coarse meshes" in so_far:
            renderer._gl_context.make_current()
            mesh_detail.upload(model, renderer._mjr_context, coarse)
        figures = time_camera(renderer, data, camera, size, steps, variant == "+ culled")
        total = sum(figures)
        rows.append(
            f"  {camera:20} {variant:18} "
            + " ".join(f"{v:8.2f}" for v in figures)
            + f" {total:8.2f}  ({1e3 / total:5.1f} frames/s)"
        )
        renderer.close()
    quality.offsamples = defaults[0]
    model.vis.global_.offwidth, model.vis.global_.offheight = defaults[1], defaults[2]
    return rows


def profile(benchmark_name: str, size: int, steps: int) -> None:
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.tasks import EnvConfig

    state_env, _, _ = build(benchmark_name, "state", size)
    action = np.zeros(state_env.action_space.shape, dtype=state_env.action_space.dtype)
    physics = median_ms(lambda: state_env.step(action), steps)
    state_env.close()
    env, model, data = build(benchmark_name, "pixels", size)
    rendered = median_ms(lambda: env.step(action), steps)
    obs, *_ = env.step(action)
    benchmark = catalog.get(benchmark_name)
    task = benchmark.select([SCENES[benchmark_name][0]])[0]
    processors = benchmark.processors(
        EnvConfig(task, 500, 1000, obs="pixels", image_size=(size, size))
    )
    batched = {k: np.stack([v, v]) for k, v in obs.items()} if isinstance(obs, dict) else obs
    batch_ms = median_ms(lambda: processors(batched), steps)
    message = pickle.dumps(batched, protocol=pickle.HIGHEST_PROTOCOL)
    pickle_ms = median_ms(lambda: pickle.loads(pickle.dumps(batched, protocol=5)), steps)
    print(f"{benchmark_name} {SCENES[benchmark_name][0]}, {size}x{size}, median of {steps} steps")
    print(f"  physics step (state only)       {physics:8.2f} ms")
    print(f"  rendered step (pixels, as run)  {rendered:8.2f} ms")
    print(f"  {'camera':20} {'variant':18} {'scene':>8} {'render':>8} {'read':>8} {'flip':>8} "
          f"{'total':>8}")  # fmt: skip
    for camera in SCENES[benchmark_name][1]:
        for row in camera_rows(model, data, camera, size, steps):
            print(row, flush=True)
    print(f"  policy batch of 2 (processors)  {batch_ms:8.2f} ms")
    print(f"  pickle round trip of 2 obs      {pickle_ms:8.2f} ms ({len(message) / 1024:.0f} KiB)")
    env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--benchmark", choices=sorted(SCENES), action="append")
    args = parser.parse_args()
    for name in args.benchmark or sorted(SCENES, reverse=True):
        profile(name, args.size, args.steps)


if __name__ == "__main__":
    main()
