"""The README's example of a user's own benchmark test, run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import outcomes, read_metrics

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


def test_the_readme_policy_runs_and_acts_the_same_at_any_batch_size(pytester: pytest.Pytester):
    pytester.makepyfile(my_policies=readme_example("make"))
    pytester.makepyfile(
        test_run="""
import pytest

@pytest.mark.benchmark_env("metaworld")
def test_runs(evaluate):
    assert evaluate().error is None
"""
    )
    args = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3", "--benchmark-episodes=3",
            "--benchmark-policy=module:my_policies:make"]  # fmt: skip
    runs = {}
    for batch in ("1", "3"):
        metrics = pytester.path / f"b{batch}.json"
        done = pytester.runpytest_subprocess(
            *args, f"--benchmark-batch-size={batch}", f"--benchmark-metrics={metrics}"
        )
        done.assert_outcomes(passed=1)
        (row,) = read_metrics(metrics)["results"]
        assert row["policy"] == {"source": "module", "id": "my_policies:make", "revision": "1"}
        assert row["batch_size"] == int(batch)
        runs[batch] = outcomes(read_metrics(metrics))
    assert runs["1"] == runs["3"]
    # The random actions differ between episodes: their reward sums do.
    assert len({episode for episode in runs["1"]["metaworld/reach-v3"]}) == 3
