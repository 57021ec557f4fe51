"""The plugin at machine scale, side by side in one run: env-steps per second for Meta-World
state, pixels (faithful and fast rendering), and a SmolVLA of SmolVLM2-500M's shape on
LeRobot's Meta-World layout (480x480) with the policy server off and on, against LeRobot's own
``eval_policy_all`` on the same checkpoint, tasks, episodes and seeds; with GPU utilisation and
memory (``nvidia-smi``, where there is one).

Every case is one command timed whole (start-up included: what a user waits for); env-steps
from the metrics JSON (the plugin) or counted at the env (LeRobot). Rounds alternate the cases,
and the table gives each case's median.

    python benchmarks/perf/gpu_scale.py [--workers 14] [--rounds 1] [--cases state,...]
    python benchmarks/perf/gpu_scale.py --reduced    # the same code paths, tiny, on a CPU

Full size (a GPU machine): MT50 x 50 episodes for state, MT10 x 10 at 224x224 for pixels, MT10
x 10 episodes of 200 steps for the VLA at batch 10. ``--reduced``: two workers, two tasks, two
episodes of a few steps, the tests' two-layer SmolVLA.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks" / "perf")]

MT10 = ("reach-v3,push-v3,pick-place-v3,door-open-v3,drawer-open-v3,drawer-close-v3,"
        "button-press-topdown-v3,peg-insert-side-v3,window-open-v3,window-close-v3")  # fmt: skip
CASES = ("state", "faithful", "fast", "vla-off", "vla-batched", "vla-server", "lerobot")


@dataclass
class Size:
    """What each case runs."""

    workers: int
    state_tasks: str
    state_episodes: int
    pixel_tasks: str
    pixel_episodes: int
    pixel_size: int
    vla_tasks: str
    vla_episodes: int
    vla_steps: int
    vla_batch: int
    full_model: bool


FULL = Size(14, "MT50", 50, "MT10", 10, 224, MT10, 10, 200, 10, True)
REDUCED = Size(2, "reach-v3,push-v3", 2, "reach-v3,push-v3", 2, 32, "reach-v3,push-v3", 2, 6, 2,
               False)  # fmt: skip


@dataclass
class Sample:
    """One command's figures."""

    steps: int
    wall_s: float
    success: str
    gpu_util: float | None = None
    gpu_mib: float | None = None

    @property
    def rate(self) -> float:
        return self.steps / self.wall_s


@dataclass
class GpuWatch:
    """Peak utilisation and memory of GPU 0 while a command runs (nvidia-smi every 250 ms)."""

    util: list[float] = field(default_factory=list)
    mib: list[float] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None

    def __enter__(self) -> GpuWatch:
        smi = shutil.which("nvidia-smi")
        if smi is not None:
            self.process = subprocess.Popen(
                [smi, "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 "-i", "0", "-lms", "250"],
                stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()
        return self

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and all(p.replace(".", "").isdigit() for p in parts):
                self.util.append(float(parts[0]))
                self.mib.append(float(parts[1]))

    def __exit__(self, *_: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()


def run_timed(
    command: list[str], cwd: Path, ok: tuple[int, ...] = (0, 1)
) -> tuple[float, str, GpuWatch]:
    """Wall seconds, the output and the GPU's peaks of one command (it must exit 0, or 1: a
    random-weights policy fails the suite's success-rate tests)."""
    with tempfile.TemporaryFile("w+") as log, GpuWatch() as gpu:
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, check=False)
        elapsed = time.perf_counter() - started
        log.seek(0)
        out = log.read()
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(command[:4])} ... exited {done.returncode}:\n{out[-3000:]}")
    return elapsed, out, gpu


def plugin_case(size: Size, work: Path, device: str, **case: str) -> Callable[[int], Sample]:
    """A pytest session over ``benchmarks/`` with the options of one case."""

    def run(round_: int) -> Sample:
        metrics = work / f"{case['name']}-{round_}.json"
        command = [
            sys.executable, "-m", "pytest", "benchmarks/test_metaworld.py", "-q",
            "-p", "no:cacheprovider", "-n", str(size.workers), "--benchmark-env=metaworld",
            "--benchmark-gate=off",
            f"--benchmark-metrics={metrics}", f"--benchmark-device={device}",
            *case["options"].split(),
        ]  # fmt: skip
        wall, _, gpu = run_timed(command, ROOT)
        doc = json.loads(metrics.read_text())
        errors = [f"{r['id']}: {r['error']}" for r in doc["results"] if r["error"]]
        if errors:
            raise RuntimeError(f"{case['name']}: {errors[0]}")
        steps = sum(e["steps"] for r in doc["results"] for e in r["episodes"])
        wins = sum(r["successes"] for r in doc["results"])
        total = sum(r["n_episodes"] for r in doc["results"])
        return Sample(steps, wall, f"{wins}/{total}", max(gpu.util, default=None),
                      max(gpu.mib, default=None))  # fmt: skip

    return run


def lerobot_case(size: Size, work: Path, checkpoint: Path, device: str) -> Callable[[int], Sample]:
    """LeRobot's ``eval_policy_all`` in its best configuration (async envs, every task's envs
    at the plugin's batch), in a process of its own."""

    def run(round_: int) -> Sample:
        out_file = work / f"lerobot-{round_}.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "lerobot-eval", "--checkpoint",
            str(checkpoint), "--tasks", size.vla_tasks, "--episodes", str(size.vla_episodes),
            "--max-steps", str(size.vla_steps), "--batch", str(size.vla_batch), "--device",
            device, "--out", str(out_file),
        ]  # fmt: skip
        wall, _, gpu = run_timed(command, ROOT, ok=(0,))
        found = json.loads(out_file.read_text())
        return Sample(found["steps"], wall, found["success"], max(gpu.util, default=None),
                      max(gpu.mib, default=None))  # fmt: skip

    return run


