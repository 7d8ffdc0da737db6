"""Where an ``LLMConfig`` sends requests and how it authenticates (OpenAI-compatible vs Azure)."""

from __future__ import annotations

import pytest

from rampart.core.llm import LLMConfig
from rampart.llm import resolve_endpoint


def _config(endpoint: str, **kwargs: object) -> LLMConfig:
    return LLMConfig(model="gpt-4o", endpoint=endpoint, **kwargs)  # type: ignore[arg-type]


class TestResolveEndpoint:
    @pytest.mark.parametrize(
        ("endpoint", "url"),
        [
            ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
            ("http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions"),
            ("http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions"),
        ],
    )
    def test_openai_compatible(self, endpoint: str, url: str) -> None:
        """An API root gets ``/chat/completions``; a full URL is kept; bearer auth."""
        resolved = resolve_endpoint(_config(endpoint, api_key="k"))
        assert (resolved.url, resolved.azure, resolved.auth) == (url, False, "bearer")
        assert resolved.model == "gpt-4o"

    def test_no_key_means_no_auth_outside_azure(self) -> None:
        """A local server needs no credential."""
        assert resolve_endpoint(_config("http://127.0.0.1:8000/v1")).auth == "none"

    def test_azure_resource_root(self) -> None:
        """A resource URL becomes the deployment path with an api-version; api-key header."""
        resolved = resolve_endpoint(
            _config("https://res.openai.azure.com/", api_key="k", deployment="judge-4o")
        )
        assert resolved.url == (
            "https://res.openai.azure.com/openai/deployments/judge-4o/chat/completions"
            "?api-version=2024-10-21"
        )
        assert (resolved.azure, resolved.auth, resolved.model) == (True, "api-key", "judge-4o")

    def test_azure_api_version_from_metadata(self) -> None:
        """``metadata["api_version"]`` picks the Azure API version."""
        resolved = resolve_endpoint(
            _config("https://res.openai.azure.com/openai", metadata={"api_version": "2025-01-01"})
        )
        assert resolved.url.endswith(
            "/openai/deployments/gpt-4o/chat/completions?api-version=2025-01-01"
        )

    def test_azure_v1_root_is_openai_style(self) -> None:
        """Azure's ``/openai/v1`` API takes the model in the body and no api-version."""
        resolved = resolve_endpoint(_config("https://res.openai.azure.com/openai/v1", api_key="k"))
        assert resolved.url == "https://res.openai.azure.com/openai/v1/chat/completions"
        assert resolved.auth == "api-key"

    def test_azure_without_key_uses_entra(self) -> None:
        """No api key on Azure means Microsoft Entra ID."""
        resolved = resolve_endpoint(_config("https://res.cognitiveservices.azure.com"))
        assert (resolved.azure, resolved.auth) == (True, "entra")

    def test_full_deployment_url_is_azure_anywhere(self) -> None:
        """A ``/openai/deployments/`` path is Azure-shaped whatever the host (a proxy, the test
        server), and gets an api-version if it has none."""
        resolved = resolve_endpoint(
            _config("http://127.0.0.1:9/openai/deployments/d/chat/completions", api_key="k")
        )
        assert resolved.azure
        assert resolved.url.endswith(
            "/openai/deployments/d/chat/completions?api-version=2024-10-21"
        )

    def test_api_type_overrides_the_guess(self) -> None:
        """``metadata["api_type"]`` forces the dialect."""
        forced = resolve_endpoint(
            _config("http://127.0.0.1:9", api_key="k", metadata={"api_type": "azure"})
        )
        assert forced.azure
        assert forced.auth == "api-key"
        plain = resolve_endpoint(
            _config("https://res.openai.azure.com/v1", api_key="k", metadata={"api_type": "openai"})
        )
        assert not plain.azure
        assert plain.auth == "bearer"

    def test_display_url_drops_the_query(self) -> None:
        """Messages and statistics show the URL without its query string."""
        resolved = resolve_endpoint(_config("https://res.openai.azure.com", api_key="k"))
        assert "?" not in resolved.display_url
