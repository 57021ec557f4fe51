"""Policy latency per env step with and without ``--benchmark-batched-inference``, on the CPU,
for ACT and SmolVLA at LeRobot's default sizes (random weights), side by side in one run.

ACT: LeRobot's ``ACTConfig`` defaults (ResNet-18, 512 wide, chunk and action steps 100), and
the same with one action step (the model runs every step).
SmolVLA: LeRobot's ``SmolVLAConfig`` defaults (16 VLM layers, 512x512 images, chunk 50,
10 flow steps) on a backbone of SmolVLM2-500M's shape (SigLIP 768 wide x 12 layers, a 960-wide
text tower) built from the test suite's local backbone with its sizes raised. Inputs are
LIBERO's under LeRobot's names: two cameras and the 8-D state.

Each round builds the policy for ``--batch`` slots both ways and times ``act`` over
``--steps`` steps of one random observation batch, all slots starting together (as every
task's first episodes do), then again with slot 1 restarted half-way through the first
chunk (out of phase from then on). Latency per env step: seconds per ``act`` call (one step of
every slot); the figure is the median over rounds, alone and batched alternating.

    python benchmarks/perf/batched_inference.py [--kind act|act-every-step|smolvla|all]
        [--rounds 3] [--batch 4] [--steps 100] [--size 256]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent

#: SmolVLM2-500M's towers (its config.json), for a backbone of its shape.
SMOLVLM2_500M = {
    "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                      "num_attention_heads": 12, "image_size": 512, "patch_size": 16},
    "text_config": {"hidden_size": 960, "intermediate_size": 2560, "num_hidden_layers": 32,
                    "num_attention_heads": 15, "num_key_value_heads": 5, "head_dim": 64},
    "scale_factor": 4,
}  # fmt: skip


def full_size_backbone(folder: Path) -> Path:
    """The tests' SmolVLM2-style backbone (its processor and tokenizer), towers resized."""
    import lerobot_models

    lerobot_models.backbone(folder)
    config = json.loads((folder / "config.json").read_text())
    for tower in ("vision_config", "text_config"):
        config[tower].update(SMOLVLM2_500M[tower])
    config["scale_factor"] = SMOLVLM2_500M["scale_factor"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def checkpoint(kind: str, work: Path, size: int) -> Path:
    import lerobot_models

    inputs = {"observation.state": (8,), "observation.images.image": (3, size, size),
              "observation.images.image2": (3, size, size)}  # fmt: skip
    if kind.startswith("act"):
        defaults = {"dim_model": 512, "n_heads": 8, "dim_feedforward": 3200,
                    "n_encoder_layers": 4, "n_decoder_layers": 1, "latent_dim": 32,
                    "chunk_size": 100, "n_action_steps": 100,
                    "replace_final_stride_with_dilation": False}  # fmt: skip
        if kind == "act-every-step":  # the model runs every step: batching's best case
            defaults["n_action_steps"] = 1
        return lerobot_models.checkpoint("act", work / kind, inputs, 7, **defaults)
    vlm = full_size_backbone(work / "vlm")
    defaults = {"num_vlm_layers": 16, "chunk_size": 50, "n_action_steps": 50, "num_steps": 10,
                "resize_imgs_with_padding": (512, 512), "max_state_dim": 32,
                "max_action_dim": 32, "vlm_model_name": str(vlm)}  # fmt: skip
    return lerobot_models.checkpoint("smolvla", work / "smolvla", inputs, 7, **defaults)


def latency(folder: Path, batch: int, steps: int, size: int, batched: bool, shift: bool) -> float:
    """Seconds per ``act`` call over ``steps`` steps (slot 1 restarted at steps // 4 if
    ``shift``)."""
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.policy_spec import Loading
    from pytest_benchmarks.core.settings import Settings
    from pytest_benchmarks.policies import make_policy

    benchmark = catalog.get("libero")
    task = benchmark.select(["libero_spatial/0"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=batch, sync=True, seed=0,
        policy=f"lerobot:{folder}",
        max_steps=None, metrics=Path("m.json"), image_size=(size, size),
    ).env_config(task)  # fmt: skip
    policy: Any = make_policy(
        f"lerobot:{folder}", benchmark, config, batch, Loading(batched_inference=batched)
    )
    rng = np.random.default_rng(0)
    observation = {
        "observation.images.image": rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8),
        "observation.images.image2": rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8),
        "observation.state": rng.normal(size=(batch, 8)).astype(np.float32),
        "task": [task.description] * batch,
    }
    policy.reset(range(batch), range(batch))
    start = time.perf_counter()
    for step in range(steps):
        if shift and step == steps // 4:
            policy.reset([1], [batch])
        policy.act(observation)
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kind", choices=("act", "act-every-step", "smolvla", "all"), default="all"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import lerobot_models

    lerobot_models.preload()
    kinds = ("act", "act-every-step", "smolvla") if args.kind == "all" else (args.kind,)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            folder = checkpoint(kind, Path(tmp), args.size)
            for shift in (False, True):
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(args.rounds):
                    for batched in (False, True):
                        times[batched].append(
                            latency(folder, args.batch, args.steps, args.size, batched, shift)
                        )
                alone, together = (statistics.median(times[b]) for b in (False, True))
                phase = "slot 1 out of phase" if shift else "slots in phase"
                print(
                    f"{kind} batch {args.batch}, {phase}: alone {alone * 1e3:.1f} ms/step, "
                    f"batched {together * 1e3:.1f} ms/step, ratio {alone / together:.2f} "
                    f"(medians of {args.rounds}; alone {[round(t * 1e3, 1) for t in times[False]]}"
                    f", batched {[round(t * 1e3, 1) for t in times[True]]})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
