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
    "rampart.pytest_plugin._session",
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
    parts, and a trial test in the same kind of run still works (they load on use)."""
    pytester.makepyfile(
        test_one="def test_one():\n    assert True\n",
    )
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        f"    loaded = sorted(m for m in {DEFERRED!r} if m in sys.modules)\n"
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
