"""``LLMConfig``: which model answers, where, and with which generation settings.

A configuration is a value: frozen, keyword-only, compared by its fields. It names a
chat model (``model``) behind an OpenAI-compatible or Azure OpenAI endpoint
(``endpoint``), optionally an Azure ``deployment``, and generation settings in
``metadata``. The client that uses it lives in ``rampart.llm``; this module imports
no network code.

``api_key`` is a secret: it is left out of ``repr()``, held as a ``str`` whose own
``repr()`` hides it, and registered with the redaction policy (``rampart._redact``),
so no rampart message, log line, report, trace record or cache file contains it.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import attrs

from rampart._checks import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_optional_secret,
    check_text,
    describe,
    invalid,
)
from rampart._redact import Secret, register_secret, register_url_secrets
from rampart.core._dataclass import dataclass_compatible

__all__ = ["GENERATION_KEYS", "LLMConfig"]

GENERATION_KEYS = frozenset(
    {
        "frequency_penalty",
        "max_completion_tokens",
        "max_tokens",
        "presence_penalty",
        "seed",
        "temperature",
        "top_p",
    }
)
"""``metadata`` keys sent to the model with every request; other keys are not sent.

RAMPART also reads ``is_json_supported`` (whether to ask the judge model for a JSON
object, default ``True``) and ``max_requests_per_minute`` (a default request rate).
rampart adds ``api_version`` (the Azure ``api-version``, default ``2024-10-21``) and
``api_type`` (``"azure"`` or ``"openai"``, overriding the endpoint-based guess).
"""

_CONFIG_KEYS = frozenset(
    {"api_type", "api_version", "is_json_supported", "max_requests_per_minute", "n"}
)
_OWNER = "LLMConfig"
_NUMBER_RANGES = (
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("frequency_penalty", -2.0, 2.0),
    ("presence_penalty", -2.0, 2.0),
)


def _check_endpoint(value: object) -> str:
    url = check_text(_OWNER, "endpoint", value)
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs and error messages; keep them in api_key.
        raise invalid(
            _OWNER,
            "endpoint",
            "a URL without credentials (user:password@); pass the key as api_key",
            url,
            error=ValueError,
            shown=repr(f"{parts.scheme}://***@{host}{parts.path}"),
        )
    if parts.scheme not in ("http", "https") or not parts.netloc:
        # The query is not shown: it may carry a key (?api-key=...).
        shown = f"{parts.scheme}://{host}{parts.path}" if parts.scheme else parts.path
        raise invalid(
            _OWNER,
            "endpoint",
            "an http:// or https:// URL such as 'https://api.openai.com/v1'",
            url,
            error=ValueError,
            shown=repr(shown),
        )
    return url


def _check_metadata(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise invalid(_OWNER, "metadata", "a dict with str keys", value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise invalid(
            _OWNER,
            "metadata",
            "JSON-serialisable",
            value,
            error=ValueError,
            shown=f"{describe(value)} ({exc})",
        ) from None
    for name, low, high in _NUMBER_RANGES:
        if name in value:
            check_number(_OWNER, f"metadata[{name!r}]", value[name], minimum=low, maximum=high)
    for name in ("max_tokens", "max_completion_tokens", "max_requests_per_minute"):
        if name in value:
            check_int(_OWNER, f"metadata[{name!r}]", value[name], minimum=1)
    if "seed" in value:
        check_int(_OWNER, "metadata['seed']", value["seed"])
    if "n" in value and (type(value["n"]) is not int or value["n"] != 1):
        raise invalid(
            _OWNER, "metadata['n']", "1 (one answer per request)", value["n"], error=ValueError
        )
    if "api_type" in value:
        check_choice(_OWNER, "metadata['api_type']", value["api_type"], ("azure", "openai"))
    if "api_version" in value:
        check_text(_OWNER, "metadata['api_version']", value["api_version"])
    if "is_json_supported" in value:
        check_bool(_OWNER, "metadata['is_json_supported']", value["is_json_supported"])
    return value


def _validate_model(_instance: object, _attribute: object, value: Any) -> None:
    check_text(_OWNER, "model", value)


def _validate_endpoint(_instance: object, _attribute: object, value: Any) -> None:
    register_url_secrets(_check_endpoint(value))  # a key in its query (``?code=...``)


def _hide_api_key(value: Any) -> Any:
    """A str key as a ``Secret``, so a traceback through the validator cannot show it."""
    return Secret(value) if isinstance(value, str) else value


def _validate_api_key(_instance: object, _attribute: object, value: Any) -> None:
    key = check_optional_secret(_OWNER, "api_key", value)
    if key is not None:
        register_secret(key)


def _validate_deployment(_instance: object, _attribute: object, value: Any) -> None:
    if value is not None:
        check_text(_OWNER, "deployment", value)


def _validate_metadata(_instance: object, _attribute: object, value: Any) -> None:
    _check_metadata(value)


@dataclass_compatible
@attrs.frozen(kw_only=True)
class LLMConfig:
    """A chat model endpoint: ``model``, ``endpoint``, credentials and generation settings.

    * ``endpoint``: an OpenAI-compatible API root (``https://api.openai.com/v1``,
      ``http://localhost:11434/v1`` for Ollama, a vLLM or LiteLLM proxy), an Azure
      OpenAI resource (``https://NAME.openai.azure.com``), or a full
      ``.../chat/completions`` URL.
    * ``api_key``: sent as ``Authorization: Bearer`` (Azure: the ``api-key`` header).
      ``None`` means no key, except on Azure, where ``None`` means Microsoft Entra ID
      through the optional ``azure-identity`` package. Hidden from ``repr()``.
    * ``deployment``: the Azure deployment name (default: ``model``).
    * ``metadata``: generation settings; only ``GENERATION_KEYS`` are sent
      (``temperature``, ``seed``, ``max_tokens``, ...). For reproducible judges set
      ``temperature=0`` and a ``seed``.

    See ``docs/llm.md``.
    """

    model: str = attrs.field(validator=_validate_model)
    endpoint: str = attrs.field(validator=_validate_endpoint)
    api_key: str | None = attrs.field(
        default=None, repr=False, converter=_hide_api_key, validator=_validate_api_key
    )
    deployment: str | None = attrs.field(default=None, validator=_validate_deployment)
    metadata: dict[str, Any] = attrs.field(factory=dict, validator=_validate_metadata)

    @property
    def generation_settings(self) -> dict[str, Any]:
        """The ``metadata`` entries sent with every request (``GENERATION_KEYS`` only)."""
        return {key: value for key, value in self.metadata.items() if key in GENERATION_KEYS}

    @property
    def ignored_metadata(self) -> list[str]:
        """``metadata`` keys rampart neither sends nor reads (likely typos), sorted."""
        return sorted(set(self.metadata) - GENERATION_KEYS - _CONFIG_KEYS)
