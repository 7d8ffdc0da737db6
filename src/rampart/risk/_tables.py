"""The risk-framework tables: versioned frameworks, and what maps to their items.

A **framework** file (``rampart.risk-framework.v1``) names one version of a framework
and every item id that version has: the OWASP Top 10 for LLM Applications 2025, the
OWASP Top 10 for Agentic Applications 2026 and MITRE ATLAS 5.6.0 ship in ``_data``. A
**map** file (``rampart.risk-map.v1``) holds entries ``subject -> item``, each with its
source and rationale, and the deliberate gaps (``unmapped``: a subject that no item of
a framework fits, and why). Subjects say what a test tested (``_subjects``):
``strategy:xpia``, ``harm_category:data_exfiltration``, ``payload:<id>`` (and through
the map's ``families``, ``payload_family:<name>``) and ``agentdojo:<suite>/<task>``.

``RiskMap.builtin()`` reads the shipped tables; ``RiskMap.load(paths)`` adds users' map
files in order, each checked as strictly as the built-in ones (an item id must exist in
the version the map names, a subject must have a known kind). A user file may
``replace`` built-in subjects: their entries are dropped before the file's are added.
Every file is read with the one JSON policy (``rampart.codec.parse_strict_json``).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import TYPE_CHECKING, Any

import attrs

from rampart._checks import check_path, invalid

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

__all__ = [
    "BUILTIN",
    "SUBJECT_KINDS",
    "Framework",
    "FrameworkItem",
    "RiskEntry",
    "RiskGap",
    "RiskMap",
]

FRAMEWORK_FORMAT = "rampart.risk-framework.v1"
MAP_FORMAT = "rampart.risk-map.v1"
#: The kinds of subject an entry may map (``kind:value``).
SUBJECT_KINDS = ("strategy", "harm_category", "payload", "payload_family", "agentdojo")
#: The origin of the shipped tables, as ``RiskMap.origins`` lists it.
BUILTIN = "builtin"
_FRAMEWORK_FILES = ("owasp-llm-2025.json", "owasp-asi-2026.json", "mitre-atlas-5.6.0.json")
_MAP_FILES = ("map-harm-categories.json", "map-payloads.json", "map-agentdojo.json")
_MATRIX = ("all", "mapped")


@attrs.frozen(kw_only=True)
class FrameworkItem:
    """One item of a framework version: ``LLM01:2025`` "Prompt Injection".

    ``aliases`` are other spellings a ``harm`` marker may use for it (``LLM01``,
    ``owasp-llm01``); they match without regard to case.
    """

    id: str
    name: str
    source: str
    aliases: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Framework:
    """One version of a risk framework and every item id it has.

    ``source`` says where the version and its ids come from; ``url`` is its home page.
    ``matrix`` says which items the coverage matrix lists: ``"all"`` (each OWASP item,
    covered or not) or ``"mapped"`` (MITRE ATLAS: the techniques the map can reach, not
    all of its techniques).
    """

    id: str
    name: str
    version: str
    source: str
    url: str
    items: tuple[FrameworkItem, ...]
    released: str | None = None
    matrix: str = "all"

    @property
    def title(self) -> str:
        """``"OWASP Top 10 for LLM Applications 2025"``."""
        return f"{self.name} {self.version}"


@attrs.frozen(kw_only=True)
class RiskEntry:
    """``subject`` maps to ``item`` (of ``framework``), with the evidence for it.

    ``origin`` is ``"builtin"``, the path of the map file that gave the entry, or
    ``"marker"`` for an item a test's ``harm`` marker names itself.
    """

    subject: str
    item: str
    framework: str
    source: str
    rationale: str
    origin: str = BUILTIN


@attrs.frozen(kw_only=True)
class RiskGap:
    """No item of ``framework`` fits ``subject``, deliberately: the rationale says why."""

    subject: str
    framework: str
    rationale: str
    origin: str = BUILTIN


def _text(owner: str, path: str, value: object, expected: str = "a non-empty string") -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid(owner, path, expected, value, error=ValueError)
    return value


def _object(owner: str, path: str, value: object, keys: Iterable[str]) -> dict[str, Any]:
    allowed = set(keys)
    if not isinstance(value, dict):
        raise invalid(owner, path, "a JSON object", value, error=ValueError)
    unknown = sorted(set(value) - allowed)
    if unknown:
        expected = f"an object with only the keys {', '.join(sorted(allowed))}"
        shown = f"the key {unknown[0]!r}"
        raise invalid(owner, path, expected, unknown[0], error=ValueError, shown=shown)
    return value


def _array(owner: str, path: str, value: object) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(owner, path, "a JSON array", value, error=ValueError)
    return value


def _read_json(owner: str, text: str) -> Any:
    from rampart.codec import parse_strict_json
    from rampart.core.errors import SchemaError

    try:
        return parse_strict_json(data=text)
    except SchemaError as error:
        raise ValueError(f"{owner}: not strict JSON: {error}") from None


def _framework(data: object, origin: str) -> Framework:
    owner = f"risk framework {origin}"
    keys = ("format", "id", "name", "version", "released", "source", "url", "matrix", "items")
    document = _object(owner, "$", data, keys)
    if document.get("format") != FRAMEWORK_FORMAT:
        raise invalid(
            owner, "$.format", repr(FRAMEWORK_FORMAT), document.get("format"), error=ValueError
        )
    items = []
    for index, raw in enumerate(_array(owner, "$.items", document.get("items"))):
        path = f"$.items[{index}]"
        item = _object(owner, path, raw, ("id", "name", "source", "aliases"))
        aliases = _array(owner, f"{path}.aliases", item.get("aliases", []))
        items.append(
            FrameworkItem(
                id=_text(owner, f"{path}.id", item.get("id")),
                name=_text(owner, f"{path}.name", item.get("name")),
                source=_text(owner, f"{path}.source", item.get("source")),
                aliases=tuple(
                    _text(owner, f"{path}.aliases[{at}]", alias) for at, alias in enumerate(aliases)
                ),
            )
        )
    matrix = document.get("matrix", "all")
    if matrix not in _MATRIX:
        raise invalid(owner, "$.matrix", "'all' or 'mapped'", matrix, error=ValueError)
    released = document.get("released")
    return Framework(
        id=_text(owner, "$.id", document.get("id")),
        name=_text(owner, "$.name", document.get("name")),
        version=_text(owner, "$.version", document.get("version")),
        source=_text(owner, "$.source", document.get("source")),
        url=_text(owner, "$.url", document.get("url")),
        items=tuple(items),
        released=None if released is None else _text(owner, "$.released", released),
        matrix=matrix,
    )


def check_subject(owner: str, path: str, value: object) -> str:
    """A subject ``kind:value`` with a known kind, else a ``ValueError`` naming ``path``."""
    text = _text(owner, path, value)
    kind, sep, rest = text.partition(":")
    if not sep or kind not in SUBJECT_KINDS or not rest.strip():
        expected = f"'kind:value' with kind one of {', '.join(SUBJECT_KINDS)}"
        raise invalid(owner, path, expected, value, error=ValueError)
    return text


@attrs.frozen(kw_only=True)
class RiskMap:
    """The frameworks and the entries mapping subjects to their items.

    ``origins`` lists where the tables came from, in order (``"builtin"`` first, then
    each user file). Read one with ``RiskMap.builtin()`` or ``RiskMap.load(paths)``.
    """

    frameworks: tuple[Framework, ...]
    entries: tuple[RiskEntry, ...]
    gaps: tuple[RiskGap, ...] = ()
    families: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    origins: tuple[str, ...] = (BUILTIN,)
    # Lookups built once per map (a map is immutable).
    _items: dict[str, tuple[Framework, FrameworkItem]] = attrs.field(
        init=False, eq=False, repr=False
    )
    _labels: dict[str, tuple[Framework, FrameworkItem]] = attrs.field(
        init=False, eq=False, repr=False
    )
    _by_subject: dict[str, tuple[RiskEntry, ...]] = attrs.field(init=False, eq=False, repr=False)
    _family_of: dict[str, str] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        items: dict[str, tuple[Framework, FrameworkItem]] = {}
        labels: dict[str, tuple[Framework, FrameworkItem]] = {}
        for framework in self.frameworks:
            for item in framework.items:
                items[item.id] = (framework, item)
                for label in (item.id, *item.aliases):
                    labels.setdefault(label.casefold(), (framework, item))
        grouped: dict[str, list[RiskEntry]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.subject, []).append(entry)
        family_of = {member: name for name, members in self.families.items() for member in members}
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_labels", labels)
        object.__setattr__(
            self, "_by_subject", {subject: tuple(found) for subject, found in grouped.items()}
        )
        object.__setattr__(self, "_family_of", family_of)

    @classmethod
    def builtin(cls) -> RiskMap:
        """The tables rampart ships (read once per process)."""
        return _builtin()

    @classmethod
    def load(cls, paths: Sequence[str | Path] = ()) -> RiskMap:
        """The built-in tables, extended (or overridden) by each map file in ``paths``.

        Raises ``ValueError`` naming the file and the entry when a file is not a
        ``rampart.risk-map.v1`` map, names an item its framework version does not
        have, or a subject of an unknown kind; ``OSError`` when it cannot be read.
        """
        risk_map = cls.builtin()
        for path in paths:
            risk_map = risk_map.extended(path)
        return risk_map

    def extended(self, path: str | Path) -> RiskMap:
        """This map with the map file at ``path`` applied on top (see ``load``)."""
        checked = check_path("RiskMap.load", "paths[]", path)
        origin = str(checked)
        data = _read_json(f"risk map {origin}", checked.read_text(encoding="utf-8"))
        return self._with_document(data, origin)

    def framework(self, framework_id: str) -> Framework | None:
        return next((found for found in self.frameworks if found.id == framework_id), None)

    def find(self, item_id: str) -> tuple[Framework, FrameworkItem] | None:
        """The framework and item with this exact id, if a loaded version has it."""
        return self._items.get(item_id)

    def named(self, label: str) -> tuple[Framework, FrameworkItem] | None:
        """The item a ``harm`` marker's label names: its id or an alias, in any case."""
        return self._labels.get(label.strip().casefold())

    def entries_for(self, subjects: Iterable[str]) -> list[RiskEntry]:
        """Every entry that maps one of ``subjects``: the map's own, those of the
        payload families a ``payload:`` subject belongs to, and the item a
        ``harm_category:`` label names itself (an id like ``LLM01:2025``, or an alias)."""
        found: list[RiskEntry] = []
        for subject in self._expanded(subjects):
            found.extend(self._by_subject.get(subject, ()))
            kind, _, value = subject.partition(":")
            named = self.named(value) if kind == "harm_category" else None
            if named is not None:
                framework, item = named
                found.append(
                    RiskEntry(
                        subject=subject,
                        item=item.id,
                        framework=framework.id,
                        source=f"the test's harm marker names {item.id} ({framework.title})",
                        rationale="named by the test itself",
                        origin="marker",
                    )
                )
        return found

    def _expanded(self, subjects: Iterable[str]) -> list[str]:
        """``subjects`` and the ``payload_family:`` subjects of their payloads, once each."""
        found: dict[str, None] = {}
        for subject in subjects:
            found[subject] = None
            kind, _, value = subject.partition(":")
            family = self._family_of.get(value) if kind == "payload" else None
            if family is not None:
                found[f"payload_family:{family}"] = None
        return list(found)

    def _with_document(self, data: object, origin: str) -> RiskMap:
        owner = f"risk map {origin}"
        keys = ("format", "title", "entries", "unmapped", "families", "replace")
        document = _object(owner, "$", data, keys)
        if document.get("format") != MAP_FORMAT:
            raise invalid(
                owner, "$.format", repr(MAP_FORMAT), document.get("format"), error=ValueError
            )
        replaced = {
            check_subject(owner, f"$.replace[{index}]", subject)
            for index, subject in enumerate(_array(owner, "$.replace", document.get("replace", [])))
        }
        entries = [entry for entry in self.entries if entry.subject not in replaced]
        gaps = [gap for gap in self.gaps if gap.subject not in replaced]
        entries.extend(self._entries(owner, document.get("entries", []), origin))
        gaps.extend(self._gaps(owner, document.get("unmapped", []), origin))
        families = dict(self.families)
        raw_families = document.get("families", {})
        if not isinstance(raw_families, dict):
            raise invalid(owner, "$.families", "a JSON object", raw_families, error=ValueError)
        for name, members in raw_families.items():
            path = f"$.families[{name!r}]"
            _text(owner, path, name, "a family name")
            families[name] = tuple(
                _text(owner, f"{path}[{index}]", member)
                for index, member in enumerate(_array(owner, path, members))
            )
        return RiskMap(
            frameworks=self.frameworks,
            entries=tuple(entries),
            gaps=tuple(gaps),
            families=families,
            origins=(*self.origins, origin) if origin not in self.origins else self.origins,
        )

    def _entries(self, owner: str, raw: object, origin: str) -> list[RiskEntry]:
        entries = []
        for index, value in enumerate(_array(owner, "$.entries", raw)):
            path = f"$.entries[{index}]"
            entry = _object(owner, path, value, ("subject", "item", "source", "rationale"))
            item_id = _text(owner, f"{path}.item", entry.get("item"))
            found = self.find(item_id)
            if found is None:
                versions = "; ".join(
                    f"{framework.title} ({framework.items[0].id}, ...)"
                    for framework in self.frameworks
                )
                expected = f"an item id of a loaded framework version: {versions}"
                raise invalid(owner, f"{path}.item", expected, item_id, error=ValueError)
            entries.append(
                RiskEntry(
                    subject=check_subject(owner, f"{path}.subject", entry.get("subject")),
                    item=item_id,
                    framework=found[0].id,
                    source=_text(owner, f"{path}.source", entry.get("source")),
                    rationale=_text(owner, f"{path}.rationale", entry.get("rationale")),
                    origin=origin,
                )
            )
        return entries

    def _gaps(self, owner: str, raw: object, origin: str) -> list[RiskGap]:
        gaps = []
        known = [framework.id for framework in self.frameworks]
        for index, value in enumerate(_array(owner, "$.unmapped", raw)):
            path = f"$.unmapped[{index}]"
            gap = _object(owner, path, value, ("subject", "framework", "rationale"))
            framework = gap.get("framework")
            if framework not in known:
                expected = f"one of {', '.join(known)}"
                raise invalid(owner, f"{path}.framework", expected, framework, error=ValueError)
            gaps.append(
                RiskGap(
                    subject=check_subject(owner, f"{path}.subject", gap.get("subject")),
                    framework=str(framework),
                    rationale=_text(owner, f"{path}.rationale", gap.get("rationale")),
                    origin=origin,
                )
            )
        return gaps


@functools.cache
def _builtin() -> RiskMap:
    data = resources.files("rampart.risk").joinpath("_data")
    frameworks = tuple(
        _framework(
            _read_json(f"risk framework {name}", data.joinpath(name).read_text("utf-8")), name
        )
        for name in _FRAMEWORK_FILES
    )
    risk_map = RiskMap(frameworks=frameworks, entries=())
    for name in _MAP_FILES:
        text = data.joinpath(name).read_text("utf-8")
        risk_map = risk_map._with_document(_read_json(f"risk map {name}", text), BUILTIN)
    return risk_map
