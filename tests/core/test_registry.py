"""The option registry is the one declaration of every setting: the plugin's options and ini
keys, the API's keywords and defaults, the options page, resume's comparison, the rerun
command and the metrics JSON's run block all agree with it, entry for entry."""

from __future__ import annotations

import inspect
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import validation
from pytest_benchmarks.core.settings import OPTIONS, Settings
from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.document import build_metrics, write_metrics
from pytest_benchmarks.metrics.resume import ResumeError, load_resumable
from pytest_benchmarks.plugin.options import GROUP, add_options
from pytest_benchmarks.plugin.rerun import rerun_command

ROOT = Path(__file__).resolve().parents[2]

#: A valid value other than the default for every option, as its flag takes it. A new option
#: must add one here: the tests below then check it everywhere it must appear.
OTHER: dict[str, Any] = {
    "envs": "metaworld",
    "tasks": "push-v3",
    "episodes": "3",
    "batch_size": "2",
    "policy": "random",
    "seed": "7",
    "device": "cpu",
    "max_steps": "50",
    "metrics": "elsewhere/m.json",
    "obs": "pixels",
    "image_size": "64x48",
    "settle_steps": "2",
    "render": "fast",
    "camera_map": "corner2=camera1",
    "env_args": "obs_type=pixels_agent_pos",
    "rename_map": "observation.image=observation.images.camera1",
    "episode_indices": "1,4",
    "video": "all",
    "progress_s": "3",
    "timeout": "90",
    "shard": "1/2",
    "gate": "exact",
    "alpha": "0.1",
    "gate_power": "fail",
    "record": "dataset",
    "record_only": "success",
    "sync": True,
    "debug": True,
    "snapshot_replace": True,
    "sequential": True,
    "resume": True,
    "batched_inference": True,
    "policy_server": "off",
    "policy_server_wait": "50",
    "ray": "10.0.0.5:6379",
}


def test_every_option_has_a_value_to_try():
    assert set(OTHER) == {o.field for o in OPTIONS}


def test_the_plugin_registers_each_option_and_ini_key_from_the_registry():
    parser = pytest.Parser(_ispytest=True)
    add_options(parser)
    registered = {opt.names()[0]: opt.attrs() for opt in parser.getgroup(GROUP).options}
    assert list(registered) == [o.flag for o in OPTIONS]
    for option in OPTIONS:
        attrs = registered[option.flag]
        assert attrs["dest"] == option.dest and attrs["help"] == option.help
        assert attrs.get("metavar") == option.metavar
        assert option.dest in parser._inidict  # the ini key of the same name


def test_the_api_takes_the_registry_keywords_with_their_defaults():
    parameters = inspect.signature(evaluate).parameters
    api = {o.api: o for o in OPTIONS if o.api}
    assert set(parameters) == set(api)
    for name, option in api.items():
        default = parameters[name].default
        if name == "benchmarks":
            assert default is inspect.Parameter.empty
        else:
            # None stands for the option's default (or, for metrics, "write no file").
            assert default is None or default == option.dump(option.default), name


def test_the_options_page_is_the_registry():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import options_page
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    page = options_page.PAGE.read_text()
    assert options_page.rendered(page) == page
    for option in OPTIONS:
        assert f"`{option.flag}" in page and f"`{option.dest}`" in page


def _other(option_field: str, tmp_path: Path) -> Settings:
    """Settings with only this option changed from the defaults."""
    option = next(o for o in OPTIONS if o.field == option_field)
    base = validation.build(root=tmp_path)
    value = option.parse(option.flag, OTHER[option_field])
    return replace(base, **{option_field: value})


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.field)
def test_resume_compares_exactly_the_outcome_options(option, tmp_path: Path):
    base = validation.build(root=tmp_path)
    path = tmp_path / "metrics.json"
    run = run_info.run_block(run_info.static_info([], tmp_path, base), base, 0, 0.0, False, 0)
    write_metrics(path, build_metrics([], run, str(base.policy)))
    changed = _other(option.field, tmp_path)
    assert getattr(changed, option.field) != getattr(base, option.field)
    if option.resume or option.compare:
        with pytest.raises(ResumeError, match=f"was made with {option.field} "):
            load_resumable(path, changed)
    else:
        assert load_resumable(path, changed) == {}


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.rerun], ids=lambda o: o.field)
def test_the_rerun_command_gives_back_each_setting_it_names(option, tmp_path: Path):
    changed = _other(option.field, tmp_path)
    command = rerun_command("benchmarks/test_metaworld.py", changed, _task())
    flags = [part for part in command.split() if part.split("=")[0] == option.flag]
    assert len(flags) == 1, command
    text = True if option.is_flag else flags[0].split("=", 1)[1]
    assert option.parse(option.flag, text) == getattr(changed, option.field)


