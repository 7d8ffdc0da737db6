"""The shipped risk-framework tables: every id exists in the version named, every entry
says where it comes from, and every built-in subject is accounted for."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest

from rampart.core import HarmCategory
from rampart.payloads import builtin_payloads
from rampart.risk import RiskMap

if TYPE_CHECKING:
    from pathlib import Path

BUILTIN = RiskMap.builtin()
FRAMEWORKS = {framework.id: framework for framework in BUILTIN.frameworks}


def test_the_framework_versions_and_their_ids() -> None:
    """The OWASP lists have exactly their ten ids; ATLAS ids have ATLAS's shape."""
    assert {f.id: f.title for f in BUILTIN.frameworks} == {
        "owasp-llm": "OWASP Top 10 for LLM Applications 2025",
        "owasp-asi": "OWASP Top 10 for Agentic Applications 2026",
        "mitre-atlas": "MITRE ATLAS 5.6.0",
    }
    llm = [item.id for item in FRAMEWORKS["owasp-llm"].items]
    assert llm == [f"LLM{n:02d}:2025" for n in range(1, 11)]
    asi = [item.id for item in FRAMEWORKS["owasp-asi"].items]
    assert asi == [f"ASI{n:02d}:2026" for n in range(1, 11)]
    names = {item.id: item.name for item in FRAMEWORKS["owasp-llm"].items}
    assert names["LLM06:2025"] == "Excessive Agency"
    assert names["LLM07:2025"] == "System Prompt Leakage"
    agentic = {item.id: item.name for item in FRAMEWORKS["owasp-asi"].items}
    assert agentic["ASI01:2026"] == "Agent Goal Hijack"
    assert agentic["ASI06:2026"] == "Memory & Context Poisoning"
    atlas = {item.id: item.name for item in FRAMEWORKS["mitre-atlas"].items}
    assert len(atlas) == 170  # every technique and sub-technique of ATLAS data 5.6.0
    assert all(re.fullmatch(r"AML\.T\d{4}(\.\d{3})?", item) for item in atlas)
    assert atlas["AML.T0051.001"] == "LLM Prompt Injection: Indirect"
    assert atlas["AML.T0086"] == "Exfiltration via AI Agent Tool Invocation"
    # An easy one to get wrong: AML.T0024 is exfiltration of the *model* through its
    # inference API, not an agent's data leaving through its tools.
    assert atlas["AML.T0024"] == "Exfiltration via AI Inference API"


def test_every_mapped_id_exists_in_the_version_its_framework_names() -> None:
    assert BUILTIN.entries
    for entry in BUILTIN.entries:
        framework = FRAMEWORKS[entry.framework]
        assert entry.item in {item.id for item in framework.items}, entry
    assert "AML.T0024" not in {entry.item for entry in BUILTIN.entries}


def test_every_entry_carries_its_source_and_rationale() -> None:
    for entry in BUILTIN.entries:
        assert "https://" in entry.source, entry
        framework = FRAMEWORKS[entry.framework]
        assert framework.name in entry.source, entry  # the document and its section
        assert entry.item in entry.source, entry
        assert len(entry.rationale) > 30, entry
    for gap in BUILTIN.gaps:
        assert len(gap.rationale) > 30, gap


def test_every_builtin_harm_category_is_mapped_or_its_gap_explained() -> None:
    for category in HarmCategory:
        subject = f"harm_category:{category.value}"
        for framework in FRAMEWORKS:
            mapped = any(e.subject == subject and e.framework == framework for e in BUILTIN.entries)
            explained = any(g.subject == subject and g.framework == framework for g in BUILTIN.gaps)
            assert mapped != explained, (category, framework)


def test_every_builtin_payload_is_in_one_family_and_every_family_is_mapped() -> None:
    ids = [payload.id for payload in builtin_payloads()]
    members = [member for family in BUILTIN.families.values() for member in family]
    assert sorted(members) == sorted(ids)
    for family in BUILTIN.families:
        entries = [e for e in BUILTIN.entries if e.subject == f"payload_family:{family}"]
        assert {e.framework for e in entries} >= {"owasp-llm", "mitre-atlas"}, family
    for payload in ids:
        reached = {e.framework for e in BUILTIN.entries_for([f"payload:{payload}"])}
        assert reached >= {"owasp-llm", "mitre-atlas"}, payload


