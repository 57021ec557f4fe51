"""Torch policies in the Hugging Face format (config.json + model.safetensors), as
huggingface_hub's PyTorchModelHubMixin reads and writes them.

``config.json`` names the policy's class in ``policy_class`` (``package.module:ClassName``, a
subclass of ``torch.nn.Module`` and ``PyTorchModelHubMixin``); ``save_policy`` writes it. The
model's ``forward`` takes a dict of observation tensors (the env's processed features, batched)
and returns actions ``(num_envs, action)``, or chunks ``(num_envs, chunk, action)``. An
``input_features`` attribute (feature name -> shape) lets the harness check the env against the
model before any episode runs.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from pytest_benchmarks.policies.chunking import ChunkQueues

CLASS_KEY = "policy_class"


class MLPPolicy(nn.Module, PyTorchModelHubMixin):
    """A small multilayer perceptron from one state feature to actions (or action chunks): the
    reference model for the Hub format, and what the tests train."""

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        hidden: int = 64,
        chunk: int = 1,
        state_key: str = "observation.state",
    ) -> None:
        super().__init__()
        self.state_key, self.chunk, self.action_dim = state_key, chunk, action_dim
        self.net = nn.Sequential(
            nn.Linear(state_dim, hidden), nn.Tanh(), nn.Linear(hidden, action_dim * chunk)
        )
        self.input_features = {state_key: (state_dim,)}

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out = torch.tanh(self.net(batch[self.state_key].float()))
        return out if self.chunk == 1 else out.view(-1, self.chunk, self.action_dim)


def save_policy(model: PyTorchModelHubMixin, directory: str | Path) -> None:
    """``save_pretrained`` with the model's class recorded, so ``load_pretrained`` finds it."""
    config = dict(getattr(model, "_hub_mixin_config", None) or {})
    config[CLASS_KEY] = f"{type(model).__module__}:{type(model).__qualname__}"
    model.save_pretrained(directory, config=config)


class PolicyLoadError(ValueError):
    """A checkpoint that cannot be loaded; the message is one line."""


def load_pretrained(directory: Path, device: str) -> nn.Module:
    """The model in ``directory``, through its class's ``from_pretrained``."""
    config_file = directory / "config.json"
    try:
        config = json.loads(config_file.read_text())
    except OSError:
        raise PolicyLoadError(
            f"{directory}: no config.json (not a Hugging Face checkpoint)"
        ) from None
    except json.JSONDecodeError as exc:
        raise PolicyLoadError(f"{config_file}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise PolicyLoadError(f"{config_file}: not UTF-8 text (a binary file?)") from None
    except RecursionError:
        raise PolicyLoadError(f"{config_file}: JSON nested too deeply") from None
    if not isinstance(config, dict):
        raise PolicyLoadError(
            f"{config_file}: holds a JSON {type(config).__name__}, expected an object"
        )
    name = config.get(CLASS_KEY)
    if not isinstance(name, str) or ":" not in name:
        raise PolicyLoadError(
            f"{config_file}: no {CLASS_KEY!r} naming the model class as 'package.module:Class' "
            "(pytest_benchmarks.policies.torch_policy.save_policy writes it)"
        )
    module_name, _, class_name = name.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise PolicyLoadError(f"{config_file}: cannot import {name} ({exc})") from None
    if not (isinstance(cls, type) and issubclass(cls, PyTorchModelHubMixin)):
        raise PolicyLoadError(f"{name} is not a PyTorchModelHubMixin model class")
    try:
        model: Any = cls.from_pretrained(str(directory), map_location=device)
    except Exception as exc:
        raise PolicyLoadError(
            f"{directory}: {cls.__name__}.from_pretrained failed: {exc}"
        ) from None
    return model.to(device).eval()


class TorchPolicy:
    """A torch model behind the Policy protocol: numpy batch in, numpy actions out."""

    def __init__(
        self,
        model: nn.Module,
        num_envs: int,
        device: str,
        identity: dict[str, str | None],
        pad_cameras: Sequence[tuple[str, tuple[int, ...]]] = (),
    ) -> None:
        self.model, self.device, self._identity = model, torch.device(device), identity
        self.queues = ChunkQueues(num_envs)
        self.pad = list(pad_cameras)

    @property
    def input_features(self) -> dict[str, tuple[int, ...]]:
        return dict(getattr(self.model, "input_features", {}) or {})

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self.queues.reset(slots)

    def _predict(self, batch: dict[str, Any]) -> np.ndarray:
        tensors = {
            k: torch.as_tensor(v, device=self.device)
            for k, v in batch.items()
            if isinstance(v, np.ndarray)
        }
        n = len(batch["task"])
        for name, shape in self.pad:  # cameras the env lacks: blank images
            tensors[name] = torch.zeros((n, *shape), dtype=torch.uint8, device=self.device)
        with torch.inference_mode():
            out = self.model(tensors)
        actions = out.detach().to("cpu", torch.float32).numpy()
        return actions if actions.ndim == 3 else actions[:, None, :]

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        return self.queues.next(batch, self._predict)

    def identity(self) -> dict[str, str | None]:
        return dict(self._identity)
