"""The pi0 family on this machine's CPU, random weights: parameters, build time, peak RSS, chunks.

LeRobot 0.6's ``pi`` extra builds pi0 and pi0.5 with PyPI's transformers (its own Gemma code,
``lerobot.policies.pi_gemma``). This script builds one at a real size with LeRobot's own classes
(the PaliGemma backbone ``gemma_2b``, LeRobot's default, or ``gemma_300m``; the action expert
``gemma_300m``), and times ``predict_action_chunk`` (a whole chunk: ``num_inference_steps``
flow-matching steps) on a 224x224 camera, an 8-D state and 48 language tokens, three times; the
median is reported. LeRobot 0.6.1 accepts a ``gemma_300m`` backbone but cannot run it: its
SigLIP projection is fixed at 2048 wide, ``gemma_2b``'s width, so the script says so then.

    python benchmarks/perf/pi0_cpu.py [--variant gemma_300m|gemma_2b] [--type pi0|pi05]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", default="pi0", choices=["pi0", "pi05"])
    parser.add_argument("--variant", default="gemma_2b", choices=["gemma_300m", "gemma_2b"])
    args = parser.parse_args()
    import torch
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import get_policy_class

    features = {
        "observation.images.image": PolicyFeature(type=FeatureType.VISUAL, shape=(3, 224, 224)),
        "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(8,)),
    }
    started = time.perf_counter()
    config = PreTrainedConfig.get_choice_class(args.type)(
        input_features=features,
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(7,))},
        device="cpu",
        paligemma_variant=args.variant,
        action_expert_variant="gemma_300m",
        dtype="float32",
    )
    policy = get_policy_class(args.type)(config).eval()
    built = time.perf_counter() - started
    params = sum(p.numel() for p in policy.parameters())
    print(
        f"{args.type} ({args.variant} backbone): {params / 1e9:.2f} B parameters, built in "
        f"{built:.0f} s, peak RSS {peak_rss_gb():.1f} GB",
        flush=True,
    )
    batch = {
        "observation.images.image": torch.rand(1, 3, 224, 224),
        "observation.state": torch.rand(1, 8),
        "observation.language.tokens": torch.randint(0, 1000, (1, 48)),
        "observation.language.attention_mask": torch.ones(1, 48, dtype=torch.bool),
    }
    seconds = []
    with torch.inference_mode():
        for _ in range(3):
            started = time.perf_counter()
            try:
                policy.predict_action_chunk(batch)
            except RuntimeError as exc:
                print(f"one chunk: fails in LeRobot ({str(exc).splitlines()[0]})")
                return
            seconds.append(time.perf_counter() - started)
    each = ", ".join(f"{s:.1f}" for s in seconds)
    print(
        f"one chunk ({config.chunk_size} actions, {config.num_inference_steps} flow steps): "
        f"median {statistics.median(seconds):.1f} s of 3 ({each}), peak RSS {peak_rss_gb():.1f} GB"
    )


if __name__ == "__main__":
    main()