def test_every_agentdojo_injection_task_of_every_version_is_mapped() -> None:
    from agentdojo.task_suite.load_suites import get_suites

    from rampart.agentdojo._suites import VERSIONS  # the versions rampart knows (no public name)

    tasks = {
        f"agentdojo:{suite}/{task}"
        for version in VERSIONS
        for suite, loaded in get_suites(version).items()
        for task in loaded.injection_tasks
    }
    assert len(tasks) == 35
    for subject in sorted(tasks):
        frameworks = {entry.framework for entry in BUILTIN.entries_for([subject])}
        assert frameworks >= {"owasp-asi", "mitre-atlas"}, subject
    mapped = {e.subject for e in BUILTIN.entries if e.subject.startswith("agentdojo:")}
    assert mapped == tasks  # and nothing for a task AgentDojo does not have


def test_a_marker_label_names_an_item_by_its_id_or_an_alias() -> None:
    for label in ("LLM01:2025", "llm01", "owasp-llm01", "OWASP:LLM01"):
        (entry,) = BUILTIN.entries_for([f"harm_category:{label}"])
        assert (entry.item, entry.origin) == ("LLM01:2025", "marker")
    (entry,) = BUILTIN.entries_for(["harm_category:AML.T0051.001"])
    assert entry.framework == "mitre-atlas"
    assert BUILTIN.entries_for(["harm_category:not-an-item"]) == []


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_user_map_extends_and_replaces(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "risks.json",
        {
            "format": "rampart.risk-map.v1",
            "replace": ["harm_category:jailbreak"],
            "entries": [
                {
                    "subject": "harm_category:my_risk",
                    "item": "LLM03:2025",
                    "source": "our threat model, section 4",
                    "rationale": "the plugin store is our supply chain",
                },
                {
                    "subject": "harm_category:jailbreak",
                    "item": "AML.T0054",
                    "source": "our threat model, section 2",
                    "rationale": "only the ATLAS technique",
                },
            ],
        },
    )
    loaded = RiskMap.load([path])
    assert loaded.origins == ("builtin", str(path))
    (mine,) = loaded.entries_for(["harm_category:my_risk"])
    assert (mine.item, mine.framework, mine.origin) == ("LLM03:2025", "owasp-llm", str(path))
    jailbreak = loaded.entries_for(["harm_category:jailbreak"])
    assert [(entry.item, entry.origin) for entry in jailbreak] == [("AML.T0054", str(path))]
    assert RiskMap.builtin() is BUILTIN  # the built-in map is untouched


BAD_MAPS = [
    # (the document, what the error says)
    ({"format": "nope"}, "$.format must be 'rampart.risk-map.v1'"),
    (
        {
            "format": "rampart.risk-map.v1",
            "entries": [
                {
                    "subject": "harm_category:x",
                    "item": "LLM11:2025",
                    "source": "s",
                    "rationale": "r",
                }
            ],
        },
        "$.entries[0].item must be an item id of a loaded framework version: OWASP Top 10 for "
        "LLM Applications 2025 (LLM01:2025, ...)",
    ),
    (
        {
            "format": "rampart.risk-map.v1",
            "entries": [
                {"subject": "harm:x", "item": "LLM01:2025", "source": "s", "rationale": "r"}
            ],
        },
        "$.entries[0].subject must be 'kind:value' with kind one of strategy, harm_category",
    ),
    (
        {
            "format": "rampart.risk-map.v1",
            "entries": [
                {
                    "subject": "harm_category:x",
                    "item": "LLM01:2025",
                    "source": " ",
                    "rationale": "r",
                }
            ],
        },
        "$.entries[0].source must be a non-empty string",
    ),
    (
        {"format": "rampart.risk-map.v1", "entries": [{"subject": "harm_category:x", "itme": 1}]},
        "$.entries[0] must be an object with only the keys item, rationale, source, subject, "
        "got the key 'itme'",
    ),
    (
        {
            "format": "rampart.risk-map.v1",
            "unmapped": [{"subject": "harm_category:x", "framework": "nist", "rationale": "r"}],
        },
        "$.unmapped[0].framework must be one of owasp-llm, owasp-asi, mitre-atlas",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD_MAPS)
def test_a_bad_map_names_the_file_and_the_entry(
    tmp_path: Path, document: object, message: str
) -> None:
    path = _write(tmp_path / "bad.json", document)
    with pytest.raises(ValueError, match="risk map") as caught:
        RiskMap.load([path])
    assert str(caught.value).startswith(f"risk map {path}: {message}")


def test_a_map_file_is_read_with_the_strict_json_policy(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"format": "rampart.risk-map.v1", "format": "x"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not strict JSON: .*duplicate key"):
        RiskMap.load([path])
