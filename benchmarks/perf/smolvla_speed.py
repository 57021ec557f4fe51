"""SmolVLA through the plugin against LeRobot's own ``eval_policy_all`` (videos off): env-steps
per second and peak memory of each process tree, on the same LIBERO task, cameras, image size,
episode length and batch size, side by side in one run.

Builds a tiny SmolVLA (the test suite's local SmolVLM2-style backbone, random weights) for
LeRobot's LIBERO layout (two cameras and the 8-D state), then alternates, for each round,
LeRobot's ``make_env`` + ``eval_policy_all`` (``max_episodes_rendered=0``) and
``pytest --benchmark-policy=lerobot:DIR`` (``-n 0``) on libero_spatial task 0, both with the
envs in the process (LeRobot's ``use_async_envs=False``, ``--benchmark-sync``): LeRobot's async
LIBERO envs hang on this machine (their workers sit idle; not investigated further). Steps per
second: env steps over the command's whole wall time (start-up included); memory: the largest
sum of the resident sets of the process and its children, sampled every 0.2 s.

    python benchmarks/perf/smolvla_speed.py [--rounds 3] [--episodes 2] [--batch 2]
        [--max-steps 60] [--size 128]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent.parent

LEROBOT = """
import json, sys
from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.configs import LiberoEnv
from lerobot.envs.factory import make_env, make_env_pre_post_processors
from lerobot.policies.factory import get_policy_class, make_pre_post_processors
from lerobot.scripts.lerobot_eval import eval_policy_all

if __name__ == "__main__":
    from pytest_benchmarks.envs.libero.setup import prepare

    prepare()  # LIBERO's config.yaml, so that importing libero never prompts
    folder, episodes, batch, steps, size = sys.argv[1], *map(int, sys.argv[2:6])
    env_cfg = LiberoEnv(task="libero_spatial", task_ids=[0], episode_length=steps,
                        observation_height=size, observation_width=size)
    envs = make_env(env_cfg, n_envs=batch, use_async_envs=False)
    stepped = [0]
    for group in envs.values():
        for env in group.values():
            def counted(action, step=env.step):
                stepped[0] += len(action)
                return step(action)
            env.step = counted
    config = PreTrainedConfig.from_pretrained(folder)
    config.device = "cpu"
    policy = get_policy_class(config.type).from_pretrained(folder, config=config).eval()
    pre, post = make_pre_post_processors(config, pretrained_path=folder)
    env_pre, env_post = make_env_pre_post_processors(env_cfg, config)
    info = eval_policy_all(envs, policy, env_pre, env_post, pre, post, episodes,
                           max_episodes_rendered=0, start_seed=1000)
    print(json.dumps({"steps": stepped[0], "pc_success": info["overall"]["pc_success"]}))
"""


def timed(command: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """Wall seconds, the peak of the process tree's summed resident memory (MiB), and the
    command's output; RuntimeError unless it exits with a status in ``ok``."""
    started = time.perf_counter()
    peak = 0
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        parent = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [parent, *parent.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        log.seek(0)
        output = log.read()
    if process.returncode not in ok:
        raise RuntimeError(f"{command[:3]} failed:\n{output[-3000:]}")
    return elapsed, peak / 2**20, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import lerobot_models

    from pytest_benchmarks.core import rendering

    # The same GL backend for both (LeRobot picks none itself; OSMesa on a CPU).
    rendering.choose_backend()

    work = Path(tempfile.mkdtemp(prefix="smolvla-speed-"))
    vlm = lerobot_models.backbone(work / "vlm")
    size = args.size
    inputs = {"observation.state": (8,), "observation.images.image": (3, size, size),
              "observation.images.image2": (3, size, size)}  # fmt: skip
    folder = lerobot_models.checkpoint(
        "smolvla", work / "smolvla", inputs, action_dim=7, vlm_model_name=str(vlm)
    )
    script = work / "lerobot_side.py"
    script.write_text(LEROBOT)
    # Neither policy succeeds (random weights), so every episode runs to the step limit.
    steps = args.episodes * args.max_steps
    figures: dict[str, list[tuple[float, float]]] = {"eval_policy_all": [], "plugin": []}
    for round_ in range(args.rounds):
        seconds, rss, output = timed(
            [sys.executable, str(script), str(folder), str(args.episodes), str(args.batch),
             str(args.max_steps), str(size)], ROOT,
        )  # fmt: skip
        ran = json.loads(output.strip().splitlines()[-1])["steps"]
        if ran != steps:
            raise RuntimeError(f"eval_policy_all ran {ran} steps, not {steps}")
        figures["eval_policy_all"].append((seconds, rss))
        metrics = work / f"metrics{round_}.json"
        seconds, rss, _ = timed(
            [sys.executable, "-m", "pytest", "benchmarks/test_libero.py", "-k", "test_rollout",
             "-p", "no:cacheprovider", "-q", f"--benchmark-policy=lerobot:{folder}",
             "--benchmark-env=libero", "--benchmark-task=libero_spatial/0",
             f"--benchmark-episodes={args.episodes}",
             f"--benchmark-batch-size={args.batch}", f"--benchmark-max-steps={args.max_steps}",
             "--benchmark-device=cpu", "--benchmark-sync", f"--benchmark-metrics={metrics}"],
            ROOT,
            ok=(0, 1),  # pytest exits 1 when a check fails
        )  # fmt: skip
        figures["plugin"].append((seconds, rss))
        rows = json.loads(metrics.read_text())["results"]
        ran = sum(e["steps"] for r in rows for e in r["episodes"])
        if ran != steps:
            raise RuntimeError(f"the plugin ran {ran} steps, not {steps}")
        for name, runs in figures.items():
            seconds, rss = runs[-1]
            rate = steps / seconds
            print(f"round {round_ + 1} {name}: {steps} steps in {seconds:.1f} s "
                  f"({rate:.2f} steps/s), peak RSS {rss:.0f} MiB", flush=True)  # fmt: skip
    print(f"\nlibero_spatial/0, SmolVLA (tiny) {size}x{size} two cameras, batch {args.batch}, "
          f"{args.episodes} episodes of {args.max_steps} steps, "
          f"medians of {args.rounds} rounds:")  # fmt: skip
    rates = {}
    for name, runs in figures.items():
        rates[name] = statistics.median(steps / seconds for seconds, _ in runs)
        rss = statistics.median(r for _, r in runs)
        print(f"  {name:<16} {rates[name]:6.2f} env-steps/s   peak RSS {rss:6.0f} MiB")
    print(f"  plugin / eval_policy_all: {rates['plugin'] / rates['eval_policy_all']:.2f}")


if __name__ == "__main__":
    main()
