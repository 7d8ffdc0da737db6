"""``emit_deprecation_warning``: one wording for every deprecation (RAMPART's helper).

The message reads ``"{old} is deprecated and will be removed in {removed_in}. Use
{new} instead."``. A class or function is named by ``module.qualname``, a string as
given. The warning is a ``DeprecationWarning`` attributed (``stacklevel=3``) to the code
that called the deprecated item.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from rampart._checks import check_text, invalid

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["emit_deprecation_warning"]

_OWNER = "emit_deprecation_warning"


def _name(argument: str, item: object) -> str:
    if isinstance(item, str):
        return check_text(_OWNER, argument, item)
    module = getattr(item, "__module__", None)
    qualname = getattr(item, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and (module and qualname):
        return f"{module}.{qualname}"
    raise invalid(_OWNER, argument, "a class, a function or a non-empty string", item)


def emit_deprecation_warning(
    *,
    old_item: type | Callable[..., Any] | str,
    new_item: type | Callable[..., Any] | str,
    removed_in: str,
) -> None:
    """Warn that ``old_item`` goes away in ``removed_in`` and ``new_item`` replaces it.

    Call it from inside the deprecated function (or ``__init__``): the warning then
    points at that function's caller.
    """
    old = _name("old_item", old_item)
    new = _name("new_item", new_item)
    version = check_text(_OWNER, "removed_in", removed_in)
    warnings.warn(
        f"{old} is deprecated and will be removed in {version}. Use {new} instead.",
        DeprecationWarning,
        stacklevel=3,
    )
