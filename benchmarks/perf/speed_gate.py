"""The speed gate end to end, for the Meta-World expert, an MLP checkpoint and a LeRobot ACT.

For each policy: store a run of the speed tests (``--benchmark-autosave``), run them again and
compare (``--benchmark-compare-fail=min:50%``: must pass), then run the policy slowed by its
own stored latency (``slowed_policy.py``: twice as slow) and compare (must fail). Prints each
run's medians and minima and its exit status. The checkpoints are built here with random
weights (speed does not depend on training); ACT sees the corner2 camera at 64x64 and the
39-D state.

    python benchmarks/perf/speed_gate.py [--tasks reach-v3,push-v3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "benchmarks" / "perf"
GATE = "--benchmark-compare-fail=min:50%"


def checkpoints(directory: Path) -> dict[str, tuple[str, list[str]]]:
    """Label -> (policy spec, extra options) for the three policies."""
    import torch

    from pytest_benchmarks.policies.torch_policy import MLPPolicy, save_policy

    sys.path.insert(0, str(ROOT / "tests"))
    import lerobot_models

    torch.manual_seed(0)
    mlp = directory / "mlp"
    save_policy(MLPPolicy(state_dim=39, action_dim=4, hidden=256), mlp)
    inputs = {"observation.state": (39,), "observation.images.corner2": (3, 64, 64)}
    act = lerobot_models.checkpoint("act", directory / "act", inputs, action_dim=4)
    pixels = ["--benchmark-obs=pixels", "--benchmark-image-size=64"]
    return {
        "expert": ("scripted", []),
        "mlp": (str(mlp), []),
        "act": (f"lerobot:{act}", pixels),
    }


def session(
    args: list[str], out: Path, env: dict[str, str]
) -> tuple[int, dict[str, tuple[float, float]]]:
    """One speed session; its exit status and each benchmark's (median, min) in seconds."""
    command = [
        sys.executable, "-m", "pytest", "benchmarks/test_metaworld.py", "--benchmark-only",
        "-p", "no:xdist", "-p", "no:cacheprovider", "-q", f"--benchmark-json={out}", *args,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if not out.is_file():
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"no benchmark JSON from: {' '.join(command)}")
    benchmarks = json.loads(out.read_text())["benchmarks"]
    return done.returncode, {
        b["name"]: (b["stats"]["median"], b["stats"]["min"]) for b in benchmarks
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="reach-v3,push-v3")
    parser.add_argument("--keep", type=Path, help="keep checkpoints and stored runs here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="speed-gate-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    print(f"{'policy':7} {'run':8} {'exit':>4}  benchmark: median (min)")
    for label, (spec, extra) in checkpoints(work).items():
        store = f"--benchmark-storage=file://{work / 'store' / label}"
        common = [f"--benchmark-task={args.tasks}", store, *extra]
        base_code, base = session(
            [*common, f"--benchmark-policy={spec}", "--benchmark-autosave"],
            work / f"{label}-stored.json", env,
        )  # fmt: skip
        again_code, again = session(
            [*common, f"--benchmark-policy={spec}", "--benchmark-compare", GATE],
            work / f"{label}-again.json", env,
        )  # fmt: skip
        latency = max(v[0] for k, v in base.items() if k.startswith("test_policy_latency"))
        slowed_env = {**env, "PYTHONPATH": str(PERF), "SLOWED_POLICY": spec,
                      "SLOW_S": f"{latency:.6f}"}  # fmt: skip
        slowed_code, slowed = session(
            [*common, "--benchmark-policy=module:slowed_policy:make", "-k", "policy_latency",
             "--benchmark-compare", GATE],
            work / f"{label}-slowed.json", slowed_env,
        )  # fmt: skip
        for run, code, medians in (
            ("stored", base_code, base),
            ("again", again_code, again),
            (f"slowed +{latency * 1e3:.3g} ms", slowed_code, slowed),
        ):
            figures = ", ".join(
                f"{name.removeprefix('test_')}: {median * 1e3:.3f} ({least * 1e3:.3f}) ms"
                for name, (median, least) in sorted(medians.items())
            )
            print(f"{label:7} {run:8} {code:>4}  {figures}", flush=True)
    print(f"stored runs and checkpoints: {work}")


if __name__ == "__main__":
    main()
