"""``ServerOptions``: everything the test server can be told, checked on construction."""

from __future__ import annotations

from typing import Any

import attrs

from rampart._checks import (
    check_bool,
    check_choice,
    check_int,
    check_items,
    check_optional_number,
    check_optional_secret,
    check_optional_text,
    check_probability,
    check_seconds,
    check_text,
    invalid,
)
from rampart.testing.server._tool_policy import ToolRule, check_rule

__all__ = ["BROKEN_BODIES", "RATE_LIMIT_HEADER_STYLES", "ServerOptions"]

_OWNER = "ServerOptions"

BROKEN_BODIES = (
    "empty-message",
    "error-object",
    "finish-error",
    "duplicate-tool-calls",
    "content-filter",
)
"""The broken ``200`` bodies the server can answer with (``broken_rate``), by name:

* ``empty-message``: ``{"choices": [{"message": {}}]}`` (no content, no tool calls);
* ``error-object``: a top-level ``"error"`` object, null content, ``finish_reason``
  ``"error"``;
* ``finish-error``: the agent's real message with ``finish_reason`` ``"error"``;
* ``duplicate-tool-calls``: the agent's real message with ``"tool_calls"`` written a
  second time as ``null`` (a lenient parser keeps the last one: no tool calls);
* ``content-filter``: null content and ``finish_reason`` ``"content_filter"`` (the
  provider's filter blocked the answer).
"""


def _check_rate(_instance: object, _attribute: object, value: Any) -> None:
    check_optional_number(_OWNER, "rate", value, above=0, noun="a finite number of requests/s")


def _check_burst(_instance: object, _attribute: object, value: Any) -> None:
    check_int(_OWNER, "burst", value, minimum=1)