def test_only_the_options_that_decide_an_outcome_are_in_the_rerun_command(tmp_path: Path):
    command = rerun_command("t.py", validation.build(root=tmp_path), _task())
    assert (
        command
        == "pytest t.py --benchmark-task=metaworld/reach-v3 --benchmark-seed=1000 --benchmark-policy=scripted"
    )
    for option in OPTIONS:
        if option.rerun is None and option.field != "tasks":  # the command names its task
            changed = _other(option.field, tmp_path)
            parts = rerun_command("t.py", changed, _task()).split()
            assert not [p for p in parts if p.split("=")[0] == option.flag], option.field


def _metrics(settings: Settings, tmp_path: Path, name: str, task: str) -> dict[str, Any]:
    """A metrics document of ``settings`` with one finished episode of ``task``."""
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.results import EpisodeRecord, TaskResult

    episode = EpisodeRecord(0, 1000, 0, True, 5, 1.0, 1.0, 0.1)
    (ref,) = catalog.get("metaworld").select([task])
    result = TaskResult(ref, [episode], eval_s=0.1, planned=1)
    run = run_info.run_block(
        run_info.static_info([], tmp_path, settings), settings, 0, 0.0, False, 0
    )
    document = build_metrics([result], run, str(settings.policy))
    write_metrics(tmp_path / name, document)
    return document


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.field)
def test_every_path_asks_the_one_comparability_rule(option, tmp_path: Path):
    """Each setting through the four paths that put two runs side by side: resume (above),
    ``merge`` (shards share every setting with a bearing on outcomes), ``compare`` (refuses a
    "refuse" setting in one line before any statistic, notes a "note" one) and the snapshot
    gate (the same, on the settings a snapshot records)."""
    from pytest_benchmarks.core.comparability import COMPARED
    from pytest_benchmarks.metrics import gate, runs, snapshots

    snapshot = (snapshots.NAMES, snapshots.REMEDY, snapshots.ABSENT)

    base = validation.build(root=tmp_path)
    changed = _other(option.field, tmp_path)
    old = _metrics(base, tmp_path, "old.json", "reach-v3")
    new = _metrics(changed, tmp_path, "new.json", "reach-v3")
    # Shards hold other tasks: only their settings differ.
    _metrics(changed, tmp_path, "shard.json", "push-v3")
    line = f"{option.field} "
    if option.compare is None:
        assert option.field not in COMPARED
        if option.field != "shard":  # a shard beside a whole run is check_shards' to refuse
            runs.merge([tmp_path / "old.json", tmp_path / "shard.json"])
        lines, _ = runs.compare_runs(old, new, 0.05, "stat")
        assert not any(line in text for text in lines if text.startswith("note:"))
        return
    with pytest.raises(runs.InputError, match=f"{line}.* shards of one run share"):
        runs.merge([tmp_path / "old.json", tmp_path / "shard.json"])
    if option.compare == "refuse":
        with pytest.raises(runs.Unjudgeable, match=f"different experiments \\({line}"):
            runs.compare_runs(old, new, 0.05, "stat")
    else:
        lines, _ = runs.compare_runs(old, new, 0.05, "stat")
        assert lines[0].startswith(f"note: the runs differ in {line}")
    # The gate: what the snapshot records of the setting (the run block's form where it
    # records it only where it applies, as a pixel run does).
    stored = {option.field: old["run"][option.field]}
    current = {option.field: new["run"][option.field]}
    if option.compare == "refuse":
        with pytest.raises(gate.Incomparable, match=f"\\({line}.* not compared;"):
            gate.check_comparable(stored, current, *snapshot)
    else:
        assert gate.check_comparable(stored, current, *snapshot)[0].startswith(line)
        assert snapshots.setting_changes(stored, current)[0].startswith(line)


def test_the_run_block_holds_each_run_block_option(tmp_path: Path):
    block = validation.build(root=tmp_path).as_dict()
    assert list(block) == [o.field for o in OPTIONS if o.run_block]
    json.dumps(block)  # plain JSON


