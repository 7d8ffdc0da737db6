"""``PayloadTemplate``: what a generated payload should achieve and how to ask for it."""

from __future__ import annotations

from typing import Any

import attrs

from rampart._checks import check_instance, check_text, invalid
from rampart.core._internal import dataclass_compatible

__all__ = ["PayloadTemplate"]

_OWNER = "PayloadTemplate"


def _text(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_text(_OWNER, attribute.name, value)


def _string(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_instance(_OWNER, attribute.name, value, str, expected="a str")


def _variables(_instance: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise invalid(_OWNER, "variables", "a dict of str to str", value)


@dataclass_compatible
@attrs.define(kw_only=True)
class PayloadTemplate:
    """A recipe for payloads: ``objective`` (what the payload should make the agent do)
    and ``instruction`` (what the generator model is asked to write; ``{name}``
    placeholders are filled from ``variables``).

    Both the objective and the resolved instruction are sent to the generator model
    (RAMPART's docstring says the objective is not; its code sends it, and so does
    rampart). Mutable, as RAMPART's is; the checks run on assignment too.
    """

    name: str = attrs.field(validator=_text)
    description: str = attrs.field(default="", validator=_string)
    objective: str = attrs.field(validator=_text)
    instruction: str = attrs.field(validator=_text)
    variables: dict[str, str] = attrs.field(factory=dict, validator=_variables)

    def with_variables(self, **overrides: str) -> PayloadTemplate:
        """A copy whose variables are these merged over the current ones."""
        return attrs.evolve(self, variables={**self.variables, **overrides})

    def resolve(self) -> str:
        """The instruction with its placeholders filled (``KeyError`` names a missing one)."""
        return self.instruction.format_map(self.variables)
