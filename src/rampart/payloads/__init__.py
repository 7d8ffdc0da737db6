"""Payloads: templates, LLM-generated variants, a store on disk and a built-in pack.

* ``PayloadTemplate``: an objective and an instruction with ``{placeholders}``;
* ``Payloads.generate_async``: variants written by a generator model (rate-limited,
  optionally cached, optionally converted);
* ``PayloadStore``: named collections on disk (JSONL + manifest), saved atomically
  and loaded synchronously (module-level ``pytest.mark.parametrize``);
* the built-in pack ``rampart-xpia-v1`` (``builtin_payloads()``,
  ``builtin_templates()``).

See ``docs/payloads.md``.
"""

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
