"""pi0 on this machine's CPU, random weights: parameters, build time, peak RSS, one chunk.

LeRobot 0.4 refuses to build pi0, pi0.5 and pi0-fast with the transformers on PyPI: it checks
for a patched transformers (``transformers.models.siglip.check``) that its ``pi`` extra installs
from GitHub. To size the model anyway, this script stands in for that check, builds pi0 with
LeRobot's own classes, and then tries one ``select_action`` on a 224x224 camera, an 8-D state
and 48 language tokens. With stock transformers the forward pass fails (the patch changes the
attention code), and the script says so: the figures of a real chunk need the patched build.

    python benchmarks/perf/pi0_cpu.py [--variant gemma_300m|gemma_2b] [--type pi0|pi05]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import types
from typing import Any


def stand_in_check() -> None:
    """The module LeRobot imports to check for its patched transformers, saying yes."""
    check: Any = types.ModuleType("transformers.models.siglip.check")
    check.check_whether_transformers_replace_is_installed_correctly = lambda: True
    sys.modules["transformers.models.siglip.check"] = check
    import transformers.models.siglip as siglip

    siglip.check = check  # type: ignore[attr-defined]


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", default="pi0", choices=["pi0", "pi05"])
    parser.add_argument("--variant", default="gemma_300m", choices=["gemma_300m", "gemma_2b"])
    args = parser.parse_args()
    stand_in_check()
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
    started = time.perf_counter()
    try:
        with torch.inference_mode():
            policy.select_action(batch)
    except RuntimeError as exc:
        print(f"one chunk: fails with stock transformers ({str(exc).splitlines()[0]})")
        return
    print(
        f"one chunk ({config.n_action_steps} steps): {time.perf_counter() - started:.1f} s, "
        f"peak RSS {peak_rss_gb():.1f} GB"
    )


if __name__ == "__main__":
    main()
