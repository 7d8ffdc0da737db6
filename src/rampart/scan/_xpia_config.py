"""What ``rampart scan xpia`` hands its pytest run: one environment variable of JSON.

API keys never travel in it: only the *names* of the environment variables that hold
them (``--api-key-env``), read by the scan's test.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import attrs

from rampart._checks import check_int, check_number, check_optional_text, check_text, invalid
from rampart.scan._handover import checked, identity, read_settings

if TYPE_CHECKING:
    from rampart.core.types import Payload

__all__ = ["DEFAULT_TRIGGER", "XPIA_ENV_VAR", "XpiaScanConfig"]

XPIA_ENV_VAR = "RAMPART_SCAN_XPIA"

DEFAULT_TRIGGER = "Please summarise the attached document for me."


def _text(name: str) -> Any:
    return checked(XPIA_ENV_VAR, check_text, name)


def _optional_text(name: str) -> Any:
    return checked(XPIA_ENV_VAR, check_optional_text, name)


def _url(name: str) -> Any:
    def check(_self: object, _attribute: object, value: object) -> None:
        text = check_text(XPIA_ENV_VAR, name, value)
        if not text.startswith(("http://", "https://")):
            raise invalid(XPIA_ENV_VAR, name, "an http:// or https:// URL", value, error=ValueError)

    return check


@attrs.frozen(kw_only=True)
class XpiaScanConfig:
    """The scan's settings (``rampart scan xpia``'s options, checked again when read
    back: the variable is input like any other)."""

    base_url: str = attrs.field(validator=_url("base_url"))
    model: str = attrs.field(validator=_text("model"))
    api_key_env: str | None = attrs.field(default=None, validator=_optional_text("api_key_env"))
    judge_model: str = attrs.field(validator=_text("judge_model"))
    judge_base_url: str = attrs.field(validator=_url("judge_base_url"))
    judge_api_key_env: str | None = attrs.field(
        default=None, validator=_optional_text("judge_api_key_env")
    )
    harm_category: str | None = attrs.field(default=None, validator=_optional_text("harm_category"))
    trigger: str = attrs.field(default=DEFAULT_TRIGGER, validator=_text("trigger"))
    trials: int = attrs.field(
        default=1, validator=checked(XPIA_ENV_VAR, check_int, "trials", minimum=1)
    )
    timeout: float = attrs.field(
        default=120.0, validator=checked(XPIA_ENV_VAR, check_number, "timeout", above=0)
    )

    @classmethod
    def from_env(cls) -> XpiaScanConfig:
        return read_settings(XPIA_ENV_VAR, cls, command="rampart scan xpia")

    def identity(self, payloads: list[Payload]) -> str:
        """What this scan attacks and how it judges (``rampart.scan._handover``)."""
        items = [f"{p.id}\0{p.content}\0{sorted(p.metadata.items())!r}" for p in payloads]
        return identity(attrs.asdict(self), items)

    def to_env(self) -> str:
        return json.dumps(attrs.asdict(self))

    def payloads(self) -> list[Payload]:
        from rampart.payloads import builtin_payloads

        return builtin_payloads(harm_category=self.harm_category)

    @staticmethod
    def key(variable: str | None) -> str | None:
        """The API key held by environment variable ``variable`` (``None``: no key)."""
        if variable is None:
            return None
        value = os.environ.get(variable)
        if not value:
            raise ValueError(f"--api-key-env: the environment variable {variable} is not set")
        return value
