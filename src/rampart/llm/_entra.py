"""Microsoft Entra ID tokens for Azure OpenAI, through the optional ``azure-identity``.

``DefaultAzureCredential`` finds a credential the usual ways (environment variables,
a managed identity, the Azure CLI login, ...). Its synchronous ``get_token`` runs in a
worker thread so it works on asyncio and trio alike; the token is reused until five
minutes before it expires.
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

import anyio
import anyio.to_thread

from rampart.core.errors import InfrastructureError

__all__ = [
    "AZURE_EXTRA_HINT",
    "COGNITIVE_SERVICES_SCOPE",
    "EntraTokenProvider",
    "require_azure_identity",
]

COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"
AZURE_EXTRA_HINT = "pip install 'rampart[azure]' (or pip install azure-identity)"
_REFRESH_MARGIN = 300.0


def require_azure_identity(owner: str) -> None:
    """Raise ``ImportError`` naming the extra unless ``azure-identity`` is installed."""
    if importlib.util.find_spec("azure") is None or (
        importlib.util.find_spec("azure.identity") is None
    ):
        raise ImportError(
            f"{owner}: an Azure OpenAI endpoint without api_key authenticates with "
            f"Microsoft Entra ID, which needs the 'azure' extra: {AZURE_EXTRA_HINT}; "
            "or pass api_key"
        )


class EntraTokenProvider:
    """Bearer tokens for ``scope``, fetched with ``DefaultAzureCredential`` and cached."""

    def __init__(self, *, scope: str = COGNITIVE_SERVICES_SCOPE) -> None:
        self._scope = scope
        self._credential: Any = None
        self._token: str | None = None
        self._expires_at = 0.0

    @property
    def current_token(self) -> str | None:
        """The cached token, if any (for redaction)."""
        return self._token

    async def token(self) -> str:
        """A valid token; concurrent callers may each fetch one (harmless, no lock to
        tie the provider to one event loop)."""
        if self._token is not None and time.time() < self._expires_at - _REFRESH_MARGIN:
            return self._token
        try:
            access = await anyio.to_thread.run_sync(self._fetch)
        except ImportError:
            raise
        except Exception as exc:
            raise InfrastructureError(
                f"Microsoft Entra ID: could not get a token for {self._scope} "
                f"({type(exc).__name__})"
            ) from exc
        self._token = str(access.token)
        self._expires_at = float(access.expires_on)
        return self._token

    def _fetch(self) -> Any:
        if self._credential is None:
            from azure.identity import DefaultAzureCredential  # type: ignore[import-not-found]

            self._credential = DefaultAzureCredential()
        return self._credential.get_token(self._scope)
