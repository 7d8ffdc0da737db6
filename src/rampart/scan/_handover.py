"""The settings ``rampart scan`` hands its pytest run, and the scan's identity.

A scan command checks its options and hands them to the pytest run it starts in its own
process (``pytest.main``) in one environment variable of JSON, set for the run (and so
inherited by ``-n``'s workers). The run reads it back here as any input:
with the strict JSON policy (``rampart.codec.parse_strict_json``), as an object whose
members are exactly the settings' fields, each checked by the settings class's own
validators, so a damaged or hand-written variable is a usage error naming the field,
never a traceback.

The scan's **identity** (what it attacks and how it judges, not how fast) is a digest
carried by the ``rampart_scan`` marker on the scan's test. The journal's test hash
covers marker arguments, so ``--resume`` reuses journaled results only for the same
scan: resuming with another agent, model, suite, task selection or payload pack runs
everything again instead of reporting the old agent's verdicts as the new one's.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

if TYPE_CHECKING:
    import pytest

__all__ = ["MARKER", "checked", "header", "identity", "read_settings", "register_marker"]

T = TypeVar("T")

MARKER = "rampart_scan"


def read_settings(variable: str, kind: type[T], *, command: str) -> T:
    """The settings in environment variable ``variable``, as ``kind`` (an attrs class
    whose validators check each field); ``ValueError`` naming what is wrong."""
    from rampart.codec import parse_strict_json

    text = os.environ.get(variable)
    if not text:
        raise RuntimeError(f"this module is run by {command!r} ({variable} is not set)")
    try:
        data = parse_strict_json(data=text)
    except ValueError as error:  # SchemaError is a ValueError
        raise ValueError(f"{variable}: not the settings {command!r} writes ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{variable}: expected a JSON object, got a {type(data).__name__}")
    fields = attrs.fields_dict(kind)  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{variable}: unknown setting {unknown[0]!r}; known: {', '.join(fields)}")
    missing = [
        name
        for name, field in fields.items()
        if field.default is attrs.NOTHING and name not in data
    ]
    if missing:
        raise ValueError(f"{variable}: the setting {missing[0]!r} is missing")
    try:
        return kind(**data)
    except (TypeError, ValueError) as error:
        raise ValueError(str(error)) from None


def checked(variable: str, check: Any, name: str, **bounds: Any) -> Any:
    """An attrs validator of one setting: ``check(variable, name, value, **bounds)``, one
    of ``rampart._checks``' checks (so its message names the variable and the field)."""
    return lambda _self, _attribute, value: check(variable, name, value, **bounds)


def identity(settings: dict[str, Any], items: list[str]) -> str:
    """A digest of what a scan attacks and how it judges it: ``settings`` (JSON-ready,
    without what only sets its speed) and the ``items`` it attacks (ids and contents)."""
    text = json.dumps({"settings": settings, "items": items}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def register_marker(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(identity): the settings a rampart scan ran with (its journaled results "
        "are reused by --resume only for the same scan)",
    )


#: Header lines pytest prints that only show how ``rampart scan`` runs pytest: the
#: scan's module lives inside the installed package (site-packages) and its ini is a
#: temporary file, neither of which the user chose or can act on.
_INTERNAL_HEADER = ("rootdir:", "configfile:")


def header(lines: list[str | list[str]], scan: str) -> list[str | list[str]]:
    """pytest's report header ``lines`` without the scan's internals, and ``scan`` (what
    is scanned) in their place."""
    kept: list[str | list[str]] = [scan]
    for part in lines:
        if isinstance(part, str):
            part = [part]
        shown = [line for line in part if not line.startswith(_INTERNAL_HEADER)]
        if shown:
            kept.append(shown)
    return kept
