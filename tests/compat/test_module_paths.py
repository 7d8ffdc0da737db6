"""RAMPART's public import surface (upstream inventory §2), imported the way client code does.

One table, one entry per module path RAMPART code imports, with the names it imports
from there. Paths RAMPART has that rampart deliberately does not provide (PyRIT's
bridge, the OneDrive surface, the plugin's internal session class) are listed apart and
must be named in ``docs/compatibility.md``.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]

# RAMPART 0.1.0's and latest main's ``rampart.__all__`` (inventory §2.1), less the two
# 0.1.0 names that latest main removed from the top level (see ABSENT_NAMES).
TOP_LEVEL = (
    "AgentAdapter AppManifest Attacks BaseEvaluator BaseExecution DataSource DriverError "
    "EvalContext EvalOutcome EvalResult Evaluator EvaluatorError ExecutionEvent "
    "ExecutionEventData ExecutionEventHandler HarmCategory InfrastructureError "
    "InjectionHandle InjectionRecord LLMConfig LLMDriver LLMJudge ObservabilityLevel "
    "Payload PayloadFormat Persona PopulationRef PopulationResult Probes PromptDecision "
    "PromptDriver Request Response Result SafetyStatus Session SideEffect Surface ToolCall "
    "ToolDeclaration TranscriptScope Turn execute_trials_async record_result"
)

PUBLIC_PATHS: dict[str, str] = {
    "rampart": TOP_LEVEL,
    # §2.2: rampart.core, 0.1.0 and main.
    "rampart.core": (
        "AgentAdapter AppManifest BaseEvaluator BaseExecution DataSource DriverError "
        "EvalContext EvalOutcome EvalResult EvaluationPurpose EvaluationRecord Evaluator "
        "EvaluatorError ExecutionEvent ExecutionEventData ExecutionEventHandler "
        "ExecutionHandlerFactory HarmCategory InfrastructureError InjectionHandle "
        "InjectionRecord LLMConfig ObservabilityLevel Payload PayloadConverter PayloadFormat "
        "Persona PopulationRef PopulationResult PromptDecision PromptDriver Request Response "
        "Result SafetyStatus Session SideEffect Surface ToolCall ToolDeclaration "
        "TraceEndReason TraceRun Turn evaluate_final_trace_async evaluate_terminal_async "
        "evaluate_turn_async execute_trials_async resolve_as_attack resolve_as_probe "
        "resolve_attack_verdict resolve_probe_verdict run_trace_async"
    ),
    "rampart.core.trace": (
        "EvaluationRecord TraceRun run_trace_async evaluate_final_trace_async "
        "evaluate_terminal_async"
    ),
    "rampart.core.injection": ("Surface InjectionHandle sleep_until_ready_async sleep_until_ready"),
    "rampart.core.execution": (
        "BaseExecution ExecutionEvent ExecutionEventData ExecutionEventHandler "
        "ExecutionHandlerFactory register_default_handler_factory "
        "clear_default_handler_factory evaluate_turn_async"
    ),
    "rampart.core.result": (
        "Result PopulationRef PopulationResult SafetyStatus HarmCategory InjectionRecord "
        "resolve_attack_verdict resolve_probe_verdict resolve_as_attack resolve_as_probe"
    ),
    "rampart.core.types": (
        "EvalContext EvalOutcome EvalResult EvaluationPurpose ObservabilityLevel Payload "
        "PayloadFormat Request Response SideEffect ToolCall TraceEndReason Turn"
    ),
    "rampart.core.adapter": "AgentAdapter Session",
    "rampart.core.converter": "PayloadConverter",
    "rampart.core.evaluator": "BaseEvaluator Evaluator detected_is_absorbing",
    "rampart.core.prompt_driver": "PromptDriver PromptDecision",
    "rampart.core.llm": "LLMConfig",
    "rampart.core.persona": "Persona",
    "rampart.core.manifest": "AppManifest DataSource ToolDeclaration",
    "rampart.core.errors": (
        "InfrastructureError DriverError EvaluatorError SchemaError UnsupportedSchemaVersionError"
    ),
    "rampart.core.serialization": (
        "ResultRecord serialize_record deserialize_record TRACE_SCHEMA_VERSION SchemaError "
        "UnsupportedSchemaVersionError"
    ),
    "rampart.core.payload_ids": "validate_payload_id",
    # §2.3: sub-packages.
    "rampart.attacks": "Attacks XPIAExecution",
    "rampart.probes": "Probes SingleTurnExecution",
    "rampart.evaluators": (
        "NEUTRAL_EVALUATOR LLMJudge ResponseContains ResponseScope SideEffectOccurred "
        "ToolCalled TranscriptScope"
    ),
    "rampart.evaluators.personas": "NEUTRAL_EVALUATOR",
    "rampart.drivers": "LLMDriver StaticDriver",
    "rampart.drivers.static": "StaticDriver",
    "rampart.drivers.llm": "LLMDriver",
    "rampart.converters": "Base64Converter DocxConverter Rot13Converter",
    "rampart.converters.base64": "Base64Converter",
    "rampart.converters.rot13": "Rot13Converter",
    "rampart.converters.docx": "DocxConverter",
    "rampart.payloads": "PayloadStore PayloadTemplate Payloads",
    "rampart.payloads.template": "PayloadTemplate",
    "rampart.reporting": "JsonFileReportSink ReportSink TestRunReport",
    "rampart.reporting.sink": "ReportSink TestRunReport PopulationSummary",
    "rampart.reporting.json_file": "JsonFileReportSink",
    "rampart.pytest_plugin": "ResultCollectionHandler ResultCollector record_result",
    "rampart.pytest_plugin.plugin": "",
    # §1.10 / §1.14: the shared helpers.
    "rampart.common.text": "strip_ansi safe_str safe_str_list safe_float",
    "rampart.common.deprecation": "emit_deprecation_warning",
}

# RAMPART paths and names deliberately not provided (docs/compatibility.md says why).
ABSENT_MODULES = ("rampart.pyrit_bridge", "rampart.surfaces")
ABSENT_NAMES = {
    "rampart.pytest_plugin": ("RampartSession",),
    "rampart": ("resolve_as_attack", "resolve_as_probe"),
}


def test_every_public_path_imports_with_its_names() -> None:
    """``from <path> import <name>`` works for every path and name of the table."""
    missing = []
    for path, names in PUBLIC_PATHS.items():
        module = importlib.import_module(path)
        missing += [f"{path}.{name}" for name in names.split() if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("path", sorted(PUBLIC_PATHS))
def test_from_import_in_a_fresh_interpreter(path: str) -> None:
    """Each line of the table, as a client module's first import statement, in a fresh
    process (so no earlier import can have made it work by accident)."""
    names = PUBLIC_PATHS[path].split()
    statement = f"from {path} import {', '.join(names)}" if names else f"import {path}"
    subprocess.run([sys.executable, "-c", statement], check=True, cwd=ROOT)


def test_lazy_names_resolve_to_the_same_objects() -> None:
    """A name reachable under several paths is one object, wherever it is imported from."""
    import rampart
    import rampart.core
    import rampart.core.execution
    import rampart.core.prompt_driver
    import rampart.drivers
    import rampart.drivers.static
    import rampart.reporting
    import rampart.reporting.json_file
    import rampart.reporting.sink

    assert rampart.core.prompt_driver.PromptDecision is rampart.PromptDecision
    assert rampart.drivers.static.StaticDriver is rampart.drivers.StaticDriver
    assert rampart.reporting.sink.TestRunReport is rampart.reporting.TestRunReport
    assert rampart.reporting.json_file.JsonFileReportSink is rampart.reporting.JsonFileReportSink
    assert rampart.core.BaseExecution is rampart.core.execution.BaseExecution
    assert rampart.core.ExecutionHandlerFactory is rampart.core.execution.ExecutionHandlerFactory


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("Attacks", "rampart.attacks"),
        ("LLMDriver", "rampart.drivers.llm"),
        ("LLMJudge", "rampart.evaluators"),
        ("Probes", "rampart.probes"),
        ("TranscriptScope", "rampart.evaluators"),
    ],
)
def test_lazy_exports_load_through_rampart_import_module(
    monkeypatch: pytest.MonkeyPatch, name: str, module: str
) -> None:
    """As in RAMPART, a heavy top-level export loads on demand through
    ``rampart.import_module`` (which client tests patch), then stays cached."""
    import rampart

    sentinel = object()
    requested: list[str] = []

    def fake_import_module(requested_module: str) -> SimpleNamespace:
        requested.append(requested_module)
        return SimpleNamespace(**{name: sentinel})

    monkeypatch.delitem(rampart.__dict__, name, raising=False)
    monkeypatch.setattr(rampart, "import_module", fake_import_module)
    assert getattr(rampart, name) is sentinel
    assert getattr(rampart, name) is sentinel
    assert requested == [module]
    monkeypatch.delitem(rampart.__dict__, name)


@pytest.mark.parametrize("path", ABSENT_MODULES)
def test_deliberately_absent_modules_are_absent_and_documented(path: str) -> None:
    """PyRIT's bridge and the OneDrive surface are not provided, and the guide says so."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(path)
    assert f"`{path}`" in (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "name"), [(path, name) for path, names in ABSENT_NAMES.items() for name in names]
)
def test_deliberately_absent_names_are_absent_and_documented(path: str, name: str) -> None:
    """Names left out on purpose fail loudly on import and are explained in the guide."""
    with pytest.raises(ImportError):
        exec(f"from {path} import {name}", {})
    assert f"`{name}`" in (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
