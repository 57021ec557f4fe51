"""Fixtures of the plugin's own tests (the project-wide setup is in the top-level conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import TOY_CONFTEST, TOY_TESTS, fill_up, hub_cache, offline_hub, tmpfs


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C and a hangup as a terminal's foreground job has them, whatever started the suite:
    a suite run from a background job of a shell without job control inherits SIGINT ignored
    (under nohup, SIGHUP), and so would the sessions whose signals the tests send (a process
    keeps an ignored signal ignored across exec). And this process's forkserver imports what the suite's env workers need
    (Meta-World and LeRobot's types), as a user's run has it import its own benchmarks': the
    in-process sessions of many benchmarks then start their env workers by a fork too."""
    import importlib.util
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        # Started by nohup: this process still lets a hangup pass, but through a handler, which
        # exec resets, so the sessions whose SIGHUP the tests send get it as a terminal's job.
        signal.signal(signal.SIGHUP, lambda signum, frame: None)

    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.engine.vector import preload_workers

    wanted = [catalog.get("metaworld")] if not catalog.get("metaworld").missing() else []
    if importlib.util.find_spec("lerobot") is not None:
        from pytest_benchmarks.envs.lerobot.benchmark import LeRobotEnv

        wanted += [LeRobotEnv.of("pusht"), LeRobotEnv.of("metaworld")]
    preload_workers(wanted)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``long`` first, the rest in their order: xdist hands tests out in this
    order, and a long one started last would run alone while the other worker idles."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def toy_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester project whose tests run the toy benchmark; every process its sessions start
    carries the project's path in ``TOY_RUN`` (see helpers.leftover_processes)."""
    monkeypatch.setenv("TOY_RUN", str(pytester.path))
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    return pytester


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, filled up; a file ``filler`` takes the space."""
    with tmpfs(tmp_path / "disk", "rw") as mount:
        fill_up(mount / "filler")
        yield mount


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory on a read-only filesystem (a tmpfs mounted ``ro``)."""
    with tmpfs(tmp_path / "read-only", "ro") as mount:
        yield mount


@pytest.fixture(scope="session")
def vlm_backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny SmolVLM2-style backbone directory (lerobot_models.backbone), built once."""
    pytest.importorskip("lerobot.policies.smolvla", reason="LeRobot is not installed")
    import lerobot_models

    return lerobot_models.backbone(tmp_path_factory.mktemp("vlm"))


@pytest.fixture(scope="session")
def pi_hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hub cache holding the pi0 family's tokenizer (lerobot_models.pi_tokenizer), built once."""
    pytest.importorskip("lerobot.policies.pi0", reason="LeRobot is not installed")
    import lerobot_models

    root = tmp_path_factory.mktemp("pi-hub")
    folder = lerobot_models.pi_tokenizer(root / "tokenizer")
    hub_cache(root / "hub", lerobot_models.PI_TOKENIZER, folder, "0" * 40)
    return root / "hub"


@pytest.fixture
def offline_pi_tokenizer(pi_hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as under ``HF_HUB_CACHE=<pi_hub_cache> HF_HUB_OFFLINE=1``."""
    offline_hub(monkeypatch, pi_hub_cache)
