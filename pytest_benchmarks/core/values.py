"""How an option's value is read: parsers that take the flag's string (the plugin) or a typed
value (the API) and return the setting, or raise ``OptionError`` with one line that names the
option and what is valid. Each parser is ``(flag, value) -> setting``; the registry in
``core.settings`` names one per option."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Parser = Callable[[str, Any], Any]


class OptionError(ValueError):
    """A bad option value; the message is one line starting with the option's name."""


def names(value: Any) -> tuple[str, ...] | None:
    """``a,b`` or a sequence: the non-empty names, or None for none."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    items = tuple(part.strip() for part in str(value).split(",") if part.strip())
    return items or None


def name_list(flag: str, value: Any) -> tuple[str, ...] | None:
    """Names as ``a,b`` or a sequence of strings; an empty sequence names nothing, an error
    (None, or leaving the option out, is the default)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise OptionError(f"{flag}: an empty list names nothing; give names, or None")
        if not all(isinstance(item, str) and item.strip() for item in value):
            raise OptionError(f"{flag}: {value!r} is not a list of names (strings)")
    elif value is not None and not isinstance(value, str):
        raise OptionError(f"{flag}: {value!r} is not a name or a list of names")
    return names(value)


def integer(minimum: int, maximum: int | None = None) -> Parser:
    """An integer in ``[minimum, maximum]``."""

    def parse(flag: str, value: Any) -> int:
        try:
            if isinstance(value, bool):  # True is 1 to int(), never an episode count
                raise TypeError
            number = int(value)
        except (TypeError, ValueError, OverflowError):
            number = minimum - 1
        too_big = maximum is not None and number > maximum
        if number < minimum or too_big or (isinstance(value, float) and not value.is_integer()):
            bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
            raise OptionError(f"{flag}: {str(value)[:40]!r} is not an integer {bound}")
        return number

    bounds = {"minimum": minimum} | ({"maximum": maximum} if maximum is not None else {})
    return described(parse, {"type": "integer", **bounds})


def choice(valid: Sequence[str]) -> Parser:
    """One of ``valid``."""

    def parse(flag: str, value: Any) -> str:
        if value not in valid:
            raise OptionError(f"{flag}: {value!r} is not one of {', '.join(valid)}")
        return str(value)

    return described(parse, {"enum": list(valid)})


def described(parse: Parser, schema: dict[str, Any]) -> Parser:
    """``parse``, carrying the JSON Schema of the values it returns (the metrics JSON's run
    block reads it: ``metrics.run_schema``)."""
    setattr(parse, "schema", schema)  # noqa: B010 (a function's attribute)
    return parse


def number(accept: Callable[[float], bool], expected: str) -> Parser:
    """A float that ``accept`` takes (NaN never is); ``expected`` says which in the error."""

    def parse(flag: str, value: Any) -> float:
        try:
            result = float(value)
        except (TypeError, ValueError):
            result = math.nan
        if not accept(result):
            raise OptionError(f"{flag}: {value!r} is not {expected}")
        return result

    return parse


#: How an ini file (or a string given to the API) spells a flag, as configparser reads them.
FLAG_WORDS = {"1": True, "yes": True, "true": True, "on": True,
              "0": False, "no": False, "false": False, "off": False, "": False}  # fmt: skip


