"""At pytest start the plugin loads what every run needs, and no more.

Rate limiting, the codec, the report (built only for a sink), the trial machinery,
per-clone fixtures, resume and the JUnit properties load when a run first uses them (``docs/architecture.md``, "What loads when"); a one-test run that
uses none of them never imports them.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

DEFERRED = (
    "rampart.limits",
    "rampart.codec",
    "rampart.reporting._html",
    "rampart.reporting._jsonl",
    "rampart.reporting._json_report",
    "rampart.reporting._report",
    "rampart.reporting._files",
    "rampart.pytest_plugin._clone_fixtures",
    "rampart.pytest_plugin._junit",
    "rampart.pytest_plugin._resume",
    "rampart.engine._fanout",
    "rampart.engine._auto_concurrency",
    "rampart.engine._trace",
    "rampart.strategies",
    "statistics",
    "cattrs",
    "httpx",
)


#: What a session builds (the journal, the ledger, the group verdicts, the result model
#: and the engine): loading the plugin's entry point, which pytest does for every run
#: to read the options, imports none of it.
SESSION_PARTS = (
    "rampart.pytest_plugin._ledger",
    "rampart.pytest_plugin._groups",
    "rampart.pytest_plugin._items",
    "rampart.pytest_plugin._runner",
    "rampart.core.result",
    "rampart.core._group_outcome",
    "rampart.core._trial_rule",
    "rampart.engine",
    "anyio",
)


def test_loading_the_plugin_imports_no_session_part() -> None:
    """The entry point and every module that declares options load none of them; the
    journal module (its options) is light too."""
    code = (
        "import sys, rampart.pytest_plugin.plugin\n"
        f"print(sorted(m for m in {SESSION_PARTS!r} if m in sys.modules))\n"
        "print('rampart.pytest_plugin._journal' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["[]", "True"]


def test_configuring_the_plugin_defers_what_a_run_may_not_use() -> None:
    """Importing everything ``pytest_configure`` imports leaves the deferred parts out."""
    code = (
        "import sys, rampart.pytest_plugin.plugin, rampart.pytest_plugin._session\n"
        f"print(sorted(m for m in {DEFERRED!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_a_one_test_run_loads_none_of_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole run of one plain test (in a fresh process) imports none of the deferred
    parts, nor any session part (the plugin waits for a run that uses rampart), and a trial test in the same kind of run still works (they load on use)."""
    pytester.makepyfile(
        test_one="def test_one():\n    assert True\n",
    )
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        f"    loaded = sorted(m for m in {DEFERRED + SESSION_PARTS!r} if m in sys.modules)\n"
        "    print('DEFERRED-LOADED', loaded)\n"
    )
    # Only rampart's own loads are checked: other installed plugins may import what
    # they like (langsmith's, which AgentDojo brings, imports httpx).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-s", "-p", "rampart.pytest_plugin.plugin"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*DEFERRED-LOADED []*"])


def _lean_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    """A fresh process with rampart's plugin alone (in-process runs share this process's
    modules, rampart's engine among them)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "rampart.pytest_plugin.plugin", "-p", "no:randomly"
    )


def test_a_test_body_that_imports_rampart_has_its_results_collected(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing imported rampart when collection ended, but a test body does: the plugin
    wires its parts before the first test runs, so every result is reported."""
    pytester.makepyfile(
        test_late=(
            "def test_a():\n"
            "    from rampart import Result, SafetyStatus, record_result\n"
            "    record_result(Result(status=SafetyStatus.SAFE, summary='first-result'))\n"
            "def test_b():\n"
            "    import rampart\n"
            "    rampart.record_result(\n"
            "        rampart.Result(status=rampart.SafetyStatus.UNSAFE, summary='second-result')\n"
            "    )\n"
        )
    )
    result = _lean_run(pytester, monkeypatch)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*RAMPART Safety Summary*", "*second-result*", "*first-result*"])
    assert "RAMPART WARNING" not in result.stdout.str()


def test_rampart_first_imported_by_a_fixture_is_said(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rampart first imported inside a fixture, where collection cannot see it: the
    plugin wires its parts after that test and says that test's results are not in the
    report; the tests after it are reported."""
    pytester.makepyfile(
        test_late=(
            "import importlib\n"
            "import pytest\n"
            "@pytest.fixture\n"
            "def recorder():\n"
            "    return importlib.import_module('rampart')\n"
            "def test_a(recorder):\n"
            "    recorder.record_result(\n"
            "        recorder.Result(status=recorder.SafetyStatus.SAFE, summary='lost-result')\n"
            "    )\n"
            "def test_b(recorder):\n"
            "    recorder.record_result(\n"
            "        recorder.Result(status=recorder.SafetyStatus.SAFE, summary='kept-result')\n"
            "    )\n"
        )
    )
    result = _lean_run(pytester, monkeypatch)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*RAMPART WARNING: rampart was first imported during test_late.py::test_a*",
            "*RAMPART Safety Summary*",
            "*kept-result*",
        ]
    )
    assert "lost-result" not in result.stdout.str()


def test_a_trial_group_loads_the_trial_machinery_on_use(pytester: pytest.Pytester) -> None:
    """Trial groups (async with adaptive concurrency, and sync) import what they need."""
    pytester.makepyfile(
        test_trial=(
            "import pytest\n"
            "from rampart import Result, SafetyStatus, record_result\n"
            "@pytest.mark.trial(n=3, concurrency='auto')\n"
            "async def test_t():\n"
            "    record_result(Result(status=SafetyStatus.SAFE, summary='ok'))\n"
            "@pytest.mark.trial(n=2)\n"
            "def test_sync():\n"
            "    record_result(Result(status=SafetyStatus.SAFE, summary='ok'))\n"
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "rampart")
    result.assert_outcomes(passed=2)
