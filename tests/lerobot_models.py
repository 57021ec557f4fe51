"""Small LeRobot checkpoints built here, with random weights and made-up dataset statistics.

They are saved as LeRobot saves a trained policy (config.json, model.safetensors and the
pre/post-processor files), so loading them runs LeRobot's real loading code; the statistics
make normalisation and unnormalisation change the numbers, as a trained checkpoint's would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

KINDS = ("act", "diffusion")
#: The pi0 family that builds here (pi0-fast's FAST action tokenizer is remote code on the Hub).
PI_KINDS = ("pi0", "pi05")
#: The tokenizer the pi0 family's pre-processor loads by name (from the Hub cache, offline).
PI_TOKENIZER = "google/paligemma-3b-pt-224"
#: The other LeRobot types that build offline, each with settings that fit a small image.
OTHER_KINDS: dict[str, Callable[[tuple[int, ...] | None], dict[str, Any]]] = {
    "vqbet": lambda image: {
        "crop_shape": (image[1] - 8, image[2] - 8) if image else None,
        "pretrained_backbone_weights": None, "gpt_n_layer": 2, "gpt_n_head": 2,
        "gpt_hidden_dim": 64, "gpt_input_dim": 64, "gpt_output_dim": 64,
    },
    "tdmpc": lambda image: {"latent_dim": 16, "mlp_dim": 32, "image_encoder_hidden_dim": 8,
                            "state_encoder_hidden_dim": 32, "n_gaussian_samples": 16,
                            "n_pi_samples": 4, "n_elites": 4, "cem_iterations": 2, "horizon": 3},
    "gaussian_actor": lambda image: {"latent_dim": 32, "shared_encoder": True,
                          "vision_encoder_name": None, "image_encoder_hidden_dim": 8},
}  # fmt: skip


def preload() -> None:
    """Import LeRobot's modules once, at collection: pytester unloads what a test imports, and
    LeRobot's config classes cannot register themselves a second time (transformers 5 also looks
    its model classes' modules up in ``sys.modules``)."""
    import lerobot.configs.policies
    import lerobot.envs.utils
    import lerobot.policies.act.modeling_act
    import lerobot.policies.diffusion.modeling_diffusion
    import lerobot.policies.factory
    import lerobot.policies.pi0.modeling_pi0
    import lerobot.policies.pi05.modeling_pi05
    import lerobot.policies.smolvla.modeling_smolvla
    import lerobot.policies.smolvla.processor_smolvla
    import lerobot.processor.env_processor
    import lerobot.processor.pipeline
    import lerobot.utils.constants  # noqa: F401
    import transformers.models.gemma.modeling_gemma
    import transformers.models.llama.modeling_llama
    import transformers.models.paligemma.modeling_paligemma
    import transformers.models.siglip.modeling_siglip
    import transformers.models.smolvlm.modeling_smolvlm  # noqa: F401


#: SmolVLM2's own extra special tokens: SmolVLA reads the ids of the first and third.
VLM_TOKENS = {
    "fake_image_token": "<fake_token_around_image>",
    "image_token": "<image>",
    "global_image_token": "<global-img>",
    "end_of_utterance_token": "<end_of_utterance>",
}
#: The tiny backbone's image side (SmolVLA pads and resizes every camera to it).
VLM_IMAGE = 64


