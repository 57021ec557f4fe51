"""The metrics JSON's run block as JSON Schema, from the option registry: each option the run
block holds (``Option.run_block``) is described by its ``Settings`` field's type, its parser's
bounds or choices and its help, so the schema cannot drift from what a run writes.
``scripts/options_page.py`` writes it into ``metrics/schema/metrics.schema.json`` (and checks
it is current); the run block's other fields (host, times, exit status) are written there by hand.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.options import Option
from pytest_benchmarks.core.policy_spec import PolicySpec
from pytest_benchmarks.core.settings import OPTIONS, Settings

#: JSON Schema of a scalar field type as the run block holds it (``Option.dump``).
_SCALARS: dict[Any, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    str: {"type": "string"},
    Path: {"type": "string"},
    PolicySpec: {"type": "string"},
}


def type_schema(annotation: Any) -> dict[str, Any]:
    """The JSON form of a ``Settings`` field's type: ``int | None`` -> integer or null, a tuple
    of pairs -> an object of strings (``values.pairs_json``), another tuple -> an array."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"no JSON form for {annotation}")
        schema = type_schema(inner[0])
        kind = schema.get("type", "array")
        return {**schema, "type": [kind, "null"]}
    if typing.get_origin(annotation) is tuple:
        if args and typing.get_origin(args[0]) is tuple:  # ((key, value), ...): a mapping
            return {"type": "object", "additionalProperties": {"type": "string"}}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0])}
        items = [type_schema(a) for a in args]
        return {"type": "array", "items": items[0], "minItems": len(args), "maxItems": len(args)}
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    raise TypeError(f"no JSON form for {annotation}")


def option_schema(option: Option, annotation: Any) -> dict[str, Any]:
    """One run-block option: its type, its parser's bounds or choices, its flag and help."""
    schema = type_schema(annotation)
    declared = dict(getattr(option.parse, "schema", {}))
    if "enum" in declared:
        enum = declared.pop("enum")
        nullable = isinstance(schema.get("type"), list) and "null" in schema["type"]
        schema = {"enum": [*enum, None] if nullable else enum}
    declared.pop("type", None)
    return {**schema, **declared, "description": f"{option.flag}: {option.help}"}


def run_properties() -> dict[str, dict[str, Any]]:
    """The run block's options, by field, in the registry's order."""
    hints = typing.get_type_hints(Settings)
    return {o.field: option_schema(o, hints[o.field]) for o in OPTIONS if o.run_block}


def rendered(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (the metrics JSON's) with its run block's options from the registry, its other
    fields as they were, options first."""
    run = schema["properties"]["run"]
    options = run_properties()
    others = {k: v for k, v in run["properties"].items() if k not in options}
    run = {**run, "properties": {**options, **others}}
    return {**schema, "properties": {**schema["properties"], "run": run}}


def dumps(value: Any, indent: int = 0, width: int = 100) -> str:
    """JSON indented by 2, with each object or array that fits the line on one line: the
    schema file stays readable and its diffs small."""
    flat = json.dumps(value, ensure_ascii=False)
    pad = " " * (indent + 2)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, list):
        rows = [pad + dumps(v, indent + 2, width) for v in value]
        return "[\n" + ",\n".join(rows) + "\n" + " " * indent + "]"
    rows = [
        f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps(v, indent + 2, width)}"
        for k, v in value.items()
    ]
    return "{\n" + ",\n".join(rows) + "\n" + " " * indent + "}"
