"""The pytest command that reruns a task's episodes, printed when a success check fails."""

from __future__ import annotations

import shlex

from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import DEFAULT_IMAGE_SIZE, TaskRef


def rerun_command(test_file: str, settings: Settings, task: TaskRef) -> str:
    """The pytest command that reruns the task's tests in ``test_file`` with this run's episode
    settings; append ``--benchmark-episode=I,J`` to pick episodes."""
    s = settings
    args = ["pytest", test_file, f"--benchmark-task={task.id}", f"--benchmark-policy={s.policy}",
            f"--benchmark-seed={s.seed}"]  # fmt: skip
    optional = {
        "--benchmark-max-steps": s.max_steps,
        "--benchmark-obs": s.obs,
        "--benchmark-settle-steps": s.settle_steps,
        "--benchmark-camera-map": ",".join(f"{a}={b}" for a, b in s.camera_map) or None,
        "--benchmark-rename-map": ",".join(f"{a}={b}" for a, b in s.rename_map) or None,
    }
    args += [f"{flag}={value}" for flag, value in optional.items() if value is not None]
    if s.batched_inference:
        args.append("--benchmark-batched-inference")
    if s.render != "faithful":
        args.append(f"--benchmark-render={s.render}")
    if s.image_size != DEFAULT_IMAGE_SIZE:
        args.append(f"--benchmark-image-size={s.image_size[0]}x{s.image_size[1]}")
    return shlex.join(args)
