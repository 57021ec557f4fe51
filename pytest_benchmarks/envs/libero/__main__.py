"""``python -m pytest_benchmarks.envs.libero [--check]``: LIBERO's config laid down offline, and
(``--check``) one task loaded and reset from the installed assets."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.libero.benchmark import Libero
from pytest_benchmarks.envs.libero.setup import LiberoSetupError, assets_dir, prepare


def check(task: str = "libero_spatial/0") -> str:
    """Load one task's scene and reset it, state only: proves the config and assets offline."""
    libero = Libero()
    ref = libero.select([task])[0]
    env = libero.make_env(EnvConfig(ref, 1, 0, obs="state", settle_steps=0))
    try:
        env.reset(seed=0, options={"init_state": 0})
    finally:
        env.close()
    return ref.id


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_benchmarks.envs.libero [--check]``: lay down LIBERO's config
    (container builds do this once, so that runs never write or fetch anything)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pytest_benchmarks.envs.libero")
    parser.add_argument("--check", action="store_true", help="also load and reset one task")
    args = parser.parse_args(argv)
    try:
        prepare()
        print(f"LIBERO config: {Path(os.environ['LIBERO_CONFIG_PATH']) / 'config.yaml'}")
        print(f"LIBERO assets: {assets_dir()}")
        if args.check:
            print(f"loaded and reset {check()} offline")
    except LiberoSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
