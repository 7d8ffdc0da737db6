"""What ``rampart scan agentdojo`` asks of the test module it runs.

The command runs pytest in its own process (so the plugin, xdist, journals and
``--rampart-resume`` behave exactly as in a suite) and hands the scan's settings over
in one environment variable, as JSON; this module reads and checks them.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import attrs

from rampart._checks import (
    check_int,
    check_items,
    check_optional_seconds,
    check_optional_text,
    check_text,
)
from rampart.agentdojo._internal import DEFAULT_ATTACK, DEFAULT_VERSION, AgentDojoPair, pairs
from rampart.scan._handover import checked, identity, read_settings

__all__ = ["AGENTDOJO_ENV_VAR", "ScanConfig", "build_pipeline", "load_factory"]

AGENTDOJO_ENV_VAR = "RAMPART_SCAN_AGENTDOJO"


def _check(check: Any, name: str, **bounds: Any) -> Any:
    return checked(AGENTDOJO_ENV_VAR, check, name, **bounds)


def _optional_ids(name: str) -> Any:
    def check(_self: object, _attribute: object, value: object) -> None:
        if value is not None:
            check_items(
                AGENTDOJO_ENV_VAR,
                name,
                value,
                lambda item_name, item: check_text(AGENTDOJO_ENV_VAR, item_name, item),
                expected="a list of task ids or None",
            )

    return check


@attrs.frozen(kw_only=True)
class ScanConfig:
    """The scan's settings (``rampart scan agentdojo``'s options, checked again when
    read back: the variable is input like any other)."""

    suite: str = attrs.field(validator=_check(check_text, "suite"))
    version: str = attrs.field(default=DEFAULT_VERSION, validator=_check(check_text, "version"))
    attack: str = attrs.field(default=DEFAULT_ATTACK, validator=_check(check_text, "attack"))
    pipeline: str | None = attrs.field(
        default=None, validator=_check(check_optional_text, "pipeline")
    )
    model: str | None = attrs.field(default=None, validator=_check(check_optional_text, "model"))
    base_url: str | None = attrs.field(
        default=None, validator=_check(check_optional_text, "base_url")
    )
    api_key_env: str | None = attrs.field(
        default=None, validator=_check(check_optional_text, "api_key_env")
    )
    trials: int = attrs.field(default=1, validator=_check(check_int, "trials", minimum=1))
    user_tasks: list[str] | None = attrs.field(default=None, validator=_optional_ids("user_tasks"))
    injection_tasks: list[str] | None = attrs.field(
        default=None, validator=_optional_ids("injection_tasks")
    )
    max_threads: int = attrs.field(
        default=64, validator=_check(check_int, "max_threads", minimum=1)
    )
    # Trial groups the pairs are dealt into (one per xdist worker).
    shards: int = attrs.field(default=1, validator=_check(check_int, "shards", minimum=1))
    # Seconds per pair (None: no limit); a pair that takes longer is an ERROR.
    timeout: float | None = attrs.field(
        default=None, validator=_check(check_optional_seconds, "timeout", positive=True)
    )

    @classmethod
    def from_env(cls) -> ScanConfig:
        return read_settings(AGENTDOJO_ENV_VAR, cls, command="rampart scan agentdojo")

    def to_env(self) -> str:
        return json.dumps(attrs.asdict(self))

    def identity(self, pairs: list[AgentDojoPair]) -> str:
        """What this scan attacks and how (``rampart.scan._handover``): every setting
        but the thread bound, which only sets its speed, and the pairs."""
        settings = attrs.asdict(self, filter=lambda field, _value: field.name != "max_threads")
        return identity(settings, [pair.id for pair in pairs])

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
    from rampart.agentdojo._internal import LLMPipeline
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
