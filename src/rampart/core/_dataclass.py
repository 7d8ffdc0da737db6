"""Dataclass compatibility for attrs models: ``dataclasses.replace/fields/asdict`` work.

RAMPART's model types are dataclasses, and code written for RAMPART calls
``dataclasses.replace(turn, eval_result=...)``, ``dataclasses.fields(result)``,
``dataclasses.asdict(report.population_summary())`` and ``dataclasses.is_dataclass``,
and catches ``dataclasses.FrozenInstanceError``. rampart's models stay attrs classes
(the canonical codec and the validators are built on attrs); :func:`dataclass_compatible`
gives such a class the dataclass protocol as well:

* ``__dataclass_fields__`` and ``__dataclass_params__`` are descriptors that build,
  on first use and once per class, a shadow dataclass with
  :func:`dataclasses.make_dataclass` from the attrs fields of the class they are read
  on (name, annotation, default or default factory, ``init``/``repr``/``eq``/``hash``,
  metadata, keyword-only), and answer with its fields and parameters. Every function
  of :mod:`dataclasses` reads them through its public machinery; no private name of
  :mod:`dataclasses` is touched, and a subclass that adds attrs fields is described
  with its own fields. A class with a hand-written ``__init__`` (``Result``) reports
  the defaults of that ``__init__``.
* On a frozen class, assigning or deleting an attribute raises
  :class:`rampart.core.errors.FrozenInstanceError`, which is both
  ``attrs.exceptions.FrozenInstanceError`` and ``dataclasses.FrozenInstanceError``.

Mutable classes keep attrs' own ``__setattr__``, so validators and converters run on
assignment (``on_setattr``), as they do at construction.
"""

from __future__ import annotations

import dataclasses
import inspect
import weakref
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from rampart.core.errors import FrozenInstanceError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["dataclass_compatible"]

T = TypeVar("T", bound=type)


def _is_frozen(cls: type) -> bool:
    inspect_class: Callable[[type], Any] | None = getattr(attrs, "inspect", None)
    if inspect_class is not None:  # attrs >= 25.4
        return bool(inspect_class(cls).is_frozen)
    return getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"  # pragma: no cover


def _constructor_defaults(cls: type) -> dict[str, Any]:
    """Defaults of a hand-written ``__init__`` (attrs then keeps ``__attrs_init__``)."""
    if getattr(cls, "__attrs_init__", None) is None:
        return {}
    return {
        name: parameter.default
        for name, parameter in inspect.signature(cls).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def _container_factory(annotation: object) -> Callable[[], Any] | None:
    """``list`` / ``dict`` when ``annotation`` (often a string) names that container."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    for factory in (list, dict):
        if text == factory.__name__ or text.startswith(factory.__name__ + "["):
            return factory
    return None


def _field_spec(field: attrs.Attribute[Any], ctor: dict[str, Any]) -> tuple[str, Any, Any]:
    """``(name, annotation, dataclasses.field(...))`` mirroring one attrs field."""
    options: dict[str, Any] = {
        "init": field.init,
        "repr": bool(field.repr),
        "compare": bool(field.eq),
        "hash": field.hash,
        "metadata": dict(field.metadata) or None,
        "kw_only": field.kw_only,
    }
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            raise TypeError(f"{field.name}: a default that takes self has no dataclass form")
        options["default_factory"] = default.factory
    elif default is not attrs.NOTHING:
        options["default"] = default
    elif field.name in ctor:
        value = ctor[field.name]
        factory = _container_factory(field.type) if value is None else None
        if factory is not None:  # the constructor maps None to a fresh container
            options["default_factory"] = factory
        else:
            options["default"] = value
    annotation = field.type if field.type is not None else Any
    return (field.name, annotation, dataclasses.field(**options))


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError.for_field(type(self), name)


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError.for_field(type(self), name)


class _Shadow:
    """A dataclass view of attrs classes: ``__get__`` answers for the class it is read on."""

    __slots__ = ("_attribute", "_views")

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute  # "__dataclass_fields__" or "__dataclass_params__"
        self._views: weakref.WeakKeyDictionary[type, type] = weakref.WeakKeyDictionary()

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        cls = type(instance) if owner is None else owner
        view = self._views.get(cls)
        if view is None:
            view = self._views.setdefault(cls, _shadow_dataclass(cls))
        return getattr(view, self._attribute)


def _shadow_dataclass(cls: type) -> type:
    """A dataclass with the fields, defaults and frozenness of the attrs class ``cls``."""
    ctor = _constructor_defaults(cls)
    return dataclasses.make_dataclass(
        cls.__name__,
        [_field_spec(field, ctor) for field in attrs.fields(cls)],
        frozen=_is_frozen(cls),
        eq=any("__eq__" in vars(klass) for klass in cls.__mro__[:-1]),
    )


_FIELDS = _Shadow("__dataclass_fields__")
_PARAMS = _Shadow("__dataclass_params__")


def dataclass_compatible(cls: T) -> T:
    """Give the attrs class ``cls`` the dataclass protocol (see the module docstring).

    Apply it above the attrs decorator: ``@dataclass_compatible`` then ``@attrs.define``.
    """
    if not attrs.has(cls):  # pragma: no cover - a programming error in rampart
        raise TypeError(f"dataclass_compatible: {cls.__qualname__} is not an attrs class")
    cls.__dataclass_fields__ = _FIELDS  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _PARAMS  # type: ignore[attr-defined]
    if _is_frozen(cls):
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
    return cast("T", cls)
