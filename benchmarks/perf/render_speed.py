"""Rendered env-steps per second per env: the simulator's own env, and the harness's env in each
render mode, with one process stepping or several at once (as under ``-n 2``); the pixel
difference of fast against faithful per camera; whether faithful frames equal the simulator's.

Every variant steps the same seeded actions from the same initial state in processes of its
own (each makes its own GL context); the variants take turns round by round. Medians of
``--rounds`` rounds of ``--steps`` steps. A variant ``NAME/1t`` renders with one llvmpipe thread;
``NAME/full`` draws the models' full meshes (no ``mesh_detail``), ``NAME/all`` every geom in
every camera (no ``view_cull``), so ``fast/full/all`` is the fast mode before either;
``NAME@CAMERA`` is the harness's env for a policy that reads only that camera (the others black).

    python benchmarks/perf/render_speed.py [--steps 20] [--rounds 3] [--procs 1,2]
        [--case metaworld:push-v3:128 ...]
        [--variants own,faithful,fast,fast/1t,fast/full,faithful@agentview]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from typing import Any

import numpy as np

CASES = (
    "metaworld:push-v3:128",
    "metaworld:push-v3:480",
    "libero:libero_spatial/0:128",
    "libero:libero_spatial/0:256",
)
VARIANTS = ("own", "faithful", "fast")
SEED = 1000


def actions(dim: int, steps: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, dim).astype(np.float32) for _ in range(steps)]


def own_env(benchmark: str, task: str, size: int) -> tuple[Any, Any]:
    """The simulator's own env at episode 0's start: its step (to the frames) and close."""
    if benchmark == "metaworld":
        import metaworld

        env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task](
            render_mode="rgb_array", camera_name="corner2", width=size, height=size
        )
        env.set_task(metaworld.MT1(task, seed=SEED).train_tasks[0])
        env.seed(0)
        env.reset()
        env.render()  # its viewer is made on the first frame: not part of a timed step

        def step(action: np.ndarray) -> dict[str, np.ndarray]:
            env.step(action)
            return {"corner2_image": env.render()}

        return step, env.close
    from pytest_benchmarks.envs.libero.env import CAMERAS, NOOP
    from pytest_benchmarks.envs.libero.setup import prepare

    prepare()
    from libero.libero import benchmark as suites
    from libero.libero import get_libero_path
    from libero.libero.envs.env_wrapper import ControlEnv

    suite_name, task_id = task.split("/")
    suite = suites.get_benchmark_dict()[suite_name]()
    info = suite.get_task(int(task_id))
    env = ControlEnv(
        bddl_file_name=os.path.join(
            get_libero_path("bddl_files"), info.problem_folder, info.bddl_file
        ),
        has_renderer=False, has_offscreen_renderer=True, use_camera_obs=True,
        camera_names=[c.removesuffix("_image") for c in CAMERAS],
        camera_heights=size, camera_widths=size,
    )  # fmt: skip
    env.seed(0)
    env.reset()
    env.set_init_state(suite.get_task_init_states(int(task_id))[0])
    for _ in range(10):
        env.step(NOOP)

    def libero_step(action: np.ndarray) -> dict[str, np.ndarray]:
        raw = env.step(action)[0]
        return {key: raw[key] for key in CAMERAS}

    return libero_step, env.close


def harness_env(
    benchmark: str, task: str, size: int, render: str, read: str = ""
) -> tuple[Any, Any]:
    from dataclasses import replace

    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.features import IMAGE_PREFIX
    from pytest_benchmarks.core.tasks import EnvConfig

    bench = catalog.get(benchmark)
    ref = bench.select([task])[0]
    config = EnvConfig(ref, 10_000, SEED, obs="pixels", image_size=(size, size), render=render)
    if read:  # as for a policy whose only image input is this camera's
        unread = bench.unread_cameras(config, {f"{IMAGE_PREFIX}{read}_image"})
        config = replace(config, blank_cameras=unread)
    env = bench.make_env(config)
    env.reset(seed=0, options={"init_state": 0})

    def step(action: np.ndarray) -> dict[str, np.ndarray]:
        obs = env.step(action)[0]
        return {key: value for key, value in obs.items() if key.endswith("_image")}

    return step, env.close


def worker(case: str, variant: str, steps: int, commands: Any, out: Any) -> None:
    """One env in its own process: build, then step ``steps`` seeded actions each time the
    parent says so, answering with the rate; the first round's frames come back at the end."""
    name, *options = variant.split("/")
    for option in options:
        if option == "full":  # no coarse meshes
            from pytest_benchmarks.envs.mujoco import mesh_detail

            mesh_detail.coarse_meshes = lambda model, cell=mesh_detail.CELL: {}
        elif option == "all":  # no geom left out of a camera's frame
            from pytest_benchmarks.envs.mujoco import view_cull

            view_cull.outside = lambda model, *_: np.zeros(model.ngeom, dtype=bool)
        else:  # NAME/Nt (main checks the options): llvmpipe reads it at its first GL context
            os.environ["LP_NUM_THREADS"] = option.removesuffix("t")
    from pytest_benchmarks.core import rendering

    rendering.choose_backend()
    benchmark, task, size = case.rsplit(":", 2)
    render, _, read = name.partition("@")
    if name == "own":
        step, close = own_env(benchmark, task, int(size))
    else:
        step, close = harness_env(benchmark, task, int(size), render, read)
    dim = 4 if benchmark == "metaworld" else 7
    frames = None
    out.put("ready")
    while commands.get() == "step":
        kept = []
        began = time.perf_counter()
        for action in actions(dim, steps):
            kept.append(step(action))
        rate = steps / (time.perf_counter() - began)
        if frames is None:
            frames = {key: np.stack([k[key] for k in kept]) for key in kept[0]}
        out.put(rate)
    close()
    out.put(frames)