def _check_seconds(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_seconds(_OWNER, attribute.name, value)


def _check_probability(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_probability(_OWNER, attribute.name, value)


def _check_status(name: str, value: object) -> int:
    return check_int(_OWNER, name, value, minimum=500, maximum=599)


def _check_statuses(_instance: object, _attribute: object, value: Any) -> None:
    expected = "a non-empty tuple of 5xx status codes"
    if not isinstance(value, tuple):
        raise invalid(_OWNER, "error_statuses", expected, value)
    if not value:
        raise invalid(_OWNER, "error_statuses", expected, value, error=ValueError)
    check_items(_OWNER, "error_statuses", value, _check_status, expected=expected)


def _check_broken(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise invalid(_OWNER, name, "a str", value)
    if value not in BROKEN_BODIES:
        raise invalid(_OWNER, name, f"one of {', '.join(BROKEN_BODIES)}", value, error=ValueError)
    return value


def _check_broken_bodies(_instance: object, _attribute: object, value: Any) -> None:
    expected = "a non-empty tuple of broken body names"
    if not isinstance(value, tuple):
        raise invalid(_OWNER, "broken_bodies", expected, value)
    if not value:
        raise invalid(_OWNER, "broken_bodies", expected, value, error=ValueError)
    check_items(_OWNER, "broken_bodies", value, _check_broken, expected=expected)


def _check_seed(_instance: object, _attribute: object, value: Any) -> None:
    check_int(_OWNER, "seed", value)


def _check_text(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_text(_OWNER, attribute.name, value)


def _check_optional_text(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_optional_text(_OWNER, attribute.name, value)


def _check_positive(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_int(_OWNER, attribute.name, value, minimum=1)


def _check_flag(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_bool(_OWNER, attribute.name, value)


RATE_LIMIT_HEADER_STYLES = ("none", "openai", "ietf", "all")
"""Values of ``ServerOptions.rate_limit_headers``."""


def _check_header_style(_instance: object, _attribute: object, value: Any) -> None:
    check_choice(_OWNER, "rate_limit_headers", value, RATE_LIMIT_HEADER_STYLES)


def _check_rules(_instance: object, _attribute: object, value: Any) -> None:
    expected = "a tuple of ToolRule"
    if not isinstance(value, tuple):
        raise invalid(_OWNER, "tool_rules", expected, value)
    check_items(_OWNER, "tool_rules", value, check_rule, expected=expected)


@attrs.frozen(kw_only=True)
class ServerOptions:
    """How the test server behaves.

    * ``rate`` / ``burst``: a token bucket (requests per second, bucket size); ``None``
      means no limit. An empty bucket answers ``429`` with ``Retry-After`` (whole
      seconds, rounded up) and, unless ``retry_after_ms`` is false, ``retry-after-ms``.
      ``rate_limit_headers`` makes every answer also state the bucket the way a
      provider does: ``"openai"`` (``x-ratelimit-limit-requests``,
      ``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests``), ``"ietf"``
      (``RateLimit-Policy`` and ``RateLimit``), ``"all"`` (both) or ``"none"``.
    * ``latency``: seconds the simulated agent takes per answered request.
    * ``error_rate``: probability that an admitted request fails with a status drawn
      from ``error_statuses`` (default 500 or 503); ``hang_rate``: probability that it
      never gets an answer (until the client gives up or the server stops).
    * ``broken_rate``: probability that an answered request gets a broken ``200`` body
      instead of the agent's well-formed one, drawn from ``broken_bodies`` (default: all
      of ``BROKEN_BODIES``). The agent still answers, so the conversation goes on;
      only what goes over the wire is broken. For testing clients' handling of
      endpoints that fail with a success status.
    * ``seed``: makes answers reproducible (see ``docs/test-server.md``); ``compliance``
      and ``secret`` configure the ``SimulatedAgent`` behind the API; ``model`` is the
      model name it reports.
    * ``max_conversations``: how many open conversations are remembered (oldest
      forgotten first); ``max_body_bytes``: the largest request body accepted.
    * ``api_key``: when set, requests must present it (``Authorization: Bearer`` or
      ``api-key``), else ``401``. Hidden from ``repr()``.
    * ``tool_rules``: a scripted policy for the ``sim-tools`` model, tried before its
      own choice (``ToolRule``: when the last message contains a phrase, call a tool
      or answer a text).
    * ``echo_credentials``: every error answer of a completion request (4xx, 5xx,
      429) repeats the headers the request carried (all but ``host``, ``accept*``,
      ``connection``, ``content-*`` and ``user-agent``; ``Authorization`` and other
      credentials included), as careless real APIs do, so that clients' redaction
      can be tested.

    Requests for the models ``sim-judge``, ``sim-attacker``, ``sim-generator``,
    ``sim-agentdojo`` and ``sim-tools`` are answered by simulated LLMs; ``latency``
    applies to them too.
    """

    rate: float | None = attrs.field(default=None, validator=_check_rate)
    burst: int = attrs.field(default=1, validator=_check_burst)
    latency: float = attrs.field(default=0.0, validator=_check_seconds)
    error_rate: float = attrs.field(default=0.0, validator=_check_probability)
    hang_rate: float = attrs.field(default=0.0, validator=_check_probability)
    broken_rate: float = attrs.field(default=0.0, validator=_check_probability)
    broken_bodies: tuple[str, ...] = attrs.field(
        default=BROKEN_BODIES, validator=_check_broken_bodies
    )
    error_statuses: tuple[int, ...] = attrs.field(default=(500, 503), validator=_check_statuses)
    seed: int = attrs.field(default=0, validator=_check_seed)
    compliance: float = attrs.field(default=0.5, validator=_check_probability)
    secret: str | None = attrs.field(default=None, validator=_check_optional_text)
    model: str = attrs.field(default="simulated-agent", validator=_check_text)
    retry_after_ms: bool = attrs.field(default=True, validator=_check_flag)
    rate_limit_headers: str = attrs.field(default="none", validator=_check_header_style)
    max_conversations: int = attrs.field(default=10_000, validator=_check_positive)
    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_check_positive)
    api_key: str | None = attrs.field(default=None, repr=False)
    echo_credentials: bool = attrs.field(default=False, validator=_check_flag)
    tool_rules: tuple[ToolRule, ...] = attrs.field(default=(), validator=_check_rules)

    @api_key.validator
    def _check_api_key(self, _attribute: object, value: Any) -> None:
        check_optional_secret(_OWNER, "api_key", value)
