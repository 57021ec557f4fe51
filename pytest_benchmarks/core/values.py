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
    return names(value)


def integer(minimum: int, maximum: int | None = None) -> Parser:
    """An integer in ``[minimum, maximum]``."""

    def parse(flag: str, value: Any) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):
            number = minimum - 1
        too_big = maximum is not None and number > maximum
        if number < minimum or too_big or (isinstance(value, float) and not value.is_integer()):
            bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
            raise OptionError(f"{flag}: {str(value)[:40]!r} is not an integer {bound}")
        return number

    return parse


def choice(valid: Sequence[str]) -> Parser:
    """One of ``valid``."""

    def parse(flag: str, value: Any) -> str:
        if value not in valid:
            raise OptionError(f"{flag}: {value!r} is not one of {', '.join(valid)}")
        return str(value)

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


def flag(flag: str, value: Any) -> bool:
    """A flag: set or not."""
    return bool(value)


def path(flag: str, value: Any) -> Path | None:
    """A path, ``~`` expanded, made absolute against the working directory."""
    if value in (None, ""):
        return None
    return Path(os.path.expanduser(str(value))).absolute()


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
    """``I/N`` with ``1 <= I <= N``."""
    index, sep, count = str(value).partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return (int(index), int(count))
    raise OptionError(f"{flag}: {value!r} is not I/N with 1 <= I <= N (e.g. 2/4)")


def image_size(flag: str, value: Any) -> tuple[int, int]:
    """``N``, ``HxW`` or an ``(H, W)`` pair."""
    if isinstance(value, tuple):
        value = "x".join(map(str, value))
    parts = str(value).lower().split("x")
    if len(parts) in (1, 2) and all(p.isdigit() and int(p) > 0 for p in parts):
        return (int(parts[0]), int(parts[-1]))
    raise OptionError(f"{flag}: {value!r} is not N or HxW (e.g. 224x224)")


def pairs(example: str) -> Parser:
    """``A=B,C=D``, a mapping, or a JSON object as LeRobot's own flags take it
    (``'{"A": "B"}'``, pasted from a ``lerobot-eval`` command): (source, target) pairs."""

    def parse(flag: str, value: Any) -> tuple[tuple[str, str], ...]:
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise OptionError(f"{flag}: not a JSON object ({exc}); e.g. {example}") from None
            if not all(isinstance(v, str) for v in value.values()):
                raise OptionError(f"{flag}: the JSON object's values must be names; e.g. {example}")
        if isinstance(value, Mapping):
            value = ",".join(f"{source}={target}" for source, target in value.items())
        found = []
        for item in names(value) or ():
            source, sep, target = item.partition("=")
            if not sep or not source.strip() or not target.strip():
                raise OptionError(f"{flag}: {item!r} is not OLD=NEW; e.g. {example}")
            found.append((source.strip(), target.strip()))
        return tuple(found)

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
