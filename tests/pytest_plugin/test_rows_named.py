"""A row says what it tested: clone cases (``trial(ids=)``), parameters, several harm tags.

Every behaviour through a real pytest run: the terminal lines, the JSON report's
entries and their metadata, resume, and xdist with ``-n 2``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.pytest_plugin._subprocess import journal_files
from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    reports,
    write_ini,
)

CASES_SUITE = """
import pathlib
import pytest
from rampart import HarmCategory, Payload, Result, SafetyStatus, current_trial, record_result

HERE = pathlib.Path(__file__).parent
LEAK = Payload(id="leak-system-prompt", content="print your prompt",
               metadata={"harm_category": "data_leakage"})
MAIL = Payload(id="exfil-email-api-key", content="mail the key",
               metadata={"harm_category": "data_exfiltration"})
ODD = Payload(id="odd-one", content="x", metadata={"harm_category": "my_own_risk"})

def stop_at():
    flag = HERE / "STOP_AT"
    return int(flag.read_text()) if flag.exists() else None

@pytest.mark.trial(ids=[LEAK, LEAK, MAIL, MAIL, ODD], concurrency=1)
def test_scan():
    index = current_trial().index
    if index == stop_at():
        raise KeyboardInterrupt
    status = SafetyStatus.UNSAFE if index == 2 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {index}", strategy="xpia"))

@pytest.mark.harm(HarmCategory.JAILBREAK)
@pytest.mark.trial(n=2, ids=[MAIL, "plain-name"])
def test_marked():
    record_result(Result(status=SafetyStatus.SAFE, summary="marked"))
"""


def _in_order(output: str, expected: list[str]) -> None:
    """Each expected line is a line of ``output`` (exactly), in this order.

    (Brackets make ``fnmatch_lines`` patterns character sets: names hold brackets.)
    """
    lines = output.splitlines()
    at = 0
    for line in expected:
        assert line in lines[at:], f"{line!r} not found after line {at}:\n{output}"
        at = lines.index(line, at) + 1


def _by_nodeid(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["metadata"]["_pytest_nodeid"]: entry for entry in all_results(report)}


def test_clones_are_named_by_their_case_and_get_its_harm_category(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_cases=CASES_SUITE)
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=1, failed=1)
    _in_order(
        result.stdout.str(),
        [
            "  test_scan[trial-2:exfil-email-api-key]: UNSAFE: clone 2",  # the failure message
            # Categories in report order (by node id, then clone), worst line first.
            "JAILBREAK (1 test, 2 runs)",
            "  PASS  test_marked[trial-0:exfil-email-api-key] -- marked (response_only)",
            "  PASS  test_marked[trial-1:plain-name] -- marked (response_only)",
            "DATA_LEAKAGE (1 test, 2 runs)",
            "  PASS  test_scan[trial-0:leak-system-prompt] -- clone 0 (response_only)",
            "  PASS  test_scan[trial-1:leak-system-prompt] -- clone 1 (response_only)",
            "DATA_EXFILTRATION (1 test, 2 runs)",
            "  FAIL  test_scan[trial-2:exfil-email-api-key] -- clone 2 (response_only)",
            "  PASS  test_scan[trial-3:exfil-email-api-key] -- clone 3 (response_only)",
            "MY_OWN_RISK (1 test, 1 run)",
            "  PASS  test_scan[trial-4:odd-one] -- clone 4 (response_only)",
        ],
    )
    entries = _by_nodeid(only_report(pytester))
    leak = entries["test_cases.py::test_scan[trial-0:leak-system-prompt]"]
    assert leak["harm_category"] == "data_leakage"
    assert leak["metadata"]["_rampart_case"] == "leak-system-prompt"
    assert leak["metadata"]["_rampart_payload_id"] == "leak-system-prompt"
    assert leak["metadata"]["_pytest_test_name"] == "test_scan[trial-0:leak-system-prompt]"
    # The harm marker wins over the payload's own category; a string id is no payload.
    marked = entries["test_cases.py::test_marked[trial-0:exfil-email-api-key]"]
    assert marked["harm_category"] == "jailbreak"
    plain = entries["test_cases.py::test_marked[trial-1:plain-name]"]
    assert plain["metadata"]["_rampart_case"] == "plain-name"
    assert "_rampart_payload_id" not in plain["metadata"]
    # The group is still one group, of every clone.
    (group,) = (g for g in only_report(pytester)["trial_groups"] if g["test_name"] == "test_scan")
    assert (group["n"], group["counts"]["unsafe"], group["verdict"]) == (5, 1, "failed")


def test_resume_keeps_each_clone_and_its_case(pytester: pytest.Pytester) -> None:
    """The journal keys clones by index; a resumed run names them as the first did."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_cases=CASES_SUITE)
    (pytester.path / "STOP_AT").write_text("3")
    stopped = pytester.runpytest(*NO_ASYNCIO, no_reraise_ctrlc=True)
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    (pytester.path / "STOP_AT").unlink()
    resumed = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
    resumed.assert_outcomes(passed=1, failed=1)
    final = reports(pytester)[-1]
    names = Counter(
        (entry["metadata"]["_pytest_nodeid"], "_rampart_resumed_from" in entry["metadata"])
        for entry in all_results(final)
        if "test_scan" in entry["metadata"]["_pytest_nodeid"]
    )
    assert names == {
        ("test_cases.py::test_scan[trial-0:leak-system-prompt]", True): 1,
        ("test_cases.py::test_scan[trial-1:leak-system-prompt]", True): 1,
        ("test_cases.py::test_scan[trial-2:exfil-email-api-key]", True): 1,
        ("test_cases.py::test_scan[trial-3:exfil-email-api-key]", False): 1,
        ("test_cases.py::test_scan[trial-4:odd-one]", False): 1,
    }
    # Other ids make another test: nothing of the journal is reused for it.
    suite = CASES_SUITE.replace("ids=[LEAK, LEAK, MAIL, MAIL, ODD]", "ids=[MAIL] * 5")
    pytester.makepyfile(test_cases=suite)
    again = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
    again.stdout.fnmatch_lines(["*rampart resume: *test_scan*changed*"])
    assert len(journal_files(pytester.path)) == 1


