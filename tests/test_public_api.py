"""The public surface: every public module has a sorted, complete, resolvable ``__all__``."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

PUBLIC_MODULES = [
    "rampart",
    "rampart.adapters",
    "rampart.agentdojo",
    "rampart.attacks",
    "rampart.cli",
    "rampart.codec",
    "rampart.common",
    "rampart.common.deprecation",
    "rampart.common.text",
    "rampart.converters",
    "rampart.core",
    "rampart.core.adapter",
    "rampart.core.converter",
    "rampart.core.driver",
    "rampart.core.errors",
    "rampart.core.evaluator",
    "rampart.core.execution",
    "rampart.core.injection",
    "rampart.core.llm",
    "rampart.core.manifest",
    "rampart.core.payload_ids",
    "rampart.core.persona",
    "rampart.core.prompt_driver",
    "rampart.core.result",
    "rampart.core.serialization",
    "rampart.core.trace",
    "rampart.core.trials",
    "rampart.core.types",
    "rampart.drivers",
    "rampart.drivers.static",
    "rampart.engine",
    "rampart.evaluators",
    "rampart.evaluators.personas",
    "rampart.limits",
    "rampart.llm",
    "rampart.payloads",
    "rampart.probes",
    "rampart.pytest_plugin",
    "rampart.reporting",
    "rampart.reporting.json_file",
    "rampart.reporting.sink",
    "rampart.risk",
    "rampart.strategies",
    "rampart.testing",
    "rampart.testing.server",
]

# Names in rampart.core that are deliberately not lifted to the top level.
CORE_ONLY = {
    "EvaluationRecord",
    "ExecutionHandlerFactory",
    "FrozenInstanceError",
    "RampartError",
    "SchemaError",
    "TraceRun",
    "UnsupportedSchemaVersionError",
    "evaluate_final_trace_async",
    "evaluate_terminal_async",
    "evaluate_turn_async",
    "resolve_as_attack",
    "resolve_as_probe",
    "resolve_attack_verdict",
    "resolve_probe_verdict",
    "run_trace_async",
}

# Upstream's documented top-level names (RAMPART's latest ``__all__``, plus ``LLMConfig``,
# which its docs import from ``rampart``): client suites import these from ``rampart``.
UPSTREAM_TOP_LEVEL = {
    "AgentAdapter", "AppManifest", "Attacks", "BaseEvaluator", "BaseExecution", "DataSource",
    "DriverError", "EvalContext", "EvalOutcome", "EvalResult", "Evaluator", "EvaluatorError",
    "ExecutionEvent", "ExecutionEventData", "ExecutionEventHandler", "HarmCategory",
    "InfrastructureError", "InjectionHandle", "InjectionRecord", "LLMConfig", "LLMDriver",
    "LLMJudge", "ObservabilityLevel", "Persona",
    "Payload", "PayloadFormat", "PopulationRef", "PopulationResult", "Probes",
    "PromptDecision", "PromptDriver", "Request", "Response", "Result", "SafetyStatus",
    "Session", "SideEffect", "Surface", "ToolCall", "ToolDeclaration", "TranscriptScope",
    "Turn", "execute_trials_async", "record_result",
}  # fmt: skip


@pytest.mark.parametrize("name", PUBLIC_MODULES)
class TestAll:
    def test_sorted_and_unique(self, name: str) -> None:
        """__all__ is sorted and has no duplicates, so diffs stay readable."""
        exported = importlib.import_module(name).__all__
        assert list(exported) == sorted(set(exported))

    def test_resolvable(self, name: str) -> None:
        """Every exported name exists."""
        module = importlib.import_module(name)
        missing = [item for item in module.__all__ if not hasattr(module, item)]
        assert missing == []

    def test_complete(self, name: str) -> None:
        """Every public class or function a module defines is exported."""
        module = importlib.import_module(name)
        defined = {
            item
            for item, obj in vars(module).items()
            if not item.startswith("_")
            and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == name
        }
        assert defined - set(module.__all__) == set()


def test_top_level_reexports_core() -> None:
    """``from rampart import X`` works for every core name users reach for."""
    import rampart
    import rampart.core

    assert set(rampart.core.__all__) - CORE_ONLY <= set(rampart.__all__)


def test_upstream_names_importable_from_top_level() -> None:
    """Every name RAMPART documents at the top level is exported here too."""
    import rampart

    assert UPSTREAM_TOP_LEVEL - set(rampart.__all__) == set()


def test_import_is_light() -> None:
    """Importing rampart pulls in no model, codec, validator, network client or engine:
    the pytest plugin is a submodule, and every pytest run loads it."""
    code = (
        "import sys, rampart; "
        "heavy = [m for m in ('jsonschema', 'cattrs', 'httpx', 'hypothesis', 'anyio', "
        "'attrs', 'rampart.core', 'rampart.core.result', 'rampart.core.types', "
        "'rampart.engine', 'rampart.codec', 'rampart.limits', 'rampart.attacks', "
        "'rampart.pytest_plugin') "
        "if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


# RAMPART's sub-package surfaces (inventory section 2.3), importable by name.
UPSTREAM_SUBPACKAGES = {
    "rampart.evaluators": {
        "NEUTRAL_EVALUATOR", "LLMJudge", "ResponseContains", "ResponseScope",
        "SideEffectOccurred", "ToolCalled", "TranscriptScope",
    },
    "rampart.evaluators.personas": {"NEUTRAL_EVALUATOR"},
    "rampart.drivers": {"LLMDriver", "StaticDriver"},
    "rampart.converters": {"Base64Converter", "DocxConverter", "Rot13Converter"},
    "rampart.payloads": {"PayloadStore", "PayloadTemplate", "Payloads"},
    "rampart.core.llm": {"LLMConfig"},
    "rampart.core.persona": {"Persona"},
    "rampart.core.payload_ids": {"validate_payload_id"},
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(UPSTREAM_SUBPACKAGES))
def test_upstream_subpackage_names(module: str) -> None:
    """Every name RAMPART's sub-packages export is importable from the same path."""
    imported = importlib.import_module(module)
    assert {name for name in UPSTREAM_SUBPACKAGES[module] if not hasattr(imported, name)} == set()


