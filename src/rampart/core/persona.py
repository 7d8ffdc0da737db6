"""``Persona``: a named identity for an LLM (an attacker, a payload writer, a judge)."""

from __future__ import annotations

from typing import Any

import attrs

from rampart._checks import check_instance, check_text
from rampart.core._dataclass import dataclass_compatible

__all__ = ["Persona"]


def _validate_name(_instance: object, _attribute: object, value: Any) -> None:
    check_text("Persona", "name", value)


def _validate_text(_instance: object, attribute: attrs.Attribute[str], value: Any) -> None:
    check_instance("Persona", attribute.name, value, str, expected="a str")


@dataclass_compatible
@attrs.define(kw_only=True)
class Persona:
    """Who the model plays: ``name`` (for reports), ``description``, ``system_prompt``.

    ``system_prompt`` opens the conversation of every driver, generator or judge that
    uses the persona. Mutable, as RAMPART's is; the checks run on assignment too.
    """

    name: str = attrs.field(validator=_validate_name)
    description: str = attrs.field(default="", validator=_validate_text)
    system_prompt: str = attrs.field(default="", validator=_validate_text)
