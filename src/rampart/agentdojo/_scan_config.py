"""What ``rampart scan agentdojo`` asks of the test module it runs.

The command runs pytest in a fresh process (so the plugin, xdist, journals and
``--rampart-resume`` behave exactly as in a suite) and hands the scan's settings over
in one environment variable, as JSON; this module reads and checks them.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

import attrs

from rampart.agentdojo._suites import DEFAULT_ATTACK, DEFAULT_VERSION, AgentDojoPair, pairs

__all__ = ["ENV_VAR", "ScanConfig", "build_pipeline", "load_factory"]

ENV_VAR = "RAMPART_SCAN_AGENTDOJO"


@attrs.frozen(kw_only=True)
class ScanConfig:
    suite: str
    version: str = DEFAULT_VERSION
    attack: str = DEFAULT_ATTACK
    pipeline: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    trials: int = 1
    user_tasks: list[str] | None = None
    injection_tasks: list[str] | None = None
    max_threads: int = 64
    shards: int = 1  # trial groups the pairs are dealt into (one per xdist worker)

    @classmethod
    def from_env(cls) -> ScanConfig:
        text = os.environ.get(ENV_VAR)
        if not text:
            raise RuntimeError(
                f"this module is run by 'rampart scan agentdojo' ({ENV_VAR} is not set)"
            )
        from rampart.codec import parse_strict_json

        data: dict[str, Any] = parse_strict_json(data=text)
        return cls(**data)

    def to_env(self) -> str:
        return json.dumps(attrs.asdict(self))

    def pairs(self) -> list[AgentDojoPair]:
        return pairs(
            self.suite,
            version=self.version,
            attack=self.attack,
            user_tasks=self.user_tasks,
            injection_tasks=self.injection_tasks,
        )


def build_pipeline(config: ScanConfig) -> Any:
    """The scan's agent: ``--pipeline``'s factory, or ``--model`` as an ``LLMPipeline``
    (a learned rate: ``adaptive=True``, as ``rampart scan xpia`` paces its endpoint)."""
    if config.pipeline is not None:
        return load_factory(config.pipeline)
    from rampart.agentdojo._llm_pipeline import LLMPipeline
    from rampart.core.llm import LLMConfig
    from rampart.llm import LLMClient
    from rampart.scan._xpia_config import XpiaScanConfig  # the one key reader

    llm = LLMConfig(
        model=str(config.model),
        endpoint=str(config.base_url),
        api_key=XpiaScanConfig.key(config.api_key_env),
    )
    return LLMPipeline(LLMClient(llm, adaptive=True, name=f"scan-{config.model}"))


def load_factory(spec: str) -> Any:
    """``module:factory`` -> the object the zero-argument ``factory`` returns."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"--pipeline: expected 'module:factory', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"--pipeline: cannot import module {module_name!r}: {error}") from error
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"--pipeline: {module_name} has no callable {attribute!r}")
    return factory()