def build_smolvla(work: Path, full: bool) -> Path:
    """A SmolVLA checkpoint for LeRobot's Meta-World layout (one 480x480 camera, 4-D state and
    action), random weights: SmolVLM2-500M's shape and LeRobot's defaults, or the tests' tiny
    one."""
    import lerobot_models

    inputs = {"observation.image": (3, 480, 480), "observation.state": (4,)}
    if full:
        import batched_inference

        vlm = batched_inference.full_size_backbone(work / "vlm")
        overrides: dict[str, object] = {
            "num_vlm_layers": 16, "chunk_size": 50, "n_action_steps": 50, "num_steps": 10,
            "resize_imgs_with_padding": (512, 512),
        }  # fmt: skip
    else:
        vlm = lerobot_models.backbone(work / "vlm")
        overrides = {}
    return lerobot_models.checkpoint(
        "smolvla", work / "smolvla", inputs, 4, vlm_model_name=str(vlm),
        action_scale=(0.0, 0.5), **overrides,
    )  # fmt: skip


def lerobot_eval(args: argparse.Namespace) -> None:
    """``lerobot-eval``'s loop (``eval_policy_all``) on LeRobot's own Meta-World env, videos
    off, env steps counted at the env."""
    from pytest_benchmarks.core.rendering import choose_backend

    choose_backend()  # EGL where it works, else OSMesa: as the plugin's own runs
    import torch
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import MetaworldEnv
    from lerobot.envs.factory import make_env, make_env_pre_post_processors
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.scripts.lerobot_eval import eval_policy_all

    env_config = MetaworldEnv(task=args.tasks, max_parallel_tasks=len(args.tasks.split(",")))
    envs = make_env(env_config, n_envs=args.batch, use_async_envs=args.batch > 1)
    stepped = [0]
    for group in envs.values():
        for env in group.values():
            # LeRobot 0.6 makes its async envs on first use (_LazyAsyncVectorEnv).
            ensure = getattr(env, "_ensure", None)
            if ensure is not None:
                ensure()
            (getattr(env, "_env", None) or env).set_attr("_max_episode_steps", args.max_steps)

            def counted(action: object, step: Callable = env.step) -> object:
                stepped[0] += len(action)  # type: ignore[arg-type]
                return step(action)

            env.step = counted
    config = PreTrainedConfig.from_pretrained(args.checkpoint)
    config.device = args.device
    policy = get_policy_class(config.type).from_pretrained(args.checkpoint, config=config).eval()
    pre, post = make_pre_post_processors(
        config, pretrained_path=args.checkpoint,
        preprocessor_overrides={"device_processor": {"device": args.device}},
    )  # fmt: skip
    env_pre, env_post = make_env_pre_post_processors(env_config, config)
    with torch.no_grad():
        info = eval_policy_all(envs, policy, env_pre, env_post, pre, post, args.episodes,
                               max_episodes_rendered=0, start_seed=1000)  # fmt: skip
    overall = info["overall"]
    n = overall.get("n_episodes") or len(args.tasks.split(",")) * args.episodes
    wins = round(overall["pc_success"] * n / 100)
    Path(args.out).write_text(json.dumps({"steps": stepped[0], "success": f"{wins}/{n}"}))
    for group in envs.values():
        for env in group.values():
            env.close()


