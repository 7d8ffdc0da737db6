"""Payloads: templates, LLM-generated variants, a store on disk and a built-in pack.

* ``PayloadTemplate``: an objective and an instruction with ``{placeholders}``;
* ``Payloads.generate_async``: variants written by a generator model (rate-limited,
  optionally cached, optionally converted);
* ``PayloadStore``: named collections on disk (JSONL + manifest), saved atomically
  and loaded synchronously (module-level ``pytest.mark.parametrize``);
* the built-in pack ``rampart-xpia-v1`` (``builtin_payloads()``,
  ``builtin_templates()``).

See ``docs/payloads.md``. The payloads an attack planted in this process, which the
judge shows by id, are remembered in ``_planted``.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.payloads._generator import Payloads
    from rampart.payloads._pack import (
        BUILTIN_COLLECTION,
        BUILTIN_ROOT,
        builtin_payloads,
        builtin_store,
        builtin_templates,
    )
    from rampart.payloads._store import DEFAULT_ROOT, PayloadStore
    from rampart.payloads._template import PayloadTemplate

# Every name loads on first access: the attacks and the judge reach ``_planted`` (the
# payloads planted in this process) without loading the generator or the store.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {
        "BUILTIN_COLLECTION": "rampart.payloads._pack",
        "BUILTIN_ROOT": "rampart.payloads._pack",
        "DEFAULT_ROOT": "rampart.payloads._store",
        "PayloadStore": "rampart.payloads._store",
        "PayloadTemplate": "rampart.payloads._template",
        "Payloads": "rampart.payloads._generator",
        "builtin_payloads": "rampart.payloads._pack",
        "builtin_store": "rampart.payloads._pack",
        "builtin_templates": "rampart.payloads._pack",
    },
)

__all__ = [
    "BUILTIN_COLLECTION",
    "BUILTIN_ROOT",
    "DEFAULT_ROOT",
    "PayloadStore",
    "PayloadTemplate",
    "Payloads",
    "builtin_payloads",
    "builtin_store",
    "builtin_templates",
]
