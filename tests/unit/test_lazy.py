"""``rampart._lazy``: names load on first access; ``uncached`` ones at every access."""

from __future__ import annotations

import sys
import types

import pytest

from rampart._lazy import lazy_attributes


def _module(monkeypatch: pytest.MonkeyPatch, value: object) -> None:
    module = types.ModuleType("rampart_lazy_probe")
    module.value = value  # type: ignore[attr-defined]
    module.state = value  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rampart_lazy_probe", module)


def test_a_cached_name_keeps_its_first_value_an_uncached_one_follows_the_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace: dict[str, object] = {}
    getattr_, dir_ = lazy_attributes(
        "pkg",
        namespace,
        {"value": "rampart_lazy_probe", "state": "rampart_lazy_probe"},
        uncached=frozenset({"state"}),
    )
    _module(monkeypatch, 1)
    assert (getattr_("value"), getattr_("state")) == (1, 1)
    assert namespace == {"value": 1}
    _module(monkeypatch, 2)  # the module was unloaded and loaded again
    assert getattr_("state") == 2
    assert dir_() == ["state", "value"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    getattr_, _ = lazy_attributes("pkg", {}, {})
    with pytest.raises(AttributeError, match=r"^module 'pkg' has no attribute 'missing'$"):
        getattr_("missing")


def test_a_submodule_is_imported_on_access() -> None:
    """``submodules`` answer the package's submodule, as an eager ``__init__`` did."""
    getattr_, _ = lazy_attributes("json", {}, {}, submodules=frozenset({"tool"}))
    module = getattr_("tool")
    assert module is sys.modules["json.tool"]
    with pytest.raises(AttributeError, match="no attribute 'scanner'"):
        getattr_("scanner")  # a submodule, but not one of ``submodules``
