"""The pytest command that reruns a task's episodes, printed when a success check fails."""

from __future__ import annotations

import shlex

from pytest_benchmarks.core.settings import OPTIONS, Settings
from pytest_benchmarks.core.tasks import TaskRef


def rerun_command(test_file: str, settings: Settings, task: TaskRef) -> str:
    """The pytest command that reruns the task's tests in ``test_file`` with the settings its
    episodes depend on (the registry's ``rerun`` options); append ``--benchmark-episode=I,J``
    to pick episodes."""
    args = ["pytest", test_file, f"--benchmark-task={task.id}"]
    for option in OPTIONS:
        value = getattr(settings, option.field)
        if option.rerun is None or (option.rerun == "changed" and value == option.default):
            continue
        args.append(option.flag if option.is_flag else f"{option.flag}={option.show(value)}")
    return shlex.join(args)