def backbone(folder: Path) -> Path:
    """A SmolVLM2-style backbone in ``folder``, as SmolVLA loads it with ``load_vlm_weights``
    false: SmolVLMConfig with two-layer vision and text towers, and SmolVLM2's real processor
    (image and video processors, a byte-level BPE tokenizer with its special tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, SmolVLMConfig, SmolVLMProcessor
    from transformers.models.smolvlm.image_processing_smolvlm import SmolVLMImageProcessor
    from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *VLM_TOKENS.values()]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    corpus = ["pick up the black bowl and place it on the plate", "reach the goal position",
              "push the puck to the goal", "open the top drawer of the cabinet"]  # fmt: skip
    bpe.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<end_of_utterance>",
        pad_token="<|im_end|>", unk_token="<|endoftext|>", extra_special_tokens=VLM_TOKENS,
        model_max_length=512,
    )  # fmt: skip
    size = {"longest_edge": VLM_IMAGE}
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(
            do_image_splitting=False, size=size, max_image_size=size
        ),
        tokenizer=tokenizer, video_processor=SmolVLMVideoProcessor(), image_seq_len=4,
    )  # fmt: skip
    processor.save_pretrained(folder)
    SmolVLMConfig(
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 2, "image_size": VLM_IMAGE, "patch_size": 16},
        text_config={"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "head_dim": 16, "vocab_size": len(tokenizer),
                     "max_position_embeddings": 512},
        scale_factor=2, image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vocab_size=len(tokenizer),
    ).save_pretrained(folder)  # fmt: skip
    return folder


@contextmanager
def small_pi(kind: str) -> Iterator[None]:
    """The pi0 family at a CPU test's size, through LeRobot's own config code: its
    ``get_gemma_config`` (the PaliGemma and action-expert variants, ``gemma_300m`` at its
    smallest, 1.6 B parameters) answers a one-layer Gemma of width 64 (8 heads of 8, as its
    attention code expects), and the SigLIP tower PaliGemma builds is one layer of width 32,
    projecting to that width. Active while a checkpoint is built and while it is loaded."""
    import importlib

    module: Any = importlib.import_module(f"lerobot.policies.{kind}.modeling_{kind}")
    gemma, paligemma = module.get_gemma_config, module.PaliGemmaForConditionalGenerationWithPiGemma

    def small_gemma(variant: str) -> Any:
        gemma(variant)  # a variant LeRobot knows, or its error
        return module.GemmaConfig(
            width=64, depth=1, mlp_dim=128, num_heads=8, num_kv_heads=1, head_dim=8
        )

    def small_paligemma(config: Any) -> Any:
        vision = config.vision_config
        vision.hidden_size, vision.intermediate_size, vision.num_hidden_layers = 32, 64, 1
        vision.num_attention_heads, vision.projection_dim = 2, config.text_config.hidden_size
        return paligemma(config=config)

    module.get_gemma_config = small_gemma
    module.PaliGemmaForConditionalGenerationWithPiGemma = small_paligemma
    try:
        yield
    finally:
        module.get_gemma_config = gemma
        module.PaliGemmaForConditionalGenerationWithPiGemma = paligemma


def pi_tokenizer(folder: Path) -> Path:
    """A PaliGemma-style tokenizer (byte-level BPE with PaliGemma's special tokens) and
    PaliGemma's config, as the Hub's ``google/paligemma-3b-pt-224`` holds them."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PaliGemmaConfig, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    corpus = ["pick up the black bowl between the plate and the ramekin and place it on the plate",
              "Task: reach, State: 1 2 3;\nAction: "]  # fmt: skip
    bpe.train_from_iterator(corpus, trainer)
    PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>", model_max_length=512,
    ).save_pretrained(folder)  # fmt: skip
    PaliGemmaConfig().save_pretrained(folder)
    return folder


def _stats(features: dict[str, tuple[int, ...]], seed: int) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    stats = {}
    for name, shape in features.items():
        stat_shape = (shape[0], 1, 1) if len(shape) == 3 else shape
        mean = rng.uniform(-0.5, 0.5, stat_shape).astype(np.float32)
        std = rng.uniform(0.2, 2.0, stat_shape).astype(np.float32)
        low, high = mean - 2 * std, mean + 2 * std
        # The 1st and 99th percentiles: pi0.5 normalises with quantiles.
        stats[name] = {"mean": mean, "std": std, "min": low, "max": high, "q01": low, "q99": high}
    return stats


