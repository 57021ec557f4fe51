"""The repository's action (action.yml) run as a runner runs a composite action, for the steps
that are shell: each ``if`` and ``env`` expression evaluated (the forms the action uses: inputs,
``github.action_path``, an earlier step's outputs, ``always()``), each ``run`` script in bash
with ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` files. A ``uses`` step is recorded, not run:
its ``with`` evaluated, so a test can check what it would upload."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


@dataclass
class Ran:
    """What the action did: each step's exit status (None: skipped by its ``if``), its
    outputs, the job summary and the ``uses`` steps it would have run."""

    statuses: dict[str, int | None] = field(default_factory=dict)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    summary: str = ""
    logs: dict[str, str] = field(default_factory=dict)
    uses: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(status for status in self.statuses.values())


def action() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def run_action(inputs: dict[str, str], cwd: Path, path: str) -> Ran:
    """Run action.yml's steps in ``cwd`` with ``inputs`` (the action's defaults filling the
    rest) and ``path`` as the PATH its shell steps see."""
    spec = action()
    given = {name: str(s.get("default", "")) for name, s in spec["inputs"].items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    given.update(inputs)
    ran = Ran()
    summary = cwd / "step-summary.md"
    summary.touch()
    for number, step in enumerate(spec["runs"]["steps"]):
        name = step.get("id") or step.get("name") or str(number)
        context = {"inputs": given, "outputs": ran.outputs, "failed": ran.failed}
        if not _condition(step.get("if", "success()"), context):
            ran.statuses[name] = None
            continue
        if "uses" in step:
            values = {k: _expand(str(v), context) for k, v in (step.get("with") or {}).items()}
            ran.uses.append((step["uses"], values))
            continue
        assert step.get("shell") == "bash", f"step {name}: only bash steps are run here"
        output = cwd / f"output-{number}"
        output.touch()
        env = {k: _expand(str(v), context) for k, v in (step.get("env") or {}).items()}
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", step["run"]],
            cwd=cwd, capture_output=True, text=True, timeout=600,
            env={**os.environ, "PATH": path, "GITHUB_OUTPUT": str(output),
                 "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTION_PATH": str(ROOT), **env},
        )  # fmt: skip
        ran.statuses[name] = done.returncode
        ran.logs[name] = done.stdout + done.stderr
        ran.outputs[name] = dict(
            line.split("=", 1) for line in output.read_text().splitlines() if "=" in line
        )
    ran.summary = summary.read_text()
    return ran


def _value(expression: str, context: dict[str, Any]) -> str:
    """One expression's value: ``inputs.NAME``, ``github.action_path``,
    ``steps.ID.outputs.NAME`` or a quoted string."""
    if expression.startswith("inputs."):
        return context["inputs"][expression.removeprefix("inputs.")]
    if expression == "github.action_path":
        return str(ROOT)
    if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
        return context["outputs"].get(match[1], {}).get(match[2], "")
    if match := re.fullmatch(r"'([^']*)'", expression):
        return match[1]
    raise AssertionError(f"an expression this runner does not know: {expression}")


def _expand(text: str, context: dict[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: _value(m[1], context), text)


def _condition(text: str, context: dict[str, Any]) -> bool:
    """An ``if``: terms joined by ``&&``, each a status function or ``A == B`` / ``A != B``;
    without a status function, only when no step failed (as ``success()``)."""
    text = EXPRESSION.sub(lambda m: m[1], text)
    status_given = False
    result = True
    for term in (t.strip() for t in text.split("&&")):
        if term in ("always()", "success()", "failure()"):
            status_given = True
            result &= {"always()": True, "success()": not context["failed"],
                       "failure()": context["failed"]}[term]  # fmt: skip
        elif match := re.fullmatch(r"(\S+)\s*(==|!=)\s*(\S+)", term):
            left, right = _value(match[1], context), _value(match[3], context)
            result &= (left == right) == (match[2] == "==")
        else:
            raise AssertionError(f"a condition this runner does not know: {term}")
    return result and (status_given or not context["failed"])