def flag(flag: str, value: Any) -> bool:
    """A flag: True or False (None: False), or its ini spelling (``true``, ``no``, ...)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in FLAG_WORDS:
        return FLAG_WORDS[value.strip().lower()]
    raise OptionError(f"{flag}: {value!r} is not True or False (or true, false, yes, no, 1, 0)")


def path(flag: str, value: Any) -> Path | None:
    """A path (a string or ``os.PathLike``), ``~`` expanded, made absolute against the working
    directory."""
    if value in (None, ""):
        return None
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
        raise OptionError(f"{flag}: {value!r} is not a path (a string or a pathlib.Path)")
    return Path(os.path.expanduser(os.fspath(value))).absolute()


def indices(flag: str, value: Any) -> tuple[int, ...] | None:
    """Episode indices ``3,7`` (or a sequence of ints): sorted, without repeats."""
    if isinstance(value, (list, tuple, range)):
        value = ",".join(map(str, value))
    parts = names(value)
    if parts is None:
        return None
    if not all(p.isdigit() for p in parts):
        raise OptionError(f"{flag}: {value!r} is not a list of episode indices >= 0 (e.g. 3,7)")
    return tuple(sorted({int(p) for p in parts}))


def shard(flag: str, value: Any) -> tuple[int, int]:
    """``I/N`` with ``1 <= I <= N``, or an ``(I, N)`` pair."""
    if isinstance(value, tuple):
        value = "/".join(map(str, value))
    index, sep, count = str(value).partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return (int(index), int(count))
    raise OptionError(f"{flag}: {value!r} is not I/N with 1 <= I <= N (e.g. 2/4)")


#: The longest image side a camera renders: the largest framebuffer of the OpenGL renderers
#: MuJoCo draws with here (OSMesa's ``GL_MAX_RENDERBUFFER_SIZE``); a larger one fails to render,
#: or fails to allocate before that.
MAX_IMAGE_SIDE = 16384


def image_size(flag: str, value: Any) -> tuple[int, int]:
    """``N``, ``HxW`` or an ``(H, W)`` pair, each side in ``[1, MAX_IMAGE_SIDE]``."""
    if isinstance(value, tuple):
        value = "x".join(map(str, value))
    parts = str(value).lower().split("x")
    if len(parts) in (1, 2) and all(p.isdigit() and int(p) > 0 for p in parts):
        size = (int(parts[0]), int(parts[-1]))
        if max(size) > MAX_IMAGE_SIDE:
            raise OptionError(
                f"{flag}: {size[0]}x{size[1]} is too large: each side at most {MAX_IMAGE_SIDE} "
                "(the renderer's largest framebuffer; e.g. 224x224)"
            )
        return size
    raise OptionError(f"{flag}: {value!r} is not N or HxW (e.g. 224x224)")


def pairs(example: str, syntax: str = "OLD=NEW") -> Parser:
    """``A=B,C=D``, a mapping, or a JSON object as LeRobot's own flags take it
    (``'{"A": "B"}'``, pasted from a ``lerobot-eval`` command): (source, target) pairs. Names
    in a JSON object or mapping are taken whole (commas and ``=`` included); a name given twice
    is an error, not the last one winning. ``syntax`` names a pair in errors (``FIELD=VALUE``)."""
    form = f"{syntax}[,...] or a JSON object, e.g. {example}"

    def parse(flag: str, value: Any) -> tuple[tuple[str, str], ...]:
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                items = json.loads(value, object_pairs_hook=list)
            except ValueError as exc:
                raise OptionError(f"{flag}: not a JSON object ({exc}); e.g. {example}") from None
            found = [(k, v) for k, v in items]
        elif isinstance(value, str) and value.strip().startswith("["):
            raise OptionError(f"{flag}: {value!r} is a JSON list, not {syntax} pairs; give {form}")
        elif isinstance(value, Mapping):
            found = list(value.items())
        elif value is None or isinstance(value, str):
            found = []
            for item in names(value) or ():
                source, sep, target = item.partition("=")
                if not sep or not source.strip() or not target.strip():
                    raise OptionError(f"{flag}: {item!r} is not {syntax}; give {form}")
                found.append((source.strip(), target.strip()))
        else:
            raise OptionError(
                f"{flag}: {value!r} is not {syntax} pairs or a mapping; e.g. {example}"
            )
        seen: set[str] = set()
        for source, target in found:
            if (
                not isinstance(source, str)
                or not isinstance(target, str)
                or not source
                or not target
            ):
                raise OptionError(
                    f"{flag}: {source!r}: {target!r} is not a pair of names; e.g. {example}"
                )
            if source in seen:
                raise OptionError(f"{flag}: {source!r} is given twice; give each name once")
            seen.add(source)
        return tuple(found)

    return parse


def env_fields(example: str) -> Parser:
    """``pairs`` of LeRobot env config fields and values, named as ``FIELD`` alone: a field
    pasted with ``lerobot-eval``'s ``--env.`` prefix would reach LeRobot's parser as
    ``----env.FIELD`` and be refused with every field listed, none of them the one meant."""
    read = pairs(example, "FIELD=VALUE")

    def parse(flag: str, value: Any) -> tuple[tuple[str, str], ...]:
        found: tuple[tuple[str, str], ...] = read(flag, value)
        for field, given in found:
            bare = field.lstrip("-")
            bare = bare[len("env.") :] if bare.startswith("env.") else bare
            if bare != field:
                raise OptionError(
                    f"{flag}: {field}={given} is lerobot-eval's --env.FIELD=VALUE; give "
                    f"FIELD=VALUE here ({bare}={given})"
                )
        return found

    return parse


def pairs_text(value: tuple[tuple[str, str], ...]) -> str:
    """Pairs as the option takes them: ``A=B,C=D``."""
    return ",".join(f"{source}={target}" for source, target in value)


def size_text(value: tuple[int, int]) -> str:
    return f"{value[0]}x{value[1]}"


def jsonable(value: Any) -> Any:
    """A setting as the metrics JSON's run block holds it."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def pairs_json(value: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return dict(value)