def build(
    kind: str,
    inputs: dict[str, tuple[int, ...]],
    action_dim: int,
    seed: int = 0,
    **overrides: object,
) -> torch.nn.Module:
    """An ACT, Diffusion, SmolVLA, pi0-family or other policy for ``inputs`` (images CHW),
    small enough for a CPU unless ``overrides`` (config fields) say otherwise."""
    from lerobot.configs.types import FeatureType, PolicyFeature

    def feature(name: str, shape: tuple[int, ...]) -> PolicyFeature:
        kind_of = FeatureType.VISUAL if len(shape) == 3 else FeatureType.STATE
        if name == "observation.environment_state":
            kind_of = FeatureType.ENV
        return PolicyFeature(type=kind_of, shape=shape)

    features = {name: feature(name, shape) for name, shape in inputs.items()}
    action = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(action_dim,))}
    torch.manual_seed(seed)
    if kind == "act":
        from lerobot.policies.act.configuration_act import ACTConfig
        from lerobot.policies.act.modeling_act import ACTPolicy

        small = dict(
            pretrained_backbone_weights=None, replace_final_stride_with_dilation=False,
            dim_model=64, n_heads=2, dim_feedforward=128, n_encoder_layers=1,
            n_decoder_layers=1, latent_dim=8, chunk_size=8, n_action_steps=8,
        )  # fmt: skip
        config = ACTConfig(
            input_features=features,
            output_features=action,
            device="cpu",
            **{**small, **overrides},
        )
        return ACTPolicy(config)
    if kind == "diffusion":
        from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
        from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

        image = next((s for s in inputs.values() if len(s) == 3), None)
        crop = (image[1] - 8, image[2] - 8) if image else None
        config = DiffusionConfig(
            input_features=features, output_features=action, device="cpu",
            pretrained_backbone_weights=None, use_group_norm=True, crop_shape=crop,
            down_dims=(32, 64), diffusion_step_embed_dim=32, spatial_softmax_num_keypoints=8,
            n_obs_steps=2, horizon=8, n_action_steps=4, num_inference_steps=4,
            **overrides,
        )  # fmt: skip
        return DiffusionPolicy(config)
    if kind == "smolvla":
        from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
        from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

        small = dict(
            load_vlm_weights=False, num_vlm_layers=2, chunk_size=4, n_action_steps=4,
            num_steps=2, resize_imgs_with_padding=(VLM_IMAGE, VLM_IMAGE), max_state_dim=16,
            max_action_dim=16,
        )  # fmt: skip
        config = SmolVLAConfig(
            input_features=features,
            output_features=action,
            device="cpu",
            **{**small, **overrides},
        )
        return SmolVLAPolicy(config)
    if kind in PI_KINDS:  # inside small_pi(kind), with the tokenizer in the Hub cache
        from lerobot.policies.factory import get_policy_class, make_policy_config

        small = dict(
            paligemma_variant="gemma_300m", action_expert_variant="gemma_300m", dtype="float32",
            chunk_size=4, n_action_steps=4, num_inference_steps=2,
        )  # fmt: skip
        config = make_policy_config(
            kind, input_features=features, output_features=action, device="cpu",
            **{**small, **overrides},
        )  # fmt: skip
        return get_policy_class(kind)(config)
    if kind in OTHER_KINDS:
        from lerobot.policies.factory import get_policy_class, make_policy_config

        image = next((s for s in inputs.values() if len(s) == 3), None)
        small = OTHER_KINDS[kind](image)
        config = make_policy_config(
            kind, input_features=features, output_features=action, device="cpu",
            **{**small, **overrides},
        )  # fmt: skip
        return get_policy_class(kind)(config)
    raise ValueError(
        f"unknown kind {kind!r}; valid: {', '.join([*KINDS, 'smolvla', *PI_KINDS, *OTHER_KINDS])}"
    )


def save(policy: torch.nn.Module, directory: Path, seed: int = 0,
         action_scale: tuple[float, float] | None = None) -> Path:  # fmt: skip
    """The policy and its pre/post-processors (with made-up statistics) in ``directory``;
    ``action_scale`` (mean, std) puts the actions where an env's action space has them."""
    from lerobot.policies.factory import make_pre_post_processors

    config = policy.config
    shapes = {k: tuple(f.shape) for k, f in config.input_features.items()}
    shapes["action"] = tuple(config.output_features["action"].shape)
    stats = _stats(shapes, seed)
    if action_scale is not None:
        mean, std = (np.full(shapes["action"], v, dtype=np.float32) for v in action_scale)
        low, high = mean - 2 * std, mean + 2 * std
        stats["action"] = {
            "mean": mean,
            "std": std,
            "min": low,
            "max": high,
            "q01": low,
            "q99": high,
        }
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    directory.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(directory)
    pre.save_pretrained(directory)
    post.save_pretrained(directory)
    return directory


def checkpoint(
    kind: str,
    directory: Path,
    inputs: dict[str, tuple[int, ...]],
    action_dim: int,
    seed: int = 0,
    action_scale: tuple[float, float] | None = None,
    **overrides: object,
) -> Path:
    """``build`` then ``save``: a checkpoint folder that ``lerobot:DIR`` loads."""
    policy = build(kind, inputs, action_dim, seed, **overrides)
    return save(policy, directory, seed, action_scale)
