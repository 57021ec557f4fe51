"""A tiny torch policy trained and saved as a training loop's checkpoint would be."""

from __future__ import annotations

from pathlib import Path

import torch

# Loaded here once: pytester unloads the modules a test imports, and torch cannot register its
# operators a second time.
import torch._dynamo

from pytest_benchmarks.policies.torch_policy import MLPPolicy, save_policy

#: Meta-World's state size.
MW_STATE = 39


def train_tiny_policy(directory: Path, state_dim: int = MW_STATE, chunk: int = 1) -> MLPPolicy:
    """A few optimiser steps on synthetic data, then save_pretrained (config.json and
    model.safetensors), as a training loop's checkpoint would be."""
    torch.manual_seed(0)
    model = MLPPolicy(state_dim=state_dim, action_dim=4, hidden=16, chunk=chunk)
    states = torch.randn(64, state_dim)
    targets = torch.tanh(states[:, :4]).repeat(1, chunk).view(64, chunk, 4).squeeze(1)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        loss = torch.nn.functional.mse_loss(model({"observation.state": states}), targets)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    save_policy(model, directory)
    return model