def test_llm_layer_is_lazy() -> None:
    """``import rampart`` (and the evaluators and drivers) load no LLM client or limiter;
    the LLM classes load on first access."""
    code = (
        "import sys, rampart, rampart.evaluators, rampart.drivers; "
        "before = [m for m in ('rampart.llm', 'rampart.limits', 'httpx') if m in sys.modules]; "
        "rampart.LLMJudge; rampart.LLMDriver; "
        "print(','.join(before), '|', 'rampart.llm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "| True"


def test_the_model_loads_on_first_access() -> None:
    """A model name loads its own module only; the model's modules stay attributes of
    ``rampart.core`` and ``rampart.core`` of ``rampart``, as with eager imports."""
    code = (
        "import sys, rampart; "
        "status = rampart.SafetyStatus; "
        "loaded = [m for m in ('rampart.core.manifest', 'rampart.core.evaluator', "
        "'rampart.core.driver', 'rampart.core.persona') if m in sys.modules]; "
        "print(status.__module__, loaded, rampart.core.manifest.AppManifest.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    # types imports the manifest (a Payload's app), so only the protocols stay out.
    assert out == "rampart.core.types ['rampart.core.manifest'] rampart.core.manifest"


def test_lazy_exports_are_the_real_objects() -> None:
    """Lazily re-exported names resolve to the objects their home modules define."""
    import rampart
    import rampart.core
    from rampart.attacks import Attacks
    from rampart.core.execution import BaseExecution
    from rampart.core.trials import execute_trials_async
    from rampart.limits import limit

    assert rampart.Attacks is Attacks
    assert rampart.BaseExecution is rampart.core.BaseExecution is BaseExecution
    assert rampart.execute_trials_async is execute_trials_async
    assert rampart.limit is limit
    assert "Attacks" in dir(rampart)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = rampart.Nope  # type: ignore[attr-defined]
