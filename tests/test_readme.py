"""The README's example of a user's own benchmark test, run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example(name: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return next(block for block in blocks if f"def {name}(" in block)


def test_the_readme_check_passes_the_expert_and_fails_a_collapsed_policy(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_own=readme_example("test_mostly_succeeds"))
    args = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3", "--benchmark-episodes=3"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    collapsed = pytester.runpytest_subprocess(*args, "--benchmark-policy=noop")
    collapsed.assert_outcomes(failed=1)
    collapsed.stdout.fnmatch_lines(["*AssertionError: metaworld/reach-v3: 0/3*"])
