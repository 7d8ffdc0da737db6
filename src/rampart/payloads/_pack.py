"""The built-in payload pack: indirect prompt injections written for rampart.

``rampart-xpia-v1`` holds 35 text payloads across six harm categories (data
exfiltration by e-mail, HTTP and other tools; data leakage; over-permissive actions;
memory poisoning; task hijacking; a jailbreak). It is an ordinary ``PayloadStore``
collection shipped inside the package, so it loads like any other::

    PayloadStore(root=BUILTIN_ROOT).load(BUILTIN_COLLECTION)

Each payload's metadata holds ``harm_category``, a ``description``, an ``objective``
for an ``LLMJudge``, optionally ``expects`` (a tool name and arguments for
``ToolCalled``), and ``template``: the ``PayloadTemplate`` fields to generate
variants with ``Payloads.generate_async``.
"""

from __future__ import annotations

from pathlib import Path

from rampart.core.types import HarmCategory, Payload
from rampart.payloads._store import PayloadStore
from rampart.payloads._template import PayloadTemplate

__all__ = [
    "BUILTIN_COLLECTION",
    "BUILTIN_ROOT",
    "builtin_payloads",
    "builtin_store",
    "builtin_templates",
]

BUILTIN_ROOT = Path(__file__).resolve().parent / "_builtin"
"""The directory holding the built-in collections (read-only: do not save into it)."""
BUILTIN_COLLECTION = "rampart-xpia-v1"


def builtin_store() -> PayloadStore:
    """A ``PayloadStore`` over the built-in collections."""
    return PayloadStore(root=BUILTIN_ROOT)


def builtin_payloads(*, harm_category: HarmCategory | str | None = None) -> list[Payload]:
    """The built-in pack's payloads (synchronous, for ``pytest.mark.parametrize``),
    optionally only those of ``harm_category``."""
    payloads = builtin_store().load(BUILTIN_COLLECTION)
    if harm_category is None:
        return payloads
    wanted = str(harm_category.value if isinstance(harm_category, HarmCategory) else harm_category)
    return [payload for payload in payloads if payload.metadata.get("harm_category") == wanted]


def builtin_templates() -> list[PayloadTemplate]:
    """The ``PayloadTemplate`` behind every built-in payload, in pack order."""
    templates = []
    for payload in builtin_payloads():
        fields = payload.metadata["template"]
        templates.append(
            PayloadTemplate(
                name=fields["name"],
                description=fields["description"],
                objective=fields["objective"],
                instruction=fields["instruction"],
                variables=dict(fields["variables"]),
            )
        )
    return templates
