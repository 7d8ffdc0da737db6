"""What a result tested: how a trial clone is named, and the metadata keys that say it.

The pytest plugin names a trial clone ``test_x[trial-3]``, or ``test_x[trial-3:<case>]``
when the ``trial`` marker's ``ids=`` gives the clone a case (the payload or pair it
attacks: ``test_xpia[trial-13:leak-system-prompt]``). The index stays in the name, so
every clone's name is unique and the journal and resume keep keying clones by index;
the case says which row is which.

It writes what a row tested into ``Result.metadata`` beside its bookkeeping keys
(``_pytest_nodeid``, ...), so every output (JSON, JSONL, HTML, SARIF, the journal)
carries it: ``CASE_KEY`` (the clone's case), ``PAYLOAD_KEY`` (the ``Payload`` the row
used: the clone's case or a test parameter), ``PARAMS_KEY`` / ``PARAM_ID_KEY`` (a
parametrized test's arguments and its pytest id) and ``HARM_TAGS_KEY`` (every tag of
the test's ``harm`` marker, when it has more than one; ``Result.harm_category`` holds
the primary one). The spec's single-category shape stays as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rampart.core.result import Result

__all__ = [
    "CASE_KEY",
    "HARM_TAGS_KEY",
    "PARAMS_KEY",
    "PARAM_ID_KEY",
    "PAYLOAD_KEY",
    "clone_base",
    "clone_suffix",
    "harm_labels",
    "owning_test",
    "payload_ids",
]

CASE_KEY = "_rampart_case"
PAYLOAD_KEY = "_rampart_payload_id"
PARAMS_KEY = "_pytest_params"
PARAM_ID_KEY = "_pytest_param_id"
HARM_TAGS_KEY = "_rampart_harm_tags"


def clone_suffix(index: int, case: str | None = None) -> str:
    """``[trial-3]``, or ``[trial-3:<case>]`` for a clone with a case."""
    return f"[trial-{index}]" if case is None else f"[trial-{index}:{case}]"


def clone_base(nodeid: str, index: int) -> str:
    """``nodeid`` without clone ``index``'s suffix (unchanged when it has none)."""
    plain = clone_suffix(index)
    if nodeid.endswith(plain):
        return nodeid[: -len(plain)]
    start = nodeid.rfind(f"[trial-{index}:")
    if start > 0 and nodeid.endswith("]"):
        return nodeid[:start]
    return nodeid


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str) and item]


def harm_labels(result: Result) -> list[str]:
    """The result's harm category, then the other tags of its test's ``harm`` marker."""
    labels: dict[str, None] = {}
    category = result.harm_category
    if category is not None and str(category):
        labels[str(getattr(category, "value", category))] = None
    for tag in _strings(result.metadata.get(HARM_TAGS_KEY)):
        labels[tag] = None
    return list(labels)


def payload_ids(result: Result) -> list[str]:
    """The payloads a result used: its row's (``PAYLOAD_KEY``), then those its
    injection records name."""
    found: dict[str, None] = {}
    payload = result.metadata.get(PAYLOAD_KEY)
    if isinstance(payload, str) and payload:
        found[payload] = None
    for injection in result.injections:
        if isinstance(injection.payload_id, str) and injection.payload_id:
            found[injection.payload_id] = None
    return list(found)


def owning_test(result: Result) -> str | None:
    """The node id of the pytest item ``result`` belongs to (a trial clone's: its
    group's, without the clone's suffix), from its ``_pytest_nodeid``; None without one."""
    nodeid = result.metadata.get("_pytest_nodeid")
    if not isinstance(nodeid, str) or not nodeid:
        return None
    population = result.population
    return nodeid if population is None else clone_base(nodeid, population.index)
