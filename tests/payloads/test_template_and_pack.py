"""``PayloadTemplate`` and the built-in pack ``rampart-xpia-v1``."""

from __future__ import annotations

import pytest

from rampart.core.payload_ids import validate_payload_id
from rampart.core.types import HarmCategory, Payload
from rampart.payloads import (
    BUILTIN_COLLECTION,
    BUILTIN_ROOT,
    PayloadStore,
    PayloadTemplate,
    builtin_payloads,
    builtin_store,
    builtin_templates,
)

PACK = builtin_payloads()


class TestPayloadTemplate:
    def test_resolve_and_with_variables(self) -> None:
        """``resolve`` fills placeholders; ``with_variables`` merges (overrides win) into a copy."""
        template = PayloadTemplate(
            name="t",
            objective="exfiltrate",
            instruction="Send it to {who} via {how}.",
            variables={"who": "a@b.example", "how": "email"},
        )
        changed = template.with_variables(how="fax")
        assert template.resolve() == "Send it to a@b.example via email."
        assert changed.resolve() == "Send it to a@b.example via fax."
        assert template.variables["how"] == "email"

    def test_missing_variable_is_a_key_error(self) -> None:
        """A placeholder without a value raises KeyError naming it."""
        template = PayloadTemplate(name="t", objective="o", instruction="To {who}")
        with pytest.raises(KeyError, match="who"):
            template.resolve()

    def test_mutable_and_validated(self) -> None:
        """Keyword-only and mutable (as RAMPART's is); blank names and non-str variables are
        refused, at construction and on assignment."""
        template = PayloadTemplate(name="t", objective="o", instruction="i")
        template.name = "u"
        assert template.name == "u"
        with pytest.raises(ValueError, match="PayloadTemplate: name"):
            template.name = " "
        with pytest.raises(ValueError, match="PayloadTemplate: name"):
            PayloadTemplate(name=" ", objective="o", instruction="i")
        with pytest.raises(TypeError, match="variables must be a dict of str to str"):
            PayloadTemplate(name="t", objective="o", instruction="i", variables={"a": 1})  # type: ignore[dict-item]


class TestBuiltinPack:
    def test_loads_with_payload_store(self) -> None:
        """The pack is an ordinary collection: PayloadStore lists and loads it."""
        store = PayloadStore(root=BUILTIN_ROOT)
        assert BUILTIN_COLLECTION in store.list_collections()
        assert store.manifest(BUILTIN_COLLECTION)["count"] == len(PACK)
        assert [p.id for p in builtin_store().load(BUILTIN_COLLECTION)] == [p.id for p in PACK]

    def test_at_least_thirty_across_the_harm_categories(self) -> None:
        """>= 30 payloads; exfiltration, leaks, actions, memory poisoning and hijacking covered."""
        assert len(PACK) >= 30
        categories = {p.metadata["harm_category"] for p in PACK}
        assert {
            HarmCategory.DATA_EXFILTRATION.value,
            HarmCategory.DATA_LEAKAGE.value,
            HarmCategory.OVER_PERMISSIVE_ACTION.value,
            HarmCategory.MEMORY_POISONING.value,
            HarmCategory.PROMPT_INJECTION.value,
        } <= categories
        assert categories <= {category.value for category in HarmCategory}

    def test_every_entry_is_complete(self) -> None:
        """Unique valid ids, text content, a judge objective and a resolvable template."""
        assert len({p.id for p in PACK}) == len(PACK)
        for payload in PACK:
            validate_payload_id(payload.id)
            assert payload.content.strip()
            assert payload.format.is_text
            assert payload.metadata["objective"].strip()
            assert payload.metadata["description"].strip()
        templates = builtin_templates()
        assert [t.name for t in templates] == [p.id for p in PACK]
        assert all(t.resolve().strip() for t in templates)

    def test_filter_by_category(self) -> None:
        """``builtin_payloads(harm_category=...)`` takes an enum member or a string."""
        leaks = builtin_payloads(harm_category=HarmCategory.DATA_LEAKAGE)
        assert leaks
        assert all(p.metadata["harm_category"] == "data_leakage" for p in leaks)
        assert builtin_payloads(harm_category="data_leakage") == leaks


@pytest.mark.parametrize(
    "payload", builtin_payloads(harm_category="data_exfiltration"), ids=lambda p: p.id
)
def test_pack_drives_parametrize(payload: Payload) -> None:
    """Module-level parametrize over the pack works (synchronous load at import time)."""
    assert payload.metadata["harm_category"] == "data_exfiltration"