def table(results: dict[str, list[Sample]], size: Size, device: str) -> list[str]:
    lines = [
        f"{size.workers} workers, device {device}; medians of {len(next(iter(results.values())))}"
        " round(s)",
        "| case | env-steps | wall s | env-steps/s | success | GPU util peak % | GPU MiB peak |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for name, samples in results.items():
        steps = samples[0].steps
        wall = statistics.median(s.wall_s for s in samples)
        util = [s.gpu_util for s in samples if s.gpu_util is not None]
        mib = [s.gpu_mib for s in samples if s.gpu_mib is not None]
        lines.append(
            f"| {name} | {steps} | {wall:.1f} | {statistics.median(s.rate for s in samples):.1f} "
            f"| {samples[0].success} | {max(util) if util else '-'} | {max(mib) if mib else '-'} |"
        )
    rates = {n: statistics.median(s.rate for s in v) for n, v in results.items()}
    if "lerobot" in rates:
        for name in ("vla-off", "vla-batched", "vla-server"):
            if name in rates:
                lines.append(f"{name} / lerobot: {rates[name] / rates['lerobot']:.2f}x")
    if "vla-server" in rates and "vla-off" in rates:
        lines.append(f"vla-server / vla-off: {rates['vla-server'] / rates['vla-off']:.2f}x")
    if "fast" in rates and "faithful" in rates:
        lines.append(f"fast / faithful: {rates['fast'] / rates['faithful']:.2f}x")
    return lines


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "lerobot-eval":
        sub = argparse.ArgumentParser(prog="gpu_scale.py lerobot-eval")
        for name in ("--checkpoint", "--tasks", "--device", "--out"):
            sub.add_argument(name, required=True)
        for name in ("--episodes", "--max-steps", "--batch"):
            sub.add_argument(name, type=int, required=True)
        lerobot_eval(sub.parse_args(sys.argv[2:]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="tiny, for a CPU (the tests)")
    parser.add_argument("--workers", type=int, help="xdist workers (default 14; reduced 2)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES), help=f"of {','.join(CASES)}")
    parser.add_argument("--device", default=None, help="default cuda where torch sees one")
    parser.add_argument("--vla-episodes", type=int, help="episodes a VLA task (default 10)")
    parser.add_argument("--vla-steps", type=int, help="steps a VLA episode (default 200)")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}; valid: {', '.join(CASES)}")
    size = REDUCED if args.reduced else FULL
    if args.workers:
        size.workers = args.workers
    if args.vla_episodes:
        size.vla_episodes = args.vla_episodes
    if args.vla_steps:
        size.vla_steps = args.vla_steps
    device = args.device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    work = Path(tempfile.mkdtemp(prefix="gpu-scale-"))
    try:
        runners: dict[str, Callable[[int], Sample]] = {}
        pixels = (f"--benchmark-task={size.pixel_tasks} --benchmark-episodes={size.pixel_episodes}"
                  f" --benchmark-obs=pixels --benchmark-image-size={size.pixel_size}")  # fmt: skip
        plugin_options = {
            "state": f"--benchmark-task={size.state_tasks} "
                     f"--benchmark-episodes={size.state_episodes}",
            "faithful": f"{pixels} --benchmark-render=faithful",
            "fast": f"{pixels} --benchmark-render=fast",
        }  # fmt: skip
        for name, options in plugin_options.items():
            if name in cases:
                runners[name] = plugin_case(size, work, "cpu", name=name, options=options)
        if any(c.startswith(("vla", "lerobot")) for c in cases):
            started = time.perf_counter()
            checkpoint = build_smolvla(work, size.full_model)
            print(f"built the SmolVLA checkpoint in {time.perf_counter() - started:.0f} s",
                  flush=True)  # fmt: skip
            vla = (f"--benchmark-policy=lerobot:{checkpoint} --benchmark-task={size.vla_tasks} "
                   f"--benchmark-episodes={size.vla_episodes} "
                   f"--benchmark-max-steps={size.vla_steps} "
                   f"--benchmark-batch-size={size.vla_batch}")  # fmt: skip
            serving = {
                "vla-off": "--benchmark-policy-server=off",
                "vla-batched": "--benchmark-policy-server=off --benchmark-batched-inference",
                "vla-server": "--benchmark-policy-server=on",
            }
            for name, options in serving.items():
                if name in cases:
                    runners[name] = plugin_case(size, work, device, name=name,
                                                options=f"{vla} {options}")  # fmt: skip
            if "lerobot" in cases:
                runners["lerobot"] = lerobot_case(size, work, checkpoint, device)
        results: dict[str, list[Sample]] = {name: [] for name in runners}
        for round_ in range(args.rounds):
            for name, run in runners.items():
                sample = run(round_)
                results[name].append(sample)
                print(f"round {round_ + 1} {name}: {sample.steps} env-steps in "
                      f"{sample.wall_s:.1f} s = {sample.rate:.1f}/s, success {sample.success}",
                      flush=True)  # fmt: skip
        for line in table(results, size, device):
            print(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