def measure(
    case: str, variants: list[str], procs: int, steps: int, rounds: int
) -> tuple[dict[str, float], dict[str, dict[str, np.ndarray]]]:
    """Per variant, ``procs`` processes that step at once; the variants take turns round by
    round, so machine noise falls on all of them alike. Median rate per env, and frames."""
    context = multiprocessing.get_context("forkserver")
    out = {v: context.Queue() for v in variants}
    commands = {v: [context.Queue() for _ in range(procs)] for v in variants}
    workers = [
        context.Process(target=worker, args=(case, v, steps, queue, out[v]))
        for v in variants
        for queue in commands[v]
    ]
    for process in workers:
        process.start()
    for v in variants:
        assert all(out[v].get(timeout=600) == "ready" for _ in range(procs))
    rates: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            for queue in commands[v]:
                queue.put("step")
            rates[v].append(statistics.mean(out[v].get(timeout=1800) for _ in range(procs)))
    frames = {}
    for v in variants:
        for queue in commands[v]:
            queue.put("stop")
        received = [out[v].get(timeout=600) for _ in range(procs)]  # drain every worker's
        frames[v] = received[0]
    for process in workers:
        process.join()
    return {v: statistics.median(r) for v, r in rates.items()}, frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--procs", default="1,2", help="processes stepping at once, e.g. 1,2")
    parser.add_argument("--case", action="append", help=f"BENCHMARK:TASK:SIZE (default {CASES})")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="own (the simulator's own env), faithful, fast; NAME/1t: one renderer thread; "
        "NAME/full: the full meshes; NAME/all: no geom culled; NAME@CAMERA: only that camera "
        "read, the others black",
    )
    args = parser.parse_args()
    counts = [int(p) for p in args.procs.split(",")]
    variants = args.variants.split(",")
    for variant in variants:
        for option in variant.split("/")[1:]:
            if option not in ("full", "all") and not option.removesuffix("t").isdigit():
                parser.error(f"variant {variant}: unknown option /{option} (valid: Nt, full, all)")
    print(f"rendered env-steps/s per env, median of {args.rounds} interleaved rounds of "
          f"{args.steps} steps")  # fmt: skip
    print(f"{'case':30} " + " ".join(f"{f'{v} x{n}':>14}" for n in counts for v in variants))
    for case in args.case or CASES:
        rates: dict[tuple[str, int], float] = {}
        frames: dict[str, dict[str, np.ndarray]] = {}
        for procs in counts:
            measured, seen = measure(case, variants, procs, args.steps, args.rounds)
            rates.update({(v, procs): rate for v, rate in measured.items()})
            frames = frames or seen
        cells = " ".join(f"{rates[v, n]:14.2f}" for n in counts for v in variants)
        print(f"{case:30} {cells}", flush=True)
        if {"own", "faithful", "fast"} <= set(frames):
            for camera in frames["faithful"]:
                same = np.array_equal(frames["own"][camera], frames["faithful"][camera])
                fast = frames["fast"][camera].astype(np.int16)
                mad = np.abs(fast - frames["faithful"][camera]).mean()
                print(f"  {camera:28} faithful = simulator's own: {same}; "
                      f"fast vs faithful: mean absolute difference {mad:.2f} of 255")  # fmt: skip
                for other in (v for v in frames if v.startswith("fast/") and not v.endswith("t")):
                    off = np.abs(fast - frames[other][camera]).mean()
                    print(f"  {camera:28} fast vs {other}: "
                          f"mean absolute difference {off:.2f} of 255")  # fmt: skip
        for v in variants:
            base, _, read = v.partition("/")[0].partition("@")
            if read and base in frames:
                camera = f"{read}_image"
                same = np.array_equal(frames[v][camera], frames[base][camera])
                black = [c for c in frames[v] if c != camera and not frames[v][c].any()]
                print(f"  {v}: {camera} = {base}'s: {same}; black: {', '.join(black) or '-'}")
        if "own" in variants:
            for n in counts:
                ratios = ", ".join(
                    f"{v} {rates[v, n] / rates['own', n]:.2f}" for v in variants if v != "own"
                )
                print(f"  x{n}, against the simulator's own: {ratios}")
        if len(counts) > 1:
            scaling = ", ".join(
                f"{v} {counts[-1] * rates[v, counts[-1]] / rates[v, counts[0]]:.2f}"
                for v in variants
            )
            print(f"  throughput x{counts[-1]} / x{counts[0]} (all envs together): {scaling}")


if __name__ == "__main__":
    main()