def test_the_schemas_run_block_is_the_registry(tmp_path: Path):
    """The metrics JSON Schema describes each run-block option from the registry (current in the
    package), and takes each option's default and another value as the run block holds them."""
    import jsonschema

    from pytest_benchmarks.metrics import run_schema
    from pytest_benchmarks.metrics.document import schema

    committed = schema()
    assert run_schema.rendered(committed) == committed
    properties = committed["properties"]["run"]["properties"]
    default = validation.build(root=tmp_path).as_dict()
    for option in (o for o in OPTIONS if o.run_block):
        assert properties[option.field]["description"].startswith(f"{option.flag}: ")
        jsonschema.validate(default[option.field], properties[option.field])
        jsonschema.validate(_other(option.field, tmp_path).as_dict()[option.field],
                            properties[option.field])  # fmt: skip
    for field, wrong in [("video", "sometimes"), ("episodes", 0), ("camera_map", {"a": 1})]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, properties[field])


def test_snapshot_settings_are_the_options_with_a_snapshot_rule(tmp_path: Path):
    task = _task()
    state = validation.build(root=tmp_path).snapshot_settings(task)
    assert state == {
        "seed": 1000,
        "max_steps": 500,
        "obs": "state",
        "image_size": None,
        "settle_steps": None,
    }
    pixels = validation.build(
        root=tmp_path, obs="pixels", rename_map="a=b", policy="lerobot:lerobot/smolvla_base"
    ).snapshot_settings(task)
    assert pixels == {
        "seed": 1000, "max_steps": 500, "obs": "pixels", "image_size": [128, 128],
        "settle_steps": None, "render": "faithful", "rename_map": {"a": "b"},
    }  # fmt: skip
    assert set(pixels) <= {o.field for o in OPTIONS if o.snapshot}


def _task():
    from pytest_benchmarks.core import catalog

    return catalog.get("metaworld").select(["reach-v3"])[0]


def test_the_benchmarks_own_step_limit_is_no_difference_where_it_is_one_value(tmp_path: Path):
    """A run that took Meta-World's own step limit (recorded as the default) and one that named
    500 are one experiment, and compare, merge and resume say so; 100 is refused, naming the
    500 it means; LIBERO's own limit differs by suite, so the default beside a number stays a
    difference."""
    from pytest_benchmarks.core import catalog, comparability
    from pytest_benchmarks.metrics import runs

    reach = catalog.resolve(["metaworld"], ["reach-v3"])["metaworld"]
    old, new = comparability.effective({"max_steps": None}, {"max_steps": 500}, reach)
    assert comparability.differences(old, new) == []
    old, new = comparability.effective({"max_steps": None}, {"max_steps": 100}, reach)
    assert [d.text() for d in comparability.differences(old, new)] == ["max_steps 500 → 100"]
    libero = catalog.resolve(["libero"], ["libero_spatial", "libero_10"])["libero"]
    old, new = comparability.effective({"max_steps": None}, {"max_steps": 280}, libero)
    assert [d.text() for d in comparability.differences(old, new)] == ["max_steps default → 280"]
    # Through compare, on two metrics files of one task.
    base = validation.build(root=tmp_path)
    documents = {
        steps: _metrics(replace(base, max_steps=steps), tmp_path, f"{steps}.json", "reach-v3")
        for steps in (None, 500, 100)
    }
    lines, status = runs.compare_runs(documents[None], documents[500], 0.05, "stat")
    assert status == 0 and not any("max_steps" in line for line in lines), lines
    with pytest.raises(runs.Unjudgeable, match="max_steps 500 → 100"):
        runs.compare_runs(documents[None], documents[100], 0.05, "stat")
    # merge: shards of one run, one that took the benchmark's own limit and one that named it.
    _metrics(replace(base, max_steps=500), tmp_path, "push-500.json", "push-v3")
    _metrics(replace(base, max_steps=100), tmp_path, "push-100.json", "push-v3")
    merged = runs.merge([tmp_path / "None.json", tmp_path / "push-500.json"])
    assert sorted(r["id"] for r in merged["results"]) == ["metaworld/push-v3", "metaworld/reach-v3"]
    with pytest.raises(runs.InputError, match="max_steps 500 → 100 from"):
        runs.merge([tmp_path / "None.json", tmp_path / "push-100.json"])
    # resume: a file of the benchmark's own limit carried on by a run that names it.
    from pytest_benchmarks.metrics.resume import ResumeError, load_resumable

    kept = load_resumable(tmp_path / "None.json", replace(base, max_steps=500))
    assert list(kept) == ["metaworld/reach-v3"]
    with pytest.raises(ResumeError, match="made with max_steps 500, this run has 100"):
        load_resumable(tmp_path / "None.json", replace(base, max_steps=100))
