"""Where an ``LLMConfig`` sends its requests, and how it authenticates.

Two dialects share one wire format (chat completions) and differ in the URL and the
credential header:

* **OpenAI-compatible** (OpenAI, vLLM, Ollama, LiteLLM, the test server): the
  endpoint is the API root; requests go to ``{endpoint}/chat/completions`` with
  ``Authorization: Bearer <api_key>``.
* **Azure OpenAI**: requests go to
  ``{resource}/openai/deployments/{deployment}/chat/completions?api-version=...``
  with the ``api-key`` header; without an api key, a Microsoft Entra ID token
  (``azure-identity``) is sent as ``Authorization: Bearer``. An Azure ``/openai/v1``
  root is used like an OpenAI one (no ``api-version``).

An endpoint that already ends in ``/chat/completions`` is used as given. Azure is
recognised by its host names or a ``/openai/deployments/`` path, or forced with
``metadata["api_type"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

if TYPE_CHECKING:
    from rampart.core.llm import LLMConfig

__all__ = ["DEFAULT_AZURE_API_VERSION", "Endpoint", "resolve_endpoint"]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI ``api-version`` used unless ``metadata["api_version"]`` says otherwise."""

_AZURE_HOST_SUFFIXES = (
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
)
_COMPLETIONS = "/chat/completions"


@attrs.frozen(kw_only=True)
class Endpoint:
    """The resolved request target of one ``LLMConfig``.

    ``auth`` is ``"bearer"`` (an api key as ``Authorization: Bearer``), ``"api-key"``
    (Azure's header), ``"entra"`` (an Entra ID token) or ``"none"``.
    """

    url: str
    model: str
    azure: bool
    auth: str

    @property
    def display_url(self) -> str:
        """The URL without its query string, for messages and statistics."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _is_azure(config: LLMConfig) -> bool:
    forced = config.metadata.get("api_type")
    if forced is not None:
        return bool(forced == "azure")
    parts = urlsplit(config.endpoint)
    host = (parts.hostname or "").lower()
    return host.endswith(_AZURE_HOST_SUFFIXES) or "/openai/deployments/" in parts.path


def _with_api_version(url: str, version: str) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(key == "api-version" for key, _ in query):
        query.append(("api-version", version))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


def resolve_endpoint(config: LLMConfig) -> Endpoint:
    """The URL, body ``model`` and authentication scheme for ``config``."""
    azure = _is_azure(config)
    model = config.deployment or config.model
    parts = urlsplit(config.endpoint)
    path = parts.path.rstrip("/")
    version = str(config.metadata.get("api_version", DEFAULT_AZURE_API_VERSION))
    if path.endswith(_COMPLETIONS):
        url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        if azure and "/openai/deployments/" in path:
            url = _with_api_version(url, version)
    elif azure and not path.endswith("/v1"):
        root = path.removesuffix("/openai")
        deployment_path = f"{root}/openai/deployments/{model}{_COMPLETIONS}"
        url = _with_api_version(
            urlunsplit((parts.scheme, parts.netloc, deployment_path, parts.query, "")), version
        )
    else:
        url = urlunsplit((parts.scheme, parts.netloc, path + _COMPLETIONS, parts.query, ""))
    if config.api_key is not None:
        auth = "api-key" if azure else "bearer"
    else:
        auth = "entra" if azure else "none"
    return Endpoint(url=url, model=model, azure=azure, auth=auth)
