"""``--benchmark-ray`` refused in one line before any episode where no cluster is needed to
know: nothing answers at the address, no cluster for auto, an address of another form, options
a cluster cannot serve; and the API's ``ray`` keyword refuses the same."""

from __future__ import annotations

import psutil
import pytest
import toybench  # noqa: F401  (registers toy for the API's calls)
from helpers import TOY_CONFTEST, TOY_TESTS

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core.validation import OptionError


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory
            ) -> pytest.Pytester:  # fmt: skip
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path_factory.mktemp("no-ray")))  # no cluster there
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    return pytester


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--benchmark-ray=127.0.0.1:1"],
         "--benchmark-ray=127.0.0.1:1: no Ray cluster answers there (Connection refused); start "
         "its head with `ray start --head --port=PORT`, or give auto for the one RAY_ADDRESS "
         "names"),
        (["--benchmark-ray=auto"],
         "--benchmark-ray=auto: cannot join a Ray cluster: Could not find any running Ray "
         "instance. Please specify the one to connect to by setting `--address` flag or "
         "`RAY_ADDRESS` environment variable."),
        (["--benchmark-ray=ray://10.0.0.5:10001"],
         "--benchmark-ray: 'ray://10.0.0.5:10001' is neither auto nor a Ray head's HOST:PORT "
         "(e.g. 10.0.0.5:6379; the session runs on a node of the cluster, so ray:// client "
         "addresses are not taken)"),
        (["--benchmark-ray=127.0.0.1:1", "--benchmark-debug"],
         "--benchmark-ray: --benchmark-debug and --benchmark-episode run one env in this "
         "process (for a debugger); drop --benchmark-ray or them"),
    ],
)  # fmt: skip
def test_what_needs_no_cluster_to_know_is_refused_in_one_line(
    project: pytest.Pytester, args: list[str], line: str
):
    if "no Ray cluster" in line or "cannot join" in line:
        pytest.importorskip("ray", reason="the ray extra is not installed")
    if args == ["--benchmark-ray=auto"] and any(
        p.info["name"] == "gcs_server" for p in psutil.process_iter(["name"])
    ):
        pytest.skip("a Ray cluster runs on this machine (another test's): auto would join it")
    result = project.runpytest("--benchmark-env=toy", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {line}" in result.errlines, result.errlines
    assert not (project.path / "benchmark-results").exists()


def test_the_api_refuses_the_same_and_a_policy_object(project: pytest.Pytester):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with pytest.raises(OptionError, match="no Ray cluster answers there"):
        evaluate("toy", tasks=["walk"], episodes=1, ray="127.0.0.1:1")
    with pytest.raises(OptionError, match="give policy as a spec string"):
        evaluate("toy", tasks=["walk"], episodes=1, policy=lambda config, n: None, ray="auto")


def test_auto_with_a_ray_address_where_nothing_answers_is_refused_at_once(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    result = project.runpytest("--benchmark-env=toy", "--benchmark-ray=auto")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --benchmark-ray=auto (RAY_ADDRESS=127.0.0.1:1): no Ray cluster answers there "
        "(Connection refused); start its head with `ray start --head --port=PORT`, or give auto "
        "for the one RAY_ADDRESS names"
    ) in result.errlines, result.errlines


def test_a_listener_that_is_no_ray_head_is_refused_within_the_join_bound(
    project: pytest.Pytester,
):
    """Ray retries a TCP listener that is not its head for minutes; the join is bounded
    (``ray_connect.JOIN_S``) and refused in one line naming the address. In a process of its
    own: the abandoned join goes on in its thread until that process ends."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import socket

    from pytest_benchmarks.cluster.ray_connect import JOIN_S

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        result = project.runpytest_subprocess(
            "--benchmark-env=toy", f"--benchmark-ray={address}", timeout=JOIN_S + 120
        )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"ERROR: --benchmark-ray={address}: no Ray cluster answered within {JOIN_S:g} s (is it a "
        "Ray head's GCS port? `ray status` on the head names it)"
    ) in result.errlines, result.errlines
