"""Helpers for tests that talk to the test server's simulated models."""

from __future__ import annotations

from typing import Any

from rampart.core.llm import LLMConfig

FAKE_KEY = "sk-rampart-PLANTED-fake-key-6f1c2d9e"
"""A fake api key planted in tests; no output may ever contain it."""


def config(url: str, model: str = "sim-judge", **kwargs: Any) -> LLMConfig:
    """An ``LLMConfig`` for a simulated model at the test server ``url``."""
    return LLMConfig(model=model, endpoint=url, **kwargs)