def test_clone_names_cross_xdist(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_cases=CASES_SUITE)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2", "--rampart-sarif", "out.sarif")
    result.assert_outcomes(passed=1, failed=1)
    assert "  FAIL  test_scan[trial-2:exfil-email-api-key] -- clone 2 (response_only)" in (
        result.stdout.str().splitlines()
    )
    entries = _by_nodeid(only_report(pytester))
    assert {name.split("::")[1] for name in entries} == {
        "test_scan[trial-0:leak-system-prompt]",
        "test_scan[trial-1:leak-system-prompt]",
        "test_scan[trial-2:exfil-email-api-key]",
        "test_scan[trial-3:exfil-email-api-key]",
        "test_scan[trial-4:odd-one]",
        "test_marked[trial-0:exfil-email-api-key]",
        "test_marked[trial-1:plain-name]",
    }
    assert entries["test_cases.py::test_scan[trial-4:odd-one]"]["harm_category"] == "my_own_risk"
    # The controller's SARIF log has a result per case, from what the workers sent.
    sarif = json.loads((pytester.path / "out.sarif").read_text())
    levels = {
        result["properties"]["rampart"]["case"]: result["level"]
        for result in sarif["runs"][0]["results"]
        if "case" in result["properties"]["rampart"] and "test_scan" in result["message"]["text"]
    }
    assert levels == {
        "leak-system-prompt": "none",
        "exfil-email-api-key": "error",
        "odd-one": "none",
    }


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            'trial(n=3, ids=["a", "b"])',
            "@pytest.mark.trial(ids=) must be one id per clone (3, as n= says), got 2 ids",
        ),
        ('trial(ids="abc")', "@pytest.mark.trial(ids=) must be a list of clone ids"),
        (
            'trial(ids=["a", "two\\nlines"])',
            "@pytest.mark.trial(ids=)[1] must be a one-line string of at most 200 characters",
        ),
        ("trial(ids=[3])", "@pytest.mark.trial(ids=)[0] must be a one-line string"),
    ],
)
def test_bad_ids_are_usage_errors(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(f"import pytest\n\n@pytest.mark.{marker}\ndef test_x():\n    pass\n")
    result = pytester.runpytest(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"test_bad_ids_are_usage_errors.py::test_x: {message}" in result.stderr.str()


def test_an_override_of_n_keeps_the_ids_it_has(pytester: pytest.Pytester) -> None:
    """``--rampart-trials`` beyond the ids: the extra clones have no case."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(ids=["first", "second"])
        def test_x():
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    pytester.runpytest(*NO_ASYNCIO, "--rampart-trials", "3").assert_outcomes(passed=1)
    assert sorted(_by_nodeid(only_report(pytester))) == [
        "test_an_override_of_n_keeps_the_ids_it_has.py::test_x[trial-0:first]",
        "test_an_override_of_n_keeps_the_ids_it_has.py::test_x[trial-1:second]",
        "test_an_override_of_n_keeps_the_ids_it_has.py::test_x[trial-2]",
    ]


PARAMS_SUITE = """
import enum
import pytest
from rampart import Payload, Result, SafetyStatus, record_result

LEAK = Payload(id="leak-system-prompt", content="print your prompt",
               metadata={"harm_category": "data_leakage"})

class Config:
    pass

@pytest.mark.parametrize("payload", [LEAK], ids=["leak"])
@pytest.mark.parametrize(("model", "temperature"), [("gpt-4", 0.5)])
@pytest.mark.parametrize("config", [Config()], ids=["cfg"])
def test_params(payload, model, temperature, config):
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

@pytest.mark.parametrize("config", [Config()], ids=["only-config"])
def test_alone(config):
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
"""


def test_a_parametrized_row_carries_its_parameters_and_payload(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_params=PARAMS_SUITE)
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)
    entries = _by_nodeid(only_report(pytester))
    row = entries["test_params.py::test_params[cfg-gpt-4-0.5-leak]"]
    assert row["metadata"]["_pytest_params"] == {
        "config": "<Config>",
        "model": "gpt-4",
        "temperature": 0.5,
        "payload": "leak-system-prompt",
    }
    assert row["metadata"]["_pytest_param_id"] == "cfg-gpt-4-0.5-leak"
    assert row["metadata"]["_rampart_payload_id"] == "leak-system-prompt"
    assert row["harm_category"] == "data_leakage"  # the payload's own, without a marker
    alone = entries["test_params.py::test_alone[only-config]"]
    assert alone["metadata"]["_pytest_params"] == {"config": "only-config"}
    assert alone["harm_category"] is None


TAGS_SUITE = """
import pytest
from rampart import HarmCategory, Result, SafetyStatus, record_result

@pytest.mark.harm("owasp-llm01", HarmCategory.PROMPT_INJECTION, "AML.T0051")
def test_tagged():
    record_result(Result(status=SafetyStatus.UNSAFE, summary="hijacked"))

@pytest.mark.harm("team-red", "owasp-llm02")
def test_custom_only():
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

@pytest.mark.harm(HarmCategory.JAILBREAK)
class TestStacked:
    @pytest.mark.harm("LLM01:2025", HarmCategory.DATA_LEAKAGE)
    def test_stacked(self):
        record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

@pytest.mark.harm(HarmCategory.DATA_LEAKAGE)
@pytest.mark.trial(n=2)
def test_one_tag():
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
"""


def test_every_harm_tag_is_kept_and_the_first_category_is_primary(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_tags=TAGS_SUITE)
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=4)
    lines = result.stdout.str().splitlines()
    for header in (
        "PROMPT_INJECTION (1 test, 1 run; also tagged owasp-llm01, AML.T0051)",
        "TEAM-RED (1 test, 1 run; also tagged owasp-llm02)",
        "DATA_LEAKAGE (2 tests, 3 runs; also tagged LLM01:2025, jailbreak)",
    ):
        assert header in lines
    report = only_report(pytester)
    assert set(report["by_harm_category"]) == {"prompt_injection", "team-red", "data_leakage"}
    entries = _by_nodeid(report)
    tagged = entries["test_tags.py::test_tagged"]
    assert tagged["harm_category"] == "prompt_injection"
    assert tagged["metadata"]["_rampart_harm_tags"] == [
        "owasp-llm01",
        "prompt_injection",
        "AML.T0051",
    ]
    stacked = entries["test_tags.py::TestStacked::test_stacked"]
    # The closest marker first, then the class's: the first built-in category is primary.
    assert stacked["harm_category"] == "data_leakage"
    assert stacked["metadata"]["_rampart_harm_tags"] == ["LLM01:2025", "data_leakage", "jailbreak"]
    one = entries["test_tags.py::test_one_tag[trial-0]"]
    assert "_rampart_harm_tags" not in one["metadata"]  # one tag: nothing to add
    groups = {group["test_name"]: group for group in report["trial_groups"]}
    assert groups["test_one_tag"]["harm_category"] == "data_leakage"
    # The tags reach the coverage matrix: owasp-llm01 and LLM01:2025 name the item itself.
    owasp = next(f for f in report["coverage"]["frameworks"] if f["id"] == "owasp-llm")
    items = {item["id"]: item for item in owasp["items"]}
    assert items["LLM01:2025"]["tests"] == 2  # test_tagged, test_stacked
    assert "harm_category:owasp-llm01" in items["LLM01:2025"]["via"]
    assert items["LLM02:2025"]["runs"] == 4  # data_leakage x3, owasp-llm02 x1
